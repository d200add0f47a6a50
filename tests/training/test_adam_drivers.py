"""The two drivers of the one Adam/AdamW update (`optimizer.variable_update`)
give the same weights bit for bit: the engine's `optimizer.AdamState` under
a strategy and the graph-mode `tpu_estimator.get_train_op` of TPUEstimator
(why there are two: `tpu_estimator.AdamWeightDecayOptimizer`'s docstring).

A few steps on a small set of variables, with weight decay and its
exclusions, layer-wise decay and global-norm clipping all in play; a NumPy
reference written from the optimizer's definition (docs/training.md,
SPEC "Training") is the third witness.
"""
import math
import re

import numpy as np
import pytest
import tensorflow as tf

from xlnet.training import config
from xlnet.training import optimizer
from xlnet.training import tpu_estimator

pytestmark = [pytest.mark.quick, pytest.mark.tf_version, pytest.mark.eager]

STEPS = 4
# One decayed layer kernel (layer 0, scaled by the layer decay), a relative
# attention bias (always decayed), a LayerNorm scale and a bias outside the
# layers (both exempt from decay).
SHAPES = {"model/transformer/layer_0/ff/layer_1/kernel": (2, 3),
          "model/transformer/layer_1/rel_attn/r_w_bias": (2, 2),
          "model/transformer/layer_1/ff/LayerNorm/gamma": (3,),
          "model/lm_loss/bias": (4,)}
# The Adam kernel's float32 betas (1 - 0.999f is not 0.001).
B1, B2 = float(np.float32(0.9)), float(np.float32(0.999))


def make_config(weight_decay):
  """Clipping active from the first step (every gradient norm is > 0.5)."""
  return config.OptimizerConfig(
      learning_rate=0.1, warmup_steps=1, train_steps=10, decay_method="poly",
      min_lr_ratio=0.0, weight_decay=weight_decay, adam_epsilon=1e-3,
      clip=0.5, lr_layer_decay_rate=0.5, n_layer=2)


def make_problem():
  """Initial weights and the coefficients of loss = sum(0.5 c p^2 + d p)."""
  rng = np.random.RandomState(3)
  init = {n: rng.randn(*s).astype(np.float32) for n, s in SHAPES.items()}
  coefs = {n: rng.uniform(0.5, 2.0, s).astype(np.float32)
           for n, s in SHAPES.items()}
  offsets = {n: rng.randn(*s).astype(np.float32) for n, s in SHAPES.items()}
  return init, coefs, offsets


def loss_and_grads(variables, coefs, offsets):
  """The loss and its gradients c p + d, the same ops in both graphs."""
  loss = tf.add_n([tf.reduce_sum(0.5 * coefs[n] * v * v + offsets[n] * v)
                   for n, v in variables.items()])
  return loss, [coefs[n] * v + offsets[n] for n, v in variables.items()]


def engine_steps(opt, init, coefs, offsets):
  """The weights after each step of `AdamState` on the default strategy."""
  strategy = tf.distribute.get_strategy()
  variables = {n: tf.Variable(x) for n, x in init.items()}
  adam = optimizer.AdamState(opt, config.TrainConfig())
  adam.build(list(variables.values()), list(variables))
  step = tf.Variable(0, dtype=tf.int64)

  @tf.function
  def run_step():
    loss, grads = loss_and_grads(variables, coefs, offsets)
    grads, gnorm = adam.clip(grads)
    applied, _ = adam.outcome(loss, gnorm)
    with tf.control_dependencies(adam.apply(
        strategy, grads, adam.learning_rate(step), applied)):
      step.assign_add(1)

  history = []
  for _ in range(STEPS):
    run_step()
    history.append({n: v.numpy() for n, v in variables.items()})
  return history


def graph_steps(opt, init, coefs, offsets):
  """The weights after each step of `get_train_op` in a TF1 session."""
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    variables = {n: tf.compat.v1.get_variable(n, initializer=x)
                 for n, x in init.items()}
    loss, grads = loss_and_grads(variables, coefs, offsets)
    train_op, _, _ = tpu_estimator.get_train_op(
        opt, loss, list(zip(grads, variables.values())))
    sess.run(tf.compat.v1.global_variables_initializer())
    history = []
    for _ in range(STEPS):
      sess.run(train_op)
      history.append(sess.run(variables))
  return history


def numpy_steps(opt, init, coefs, offsets):
  """The optimizer written out in float64: warmup then poly decay, the
  global norm of the raw gradients clipped, layer l's gradients times
  rate^(n_layer-1-l), then AdamW (no bias correction, decay but for
  LayerNorm and biases other than r_*_bias) or TF's Adam."""
  params = {n: x.astype(np.float64) for n, x in init.items()}
  m = {n: np.zeros_like(p) for n, p in params.items()}
  v = {n: np.zeros_like(p) for n, p in params.items()}
  layers = {n: re.search(r"transformer/layer_(\d+)/", n) for n in params}
  layer_scale = {
      n: opt.lr_layer_decay_rate ** (opt.n_layer - 1 - int(l.group(1)))
      if l else 1.0 for n, l in layers.items()}
  decayed = {n: "r_w_bias" in n or not ("LayerNorm" in n or "bias" in n)
             for n in params}
  history = []
  for t in range(STEPS):
    frac = (t - opt.warmup_steps) / (opt.train_steps - opt.warmup_steps)
    lr = (t / opt.warmup_steps * opt.learning_rate if t < opt.warmup_steps
          else opt.learning_rate * (1.0 - frac))
    grads = {n: coefs[n] * p + offsets[n] for n, p in params.items()}
    norm = math.sqrt(sum((g ** 2).sum() for g in grads.values()))
    clip = opt.clip / max(norm, opt.clip)
    for n, p in params.items():
      g = grads[n] * clip * layer_scale[n]
      m[n] = B1 * m[n] + (1 - B1) * g
      v[n] = B2 * v[n] + (1 - B2) * g * g
      if opt.weight_decay:
        update = m[n] / (np.sqrt(v[n]) + opt.adam_epsilon)
        if decayed[n]:
          update = update + opt.weight_decay * p
        params[n] = p - lr * update
      else:
        lr_t = lr * math.sqrt(1 - B2 ** (t + 1)) / (1 - B1 ** (t + 1))
        params[n] = p - lr_t * m[n] / (np.sqrt(v[n]) + opt.adam_epsilon)
    history.append(dict(params))
  return history


@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_engine_and_estimator_updates_are_the_same_bits(weight_decay):
  opt = make_config(weight_decay)
  init, coefs, offsets = make_problem()
  engine = engine_steps(opt, init, coefs, offsets)
  graph = graph_steps(opt, init, coefs, offsets)
  want = numpy_steps(opt, init, coefs, offsets)
  for t in range(STEPS):
    for n in SHAPES:
      np.testing.assert_array_equal(engine[t][n], graph[t][n],
                                    err_msg=f"step {t} {n}")
      np.testing.assert_allclose(engine[t][n], want[t][n], rtol=2e-5,
                                 atol=1e-6, err_msg=f"step {t} {n}")
  # Every variable moved (step 0 has lr 0; the later ones do not).
  for n in SHAPES:
    assert not np.array_equal(engine[-1][n], init[n]), n
