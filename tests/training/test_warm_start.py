"""Tests for xlnet/training/warm_start.py: init_from_checkpoint loads model
variables by name (prefix, DIR/latest, DIR), as a TPU scaffold, and refuses
a checkpoint that lacks a variable, holds another shape or is damaged."""
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import checkpoint_fixtures as ckpt_fx
from xlnet.training import config
from xlnet.training import tpu_estimator
from xlnet.training import warm_start

pytestmark = pytest.mark.tf_version


def build_model_vars(shapes):
  """Zero-initialized variables plus optimizer state, as a trainer has them."""
  variables = {n: tf.compat.v1.get_variable(
      n, shape=s, initializer=tf.compat.v1.zeros_initializer())
               for n, s in shapes.items()}
  tpu_estimator.get_train_op(
      config.OptimizerConfig(learning_rate=0.1, train_steps=100,
                             weight_decay=0.01),
      tf.add_n([tf.reduce_sum(v) for v in variables.values()]))
  return variables


@pytest.mark.parametrize("form", ["prefix", "latest", "dir"])
@pytest.mark.parametrize("global_vars", [False, True])
def test_init_from_checkpoint_loads_by_name(tmp_path, form, global_vars):
  values = ckpt_fx.random_values(5)
  model_dir = str(tmp_path / "pre")
  ckpt_fx.save_checkpoints(model_dir, [ckpt_fx.random_values(4), values],
                           with_optimizer=False)
  path = {"prefix": os.path.join(model_dir, "model.ckpt-2"),
          "latest": os.path.join(model_dir, "latest"),
          "dir": model_dir}[form]
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    variables = build_model_vars(ckpt_fx.MODEL_VARS)
    scaffold_fn = warm_start.init_from_checkpoint(path,
                                                  global_vars=global_vars)
    sess.run(tf.compat.v1.global_variables_initializer())
    loaded = sess.run(variables)
  assert scaffold_fn is None
  for n in ckpt_fx.MODEL_VARS:
    np.testing.assert_array_equal(loaded[n], values[n])


def test_init_from_checkpoint_tpu_scaffold_and_noop(tmp_path):
  values = ckpt_fx.random_values(6)
  ckpt_fx.save_checkpoints(str(tmp_path), [values], with_optimizer=False)
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    variables = build_model_vars(ckpt_fx.MODEL_VARS)
    assert warm_start.init_from_checkpoint(None) is None
    scaffold_fn = warm_start.init_from_checkpoint(str(tmp_path), use_tpu=True)
    sess.run(tf.compat.v1.global_variables_initializer())
    untouched = sess.run(variables)
    assert isinstance(scaffold_fn(), tf.compat.v1.train.Scaffold)
    sess.run(tf.compat.v1.global_variables_initializer())
    loaded = sess.run(variables)
  for n in ckpt_fx.MODEL_VARS:
    assert not untouched[n].any()
    np.testing.assert_array_equal(loaded[n], values[n])


def test_init_from_checkpoint_errors(tmp_path):
  ckpt_fx.save_checkpoints(str(tmp_path), [ckpt_fx.random_values(7)],
                           with_optimizer=False)
  latest = os.path.join(str(tmp_path), "latest")
  extra = dict(ckpt_fx.MODEL_VARS,
               **{"model/new/kernel": (2,), "model/new2/bias": (1,)})
  with tf.Graph().as_default():
    build_model_vars(extra)
    with pytest.raises(ValueError, match=r"lacks 2 \(model/new/kernel, "
                                         r"model/new2/bias\) model variables"):
      warm_start.init_from_checkpoint(latest)
    # Explicitly allowed new variables (a fine-tuning head) are fine.
    warm_start.init_from_checkpoint(latest, allow_missing=[r"^model/new"])
  reshaped = dict(ckpt_fx.MODEL_VARS, **{"model/lm_loss/bias": (5,)})
  with tf.Graph().as_default():
    build_model_vars(reshaped)
    with pytest.raises(ValueError, match=r"shape mismatch.*model/lm_loss/bias "
                                         r"\[5\] vs \[4\]"):
      warm_start.init_from_checkpoint(latest)
  with pytest.raises(ValueError, match="init_checkpoint=.*empty does not "
                     "exist; train first"):
    warm_start.init_from_checkpoint(str(tmp_path / "empty" / "latest"))


def test_init_from_truncated_checkpoint_names_the_file(tmp_path):
  prefix, = ckpt_fx.save_checkpoints(str(tmp_path / "in"),
                                     [ckpt_fx.random_values(0)])
  name = ckpt_fx.truncate_data(prefix)
  with pytest.raises(ValueError, match=name):
    build_model_vars(ckpt_fx.MODEL_VARS)
    warm_start.init_from_checkpoint(prefix)
