"""Multi-label classification's parts against hand-worked examples and
NumPy written from the definitions (`classifier/multi_label.py`): label
sets read from tables (sizes 0 to 3; malformed cells named by file and
line), their multi-hot records, the sigmoid cross-entropy head, micro and
macro F1, the threshold chosen on dev, the predictions file and the
settings refused. The whole run (training, evaluation, prediction, the
loaded model, resume, SavedModel) is tests/finetuning/test_multi_label_run.py.
"""
import csv
import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import data_helpers
from tests.finetuning import test_classifier_heads as heads
from xlnet import validation
from xlnet.data import prepro_utils
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning.classifier import datasets as cd
from xlnet.finetuning.classifier import features as cf
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.classifier import multi_label as ml
from xlnet.finetuning.classifier import multi_label_task
from xlnet.finetuning.classifier import task as classifier_task
from xlnet.training import warm_start

# Label sets of sizes 0 to 3; the labels sort as art, politics, sport, tech.
TRAIN = [("a match and a vote", "sport|politics"),
         ("nothing to see", ""),
         ("paint the phones", "tech|art|sport"),
         ("the election", "politics"),
         ("a new phone", " tech ")]
LABELS = ["art", "politics", "sport", "tech"]


def write_tables(root, train=TRAIN, dev=(("a goal", "sport"),),
                 kind="tsv", delimiter="|"):
  """{train,dev}.{kind} with the columns text_a, label."""
  os.makedirs(root, exist_ok=True)
  sep = "\t" if kind == "tsv" else ","
  for split, rows in (("train", train), ("dev", dev)):
    with open(os.path.join(root, f"{split}.{kind}"), "w") as f:
      f.write(f"text_a{sep}label\n")
      for text, labels in rows:
        cell = f'"{labels}"' if kind == "csv" else labels
        f.write(f"{text}{sep}{cell.replace('|', delimiter)}\n")
  return str(root)


def processor(data_dir, kind="tsv", **options):
  return cd.make_processor(kind, multi_label=True, **options).resolve(
      data_dir)


################################################################################
# Label sets read from tables.
################################################################################
@pytest.mark.quick
def test_label_sets_of_every_size_read_in_label_order(tmp_path):
  data = write_tables(tmp_path)
  p = processor(data)
  assert p.get_labels() == LABELS  # the train file's, sorted
  assert [e.label for e in p.get_examples(data, "train")] == [
      ("politics", "sport"), (), ("art", "sport", "tech"), ("politics",),
      ("tech",)]
  # CSV with "," between the labels (the cell quoted) and --label_list.
  csv_dir = write_tables(tmp_path / "csv", kind="csv", delimiter=",")
  p = processor(csv_dir, "csv", label_delimiter=",",
                label_list=["tech", "sport", "politics", "art"])
  assert [e.label for e in p.get_examples(csv_dir, "train")][2] == (
      "tech", "sport", "art")
  assert p.options()["multi_label"] and p.options()["label_delimiter"] == ","
  # A single-label table's options (the records' key) are as before.
  single = cd.make_processor("tsv").resolve(data)
  assert single.options() == {"label": "label", "text_a": "text_a",
                              "text_b": None, "header": True,
                              "labels": sorted({l.strip() for _, l in TRAIN})}


@pytest.mark.quick
@pytest.mark.parametrize("cell,message", [
    ("sport||art", "label set 'sport||art' holds an empty label (a delimiter "
                   "'|' at an end or two in a row)"),
    ("sport|", "label set 'sport|' holds an empty label"),
    ("art|sport|art", "label set 'art|sport|art' names 'art' twice"),
    ("sport|music", "label 'music' is not one of the labels ['art', "
                    "'politics', 'sport', 'tech']"),
])
def test_a_malformed_label_set_names_its_file_and_line(tmp_path, cell,
                                                       message):
  data = write_tables(tmp_path, dev=[("fine", "art"), ("bad", cell)])
  with pytest.raises(ValueError) as info:
    processor(data).get_examples(data, "dev")
  assert str(info.value).startswith(
      f"{tmp_path}/dev.tsv line 3: {message}")
  assert "\n" not in str(info.value)


@pytest.mark.quick
def test_a_malformed_train_file_is_refused_while_reading_its_labels(
    tmp_path):
  data = write_tables(tmp_path, train=TRAIN + [("x", "art||tech")])
  with pytest.raises(ValueError, match=rf"^{tmp_path}/train.tsv line 7: "
                     "label set 'art||tech' holds an empty label"):
    processor(data)
  with pytest.raises(ValueError, match=r"^--label_list: label 'a\|b' is "
                     r"empty or contains the --label_delimiter '\|'$"):
    processor(write_tables(tmp_path / "ok"), label_list=["a|b", "c"])


################################################################################
# Records.
################################################################################
def _read_records(path):
  return [tf.train.Example.FromString(r.numpy()).features.feature
          for r in tf.data.TFRecordDataset(path)]


@pytest.mark.eager
@pytest.mark.tf_version
def test_records_hold_the_multi_hot_label_sets(tmp_path):
  data = write_tables(tmp_path / "data")
  p = processor(data)
  spm = data_helpers.train_tiny_spm()
  path, n = cf.prepare_records(
      p, data, "train", str(tmp_path / "records"), 8,
      prepro_utils.load_sp_model(spm, "--spiece_model_file"), spm, False)
  assert n == 5
  got = [list(f["label_ids"].int64_list.value) for f in _read_records(path)]
  # art, politics, sport, tech.
  assert got == [[0, 1, 1, 0], [0, 0, 0, 0], [1, 0, 1, 1], [0, 1, 0, 0],
                 [0, 0, 0, 1]]
  with open(path + ".json") as f:
    key = json.load(f)["key"]
  assert key["options"]["multi_label"] is True
  assert key["options"]["label_delimiter"] == "|"
  # The evaluation input: every record once, then fakes of all-0 labels.
  input_fn = cf.input_fn_builder(path, 8, False, False, num_examples=5,
                                 n_labels=4)
  batches = list(input_fn({"batch_size": 4}))
  labels = np.concatenate([b["label_ids"].numpy() for b in batches])
  real = np.concatenate([b["is_real_example"].numpy() for b in batches])
  assert labels.dtype == np.int32 and labels.tolist() == got + [[0] * 4] * 3
  assert real.tolist() == [1] * 5 + [0] * 3


################################################################################
# The head: sigmoid cross-entropy over the labels.
################################################################################
@pytest.mark.quick
@pytest.mark.tf_version
def test_head_loss_is_numpys_binary_cross_entropy(tmp_path):
  n_labels, scope = 4, "classification_tsv"
  shapes = dict(fx.pretrained_shapes(), **fx.head_shapes(scope, n_labels))
  params = fx.random_values(shapes, seed=3)
  model = fx.head_model(fx.write_config(str(tmp_path)))
  ckpt = fx.write_checkpoint(str(tmp_path / "model.ckpt"), params)
  labels = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 0]], np.int32)
  feats = heads.features(labels)
  with tf.Graph().as_default():
    out = classifier_head.get_head_outputs(
        model.xlnet_config, model.run_config(False),
        {k: tf.constant(v) for k, v in feats.items()}, n_labels, "tsv",
        multi_label=True)
    warm_start.init_from_checkpoint(ckpt, False)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      got = sess.run(out)
  pooled = heads.reference_summary(params, feats, "last", True)
  logits = (pooled @ params[f"model/{scope}/logit/kernel"]
            + params[f"model/{scope}/logit/bias"])
  # -(y log s + (1 - y) log(1 - s)), s = 1 / (1 + e^-x), mean over labels.
  s = 1 / (1 + np.exp(-logits))
  bce = -(labels * np.log(s) + (1 - labels) * np.log(1 - s))
  np.testing.assert_allclose(got["logits"], logits, **heads.TOL)
  np.testing.assert_allclose(got["per_example_loss"], bce.mean(1),
                             **heads.TOL)
  np.testing.assert_allclose(got["total_loss"], bce.mean(), **heads.TOL)


################################################################################
# Metrics and the threshold.
################################################################################
@pytest.mark.quick
def test_micro_and_macro_f1_by_hand():
  gold = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 0], [0, 1, 1]])
  pred = np.array([[1, 1, 0], [0, 0, 0], [1, 1, 0], [0, 0, 1]])
  # Per label (TP, FP, FN): (2, 0, 0) F1 1; (1, 1, 1) 2/4; (1, 0, 1) 2/3.
  assert ml.macro_f1(gold, pred) == pytest.approx((1 + 1 / 2 + 2 / 3) / 3)
  # Pooled: TP 4, FP 1, FN 2: 8 / 11.
  assert ml.micro_f1(gold, pred) == pytest.approx(8 / 11)
  assert ml.exact_match(gold, pred) == 0.5  # rows 1 and 2
  # A label neither gold nor predicted counts 0 in the macro mean.
  assert ml.macro_f1([[0, 1]], [[0, 1]]) == 0.5
  assert ml.micro_f1([[0, 1]], [[0, 1]]) == 1.0
  assert ml.micro_f1([[0, 0]], [[0, 0]]) == 0.0


def _logit(p):
  return np.log(p / (1 - p))


@pytest.mark.quick
def test_threshold_chosen_on_dev_by_hand():
  # Probabilities (gold): .881 (1), .269 (0), .622 (0), .550 (1). Below
  # .269 every label is predicted: F1 4/6; between .269 and .550: 3
  # predicted, 2 right, 4/5; between .550 and .622: 2/4; then 2/3, 0.
  logits = np.array([[2.0, -1.0], [0.5, 0.2]])
  t, f1 = ml.choose_threshold(logits, [[1, 0], [0, 1]])
  s = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
  assert t == pytest.approx((s(-1.0) + s(0.2)) / 2, abs=1e-12)
  assert f1 == pytest.approx(0.8)
  # Ties: .1 (1), .3 (0), .7 (0), .9 (1): every label (t = .05) and the
  # top one (t = .8) both give 2/3; .8 is nearer 0.5.
  t, f1 = ml.choose_threshold(_logit(np.array([[.1, .3, .7, .9]])),
                              [[1, 0, 0, 1]])
  assert (t, f1) == (pytest.approx(.8), pytest.approx(2 / 3))
  # No gold label at all: every threshold scores 0; the one nearest 0.5.
  t, f1 = ml.choose_threshold(_logit(np.array([[.2, .45, .8]])),
                              [[0, 0, 0]])
  assert (t, f1) == (pytest.approx(.625), 0.0)


def _brute_force(logits, gold):
  """Every threshold between two neighbouring probabilities (and beyond
  both ends) tried one by one: (threshold, micro F1) of the best, nearest
  0.5 on ties, then the lower."""
  p = 1 / (1 + np.exp(-np.asarray(logits, np.float64)))
  values = sorted(set(p.ravel().tolist()))
  candidates = ([values[0] / 2] + [(a + b) / 2 for a, b in
                                   zip(values, values[1:])]
                + [(values[-1] + 1) / 2])
  scored = []
  for t in candidates:
    tp = fp = fn = 0
    for prob, g in zip(p.ravel(), np.asarray(gold).ravel()):
      tp += prob > t and g == 1
      fp += prob > t and g == 0
      fn += prob <= t and g == 1
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    scored.append((-f1, abs(t - 0.5), t))
  best = min(scored)
  return best[2], -best[0]


@pytest.mark.quick
def test_threshold_equals_trying_every_one():
  rng = np.random.RandomState(0)
  for _ in range(5):
    # Rounded logits: equal probabilities across labels and examples.
    logits = np.round(rng.normal(0, 2, [12, 5]), 1)
    gold = rng.rand(12, 5) < 0.4
    t, f1 = ml.choose_threshold(logits, gold)
    want_t, want_f1 = _brute_force(logits, gold)
    assert f1 == pytest.approx(want_f1, abs=1e-12)
    assert t == pytest.approx(want_t, abs=1e-9)
    assert ml.micro_f1(gold, ml.predict(logits, t)) == pytest.approx(f1)


@pytest.mark.quick
def test_evaluation_metrics_leave_out_fake_examples():
  logits = np.array([[3.0, -3.0], [-3.0, 3.0], [3.0, 3.0], [9.0, 9.0]])
  gold = np.array([[1, 0], [1, 1], [1, 1], [0, 0]])
  got = ml.evaluation_metrics(logits, gold, [1, 1, 1, 0], [0.5, 1.5, 2.5, 9],
                              0.5)
  # Real rows predict {0}, {1}, {0, 1} against {0}, {0, 1}, {0, 1}:
  # pooled TP 4, FP 0, FN 1: 8/9; label 0 (TP 2, FN 1) 4/5, label 1
  # (TP 2) 1; rows 0 and 2 exact; the fake row's loss left out.
  assert got == {"eval_micro_f1": pytest.approx(8 / 9),
                 "eval_macro_f1": pytest.approx((4 / 5 + 1) / 2),
                 "eval_exact_match": pytest.approx(2 / 3),
                 "eval_threshold": 0.5, "eval_loss": pytest.approx(1.5),
                 "num_examples": 3}


################################################################################
# Predictions.
################################################################################
@pytest.mark.quick
def test_predictions_file_holds_label_sets(tmp_path):
  labels = ["art", "politics", "sport"]
  logits = np.array([[2.0, -2.0, 0.1], [-1.0, -1.0, -1.0], [3.0, 3.0, 3.0],
                     [0.0, 0.1, -0.1]], np.float32)
  sets = multi_label_task.predictions(logits, labels, "|", 0.5)
  assert sets == ["art|sport", "", "art|politics|sport", "politics"]
  # At 0.6 (logit 0.405): only logits above it.
  assert multi_label_task.predictions(logits, labels, ";", 0.6) == [
      "art", "", "art;politics;sport", ""]
  tsv, json_path, _ = classifier_task.write_predictions(
      str(tmp_path), "tsv", ["0", "1", "2", "3"], logits, labels,
      predictions=sets)
  with open(tsv) as f:
    assert f.read() == ("index\tprediction\n0\tart|sport\n1\t\n"
                        "2\tart|politics|sport\n3\tpolitics\n")
  with open(json_path) as f:
    assert np.array_equal(np.array(json.load(f), np.float32), logits)


################################################################################
# Settings.
################################################################################
def _config(**values):
  return finetune_config.ClassifierConfig(
      **dict(dict(task_name="tsv", data_dir="d", output_dir="o",
                  spiece_model_file="s", multi_label=True), **values))


@pytest.mark.quick
@pytest.mark.parametrize("values,message", [
    (dict(task_name="sst-2"), "--multi_label is for your own tables: "
     "--task_name=tsv or csv, got sst-2"),
    (dict(is_regression=True), "--multi_label and --is_regression exclude "
     "each other"),
    (dict(long_documents="memory"), "--multi_label reads texts as one "
     "sequence: it takes --long_documents=truncate, not memory (not built)"),
    (dict(label_delimiter=" "), "--label_delimiter=' ': expected a visible "
     "separator of the labels in a cell, e.g. '|'"),
    (dict(multi_label_threshold=1.0), "--multi_label_threshold=1.0 must be "
     "in (0, 1)"),
    (dict(multi_label_threshold="half"), "--multi_label_threshold=half: "
     "expected a number or dev (chosen on the dev split)"),
])
def test_settings_refused_in_one_line(values, message):
  with pytest.raises(ValueError) as info:
    _config(**values)
  assert str(info.value) == message
  _config(multi_label_threshold="dev")
  _config(multi_label_threshold=0.3, task_name="CSV", label_delimiter=",")
  assert validation.number_or_word("multi_label_threshold", "0.25") == 0.25


################################################################################
# docs/finetuning.md's worked example: the data set it builds.
################################################################################
def _worked_example():
  """The Python blocks of docs/finetuning.md's worked example: the set's
  builder and the scoring of the test file."""
  doc = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__)))), "docs", "finetuning.md")
  with open(doc, encoding="utf-8") as f:
    section = f.read().split("### A worked example", 1)[1].split("\n## ")[0]
  return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.quick
def test_the_worked_examples_set_holds_label_sets_of_0_to_3_topics(
    tmp_path, monkeypatch):
  """On a stand-in of the chain's data (topic/{train,dev}.csv, two
  books): three tables of label sets of every size 0 to 3, of the five
  topics, each text the first 30 words of its topics' articles (test's
  from dev.csv only) or a book's passage."""
  topics = ["business", "entertainment", "politics", "sport", "tech"]
  chain = tmp_path / "data" / "chain"
  (chain / "topic").mkdir(parents=True)
  (chain / "corpus" / "gutenberg").mkdir(parents=True)
  for split, n in (("train", 5), ("dev", 2)):
    with open(chain / "topic" / f"{split}.csv", "w", newline="") as f:
      writer = csv.writer(f)
      writer.writerow(["label", "text_a"])
      for topic in topics:
        for i in range(n):
          writer.writerow([topic, " ".join(f"{split}-{topic}-{i}-{w}"
                                           for w in range(40))])
  for book in ("a", "b"):
    (chain / "corpus" / "gutenberg" / f"{book}.txt").write_text(
        " ".join(f"{book}{w}" for w in range(100)))
  monkeypatch.chdir(tmp_path)
  build, score = _worked_example()
  exec(compile(build, "finetuning.md", "exec"), {})  # pylint: disable=exec-used
  sizes = set()
  for split, n in (("train", 2000), ("dev", 400), ("test", 400)):
    with open(tmp_path / "data" / "multi" / f"{split}.tsv") as f:
      lines = f.read().splitlines()
    assert lines[0] == "text_a\tlabel" and len(lines) == n + 1
    for line in lines[1:]:
      text, cell = line.split("\t")
      labels = cell.split("|") if cell else []
      assert labels == sorted(set(labels)) and set(labels) <= set(topics)
      sizes.add(len(labels))
      words = text.split()
      if not labels:  # a book's passage of 30 words
        assert len(words) == 30 and words[0][0] in "ab"
        continue
      assert len(words) == 30 * len(labels)
      source = {"test": "dev"}.get(split, "train")
      assert {w.split("-")[1] for w in words} == set(labels)
      assert {w.split("-")[0] for w in words} == {source}
      # An article's first 30 words.
      assert all(int(w.split("-")[3]) < 30 for w in words)
  assert sizes == {0, 1, 2, 3}

  # The scoring block: the test file's own sets score 1; one set
  # emptied and one label added elsewhere: by hand.
  with open(tmp_path / "data" / "multi" / "test.tsv") as f:
    rows = [line.rstrip("\n").split("\t") for line in f][1:]
  first = next(i for i, r in enumerate(rows) if r[1].count("|") == 1)
  other = next(i for i, r in enumerate(rows) if r[1] == "")
  n_gold = sum(len(r[1].split("|")) for r in rows if r[1])
  cells = [r[1] for r in rows]
  cells[first], cells[other] = "", "tech"
  for name, column in (("same", [r[1] for r in rows]), ("edited", cells)):
    (tmp_path / f"{name}.tsv").write_text("index\tprediction\n" + "".join(
        f"{i}\t{c}\n" for i, c in enumerate(column)))
  printed = []
  for name in ("same", "edited"):
    monkeypatch.setattr("sys.argv", ["score.py", str(tmp_path / f"{name}.tsv")])
    monkeypatch.setattr("builtins.print", printed.append)
    exec(compile(score, "finetuning.md", "exec"), {})  # pylint: disable=exec-used
  assert printed[0] == "micro F1 1.000, macro F1 1.000, exact match 1.000"
  # TP n_gold - 2, FP 1, FN 2; 398 of 400 sets exact.
  micro = 2 * (n_gold - 2) / (2 * (n_gold - 2) + 3)
  assert printed[1].startswith(f"micro F1 {micro:.3f}, macro F1 ")
  assert printed[1].endswith(f"exact match {398 / 400:.3f}")
