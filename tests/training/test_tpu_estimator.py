"""Tests for xlnet/training/tpu_estimator.py: the TPU wrapping of
get_train_op and the TPUEstimator run config (the optimizer's numbers:
test_optimizer.py)."""
import pytest
import tensorflow as tf

from xlnet.training import config
from xlnet.training import tpu_estimator

pytestmark = pytest.mark.tf_version


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_use_tpu_wraps_the_optimizer_for_cross_shard_reduction(weight_decay):
  with tf.Graph().as_default() as graph:
    w = tf.compat.v1.get_variable("w", initializer=[1.0])
    tpu_estimator.get_train_op(
        config.OptimizerConfig(learning_rate=0.1, train_steps=100,
                               weight_decay=weight_decay),
        tf.reduce_sum(w), use_tpu=True)
    op_types = {op.type for op in graph.get_operations()}
  assert "CrossReplicaSum" in op_types


DEVICE = config.DeviceConfig(use_tpu=False, master="")


def configure_tpu(model_dir, **seed):
  """configure_tpu of 2 hosts x 4 cores, 50 steps per loop, 700 steps,
  --save_steps unset, --max_save=3."""
  return tpu_estimator.configure_tpu(
      DEVICE, config.CheckpointConfig(model_dir, save_steps=None, max_save=3),
      num_shards=2 * 4, iterations=50, train_steps=700, **seed)


@pytest.mark.tpu_estimator
def test_configure_tpu(tmp_path):
  run_config = configure_tpu(str(tmp_path))
  assert run_config.tpu_config.iterations_per_loop == 50
  assert run_config.tpu_config.num_shards == 8
  assert run_config.keep_checkpoint_max == 3
  assert run_config.save_checkpoints_steps == 700  # unset: save at the end
  assert run_config.model_dir == str(tmp_path)
  assert run_config.tf_random_seed is None
  # --seed (the GPU trainer's graph-level seed) seeds the TPU trainer too.
  run_config = configure_tpu(str(tmp_path), seed=7)
  assert run_config.tf_random_seed == 7


@pytest.mark.skipif(tpu_estimator.tpu_estimator() is not None,
                    reason="TPUEstimator is available")
def test_configure_tpu_explains_missing_estimator(tmp_path):
  with pytest.raises(ValueError, match="needs TPUEstimator, which was "
                     "removed in TensorFlow 2.16"):
    configure_tpu(str(tmp_path))
