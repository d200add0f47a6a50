"""A multi-label run end to end, in this process: `api.run_classifier` with
`multi_label=True` fine-tunes a tiny random model on a table of label sets
of sizes 0 to 3, evaluates it and writes its predictions at the threshold
chosen on the dev split; those numbers are recomputed here with NumPy from
the written logits. The loaded model predicts the written label sets; the
SavedModel serves the sigmoid of the same logits; a run resumed from its
step-2 checkpoint, and the same command run again, end with the same bits.
"""
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import data_helpers
from tests.finetuning import test_multi_label as parts
from xlnet import model as model_lib
from xlnet.finetuning import api
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning.classifier import loaded_model
from xlnet.interop import saved_model
from xlnet.training import config as train_config

pytestmark = pytest.mark.eager

CONFIG = dict(fx.TINY_CONFIG, n_token=1000)  # the tiny SentencePiece model's
WORDS = {"art": "paint", "politics": "vote", "sport": "goal", "tech": "phone"}


def _rows(n, seed):
  """n (text, label set) rows: each label's cue word when it is in the
  set (sets of 0 to 3 labels, in the label list's order), then filler."""
  rng = np.random.RandomState(seed)
  rows = []
  for i in range(n):
    chosen = sorted(rng.choice(sorted(WORDS), i % 4, replace=False))
    text = " ".join([WORDS[l] for l in chosen] + ["the day", str(i)])
    rows.append((text, "|".join(chosen)))
  return rows


def _write_task(root):
  data = os.path.join(root, "data")
  parts.write_tables(data, _rows(16, 0), _rows(8, 1))
  with open(os.path.join(data, "test.tsv"), "w") as f:
    f.write("text_a\n" + "".join(f"{t}\n" for t, _ in _rows(5, 2)))
  return data


def _configs(root, model_dir, **task):
  """(task, model, engine) of the run: 4 steps of 4 examples, a
  checkpoint every 2, the threshold chosen on dev."""
  task = finetune_config.ClassifierConfig(**dict(dict(
      task_name="tsv", data_dir=os.path.join(root, "data"),
      output_dir=os.path.join(root, "records"),
      spiece_model_file=os.path.join(root, "spiece.model"),
      max_seq_length=16, eval_batch_size=4, predict_batch_size=4,
      predict_dir=os.path.join(root, "predict"), multi_label=True,
      multi_label_threshold="dev"), **task))
  model = finetune_config.ModelConfig(model_lib.XLNetConfig(
      json_path=os.path.join(root, "pretrained", "xlnet_config.json")))
  engine = finetune_config.EngineConfig(
      checkpoint=train_config.CheckpointConfig(
          model_dir=os.path.join(root, model_dir), save_steps=2,
          init_checkpoint=os.path.join(root, "pretrained")),
      optimizer=train_config.OptimizerConfig(learning_rate=1e-2,
                                             train_steps=4),
      layout=train_config.BatchLayout(train_batch_size=4))
  return task, model, engine


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  """The run's root: trained into model/, evaluated and predicted on dev
  (predict/), and predicted on test (predict_test/)."""
  root = str(tmp_path_factory.mktemp("multi_label"))
  pretrained = os.path.join(root, "pretrained")
  fx.write_config(pretrained, CONFIG)
  fx.write_checkpoint(os.path.join(pretrained, "model.ckpt-100"),
                      fx.random_values(fx.pretrained_shapes(CONFIG)))
  shutil.copy(data_helpers.train_tiny_spm(), os.path.join(root,
                                                          "spiece.model"))
  _write_task(root)
  api.run_classifier(*_configs(root, "model"), do_train=True, do_eval=True,
                     do_predict=True)
  api.run_classifier(*_configs(root, "model", eval_split="test",
                               predict_dir=os.path.join(root,
                                                        "predict_test")),
                     do_predict=True)
  return root


def _gold(root, split="dev"):
  rows = parts.processor(os.path.join(root, "data")).get_examples(
      os.path.join(root, "data"), split)
  return np.array([[label in e.label for label in sorted(WORDS)]
                   for e in rows])


def _written(root, predict_dir="predict"):
  """(logits, predicted label sets) of a predictions directory."""
  with open(os.path.join(root, predict_dir, "tsv.logits.json")) as f:
    logits = np.array(json.load(f), np.float32)
  with open(os.path.join(root, predict_dir, "tsv.tsv")) as f:
    lines = f.read().splitlines()
  assert lines[0] == "index\tprediction"
  return logits, [tuple(filter(None, line.split("\t")[1].split("|")))
                  for line in lines[1:]]


def _sets(logits, threshold):
  p = 1 / (1 + np.exp(-logits.astype(np.float64)))
  return [tuple(l for l, on in zip(sorted(WORDS), row) if on)
          for row in p > threshold]


def _f1(tp, fp, fn):
  return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


@pytest.mark.tf_version
def test_evaluation_and_predictions_at_the_threshold_chosen_on_dev(run):
  logits, predicted = _written(run)
  gold = _gold(run)
  threshold, _ = parts._brute_force(logits, gold)  # pylint: disable=protected-access
  model_dir = os.path.join(run, "model")
  with open(os.path.join(model_dir, "multi_label_thresholds.json")) as f:
    recorded = json.load(f)
  assert recorded["model.ckpt-4"] == pytest.approx(threshold, abs=1e-6)
  assert predicted == _sets(logits, recorded["model.ckpt-4"])
  assert sorted(set(gold.sum(1))) == [0, 1, 2, 3]  # the sets' sizes
  with open(os.path.join(model_dir, "eval_results.txt")) as f:
    line = [l for l in f if l.startswith("eval\t") and "step=4" in l][0]
  results = dict(field.split("=", 1)
                 for field in line.rstrip("\n").split("\t")[1:])
  pred = np.array([[l in s for l in sorted(WORDS)] for s in predicted])
  tp, fp, fn = ((gold & pred).sum(0), (~gold & pred).sum(0),
                (gold & ~pred).sum(0))
  assert float(results["eval_micro_f1"]) == pytest.approx(
      _f1(tp.sum(), fp.sum(), fn.sum()), abs=1e-6)
  assert float(results["eval_macro_f1"]) == pytest.approx(
      np.mean([_f1(*c) for c in zip(tp, fp, fn)]), abs=1e-6)
  assert float(results["eval_threshold"]) == pytest.approx(threshold,
                                                           abs=1e-6)
  assert results["num_examples"] == "8"
  # The test split's predictions take the threshold chosen on dev.
  test_logits, test_predicted = _written(run, "predict_test")
  assert len(test_predicted) == 5
  assert test_predicted == _sets(test_logits, recorded["model.ckpt-4"])


@pytest.mark.tf_version
def test_the_loaded_model_predicts_the_written_label_sets(run):
  model = loaded_model.load(os.path.join(run, "model"))
  logits, predicted = _written(run)
  with open(os.path.join(run, "data", "dev.tsv")) as f:
    texts = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
  out = model.predict(texts, batch_size=3)
  np.testing.assert_allclose(out["logits"], logits, rtol=0, atol=1e-5)
  assert out["labels"] == predicted
  np.testing.assert_allclose(out["probabilities"],
                             1 / (1 + np.exp(-logits.astype(np.float64))),
                             rtol=0, atol=1e-6)
  model.threshold = 0.999999
  assert model.predict(texts[:3], batch_size=3)["labels"] == [()] * 3


def _variables(model_dir):
  prefix = tf.train.latest_checkpoint(model_dir)
  return {n: tf.train.load_variable(prefix, n)
          for n, _ in tf.train.list_variables(prefix)}


def test_resumed_and_repeated_runs_give_the_same_bits(run):
  """A run killed after its step-2 checkpoint (that checkpoint and the
  records a kill leaves) and resumed, and the same command in a new
  model_dir, end with the bits of the uninterrupted run."""
  full = os.path.join(run, "model")
  cut = os.path.join(run, "cut")
  os.makedirs(cut)
  for name in os.listdir(full):
    if name.startswith("model.ckpt-2.") or name in (
        "batch_layout.json", "head.json", "config.json", "task.json",
        "spiece.model"):
      shutil.copy(os.path.join(full, name), cut)
  with open(os.path.join(cut, "checkpoint"), "w") as f:
    f.write('model_checkpoint_path: "model.ckpt-2"\n')
  steps = api.run_classifier(*_configs(run, "cut"), do_train=True)["train"]
  assert [s for s, _ in steps] == [3, 4]
  api.run_classifier(*_configs(run, "again"), do_train=True)
  want = _variables(full)
  for other in (cut, os.path.join(run, "again")):
    got = _variables(other)
    assert sorted(got) == sorted(want)
    for name, value in want.items():
      np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_the_saved_model_serves_sigmoid_probabilities(run, tmp_path):
  model_dir = os.path.join(run, "model")
  out = str(tmp_path / "serving")
  assert saved_model.export_saved_model(model_dir, None, out) == (
      "classification")
  features = loaded_model.load(model_dir).features(
      [t for t, _ in _rows(8, 1)])
  serve = tf.saved_model.load(out).signatures["serving_default"]
  got = serve(**{k: tf.constant(v) for k, v in features.items()
                 if k != "label_ids"})
  logits, _ = _written(run)
  np.testing.assert_allclose(got["logits"].numpy(), logits, rtol=0,
                             atol=1e-5)
  np.testing.assert_allclose(got["probabilities"].numpy(),
                             1 / (1 + np.exp(-logits.astype(np.float64))),
                             rtol=0, atol=1e-6)
