"""A training set sorted by label fine-tunes as well as a shuffled copy.

Public sets ship sorted by label (aclImdb: every `neg/` review, then every
`pos/` one; DBpedia's CSV by class) in runs far longer than the input's
shuffle buffer (12,500 reviews against 2,048). The release shuffles the
training examples once before writing them; without that shuffle the model
sees long single-class runs and ends at the majority rate. Here the ratio
is kept at a tiny scale: 120-example runs against a 16-example buffer, two
epochs, so that training would end on a run of one class.

A tiny model is trained from scratch with the real engine (eagerly).
"""
import json
import random

from absl import flags
import pytest

from tests import data_helpers
from xlnet.finetuning import api
from xlnet.flags import finetuning as finetune_flags
from xlnet.programs import run_classifier

pytestmark = pytest.mark.eager
WORDS = ("the a man woman dog cat walked ran saw house park city river "
         "went home").split()
CONFIG = dict(n_layer=2, d_model=32, n_head=2, d_head=16, d_inner=64,
              ff_activation="gelu", untie_r=True, n_token=1000)


def cue_word_rows(n, rng):
  """n (label, text) rows, labels alternating: the label is the cue word
  (wonderful: 1, terrible: 0) among six filler words."""
  rows = []
  for i in range(n):
    words = [rng.choice(WORDS) for _ in range(6)]
    words.insert(rng.randrange(7), "wonderful" if i % 2 else "terrible")
    rows.append((i % 2, " ".join(words)))
  return rows


def write_tsv(path, rows):
  path.write_text("label\ttext\n" + "".join(f"{label}\t{text}\n"
                                            for label, text in rows))


def dev_accuracy(root, train_rows, dev_rows):
  """Fine-tunes on train_rows for two epochs; the dev accuracy (float)."""
  root.mkdir()
  write_tsv(root / "train.tsv", train_rows)
  write_tsv(root / "dev.tsv", dev_rows)
  (root / "config.json").write_text(json.dumps(CONFIG))
  flag_values = flags.FlagValues()
  run_classifier.define_flags(flag_values)
  flag_values([
      "run_classifier.py", "--task_name=tsv", f"--data_dir={root}",
      "--text_a_column=text", "--label_column=label", "--label_list=0,1",
      f"--output_dir={root}/records", f"--model_dir={root}/model",
      f"--spiece_model_file={data_helpers.train_tiny_spm()}",
      f"--model_config_path={root}/config.json", "--do_train", "--do_eval",
      "--max_seq_length=16", "--train_batch_size=16",
      f"--eval_batch_size={len(dev_rows)}",
      f"--train_steps={2 * len(train_rows) // 16}", "--warmup_steps=3",
      "--learning_rate=3e-3", "--iterations=100", "--dropout=0",
      "--dropatt=0", "--seed=1", "--shuffle_buffer=16"])
  api.run_classifier(**finetune_flags.resolve_classifier(flag_values))
  line = (root / "model" / "eval_results.txt").read_text().splitlines()[0]
  return float(dict(kv.split("=", 1) for kv in line.split("\t")
                    if "=" in kv)["eval_accuracy"])


def test_label_sorted_training_set_learns_like_a_shuffled_copy(tmp_path):
  rng = random.Random(0)
  train, dev = cue_word_rows(240, rng), cue_word_rows(60, rng)
  by_label = sorted(train, key=lambda row: row[0])
  mixed = rng.sample(train, len(train))
  shuffled = dev_accuracy(tmp_path / "shuffled", mixed, dev)
  ordered = dev_accuracy(tmp_path / "sorted", by_label, dev)
  # Measured: 0.93-0.98 either way over seeds 1-3; 0.50 (the majority
  # rate) for the sorted set written in file order.
  assert shuffled > 0.85
  assert ordered > 0.85 and ordered >= shuffled - 0.05, (ordered, shuffled)
