"""Long documents through `api.run_classifier` on a tiny IMDB: the records
hold every document's pieces once and in order, window by window; training
in memory mode stopped and resumed equals one run, bit for bit; the
prediction files' logits are the loaded model's."""
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import data_helpers
from xlnet import model as model_lib
from xlnet.data import prepro_utils
from xlnet.finetuning import api
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.long_documents import windows
from xlnet.finetuning.vectors import config as vectors_config
from xlnet.training import config as train_config

pytestmark = pytest.mark.eager
CONFIG = dict(fx.TINY_CONFIG, n_layer=1, n_token=1000)
LENGTH, MAX_WINDOWS = 12, 2
WORDS = ("the film was long and the plot went nowhere but the cast tried "
         "hard in every scene of it").split()


def write_imdb(root):
  """A tiny aclImdb: reviews of 2 to 40 words (1 to 3+ windows)."""
  rng = np.random.RandomState(0)
  for split, n in (("train", 8), ("test", 5)):
    for i in range(n):
      label = ("neg", "pos")[i % 2]
      folder = os.path.join(root, "imdb", split, label)
      os.makedirs(folder, exist_ok=True)
      words = rng.choice(WORDS, size=2 + 38 * i // max(n - 1, 1))
      with open(os.path.join(folder, f"{i}_{i % 10}.txt"), "w") as f:
        f.write(" ".join(words) + (" great" if label == "pos" else " bad"))


@pytest.fixture(name="inputs", scope="module")
def fixture_inputs(tmp_path_factory):
  root = str(tmp_path_factory.mktemp("long_docs"))
  write_imdb(root)
  shutil.copy(data_helpers.train_tiny_spm(), os.path.join(root,
                                                          "spiece.model"))
  fx.write_config(os.path.join(root, "pretrained"), CONFIG)
  fx.write_checkpoint(os.path.join(root, "pretrained", "model.ckpt"),
                      fx.random_values(fx.pretrained_shapes(CONFIG)))
  return root


def configs(root, work, train_steps, **long_documents):
  """The run's (task, model, engine)."""
  task = finetune_config.ClassifierConfig(
      task_name="imdb", data_dir=os.path.join(root, "imdb"),
      output_dir=os.path.join(root, "records"),
      spiece_model_file=os.path.join(root, "spiece.model"),
      max_seq_length=LENGTH, eval_batch_size=2, predict_batch_size=2,
      max_windows=MAX_WINDOWS, predict_dir=os.path.join(work, "predict"),
      **long_documents)
  model = finetune_config.ModelConfig(model_lib.XLNetConfig(
      json_path=os.path.join(root, "pretrained", "xlnet_config.json")))
  engine = finetune_config.EngineConfig(
      checkpoint=train_config.CheckpointConfig(
          model_dir=os.path.join(work, "model"),
          init_checkpoint=os.path.join(root, "pretrained", "model.ckpt"),
          save_steps=2, max_save=0),
      optimizer=train_config.OptimizerConfig(learning_rate=1e-3,
                                             train_steps=train_steps),
      layout=train_config.BatchLayout(train_batch_size=2),
      train=train_config.TrainConfig(iterations=1))
  return task, model, engine


def as_killed_after(source, target, step):
  """`target` as a run into `source` killed right after saving `step`
  leaves it: that checkpoint, the state file and the run's records."""
  os.makedirs(target)
  for name in os.listdir(source):
    if name.startswith(f"model.ckpt-{step}.") or name.endswith(".json"):
      shutil.copy(os.path.join(source, name), target)
  with open(os.path.join(target, "checkpoint"), "w") as f:
    f.write(f'model_checkpoint_path: "model.ckpt-{step}"\n')


def test_memory_mode_resumes_exactly_and_predicts_as_loaded(inputs):
  settings = dict(long_documents="memory", bptt_windows=2, mem_len=8)
  whole = os.path.join(inputs, "whole")
  api.run_classifier(*configs(inputs, whole, 4, **settings), do_train=True)
  split = os.path.join(inputs, "split")
  as_killed_after(os.path.join(whole, "model"), os.path.join(split, "model"),
                  2)
  out = api.run_classifier(*configs(inputs, split, 4, **settings),
                           do_train=True, do_eval=True, do_predict=True)

  ours = tf.train.latest_checkpoint(os.path.join(split, "model"))
  theirs = tf.train.latest_checkpoint(os.path.join(whole, "model"))
  assert ours.endswith("-4") and theirs.endswith("-4")
  for name, _ in tf.train.list_variables(theirs):
    np.testing.assert_array_equal(tf.train.load_variable(ours, name),
                                  tf.train.load_variable(theirs, name),
                                  err_msg=name)
  assert out["eval"][0][1]["eval_accuracy"] >= 0.0

  task = json.load(open(os.path.join(split, "model", "task.json")))
  assert {k: task[k] for k in settings} == settings
  with open(os.path.join(split, "predict", "imdb.logits.json")) as f:
    logits = np.array(json.load(f), np.float32)
  examples = api.classifier_task.make_task_processor(configs(
      inputs, split, 4)[0]).get_examples(os.path.join(inputs, "imdb"), "dev")
  loaded = api.load_classifier(os.path.join(split, "model"))
  got = loaded.predict([e.text_a for e in examples], batch_size=3)
  np.testing.assert_allclose(got["logits"], logits, rtol=1e-5, atol=1e-6)

  # extract_features from the fine-tuned model_dir (its config.json,
  # spiece.model and casing): the last layer's <cls> through the memory,
  # projected and put through the head's logit layer, is the prediction.
  texts = os.path.join(inputs, "dev.txt")
  with open(texts, "w") as f:
    f.write("".join(e.text_a + "\n" for e in examples))
  vectors = os.path.join(inputs, "cls.npy")
  api.extract_features(vectors_config.VectorsConfig(
      input_file=texts, output_file=vectors,
      init_checkpoint=os.path.join(split, "model"), max_seq_length=LENGTH,
      max_windows=MAX_WINDOWS, long_documents="memory", mem_len=8))
  value = lambda name: tf.train.load_variable(ours, f"model/{name}")  # noqa: E731
  summary = np.tanh(np.load(vectors)[:, -1] @ value(
      "sequnece_summary/summary/kernel") + value(
          "sequnece_summary/summary/bias"))
  np.testing.assert_allclose(
      summary @ value("classification_imdb/logit/kernel")
      + value("classification_imdb/logit/bias"), logits, rtol=1e-5,
      atol=1e-5)


@pytest.mark.tf_version
def test_the_records_hold_each_piece_once_in_order(inputs):
  """The dev records of the run above (windows mode reads the same
  layout): each document's windows, read in order, give its pieces."""
  work = os.path.join(inputs, "windows")
  task, _, _ = configs(inputs, work, 1, long_documents="windows")
  processor = api.classifier_task.make_task_processor(task)
  sp_model = prepro_utils.load_sp_model(task.spiece_model_file, "spm")
  path, count = classifier_features.prepare_records(
      processor, task.data_dir, "dev", task.output_dir, LENGTH, sp_model,
      task.spiece_model_file, False,
      layout=api.classifier_task.record_layout(task))
  examples = processor.get_examples(task.data_dir, "dev")
  assert count == len(examples) == 5
  tokenize = classifier_features.make_tokenize_fn(sp_model, False)
  parse = api.classifier_task.record_layout(task).parser(LENGTH, False)
  for example, record in zip(examples, tf.data.TFRecordDataset(path)):
    doc = {k: v.numpy() for k, v in parse(record).items()}
    real = np.flatnonzero(doc["window_mask"])
    seen = np.concatenate([doc["input_ids"][w][windows.piece_positions(
        doc["segment_ids"][w], LENGTH, 0)][:-1] for w in real])
    assert seen.tolist() == tokenize(example.text_a)[
        :MAX_WINDOWS * (LENGTH - 2)]
    assert doc["label_ids"] == ["neg", "pos"].index(example.label)
