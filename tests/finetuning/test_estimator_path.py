"""The TPUEstimator path of fine-tuning (xlnet/finetuning/finetune.py:
`_estimator_train`, `_estimator_predict`), run on the CPU: TPUEstimator with
`use_tpu=False` runs the same model_fn (scaffold_fn warm start,
CrossShardOptimizer, static padded predict batches) without a TPU.

TPUEstimator's CPU mode still builds the TPU collective `CrossReplicaSum`
(in `CrossShardOptimizer` and in the update guard), which has no CPU
kernel; the tests give it one shard's value, the identity, and count the
calls, so the cross-shard optimizer path is the one that runs.

A tiny random "pretrained" checkpoint (classifier_fixtures) is fine-tuned
with the classification head; the checks use numbers computed outside the
code under test: the pretrained values, Adam written out in NumPy on the
gradient of the head's bias (softmax minus one-hot, from logits the engine's
predictor computes), and the engine's `predict`, a separate implementation
of inference.
"""
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import checkpoint_fixtures
from tests import classifier_fixtures as fx
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning import finetune
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.classifier import task as classifier_task
from xlnet.training import config as train_config
from xlnet.training import optimizer as optimizer_lib
from xlnet.training import progress
from xlnet.training import tpu_estimator

if tpu_estimator.tpu_estimator() is None:
  pytest.skip("TPUEstimator was removed in TensorFlow 2.16; this is "
              f"{tf.__version__}", allow_module_level=True)

# Eager outside the estimator (the engine's predictor runs eagerly; the
# estimator builds its own graphs).
pytestmark = [pytest.mark.eager, pytest.mark.tpu_estimator]

N_CLASS, LENGTH, BATCH, LR = 2, 8, 4, 0.01
SCOPE = "classification_est"
BIAS = f"model/{SCOPE}/logit/bias"
TASK = finetune_config.ClassifierConfig(
    task_name="sst-2", cls_scope="est", data_dir="unused",
    output_dir="unused", spiece_model_file="unused")


def examples(n, seed):
  """n feature rows of the classifier's layout, with an `id` column."""
  rng = np.random.default_rng(seed)
  return {"input_ids": rng.integers(5, 32, (n, LENGTH)).astype(np.int32),
          "segment_ids": np.zeros((n, LENGTH), np.int32),
          "input_mask": np.zeros((n, LENGTH), np.float32),
          "label_ids": (np.arange(n) % N_CLASS).astype(np.int32),
          "id": np.arange(n, dtype=np.int32)}


# 3 of 4 labels 1: the bias gradient is about +-0.25, far above Adam's
# epsilon and float32 rounding.
TRAIN = dict(examples(BATCH, seed=1),
             label_ids=np.array([1, 0, 1, 1], np.int32))


def train_input_fn(params):
  """The same BATCH examples every step (so each step's batch is known)."""
  assert params["batch_size"] == BATCH
  return tf.data.Dataset.from_tensor_slices(TRAIN).repeat().batch(
      params["batch_size"], drop_remainder=True)


def finite_input_fn(rows):
  def input_fn(params):
    return tf.data.Dataset.from_tensor_slices(rows).batch(params["batch_size"])
  return input_fn


def engine_config(model_dir, init_checkpoint, train_steps):
  """The run as the programs build it, but `use_tpu=False`: TPUEstimator
  then runs its model_fn on the CPU. Plain Adam (weight decay 0), no
  warmup, clipping out of reach, one step per loop, a checkpoint per
  step."""
  return finetune_config.EngineConfig(
      checkpoint=train_config.CheckpointConfig(
          model_dir=model_dir, init_checkpoint=init_checkpoint, save_steps=1,
          max_save=0),
      optimizer=train_config.OptimizerConfig(
          learning_rate=LR, train_steps=train_steps, warmup_steps=0,
          clip=1e6, weight_decay=0.0),
      layout=train_config.BatchLayout(train_batch_size=BATCH),
      train=train_config.TrainConfig(iterations=1, seed=1),
      device=train_config.DeviceConfig(use_tpu=False, master=""))


@pytest.fixture(scope="module")
def cross_replica_sums():
  """CrossReplicaSum over one shard (the identity) on the CPU; yields the
  list of tensors summed."""
  # pylint: disable-next=g-direct-tensorflow-import,import-outside-toplevel
  from tensorflow.python.tpu.ops import tpu_ops
  summed = []

  def one_shard(x, group_assignment, name=None):
    del group_assignment
    summed.append(x)
    return tf.identity(x, name=name)

  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(tpu_ops.gen_tpu_ops, "cross_replica_sum", one_shard)
    yield summed


@pytest.fixture(scope="module")
def setup(tmp_path_factory, cross_replica_sums):
  """A tiny pretrained checkpoint, its head, and a model_dir fine-tuned for
  2 steps through `_estimator_train`."""
  root = tmp_path_factory.mktemp("estimator")
  config_path = fx.write_config(str(root / "pretrained"))
  pretrained = fx.write_checkpoint(
      str(root / "pretrained" / "model.ckpt-100"),
      fx.random_values(fx.pretrained_shapes(), seed=3))
  model = fx.head_model(config_path, dropout=0.0, dropatt=0.0)
  head = classifier_task.head_fn(TASK, model, N_CLASS)
  run = engine_config(str(root / "finetuned"), pretrained, train_steps=2)
  finetune._estimator_train(  # pylint: disable=protected-access
      run, train_input_fn, lambda f, t: head(f, t)["total_loss"],
      classifier_head.NEW_VARIABLE_PATTERNS)
  # CrossShardOptimizer summed every gradient (plus the update guard's flag).
  assert len(cross_replica_sums) > 20
  def outputs_fn(features, is_training):
    """The head's per-example outputs (as `classifier_task.run_inference`)
    and the example ids."""
    out = dict(head(features, is_training), id=features["id"])
    del out["total_loss"]
    return out

  return dict(root=root, pretrained=pretrained, head=head, run=run,
              outputs_fn=outputs_fn)


def ckpt(model_dir, step):
  return os.path.join(model_dir, f"model.ckpt-{step}")


def trained(setup, step):
  """The fixture's checkpoint of `step`."""
  return ckpt(setup["run"].model_dir, step)


values = checkpoint_fixtures.read_checkpoint


def engine_logits(setup, prefix):
  """The logits of TRAIN at a checkpoint, by the engine's predictor."""
  return finetune.predict(setup["run"], prefix, finite_input_fn(TRAIN),
                          setup["outputs_fn"], BATCH)["logits"]


def test_warm_start_loads_the_backbone_and_adds_the_head(setup):
  pretrained = values(setup["pretrained"])
  first = values(trained(setup, 0))
  assert first["global_step"] == 0
  backbone = [n for n in pretrained if n.startswith("model/transformer/")
              and n != "model/transformer/mask_emb/mask_emb"]
  assert len(backbone) > 20
  for name in backbone:
    np.testing.assert_array_equal(first[name], pretrained[name], err_msg=name)
  for name in fx.head_shapes(SCOPE, N_CLASS):
    assert name in first and name not in pretrained, name
    assert first[name].shape == tuple(fx.head_shapes(SCOPE, N_CLASS)[name])


def _bias_gradient(logits):
  """d mean-cross-entropy / d logit bias of TRAIN at these logits."""
  p = np.exp(logits - logits.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  return (p - np.eye(N_CLASS)[TRAIN["label_ids"]]).mean(0)


def test_two_steps_are_adam_on_the_head_bias(setup):
  """tf.compat.v1 Adam (bias-corrected, eps 1e-8) on the gradient of the
  head's bias, with lr(step) = LR * (1 - step / 2), in NumPy."""
  b1, b2, eps = optimizer_lib.BETA_1, optimizer_lib.BETA_2, 1e-8
  bias = values(trained(setup, 0))[BIAS].astype(np.float64)
  m = v = np.zeros_like(bias)
  for step in (0, 1):
    g = _bias_gradient(engine_logits(setup, trained(setup, step)).astype(
        np.float64))
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    t = step + 1
    lr = LR * (1 - step / 2) * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    bias = bias - lr * m / (np.sqrt(v) + eps)
    got = values(trained(setup, step + 1))
    assert got["global_step"] == step + 1
    np.testing.assert_allclose(got[BIAS], bias, rtol=1e-5, atol=1e-7)
  # Not a no-op: the first step alone moves each bias by about LR.
  np.testing.assert_allclose(
      np.abs(values(trained(setup, 1))[BIAS]
             - values(trained(setup, 0))[BIAS]), LR, rtol=1e-4)


def test_predict_returns_every_example_once_in_order(setup):
  """7 examples in static batches of 4 (one padded): 7 rows, in order,
  equal to the engine's predict of the same checkpoint."""
  rows = examples(7, seed=2)
  prefix = trained(setup, 2)
  got = finetune._estimator_predict(  # pylint: disable=protected-access
      setup["run"], prefix, finite_input_fn(rows), setup["outputs_fn"], 4)
  want = finetune.predict(setup["run"], prefix, finite_input_fn(rows),
                          setup["outputs_fn"], 4)
  np.testing.assert_array_equal(got["id"], np.arange(7))
  assert set(got) == set(want)
  for name in want:
    assert got[name].shape == want[name].shape, name
    np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5,
                               err_msg=name)
  assert np.ptp(got["logits"][:, 1] - got["logits"][:, 0]) > 1e-4


def test_a_second_run_resumes_from_the_saved_step(setup, tmp_path):
  model_dir = str(tmp_path / "finetuned")
  shutil.copytree(setup["run"].model_dir, model_dir)
  # (The checkpoint saver writes the step it starts at again on creating
  # its session, so only steps 0 and 1 are left alone.)
  saved = {name: os.stat(os.path.join(model_dir, name)).st_mtime_ns
           for name in os.listdir(model_dir)
           if name.startswith(("model.ckpt-0.", "model.ckpt-1."))}
  assert len(saved) == 2 * 3  # .index, .data-*, .meta
  run = engine_config(model_dir, setup["pretrained"], train_steps=4)
  finetune._estimator_train(  # pylint: disable=protected-access
      run, train_input_fn, lambda f, t: setup["head"](f, t)["total_loss"],
      classifier_head.NEW_VARIABLE_PATTERNS)
  latest = tf.train.latest_checkpoint(model_dir)
  assert latest.endswith("model.ckpt-4")
  last = values(latest)
  assert last["global_step"] == 4
  # Adam's step counter went on too: b1^(4 + 1), not b1^(2 + 1) of a run
  # restarted from the pretrained checkpoint.
  np.testing.assert_allclose(last["beta1_power"], optimizer_lib.BETA_1 ** 5,
                             rtol=1e-6)
  # Steps 0-1 were not trained (and saved) again; step 3 starts from step
  # 2's weights, not from the warm start.
  assert {name: os.stat(os.path.join(model_dir, name)).st_mtime_ns
          for name in saved} == saved
  np.testing.assert_array_equal(values(ckpt(model_dir, 2))[BIAS],
                                values(trained(setup, 2))[BIAS])
  assert np.abs(values(ckpt(model_dir, 3))[BIAS] -
                values(trained(setup, 2))[BIAS]).max() < 2 * LR


def test_a_non_finite_loss_stops_the_run_with_the_last_finite_state(
    setup, tmp_path):
  """The TPUEstimator path shares the engine's guard (`tpu_estimator.train`
  with `guarded_train_op`): a non-finite loss skips the update and stops the
  run with `Diverged` after that step; whatever the estimator saved holds
  the last finite weights. It used to go on to `train_steps`."""
  run = engine_config(str(tmp_path / "nan"), setup["pretrained"],
                      train_steps=3)
  head = setup["head"]
  with pytest.raises(progress.Diverged, match="non-finite loss"):
    finetune._estimator_train(  # pylint: disable=protected-access
        run, train_input_fn,
        lambda f, t: head(f, t)["total_loss"] * float("nan"),
        classifier_head.NEW_VARIABLE_PATTERNS)
  steps = sorted(int(name.split("-")[1].split(".")[0])
                 for name in os.listdir(run.model_dir)
                 if name.startswith("model.ckpt-") and name.endswith(".index"))
  assert steps[-1] < 3, steps  # stopped after the first skipped update
  first, last = values(ckpt(run.model_dir, 0)), values(
      ckpt(run.model_dir, steps[-1]))
  for name, value in first.items():
    if name != "global_step" and value.dtype.kind == "f":
      assert np.isfinite(last[name]).all(), name
      np.testing.assert_array_equal(last[name], value, err_msg=name)
