"""The chain's labelled sets: a few hundred to a few thousand training
examples drawn from a task's data, in any layout `run_classifier.py`
reads, written as one csv table per split.

Drawn at random with a fixed seed, not taken from the top: IMDB's and
DBpedia's files come sorted by label, so the first N would hold one class.
"""
import csv
import os
import random

from xlnet import io_utils
from xlnet.finetuning.classifier import datasets
from xlnet.finetuning.classifier import processors
from xlnet.finetuning.classifier import tasks as classifier_tasks

# The columns of the tables written (`run_classifier.py --task_name=csv`'s
# default column names).
COLUMNS = ("label", "text_a", "text_b")


def read_task(task_name, data_dir):
  """The labels, training and dev examples of a task's directory.

  Returns:
    (labels: list of str, train: list of InputExample, dev: list).

  Raises:
    ValueError: one line naming the directory (a layout not found, a
      regression task: the chain measures accuracy).
  """
  processor = datasets.make_processor(task_name)
  if task_name.lower() in classifier_tasks.USER_TASKS and _has_text_b(
      processor.path(data_dir, "train"), processor):
    processor = datasets.make_processor(task_name, text_b_column="text_b")
  processor.resolve(data_dir)
  if processor.is_regression:
    raise ValueError(f"--tasks: {task_name} is a regression task; the chain "
                     "compares accuracies of classification tasks")
  return (list(processor.get_labels()),
          processor.get_train_examples(data_dir),
          processor.get_dev_examples(data_dir))


def _has_text_b(path, processor):
  """Whether a csv/tsv table's header row names a text_b column (then its
  examples are pairs, as `run_classifier.py --text_b_column=text_b` reads
  them)."""
  first = next(processors.read_rows(path, processor.delimiter,
                                    processor.quoting), None)
  return bool(first) and "text_b" in [h.strip() for h in first[1]]


def draw(examples, count, seed):
  """`count` of `examples` (all when fewer), drawn without replacement by
  `random.Random(seed)`, in the drawn order."""
  count = min(count, len(examples))
  return random.Random(seed).sample(list(examples), count)


def _table(examples):
  """The csv text of `examples` (a header row, then one row each)."""
  pairs = any(e.text_b is not None for e in examples)
  columns = COLUMNS if pairs else COLUMNS[:2]
  lines = []

  class _Lines:
    def write(self, line):
      lines.append(line)

  writer = csv.writer(_Lines())
  writer.writerow(columns)
  for e in examples:
    row = [e.label, e.text_a] + ([e.text_b or ""] if pairs else [])
    writer.writerow(row)
  return "".join(lines), pairs


def write_subsets(task_name, data_dir, out_dir, train_examples,
                  dev_examples, seed):
  """Writes `out_dir/train.csv` and `out_dir/dev.csv`: `train_examples`
  and `dev_examples` drawn from the task's splits.

  Returns:
    dict: labels (the task's, in its order), pairs (whether text_b is
    used), and the examples drawn and available per split.
  """
  labels, train, dev = read_task(task_name, data_dir)
  info = {"labels": labels, "task_name": task_name, "data_dir": data_dir}
  pairs = False
  for split, examples, count, offset in (("train", train, train_examples, 0),
                                         ("dev", dev, dev_examples, 1)):
    drawn = draw(examples, count, seed + offset)
    text, split_pairs = _table(drawn)
    pairs = pairs or split_pairs
    io_utils.atomic_write(os.path.join(out_dir, f"{split}.csv"), text)
    info[split] = {"drawn": len(drawn), "available": len(examples)}
  info["pairs"] = pairs
  return info
