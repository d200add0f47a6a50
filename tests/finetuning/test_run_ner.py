"""run_ner.py end to end on a tiny model: training records, fine-tuning,
evaluation, the predictions file (scored here by a transcription of
conlleval's own counting, which must agree with our figures), the same
bits for the same command, the loaded tagger, and one-line errors."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures
from tests import in_process
from tests.data_helpers import train_tiny_spm
from xlnet.finetuning import api
from xlnet.finetuning.tagging import schemes
from xlnet.flags import finetuning as finetune_flags
from xlnet.programs import run_ner

# The engine runs eagerly (tests/conftest.py).
pytestmark = pytest.mark.eager

PEOPLE = ["Botchan", "Red Shirt", "Porcupine", "Kiyo"]
PLACES = ["Tokyo", "Matsuyama", "Shikoku"]
FILL = "the boy went to school and saw a cat in the morning".split()


def _sentences(rng, n, long_every=0):
  """n random sentences of (word, IOB2 tag); every `long_every`-th one
  long enough for several windows, with a word of many pieces."""
  out = []
  for i in range(n):
    words, tags = [], []
    for _ in range(40 if long_every and i % long_every == 0 else
                   rng.integers(3, 9)):
      r = rng.random()
      if r < 0.3:
        kind, name = ("PER", rng.choice(PEOPLE)) if r < 0.15 else (
            "LOC", rng.choice(PLACES))
        for j, word in enumerate(name.split()):
          words.append(word)
          tags.append(("B-" if j == 0 else "I-") + kind)
      else:
        words.append(rng.choice(FILL + ["Kakurezaki-Matsudaira-no"]))
        tags.append("O")
    out.append((words, tags))
  return out


def _iob1(tags):
  """IOB2 tags as IOB1 (B- only between two chunks of one type)."""
  out, prev = [], "O"
  for tag in tags:
    if tag.startswith("B-") and prev[2:] != tag[2:]:
      tag = "I-" + tag[2:]
    out.append(tag)
    prev = tag
  return out


def _write_conll(path, sentences, iob1=False):
  with open(path, "w", encoding="utf-8") as f:
    for i, (words, tags) in enumerate(sentences):
      if i % 5 == 0:
        f.write("-DOCSTART- -X- -X- O\n\n")
      for word, tag in zip(words, _iob1(tags) if iob1 else tags):
        f.write(f"{word} NN O {tag}\n")
      f.write("\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
  root = tmp_path_factory.mktemp("ner")
  rng = np.random.default_rng(0)
  _write_conll(root / "train.txt", _sentences(rng, 120))
  _write_conll(root / "dev.txt", _sentences(rng, 30, long_every=7),
               iob1=True)
  return root


def _flags(data, tmp_path, *extra):
  config = classifier_fixtures.write_config(
      str(tmp_path), classifier_fixtures.PROGRAM_CONFIG)
  base = ["run_ner.py", f"--train_file={data / 'train.txt'}",
          f"--eval_file={data / 'dev.txt'}",
          f"--spiece_model_file={train_tiny_spm()}",
          f"--output_dir={tmp_path / 'records'}",
          f"--model_dir={tmp_path / 'model'}",
          f"--predict_dir={tmp_path / 'pred'}",
          f"--model_config_path={config}",
          "--max_seq_length=24", "--window_stride=8", "--train_steps=12",
          "--train_batch_size=8", "--learning_rate=1e-2", "--warmup_steps=0",
          "--iterations=6", "--eval_batch_size=16", "--predict_batch_size=16"]
  return finetune_flags.resolve_ner(run_ner.parse_flags(base + list(extra)))


def _split(tag):
  """conlleval.pl: the tag's prefix and type, split at the first '-'."""
  prefix, _, kind = tag.partition("-")
  return prefix, kind


def _end_of_chunk(prev, tag, prev_type, kind):
  """conlleval.pl's endOfChunk (IOB1, IOB2 and its E- rules)."""
  ends = (prev, tag) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"),
                         ("E", "E"), ("E", "I"), ("E", "O")}
  return ends or (prev not in ("O", ".") and prev_type != kind)


def _start_of_chunk(prev, tag, prev_type, kind):
  """conlleval.pl's startOfChunk."""
  starts = (prev, tag) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"),
                           ("E", "E"), ("E", "I"), ("O", "E")}
  return starts or (tag not in ("O", ".") and prev_type != kind)


def conlleval(lines):
  """conlleval.pl's counts of a file whose last two columns are the gold
  and the guessed tag (a blank line: a boundary): (correct chunks,
  guessed, gold, correct tokens, tokens)."""
  correct = guessed = gold = right = tokens = 0
  in_correct = False
  last = ("O", "", "O", "")  # gold prefix, type, guessed prefix, type
  for line in lines + [""]:
    fields = line.split()
    g, gt, p, pt = (*_split(fields[-2]), *_split(fields[-1])) if fields \
        else ("O", "", "O", "")
    end_g = _end_of_chunk(last[0], g, last[1], gt)
    end_p = _end_of_chunk(last[2], p, last[3], pt)
    start_g = _start_of_chunk(last[0], g, last[1], gt)
    start_p = _start_of_chunk(last[2], p, last[3], pt)
    if in_correct:
      if end_g and end_p and last[1] == last[3]:
        in_correct = False
        correct += 1
      elif end_g != end_p or gt != pt:
        in_correct = False
    if start_g and start_p and gt == pt:
      in_correct = True
    gold += start_g
    guessed += start_p
    if fields:
      tokens += 1
      right += fields[-2] == fields[-1]
    last = (g, gt, p, pt)
  return correct, guessed, gold, right, tokens


# On every TensorFlow: it runs every module of the tagging package.
@pytest.mark.tf_version
def test_train_eval_predict_and_the_predictions_file(data, tmp_path):
  out = api.run_ner(**_flags(data, tmp_path, "--do_train", "--do_eval",
                             "--do_predict"))
  assert len(out["train"]) == 12
  [(checkpoint, scores)] = out["eval"]
  assert checkpoint.endswith("model.ckpt-12")
  path = out["predict"]
  assert path == str(tmp_path / "pred" / "dev.predictions.txt")
  with open(data / "dev.txt", encoding="utf-8") as f:
    source = f.read().splitlines()
  with open(path, encoding="utf-8") as f:
    lines = f.read().splitlines()
  # The input's lines, each with one more column: the predicted tag, in
  # the dev file's scheme (IOB1: no B- after O).
  assert len(lines) == len(source)
  for before, after in zip(source, lines):
    assert after.rsplit(" ", 1)[0] == before if before else after == ""
  predicted = [line.split()[-1] for line in lines if line
               and not line.startswith("-DOCSTART-")]
  assert len(predicted) == scores["num_tokens"]
  assert not any(p.startswith("B-") and prev == "O"
                 for prev, p in zip(["O"] + predicted, predicted))
  # conlleval's counts of the file give our figures; its token accuracy
  # counts the -DOCSTART- lines (O, O) too.
  correct, guessed, gold, right, tokens = conlleval(lines)
  assert (correct, guessed, gold) == (scores["num_correct"],
                                      scores["num_predicted"],
                                      scores["num_gold"])
  assert gold > 0 and guessed > 0 and correct > 0, scores
  docs = sum(line.startswith("-DOCSTART-") for line in lines)
  assert (right - docs, tokens - docs) == (
      round(scores["accuracy"] * scores["num_tokens"]), scores["num_tokens"])
  with open(tmp_path / "model" / "eval_results_dev.txt.json") as f:
    assert json.load(f)["f1"] == scores["f1"]

  # The loaded tagger tags raw sentences as the predictions file does (its
  # tags written in the file's scheme, IOB1), the long one (40 words, in
  # several windows) too.
  blocks = [[]]
  for line in lines:
    if line and not line.startswith("-DOCSTART-"):
      blocks[-1].append(line.split())
    elif blocks[-1]:
      blocks.append([])
  sentences = [[f[0] for f in b] for b in blocks[:3]]
  assert len(sentences[0]) >= 40  # dev.txt's first: several windows
  tagger = api.load_tagger(str(tmp_path / "model"))
  got = tagger.predict([" ".join(sentences[0])] + sentences[1:])
  assert [schemes.convert(t, "iob1") for t in got] == [
      [f[-1] for f in b] for b in blocks[:3]]


@pytest.mark.slow
def test_the_same_command_gives_the_same_bits(data, tmp_path):
  runs = []
  for name in ("a", "b"):
    api.run_ner(**_flags(data, tmp_path / name, "--do_train",
                         "--train_steps=4"))
    reader = tf.train.load_checkpoint(str(tmp_path / name / "model"))
    runs.append(reader.get_tensor("model/tagging/logit/kernel"))
  np.testing.assert_array_equal(runs[0], runs[1])


def test_malformed_training_file_is_one_line(data, tmp_path):
  bad = tmp_path / "bad.txt"
  bad.write_text("EU NNP B-ORG\nrejects VBZ\n", encoding="utf-8")
  result = in_process.run_program(
      "run_ner.py", f"--train_file={bad}", "--do_train",
      f"--spiece_model_file={train_tiny_spm()}",
      f"--output_dir={tmp_path / 'r'}", f"--model_dir={tmp_path / 'm'}",
      "--model_config_path=" + classifier_fixtures.write_config(
          str(tmp_path), classifier_fixtures.PROGRAM_CONFIG),
      cwd=in_process.REPO)
  assert result.returncode == 2, result.stderr[-2000:]  # bad input
  assert result.stderr.strip().splitlines()[-1] == (
      f"run_ner.py: error: {bad}:2: expected 3 columns (as line 1), got 2")
  assert not os.path.exists(tmp_path / "m" / "checkpoint")
