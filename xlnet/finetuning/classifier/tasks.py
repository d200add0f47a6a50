"""The tasks `run_classifier.py --task_name` reads, each once, with what its
processor needs: the family that reads its files, the files and columns of
each split, the labels (None: regression) and the metrics.

TensorFlow-free: the flags list the names (--help), the configs check a
name (`ClassifierConfig`, the chain's `--tasks`), and
`classifier/datasets.py` makes the processor of a task from its entry, by
family:

  GLUE       cola, sst-2, mrpc, qqp, sts-b, mnli_matched, mnli_mismatched,
             qnli, rte, wnli: tab-separated tables, no quoting, test ids in
             column 0
  ZHANG_CSV  the CSV datasets of Zhang et al. (2015): yelp5, yelp2,
             amazon5, amazon2, dbpedia, ag_news (the dev split is the test
             file: they have no dev set)
  ACL_IMDB   imdb: one review per file under {train,test}/{neg,pos}/
  YOURS      tsv, csv: your own tables, columns and labels from the flags
             (or the data)

A new dataset is one entry of TASKS (and, for a new layout, a family with
its processor in `datasets.py`).
"""
import dataclasses
from typing import Optional, Tuple

GLUE, ZHANG_CSV, ACL_IMDB, YOURS = "glue", "zhang_csv", "acl_imdb", "yours"
SPLITS = ("train", "dev", "test")


class Columns:
  """Where the fields of one split live in its table.

  Attributes:
    text_a: int column index (negative counts from the end).
    text_b: int or None.
    label: int or None (test files have no labels).
    guid: int column holding the example id, or None for the 0-based row
      number among the examples.
    min_columns: rows with fewer fields are malformed.
    header: bool, the first row is a header.
  """

  def __init__(self, text_a, text_b=None, label=None, guid=None,
               min_columns=None, header=False):
    self.text_a = text_a
    self.text_b = text_b
    self.label = label
    self.guid = guid
    used = [c for c in (text_a, text_b, label, guid) if c is not None]
    self.min_columns = min_columns or max(
        [c + 1 if c >= 0 else -c for c in used])
    self.header = header


@dataclasses.dataclass(frozen=True)
class Task:
  """One task: what `--task_name` names.

  Attributes:
    name: the task name (lower case).
    family: the processor that reads its files (GLUE, ZHANG_CSV, ACL_IMDB
      or YOURS).
    layout: its files in words, for the errors about its data.
    labels: the label strings, or None: a regression task (your own
      tables: the labels are --label_list's or the data's).
    metrics: the metrics reported on the dev split
      (`classifier/metrics.py`).
    primary_metric: the metric that picks the best checkpoint.
    files: split -> its file (a table) or directory (aclImdb's reviews).
    columns: split -> its `Columns` (tables); a text_b column makes the
      examples pairs.
    skip_bad_lines: rows with too few fields are logged and skipped, not
      refused (the GLUE copy of QQP holds a few questions broken over two
      lines).
  """
  name: str
  family: str
  layout: str
  labels: Optional[Tuple[str, ...]] = None
  metrics: Tuple[str, ...] = ("accuracy",)
  primary_metric: str = "accuracy"
  files: Optional[dict] = None
  columns: Optional[dict] = None
  skip_bad_lines: bool = False


################################################################################
# GLUE.
################################################################################
def _glue_files(dev="dev.tsv", test="test.tsv"):
  return {"train": "train.tsv", "dev": dev, "test": test}


def _same_layout(text_a, text_b, label, test_a, test_b, train_header=True):
  """Columns of train/dev (one layout) and test (id in column 0, header
  row, no label)."""
  train = Columns(text_a, text_b, label, header=train_header)
  test = Columns(test_a, test_b, None, guid=0, header=True)
  return {"train": train, "dev": train, "test": test}


def _glue(name, labels, layout, columns, files=None, **facts):
  """A GLUE task; `layout` is said after "GLUE "."""
  return Task(name, GLUE, f"GLUE {layout}", labels, files=files or
              _glue_files(), columns=columns, **facts)


_BINARY = ("0", "1")
_ENTAILMENT = ("entailment", "not_entailment")
_MNLI_LAYOUT = ("MNLI: sentence1 and sentence2 in columns 8 and 9, gold_label "
                "last (12 columns in train, 16 in dev, 10 in test)")
_MNLI_COLUMNS = {
    "train": Columns(8, 9, -1, header=True, min_columns=12),
    "dev": Columns(8, 9, -1, header=True, min_columns=16),
    "test": Columns(8, 9, None, guid=0, header=True, min_columns=10)}
_MNLI_LABELS = ("contradiction", "entailment", "neutral")

GLUE_TASKS = (
    _glue("cola", _BINARY, "CoLA: train/dev without header: source, label, "
          "mark, sentence; test: index, sentence",
          _same_layout(3, None, 1, 1, None, train_header=False),
          metrics=("accuracy", "mcc"), primary_metric="mcc"),
    _glue("sst-2", _BINARY, "SST-2: sentence, label; test: index, sentence",
          _same_layout(0, None, 1, 1, None)),
    _glue("mrpc", _BINARY, "MRPC: Quality, #1 ID, #2 ID, #1 String, #2 "
          "String; test: index, #1 ID, #2 ID, #1 String, #2 String",
          _same_layout(3, 4, 0, 3, 4), metrics=("accuracy", "f1")),
    _glue("qqp", _BINARY, "QQP: id, qid1, qid2, question1, question2, "
          "is_duplicate; test: id, question1, question2",
          _same_layout(3, 4, 5, 1, 2), metrics=("accuracy", "f1"),
          skip_bad_lines=True),
    _glue("sts-b", None, "STS-B: index, genre, filename, year, old_index, "
          "source1, source2, sentence1, sentence2, score (test: no score)",
          _same_layout(7, 8, 9, 7, 8), metrics=("pearsonr", "spearmanr"),
          primary_metric="pearsonr"),
    _glue("mnli_matched", _MNLI_LABELS, _MNLI_LAYOUT, _MNLI_COLUMNS,
          _glue_files("dev_matched.tsv", "test_matched.tsv")),
    _glue("mnli_mismatched", _MNLI_LABELS, _MNLI_LAYOUT, _MNLI_COLUMNS,
          _glue_files("dev_mismatched.tsv", "test_mismatched.tsv")),
    _glue("qnli", _ENTAILMENT, "QNLI: index, question, sentence, label "
          "(test: no label)", _same_layout(1, 2, 3, 1, 2)),
    _glue("rte", _ENTAILMENT, "RTE: index, sentence1, sentence2, label "
          "(test: no label)", _same_layout(1, 2, 3, 1, 2)),
    _glue("wnli", _BINARY, "WNLI: index, sentence1, sentence2, label (test: "
          "no label)", _same_layout(1, 2, 3, 1, 2)),
)


################################################################################
# The CSV datasets of Zhang et al. (2015): Yelp, Amazon, DBpedia, AG News.
################################################################################
def _zhang_csv(name, n_class, has_title):
  """`train.csv` / `test.csv` with the class index (1-based) in column 0,
  then a title and the text (`has_title`: a pair), or the text alone."""
  columns = Columns(1, 2 if has_title else None, 0)
  fields = "class, title, text" if has_title else "class, text"
  return Task(
      name, ZHANG_CSV, f"{name}: CSV rows '{fields}' with class 1-{n_class}, "
      "in train.csv and test.csv",
      tuple(str(i) for i in range(1, n_class + 1)),
      files={"train": "train.csv", "dev": "test.csv", "test": "test.csv"},
      columns={split: columns for split in SPLITS})


ZHANG_CSV_TASKS = (
    _zhang_csv("yelp5", 5, False), _zhang_csv("yelp2", 2, False),
    _zhang_csv("amazon5", 5, True), _zhang_csv("amazon2", 2, True),
    _zhang_csv("dbpedia", 14, True), _zhang_csv("ag_news", 4, True),
)

################################################################################
# Every task.
################################################################################
TASKS = GLUE_TASKS + ZHANG_CSV_TASKS + (
    Task("imdb", ACL_IMDB, "aclImdb: {train,test}/{neg,pos}/*.txt",
         ("neg", "pos"),
         files={"train": "train", "dev": "test", "test": "test"}),
    *(Task(kind, YOURS, f"your own task: {{train,dev,test}}.{kind}",
           files={split: f"{split}.{kind}" for split in SPLITS})
      for kind in ("tsv", "csv")),
)
# Your own files' task names.
USER_TASKS = tuple(t.name for t in TASKS if t.family == YOURS)
# --task_name's choices: the datasets by name, then your own files.
NAMES = tuple(sorted(t.name for t in TASKS if t.family != YOURS)) + USER_TASKS
_BY_NAME = {t.name: t for t in TASKS}


def get(task_name):
  """The `Task` named `task_name` (case-insensitive).

  Raises:
    ValueError: one line naming --task_name and the names it takes.
  """
  task = _BY_NAME.get((task_name or "").lower())
  if task is None:
    raise ValueError(f"--task_name={task_name}: unknown task; expected one "
                     f"of {', '.join(NAMES)}")
  return task
