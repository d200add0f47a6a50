"""Runs the released XLNet's `modeling.py` (TensorFlow 1.x) on TensorFlow 2.

The release's file is never shipped with this project: it is the user's own
checkout (`git clone https://github.com/zihangdai/xlnet`), read at run time
from the folder given to `load_release_modeling`, its text unchanged. Its
global `tf` is then a TensorFlow 1 namespace: `tf.compat.v1` (graph mode)
plus stand-ins for the three layers TensorFlow 2 no longer has without Keras
(TensorFlow 2.16+ ships Keras 3, on which `tf.compat.v1.layers` breaks) and
a silent `tf.logging.info`:

  tf.layers.dense              Dense as TF 1.x's `tf.layers.dense` built it
  tf.layers.dropout            Dropout as TF 1.x's `tf.layers.dropout` ran it
  tf.contrib.layers.layer_norm LayerNorm as TF 1.x's tf.contrib computed it

Each stand-in creates the variables TF 1.x created (same names, shapes and
initializers) and computes what TF 1.x computed with the same TensorFlow
ops (tensordot + bias_add; moments + batch_normalization), so the release's
graph is the one it built on TensorFlow 1.x, with its released checkpoints'
variable names. Dropout draws its mask with TensorFlow 2's `tf.nn.dropout`,
as our model does.

The file is compiled as `python -O` would (its `assert`s dropped): with
bi_data it asserts that the batch size, a Tensor from `tf.shape`, is even
by comparing it with a Python int, which is False in graph mode on
TensorFlow 1.x too, so the release only ever ran with that line deleted
(zihangdai/xlnet issues 76, 132 and 196). The callers here check that the
batch is even themselves.
"""
import os
import types

import tensorflow as tf


def dense(inputs, units, activation=None, kernel_initializer=None,
          name=None):
  """`tf.layers.dense` of TF 1.x: `activation(inputs kernel + bias)`.

  Args:
    inputs: float Tensor `[..., d_in]` (static rank and `d_in`).
    units: int, output width.
    activation: callable or None.
    kernel_initializer: initializer of `kernel`, or None for get_variable's
      default (Glorot-uniform, as TF 1.x's Dense had).
    name: variable scope of `kernel [d_in, units]` and `bias [units]` (init
      0); None gives "dense", "dense_1", ... as TF 1.x did.

  Returns:
    Tensor `[..., units]` of `inputs`' dtype.
  """
  dtype = inputs.dtype.base_dtype
  with tf.compat.v1.variable_scope(name, default_name="dense"):
    kernel = tf.compat.v1.get_variable(
        "kernel", [inputs.shape[-1], units], dtype=dtype,
        initializer=kernel_initializer)
    bias = tf.compat.v1.get_variable(
        "bias", [units], dtype=dtype,
        initializer=tf.compat.v1.zeros_initializer())
    rank = inputs.shape.rank
    if rank > 2:
      # TF 1.x's Dense: one tensordot on the last axis, then it restored the
      # static shape tensordot may lose.
      outputs = tf.tensordot(inputs, kernel, [[rank - 1], [0]])
      outputs.set_shape(inputs.shape[:-1].concatenate([units]))
    else:
      outputs = tf.matmul(inputs, kernel)
    outputs = tf.nn.bias_add(outputs, bias)
    return outputs if activation is None else activation(outputs)


def dropout(inputs, rate=0.5, training=False, name=None):
  """`tf.layers.dropout` of TF 1.x: drops with probability `rate` when
  training (scaling the kept values by 1 / (1 - rate)), else identity.

  Args:
    inputs: float Tensor, any shape.
    rate: float, drop probability.
    training: Python bool (the release passes its `is_training`).
    name: name scope of the ops; None gives "dropout".

  Returns:
    Tensor of `inputs`' shape and dtype.
  """
  with tf.name_scope(name or "dropout"):
    if training and rate:
      return tf.nn.dropout(inputs, rate=rate)
    return tf.identity(inputs)


def layer_norm(inputs, begin_norm_axis=1, scope=None):
  """`tf.contrib.layers.layer_norm` of TF 1.x (center and scale on).

  Normalizes over the axes from `begin_norm_axis` on (population variance,
  epsilon 1e-12 as tf.contrib had), then scales and shifts along the last
  axis.

  Args:
    inputs: float Tensor `[..., d]` (static rank and `d`).
    begin_norm_axis: first normalized axis (negative counts from the end).
    scope: variable scope of `beta [d]` (init 0) and `gamma [d]` (init 1);
      None gives "LayerNorm".

  Returns:
    Tensor of `inputs`' shape and dtype.
  """
  dtype = inputs.dtype.base_dtype
  rank = inputs.shape.rank
  with tf.compat.v1.variable_scope(scope, default_name="LayerNorm"):
    beta = tf.compat.v1.get_variable(
        "beta", [inputs.shape[-1]], dtype=dtype,
        initializer=tf.compat.v1.zeros_initializer())
    gamma = tf.compat.v1.get_variable(
        "gamma", [inputs.shape[-1]], dtype=dtype,
        initializer=tf.compat.v1.ones_initializer())
    axes = list(range(begin_norm_axis % rank, rank))
    mean, variance = tf.nn.moments(inputs, axes, keepdims=True)
    return tf.nn.batch_normalization(inputs, mean, variance, offset=beta,
                                     scale=gamma, variance_epsilon=1e-12)


def _log_nothing(*args, **kwargs):
  """`tf.logging.info`: the release logs its inputs' reprs while it builds
  the graph; the bench prints its own lines."""
  del args, kwargs


class _TF1(types.ModuleType):
  """`tf.compat.v1` with the stand-ins above in place of its layers."""

  def __getattr__(self, name):
    # Only called for names not set on the instance: everything but the
    # stand-ins comes from tf.compat.v1.
    return getattr(tf.compat.v1, name)


TF1 = _TF1("tf1_with_stand_ins")
TF1.layers = types.SimpleNamespace(dense=dense, dropout=dropout)
TF1.contrib = types.SimpleNamespace(
    layers=types.SimpleNamespace(layer_norm=layer_norm))
TF1.logging = types.SimpleNamespace(info=_log_nothing)


def load_release_modeling(release_dir):
  """Imports `<release_dir>/modeling.py` with `TF1` as its `tf`.

  Args:
    release_dir: str, a checkout of https://github.com/zihangdai/xlnet.

  Returns:
    the module (`transformer_xl`, `lm_loss`, ... as released).

  Raises:
    ValueError: if `release_dir` has no modeling.py.
  """
  path = os.path.join(release_dir, "modeling.py")
  if not os.path.isfile(path):
    raise ValueError(f"--release_dir: no modeling.py in {release_dir!r} "
                     "(git clone https://github.com/zihangdai/xlnet)")
  module = types.ModuleType("release_modeling")
  module.__file__ = path
  with open(path, encoding="utf-8") as f:
    # optimize=1: without its asserts (see the module docstring).
    exec(compile(f.read(), path, "exec", optimize=1), module.__dict__)
  # The file's own `import tensorflow as tf` binds TensorFlow 2; at import
  # it reads only dtypes from it (default arguments, the same objects in
  # tf.compat.v1). Its functions look `tf` up in the module's globals when
  # they run, so rebinding it here gives them the TF 1 namespace.
  module.tf = TF1
  return module
