"""Tests for xlnet/training/optimizer.py through the graph-mode optimizer
(`tpu_estimator.get_train_op`): schedule, clipping, weight decay, layer-wise
decay, Adam/AdamW steps, slots.

Every expected number is computed here, in NumPy/Python, from the schedule and update rules in docs/training.md (and
TF's documented Adam for the `weight_decay == 0` path).
"""
import math
import re

import numpy as np
import pytest
import tensorflow as tf

from xlnet.training import config
from xlnet.training import optimizer
from xlnet.training import tpu_estimator

pytestmark = pytest.mark.tf_version

BETA1, BETA2 = 0.9, 0.999
# The betas as the Adam kernel gets them, float32 constants: 1 - 0.999f is
# 0.00099998713, not 0.001 (a relative 1.3e-5 in every v increment, which
# accumulates over steps).
KERNEL_BETA1, KERNEL_BETA2 = float(np.float32(BETA1)), float(np.float32(BETA2))


def make_config(**overrides):
  """An OptimizerConfig with small defaults (no clipping, no decay)."""
  values = dict(learning_rate=0.1, warmup_steps=0, train_steps=100,
                decay_method="poly", min_lr_ratio=0.0, weight_decay=0.0,
                adam_epsilon=1e-6, clip=1e9, lr_layer_decay_rate=1.0,
                n_layer=2)
  values.update(overrides)
  return config.OptimizerConfig(**values)


def np_learning_rate(step, lr, warmup, total, method, min_ratio):
  """The warmup + poly/cos schedule, written out in plain Python."""
  if step < warmup:
    return step / warmup * lr
  frac = min(step - warmup, total - warmup) / (total - warmup)
  if method == "poly":
    end = lr * min_ratio
    return end + (lr - end) * (1.0 - frac)
  return lr * ((1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * frac)) +
               min_ratio)


def make_vars(shapes, seed=0):
  """Creates float32 variables {name: shape} with random initial values."""
  rng = np.random.RandomState(seed)
  return {n: tf.compat.v1.get_variable(
      n, initializer=rng.randn(*s).astype(np.float32)) for n, s in
          shapes.items()}


def linear_loss(variables, coefs):
  """loss = sum_v <coef_v, v>, so that d loss / d v = coef_v."""
  return tf.add_n([tf.reduce_sum(coefs[n] * v) for n, v in variables.items()])


def var_by_name(name):
  """The global variable called `name`."""
  matches = [v for v in tf.compat.v1.global_variables()
             if v.name == name + ":0"]
  assert len(matches) == 1, name
  return matches[0]


def first_moment_slot(var_name, weight_decay):
  """The first Adam moment of `var_name` (ours or TF Adam's)."""
  return var_by_name(var_name + ("/adam_m" if weight_decay else "/Adam"))


################################################################################
# Learning rate.
################################################################################
@pytest.mark.quick
@pytest.mark.parametrize("method", ["poly", "cos"])
def test_learning_rate_schedule(method):
  opt = make_config(learning_rate=0.4, warmup_steps=5, train_steps=20,
                     decay_method=method, min_lr_ratio=0.1)
  steps = [0, 1, 3, 4, 5, 6, 12, 19, 20, 25]
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    w = tf.compat.v1.get_variable("w", initializer=[1.0, 2.0])
    _, lr, _ = tpu_estimator.get_train_op(opt, tf.reduce_sum(w))
    step_value = tf.compat.v1.placeholder(tf.int64, [])
    set_step = tf.compat.v1.assign(
        tf.compat.v1.train.get_global_step(), step_value)
    sess.run(tf.compat.v1.global_variables_initializer())
    got = []
    for step in steps:
      sess.run(set_step, {step_value: step})
      got.append(sess.run(lr))
  want = [np_learning_rate(s, 0.4, 5, 20, method, 0.1) for s in steps]
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_unknown_decay_method_is_rejected():
  with tf.Graph().as_default():
    w = tf.compat.v1.get_variable("w", initializer=[1.0])
    with pytest.raises(ValueError, match=re.escape(
        "--decay_method=exp: value should be one of <poly|cos>")):
      tpu_estimator.get_train_op(make_config(decay_method="exp"),
                               tf.reduce_sum(w))


################################################################################
# Clipping, weight decay exclusion, layer-wise decay.
################################################################################
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
@pytest.mark.parametrize("clip", [1.0, 100.0])
def test_clipping_and_gnorm(weight_decay, clip):
  coefs = {"a": np.array([3.0, -4.0, 1.0], np.float32),
           "b": np.array([[2.0, 0.5], [-1.0, 2.0]], np.float32)}
  norm = np.sqrt(sum((c.astype(np.float64) ** 2).sum() for c in coefs.values()))
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    variables = make_vars({n: c.shape for n, c in coefs.items()})
    train_op, _, gnorm = tpu_estimator.get_train_op(
        make_config(clip=clip, weight_decay=weight_decay),
        linear_loss(variables, coefs))
    sess.run(tf.compat.v1.global_variables_initializer())
    _, got_norm = sess.run([train_op, gnorm])
    # After one step the first moment is (1 - beta1) * clipped gradient.
    clipped = {n: sess.run(first_moment_slot(n, weight_decay)) / (1 - BETA1)
               for n in coefs}
  np.testing.assert_allclose(got_norm, norm, rtol=1e-6)
  scale = min(1.0, clip / norm)
  for n, c in coefs.items():
    np.testing.assert_allclose(clipped[n], c * scale, rtol=1e-5)
  clipped_norm = np.sqrt(sum((g ** 2).sum() for g in clipped.values()))
  assert clipped_norm <= min(clip, norm) * (1 + 1e-5)


def test_given_grads_and_vars_are_used_instead_of_the_loss():
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    w = tf.compat.v1.get_variable("w", initializer=[1.0, 2.0])
    given = tf.constant([0.5, -0.25])
    train_op, _, gnorm = tpu_estimator.get_train_op(
        make_config(), 100.0 * tf.reduce_sum(w), grads_and_vars=[(given, w)])
    sess.run(tf.compat.v1.global_variables_initializer())
    _, got_norm = sess.run([train_op, gnorm])
    moment = sess.run(var_by_name("w/Adam"))
  np.testing.assert_allclose(got_norm, np.hypot(0.5, 0.25), rtol=1e-6)
  np.testing.assert_allclose(moment, (1 - BETA1) * np.array([0.5, -0.25]),
                             rtol=1e-6)


DECAYED = ["model/transformer/r_w_bias", "model/transformer/r_r_bias",
           "model/transformer/r_s_bias",
           "model/transformer/layer_0/rel_attn/q/kernel",
           "model/transformer/word_embedding/lookup_table"]
NOT_DECAYED = ["model/transformer/layer_0/ff/LayerNorm/gamma",
               "model/transformer/layer_1/ff/layer_1/bias",
               "model/transformer/layer_1/rel_attn/layer_norm/beta",
               "model/lm_loss/bias"]


def test_weight_decay_skips_exactly_the_excluded_names():
  lr, wd = 0.1, 0.01
  # Constant learning rate; zero gradients, so the update is the decay alone.
  opt = make_config(learning_rate=lr, weight_decay=wd, min_lr_ratio=1.0)
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    variables = make_vars({n: (2, 3) for n in DECAYED + NOT_DECAYED})
    loss = 0.0 * tf.add_n([tf.reduce_sum(v) for v in variables.values()])
    train_op, _, _ = tpu_estimator.get_train_op(opt, loss)
    sess.run(tf.compat.v1.global_variables_initializer())
    before = sess.run(variables)
    sess.run(train_op)
    after = sess.run(variables)
  for n in DECAYED:
    np.testing.assert_allclose(after[n], before[n] * (1 - lr * wd),
                               rtol=1e-6, err_msg=n)
  for n in NOT_DECAYED:
    np.testing.assert_array_equal(after[n], before[n], err_msg=n)


@pytest.mark.parametrize("n_layer_flag", [12, None])
def test_layer_wise_decay_scales_the_right_variables(n_layer_flag):
  rate, n_layer = 0.5, 12
  expected_scale = {"model/transformer/layer_0/rel_attn/q/kernel": rate ** 11,
                    "model/transformer/layer_1/ff/layer_1/kernel": rate ** 10,
                    "model/transformer/layer_10/ff/layer_2/bias": rate ** 1,
                    "model/transformer/layer_11/ff/LayerNorm/gamma": 1.0,
                    "model/transformer/word_embedding/lookup_table": 1.0,
                    "model/transformer/r_w_bias": 1.0,
                    "model/lm_loss/bias": 1.0}
  coefs = {n: np.full((2,), i + 1.0, np.float32)
           for i, n in enumerate(expected_scale)}
  opt = make_config(lr_layer_decay_rate=rate, n_layer=n_layer_flag)
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    variables = make_vars({n: (2,) for n in coefs})
    train_op, _, gnorm = tpu_estimator.get_train_op(
        opt, linear_loss(variables, coefs))
    sess.run(tf.compat.v1.global_variables_initializer())
    _, got_norm = sess.run([train_op, gnorm])
    grads = {n: sess.run(var_by_name(n + "/Adam")) / (1 - BETA1)
             for n in coefs}
  norm = np.sqrt(sum((c ** 2).sum() for c in coefs.values()))
  np.testing.assert_allclose(got_norm, norm, rtol=1e-6)
  for n, scale in expected_scale.items():
    np.testing.assert_allclose(grads[n], coefs[n] * scale, rtol=1e-5,
                               err_msg=n)


################################################################################
# Full optimizer steps against NumPy.
################################################################################
def np_adam_steps(params, coefs, offsets, opt, num_steps):
  """Reference optimizer on loss = sum(0.5 c p^2 + d p), in float64."""
  params = {n: p.astype(np.float64) for n, p in params.items()}
  m = {n: np.zeros_like(p) for n, p in params.items()}
  v = {n: np.zeros_like(p) for n, p in params.items()}
  history = []
  for step in range(num_steps):
    lr = np_learning_rate(step, opt.learning_rate, opt.warmup_steps,
                          opt.train_steps, opt.decay_method,
                          opt.min_lr_ratio)
    grads = {n: coefs[n] * p + offsets[n] for n, p in params.items()}
    norm = np.sqrt(sum((g ** 2).sum() for g in grads.values()))
    scale = opt.clip / max(norm, opt.clip)
    grads = {n: g * scale for n, g in grads.items()}
    for n in params:
      m[n] = KERNEL_BETA1 * m[n] + (1 - KERNEL_BETA1) * grads[n]
      v[n] = KERNEL_BETA2 * v[n] + (1 - KERNEL_BETA2) * grads[n] ** 2
      if opt.weight_decay:  # AdamW: no bias correction, decoupled decay.
        update = m[n] / (np.sqrt(v[n]) + opt.adam_epsilon)
        if "LayerNorm" not in n:
          update += opt.weight_decay * params[n]
        params[n] = params[n] - lr * update
      else:  # tf.compat.v1.train.AdamOptimizer.
        t = step + 1
        lr_t = lr * np.sqrt(1 - KERNEL_BETA2 ** t) / (1 - KERNEL_BETA1 ** t)
        params[n] = params[n] - lr_t * m[n] / (np.sqrt(v[n]) +
                                               opt.adam_epsilon)
    history.append(dict(params))
  return history


@pytest.mark.quick
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_optimizer_steps_match_numpy(weight_decay):
  names = {"model/transformer/layer_0/ff/layer_1/kernel": (2, 3),
           "model/transformer/layer_0/ff/LayerNorm/gamma": (3,)}
  rng = np.random.RandomState(1)
  coefs = {n: rng.uniform(0.5, 2.0, s).astype(np.float32)
           for n, s in names.items()}
  offsets = {n: rng.randn(*s).astype(np.float32) for n, s in names.items()}
  opt = make_config(learning_rate=0.1, warmup_steps=2, train_steps=10,
                     weight_decay=weight_decay, clip=1.5, adam_epsilon=1e-3)
  got = []
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    variables = make_vars(names, seed=2)
    loss = tf.add_n([tf.reduce_sum(0.5 * coefs[n] * v ** 2 + offsets[n] * v)
                     for n, v in variables.items()])
    train_op, _, _ = tpu_estimator.get_train_op(opt, loss)
    sess.run(tf.compat.v1.global_variables_initializer())
    initial = sess.run(variables)
    for _ in range(3):
      sess.run(train_op)
      got.append(sess.run(variables))
    final_step = sess.run(tf.compat.v1.train.get_global_step())
  want = np_adam_steps(initial, coefs, offsets, opt, 3)
  assert final_step == 3
  for step in range(3):
    for n in names:
      np.testing.assert_allclose(got[step][n], want[step][n], rtol=2e-5,
                                 atol=1e-6, err_msg=f"step {step} {n}")
  # The steps did move the parameters (lr is 0 only at step 0).
  assert not np.allclose(got[2][n], initial[n])


@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_sparse_embedding_gradients_update_like_dense_ones(weight_decay):
  """tf.gather gives IndexedSlices; the update must equal the dense one."""
  ids = np.array([2, 0, 2, 3])  # row 1 unused, row 2 twice
  coefs = np.random.RandomState(3).randn(4, 5).astype(np.float32)
  opt = make_config(weight_decay=weight_decay, clip=0.5)
  results = []
  for sparse in (True, False):
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
      table = make_vars({"model/transformer/word_embedding/lookup_table":
                         (4, 5)}, seed=4)
      table, = table.values()
      rows = (tf.gather(table, ids) if sparse else
              tf.matmul(tf.one_hot(ids, 4), table))
      train_op, _, _ = tpu_estimator.get_train_op(
          opt, tf.reduce_sum(coefs * rows))
      sess.run(tf.compat.v1.global_variables_initializer())
      for _ in range(2):
        sess.run(train_op)
      results.append(sess.run(table))
  np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-7)


def test_weight_decay_slots_are_named_and_not_trainable():
  with tf.Graph().as_default():
    with tf.compat.v1.variable_scope("tower_0"):
      w = tf.compat.v1.get_variable("w", initializer=[1.0])
    with tf.compat.v1.variable_scope("elsewhere"):
      tpu_estimator.get_train_op(make_config(weight_decay=0.01),
                                 tf.reduce_sum(w))
    names = {v.name: v.dtype.base_dtype
             for v in tf.compat.v1.global_variables()}
    trainable = {v.name for v in tf.compat.v1.trainable_variables()}
  assert names == {"tower_0/w:0": tf.float32, "tower_0/w/adam_m:0": tf.float32,
                   "tower_0/w/adam_v:0": tf.float32, "global_step:0": tf.int64}
  assert trainable == {"tower_0/w:0"}


def _ancestors(op):
  """Every op `op` depends on (data and control inputs, transitively)."""
  seen, stack = set(), [op]
  while stack:
    current = stack.pop()
    for parent in [t.op for t in current.inputs] + list(current.control_inputs):
      if parent not in seen:
        seen.add(parent)
        stack.append(parent)
  return seen


def test_weight_decay_runs_after_every_read_of_the_step():
  """The decoupled decay writes a weight in place: it must depend on every
  read the forward and backward passes make, or a later layer could read a
  partly decayed weight (the release's AdamW raced so). Checked on
  `adam_update`, the update both the graph optimizer and the engine run,
  fed with the scaled gradients as they are."""
  with tf.Graph().as_default() as graph:
    x = tf.constant(np.random.RandomState(0).randn(4, 3).astype(np.float32))
    names = ["model/transformer/layer_0/w", "model/transformer/layer_1/w"]
    w1, w2 = [tf.compat.v1.get_variable(
        n, initializer=np.eye(3, dtype=np.float32)) for n in names]
    before = set(graph.get_operations())
    hidden = tf.tanh(tf.matmul(x, w1))
    # w1 is read again by the second layer, as tied weights are.
    loss = tf.reduce_sum(tf.matmul(hidden, w2) * tf.matmul(hidden, w1))
    reads = {op for op in graph.get_operations()
             if op.type == "ReadVariableOp" and op not in before}
    assert len(reads) == 3  # the forward's reads: w1 twice, w2 once
    grads, _ = optimizer.scale_gradients(tf.gradients(loss, [w1, w2]),
                                           names, clip=1.0)
    for var, grad in zip([w1, w2], grads):
      m, v = [tf.compat.v1.get_variable(f"{var.op.name}/{s}", [3, 3])
              for s in ("adam_m", "adam_v")]
      optimizer.adam_update(var, m, v, grad, 0.1, 1e-6,
                              weight_decay_rate=0.01)
    decays = [op for op in graph.get_operations()
              if op.type == "ResourceApplyGradientDescent"]
  assert len(decays) == 2
  for decay in decays:
    missing = reads - _ancestors(decay)
    assert not missing, (decay.name, sorted(op.name for op in missing))
