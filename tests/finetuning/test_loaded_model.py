"""A fine-tuned classifier's model_dir alone gives a model that predicts in
memory (`xlnet/finetuning/classifier/loaded_model.py`): fine-tuning records
its config, task and SentencePiece model there; the loaded weights are the
checkpoint's; its logits for the dev texts are those `run_classifier`'s
prediction wrote to `sst-2.logits.json`, its labels those of `sst-2.tsv`."""
import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from tests.finetuning import test_python_api as doc_test
from xlnet import model as model_lib
from xlnet.finetuning import api
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning.classifier import loaded_model
from xlnet.training import checkpoint_tools
from xlnet.training import config as train_config

pytestmark = pytest.mark.eager


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
  """A tiny SST-2 classifier fine-tuned 2 steps from a random pretrained
  model, with the dev split's predictions written; returns its root."""
  root = str(tmp_path_factory.mktemp("loaded"))
  doc_test._write_inputs(root)  # pylint: disable=protected-access
  task = finetune_config.ClassifierConfig(
      task_name="sst-2", data_dir=os.path.join(root, "glue", "SST-2"),
      output_dir=os.path.join(root, "records"),
      spiece_model_file=os.path.join(root, "spiece.model"),
      max_seq_length=16, predict_batch_size=4,
      predict_dir=os.path.join(root, "predict"))
  model = finetune_config.ModelConfig(
      xlnet_config=model_lib.XLNetConfig(
          json_path=os.path.join(root, "pretrained", "xlnet_config.json")))
  engine = finetune_config.EngineConfig(
      checkpoint=train_config.CheckpointConfig(
          model_dir=os.path.join(root, "model"),
          init_checkpoint=os.path.join(root, "pretrained")),
      optimizer=train_config.OptimizerConfig(learning_rate=1e-2,
                                             train_steps=2),
      layout=train_config.BatchLayout(train_batch_size=4))
  api.run_classifier(task, model, engine, do_train=True, do_predict=True)
  return root


def _dev_texts(root):
  with open(os.path.join(root, "glue", "SST-2", "dev.tsv")) as f:
    return [line.split("\t")[0] for line in f.read().splitlines()[1:]]


def test_finetuning_records_the_model_in_its_model_dir(finetuned):
  model_dir = os.path.join(finetuned, "model")
  with open(os.path.join(model_dir, "config.json")) as f:
    assert json.load(f) == doc_test.CONFIG
  with open(os.path.join(model_dir, "task.json")) as f:
    task = json.load(f)
  assert task["task_name"] == "sst-2" and task["label_list"] == ["0", "1"]
  assert task["max_seq_length"] == 16 and task["uncased"] is False
  assert task["pairs"] is False  # SST-2: one sentence per example
  with open(os.path.join(model_dir, "spiece.model"), "rb") as a, open(
      os.path.join(finetuned, "spiece.model"), "rb") as b:
    assert a.read() == b.read()


@pytest.mark.tf_version
def test_in_memory_predictions_equal_the_written_ones(finetuned):
  model = loaded_model.load(os.path.join(finetuned, "model"))
  texts = _dev_texts(finetuned)
  out = model.predict(texts, batch_size=4)
  with open(os.path.join(finetuned, "predict", "sst-2.logits.json")) as f:
    written = np.array(json.load(f), np.float32)
  with open(os.path.join(finetuned, "predict", "sst-2.tsv")) as f:
    labels = [line.split("\t")[1] for line in f.read().splitlines()[1:]]
  assert out["logits"].shape == (len(texts), 2)
  np.testing.assert_allclose(out["logits"], written, rtol=0, atol=1e-6)
  assert out["labels"] == labels
  # Softmax written out for two classes: p1 = 1 / (1 + exp(l0 - l1)).
  l64 = written.astype(np.float64)
  np.testing.assert_allclose(out["probabilities"][:, 1],
                             1 / (1 + np.exp(l64[:, 0] - l64[:, 1])),
                             rtol=0, atol=1e-6)
  # Another batch size and order: the same logits per text.
  again = model.predict(texts[::-1], batch_size=3)
  np.testing.assert_allclose(again["logits"][::-1], written, rtol=0,
                             atol=1e-5)


@pytest.mark.tf_version
def test_the_loaded_weights_are_the_checkpoints(finetuned):
  model_dir = os.path.join(finetuned, "model")
  model = loaded_model.load(model_dir)
  prefix = tf.train.latest_checkpoint(model_dir)
  assert model.checkpoint == prefix and prefix.endswith("model.ckpt-2")
  stored = {n for n, _ in tf.train.list_variables(prefix)
            if not checkpoint_tools.is_model_state(n)}
  loaded = model.variables()
  assert set(loaded) == stored
  assert "model/classification_sst-2/logit/kernel" in loaded
  for name, value in loaded.items():
    np.testing.assert_array_equal(value, tf.train.load_variable(prefix, name),
                                  err_msg=name)


def test_a_pair_for_a_single_text_model_is_refused(finetuned):
  model = loaded_model.load(os.path.join(finetuned, "model"))
  with pytest.raises(ValueError, match=re.escape(
      "texts[1] is a pair but sst-2 was fine-tuned on single texts; give "
      "strings")):
    model.features(["a fine film", ("a fine film", "a dull plot")])


def test_a_directory_without_its_records_is_refused_in_one_line(
    finetuned, tmp_path):
  pretrained = os.path.join(finetuned, "pretrained")
  with pytest.raises(ValueError, match=r"holds no config\.json"):
    loaded_model.load(pretrained)
