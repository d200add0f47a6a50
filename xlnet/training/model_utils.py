"""Optimizer step, learning-rate schedule and checkpoint tools for XLNet.

Shared by the GPU and the TPU trainers:
  * `get_train_op`: warmup + poly/cos learning rate, Adam or Adam with
    decoupled weight decay, global-norm clipping, optional layer-wise decay.
  * `init_from_checkpoint`: warm start by variable name.
  * `configure_tpu`: the TPUEstimator `RunConfig` (TensorFlow <= 2.15 only).
  * `clean_ckpt`, `avg_checkpoints`, `rollback_ckpt`: offline checkpoint
    tools.
"""
import math
import os
import re
import time

import numpy as np
import tensorflow as tf

from xlnet.training import checkpoint_io
from xlnet import cli

_DECAY_METHODS = ("poly", "cos")

# The `--seed` of every program when none is given: initial weights, input
# order, factorization orders and dropout all derive from it, so the same
# command gives the same bits (docs/reliability.md).
DEFAULT_SEED = 1

# Variables whose name matches one of these are not weight-decayed ...
_NO_DECAY_PATTERNS = ("LayerNorm", "layer_norm", "bias")
# ... unless they are one of the relative attention biases.
_ALWAYS_DECAY_PATTERNS = ("r_s_bias", "r_r_bias", "r_w_bias")

# Optimizer slots and step counters: everything a checkpoint holds that is not
# a model weight (ours: `{var}/adam_m`, `{var}/adam_v`; TF Adam: `{var}/Adam`,
# `{var}/Adam_1`, `beta1_power`, `beta2_power`).
_OPTIMIZER_VAR_RE = re.compile(
    r"(^|/)(adam_m|adam_v|Adam(_\d+)?|beta[12]_power(_\d+)?|global_step)$")

_LAYER_RE = re.compile(r"model/transformer/layer_(\d+)/")


def _root_variable_scope():
  """Context manager entering the root variable scope with AUTO_REUSE.

  Optimizer slots and the global step get fixed checkpoint names
  (`{var}/adam_m`, `global_step`) wherever `get_train_op` is called from.
  """
  return tf.compat.v1.variable_scope(
      tf.compat.v1.VariableScope(reuse=tf.compat.v1.AUTO_REUSE, name=""))


def _var_name(var):
  """Returns the variable's name without the `:0` output suffix."""
  return re.sub(r":\d+$", "", var.name)


################################################################################
# Learning-rate schedule and gradient helpers (pure, shared by both trainers).
################################################################################
def learning_rate_schedule(global_step, learning_rate, warmup_steps,
                           train_steps, decay_method="poly", min_lr_ratio=0.0):
  """Warmup then decay learning rate.

  lr(step) = step / warmup_steps * learning_rate        for step < warmup_steps
           = decay(step - warmup_steps)                  otherwise, where decay
  goes from `learning_rate` to `learning_rate * min_lr_ratio` over
  `train_steps - warmup_steps` steps, linearly ("poly") or along half a cosine
  ("cos"), and stays at the end value afterwards.

  Args:
    global_step: integer scalar tensor, the current step.
    learning_rate: float, peak learning rate.
    warmup_steps: int >= 0, linear warmup length.
    train_steps: int > 0, total number of steps.
    decay_method: "poly" or "cos".
    min_lr_ratio: float in [0, 1], final learning rate / peak learning rate.

  Returns:
    float32 scalar tensor.

  Raises:
    ValueError: on an unknown `decay_method` or out-of-range arguments.
  """
  if decay_method not in _DECAY_METHODS:
    raise ValueError(f"decay_method must be one of {_DECAY_METHODS}, "
                     f"got {decay_method!r}")
  if warmup_steps < 0:
    raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
  if train_steps <= 0:
    raise ValueError(f"train_steps must be > 0, got {train_steps}")
  if not 0.0 <= min_lr_ratio <= 1.0:
    raise ValueError(f"min_lr_ratio must be in [0, 1], got {min_lr_ratio}")

  step = tf.cast(global_step, tf.float32)
  # A run that is all warmup never reaches the decay branch; keep it finite.
  decay_steps = float(max(train_steps - warmup_steps, 1))
  progress = tf.minimum(tf.maximum(step - warmup_steps, 0.0),
                        decay_steps) / decay_steps
  if decay_method == "poly":
    decay_factor = 1.0 - (1.0 - min_lr_ratio) * progress
  else:
    cosine = 0.5 * (1.0 + tf.cos(math.pi * progress))
    decay_factor = (1.0 - min_lr_ratio) * cosine + min_lr_ratio
  decay_lr = learning_rate * decay_factor

  if warmup_steps == 0:
    return tf.identity(decay_lr, name="learning_rate")
  warmup_lr = step / float(warmup_steps) * learning_rate
  return tf.where(step < warmup_steps, warmup_lr, decay_lr,
                  name="learning_rate")


def exclude_from_weight_decay(var_name):
  """Whether the variable named `var_name` is exempt from weight decay.

  LayerNorm parameters and biases are exempt; the relative attention biases
  (`r_w_bias`, `r_r_bias`, `r_s_bias`) are always decayed.

  Args:
    var_name: str, variable name (a trailing `:0` is ignored).

  Returns:
    bool.
  """
  if any(p in var_name for p in _ALWAYS_DECAY_PATTERNS):
    return False
  return any(p in var_name for p in _NO_DECAY_PATTERNS)


def layer_decay_scales(var_names, n_layer, lr_layer_decay_rate):
  """Gradient multipliers of variables under layer-wise learning-rate decay.

  A variable under `model/transformer/layer_{l}/` is scaled by
  `lr_layer_decay_rate ** (n_layer - 1 - l)` (the top layer by 1); every other
  variable by 1.

  Args:
    var_names: list of str, variable names.
    n_layer: int, number of transformer layers; None = one more than the
      largest layer index among `var_names`.
    lr_layer_decay_rate: float, per-layer decay factor.

  Returns:
    list of floats, one per name.

  Raises:
    ValueError: when a variable's layer index is not below `n_layer`.
  """
  if lr_layer_decay_rate == 1.0:
    return [1.0] * len(var_names)
  layers = [_LAYER_RE.search(n) for n in var_names]
  layers = [int(m.group(1)) if m else None for m in layers]
  if n_layer is None:
    n_layer = 1 + max([l for l in layers if l is not None], default=-1)
  scales = []
  for name, layer in zip(var_names, layers):
    if layer is None:
      scales.append(1.0)
    elif layer >= n_layer:
      raise ValueError(f"variable {name} is in layer {layer} but n_layer is "
                       f"{n_layer}")
    else:
      scales.append(float(lr_layer_decay_rate) ** (n_layer - 1 - layer))
  return scales


def is_optimizer_variable(var_name):
  """Whether `var_name` is an optimizer slot or step counter, not a weight."""
  return _OPTIMIZER_VAR_RE.search(var_name) is not None


################################################################################
# The update math, shared by the graph-mode optimizer (TPUEstimator) and the
# tf.distribute engine (xlnet/training/engine.py).
################################################################################
BETA_1, BETA_2 = 0.9, 0.999
# TF AdamOptimizer's non-slot step counters (plain Adam only).
ADAM_POWER_NAMES = ("beta1_power", "beta2_power")


def slot_names(var_name, weight_decay):
  """Checkpoint names of the two moment slots of the variable `var_name`.

  AdamW (weight_decay > 0): `{var}/adam_m`, `{var}/adam_v`; plain Adam
  keeps TF AdamOptimizer's `{var}/Adam`, `{var}/Adam_1`.
  """
  if weight_decay:
    return f"{var_name}/adam_m", f"{var_name}/adam_v"
  return f"{var_name}/Adam", f"{var_name}/Adam_1"


def adam_update(var, m, v, grad, learning_rate, epsilon,
                weight_decay_rate=0.0, beta1_power=0.0, beta2_power=0.0):
  """One Adam or AdamW update of a resource variable, in place.

  AdamW (no bias correction; `beta*_power` stay 0):
    m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
    var <- var - lr (m / (sqrt(v) + eps) + weight_decay_rate var_old)
  Plain Adam passes the bias-correction powers b1^t, b2^t.

  The decay term reads `var` under a control dependency on `grad`: the
  gradient exists only after the step's forward and backward passes, so no
  update can change a weight that a later layer of the same step still has
  to read.

  Args:
    var, m, v: resource variables of one shape on one device (components of
      distributed variables inside `strategy.extended.update`).
    grad: dense float32 gradient of var's shape.
    learning_rate: float32 scalar.
    epsilon: float.
    weight_decay_rate: float; 0 = no decay (the caller passes 0 for the
      names `exclude_from_weight_decay` exempts).
    beta1_power, beta2_power: float32 scalars (0 = no bias correction).

  Returns:
    the update op.
  """
  with tf.control_dependencies([grad]):
    decay = []
    if weight_decay_rate:
      decay = [tf.raw_ops.ResourceApplyGradientDescent(
          var=var.handle, alpha=learning_rate * weight_decay_rate,
          delta=var.read_value())]
  with tf.control_dependencies(decay):
    return tf.raw_ops.ResourceApplyAdam(
        var=var.handle, m=m.handle, v=v.handle, beta1_power=beta1_power,
        beta2_power=beta2_power, lr=learning_rate, beta1=BETA_1, beta2=BETA_2,
        epsilon=epsilon, grad=grad)


def scale_gradients(gradients, var_names, clip, n_layer=None,
                    lr_layer_decay_rate=1.0):
  """Global-norm clipping and layer-wise decay of dense gradients.

  Each gradient is multiplied once by the product of the clip factor
  `clip / max(gnorm, clip)` and its layer factor (`layer_decay_scales`);
  the layer factor does not enter gnorm. As with tf.clip_by_global_norm, a
  non-finite norm turns every gradient into NaN.

  Args:
    gradients: list of dense float32 tensors.
    var_names: their variables' names (for the layer factors).
    clip: float > 0.
    n_layer, lr_layer_decay_rate: see `layer_decay_scales`.

  Returns:
    (scaled gradients, gnorm before clipping).
  """
  gnorm = tf.linalg.global_norm(gradients)
  clip_scale = tf.where(tf.math.is_finite(gnorm),
                        clip / tf.maximum(gnorm, clip), float("nan"))
  layer_scales = layer_decay_scales(var_names, n_layer, lr_layer_decay_rate)
  scaled = [g * (clip_scale if s == 1.0 else clip_scale * s)
            for g, s in zip(gradients, layer_scales)]
  return scaled, gnorm


def decay_rate_of(var_name, weight_decay):
  """The weight-decay rate applied to `var_name` (0 for exempt names)."""
  return 0.0 if exclude_from_weight_decay(var_name) else weight_decay


################################################################################
# Graph-mode optimizer (TPUEstimator and other tf.compat.v1 graphs).
################################################################################
class AdamWeightDecayOptimizer(tf.compat.v1.train.Optimizer):
  """Adam with decoupled weight decay (no bias correction), or plain Adam.

  With `tf_adam=False` (the release's AdamW): float32 slots `{p}/adam_m`,
  `{p}/adam_v`, no bias correction, decay `weight_decay_rate` except for
  `exclude_from_weight_decay` names. With `tf_adam=True`: the numbers and
  checkpoint names of `tf.compat.v1.train.AdamOptimizer` (slots `{p}/Adam`,
  `{p}/Adam_1`, step counters `beta1_power`, `beta2_power`), no decay.
  Both run `adam_update`, the update the tf.distribute engine runs too.
  `apply_gradients` increments `global_step` itself after all updates.
  """

  def __init__(self, learning_rate, weight_decay_rate=0.0, epsilon=1e-6,
               tf_adam=False, apply_if=None,
               name="AdamWeightDecayOptimizer"):
    """Constructs the optimizer.

    Args:
      learning_rate: float or float32 scalar tensor.
      weight_decay_rate, epsilon, tf_adam: see the class docstring.
      apply_if: optional bool scalar tensor; when False the step changes no
        weight, moment or Adam power (the global step still advances).
      name: op name.
    """
    super().__init__(use_locking=False, name=name)
    self.learning_rate = learning_rate
    self.weight_decay_rate = 0.0 if tf_adam else weight_decay_rate
    self.epsilon = epsilon
    self.tf_adam = tf_adam
    self.apply_if = apply_if

  @staticmethod
  def _root_variable(name, shape, initial):
    """Creates (or reuses) a non-trainable float32 variable `name`."""
    with _root_variable_scope():
      return tf.compat.v1.get_variable(
          name=name, shape=shape, dtype=tf.float32, trainable=False,
          use_resource=True,
          initializer=tf.compat.v1.constant_initializer(initial))

  def apply_gradients(self, grads_and_vars, global_step=None, name=None):
    """Applies one update; returns the grouped op (incl. the step increment)."""
    learning_rate = tf.cast(self.learning_rate, tf.float32)
    pairs = [(g, p) for g, p in grads_and_vars
             if g is not None and p is not None]
    powers = (0.0, 0.0)
    power_vars = []
    if self.tf_adam:
      power_vars = [self._root_variable(n, [], b) for n, b in
                    zip(ADAM_POWER_NAMES, (BETA_1, BETA_2))]
      powers = [p.read_value() for p in power_vars]
    slots = []
    for _, param in pairs:
      name = _var_name(param)
      if not hasattr(param, "handle"):
        raise ValueError(f"AdamWeightDecayOptimizer needs resource "
                         f"variables; {name} is a reference variable")
      slots.append([self._root_variable(n, param.shape.as_list(), 0.0)
                    for n in slot_names(name, not self.tf_adam)])

    def apply():
      updates = [adam_update(
          param, m, v, tf.convert_to_tensor(grad), learning_rate,
          self.epsilon, decay_rate_of(_var_name(param),
                                      self.weight_decay_rate), *powers)
                 for (grad, param), (m, v) in zip(pairs, slots)]
      with tf.control_dependencies(updates):
        return tf.group(*[p.assign(p * b) for p, b in
                          zip(power_vars, (BETA_1, BETA_2))], *updates)

    if self.apply_if is None:
      update = apply()
    else:
      update = tf.cond(self.apply_if, apply, tf.no_op)
    finish = []
    if global_step is not None:
      with tf.control_dependencies([update]):
        finish.append(tf.compat.v1.assign_add(global_step, 1))
    return tf.group(update, *finish, name=name or self.get_name())


def get_train_op(FLAGS, total_loss, grads_and_vars=None):
  """Builds the graph-mode training op.

  Args:
    FLAGS: object with attributes learning_rate, warmup_steps, train_steps,
      decay_method, min_lr_ratio, weight_decay, adam_epsilon, clip, use_tpu and
      optionally lr_layer_decay_rate (default 1.0) and n_layer (default/None:
      one more than the largest `model/transformer/layer_{l}/` index).
    total_loss: float scalar tensor; differentiated w.r.t. all trainable
      variables unless `grads_and_vars` is given.
    grads_and_vars: optional list of (gradient, variable), used as is
      instead of differentiating.

  With `FLAGS.use_tpu` the optimizer is wrapped in `CrossShardOptimizer`: as
  in the release, each core's gradients of `loss / num_shards` are clipped
  locally and then summed across cores.

  The update is guarded: when the loss or the gradient norm is not finite
  (on any core), no weight or optimizer slot changes; the global step still
  advances. `update_applied(gnorm, total_loss)` tells the caller.

  Returns:
    (train_op, learning_rate, gnorm): the update op (it also increments the
    global step), the float32 scalar learning rate of this step and the global
    gradient norm before clipping.

  Raises:
    ValueError: on invalid flags or when no variable has a gradient.
  """
  with _root_variable_scope():
    global_step = tf.compat.v1.train.get_or_create_global_step()
  learning_rate = learning_rate_schedule(
      global_step, FLAGS.learning_rate, FLAGS.warmup_steps, FLAGS.train_steps,
      FLAGS.decay_method, FLAGS.min_lr_ratio)

  inner = AdamWeightDecayOptimizer(
      learning_rate=learning_rate, epsilon=FLAGS.adam_epsilon,
      weight_decay_rate=FLAGS.weight_decay, tf_adam=FLAGS.weight_decay == 0)
  optimizer = inner
  if FLAGS.use_tpu:
    optimizer = tf.compat.v1.tpu.CrossShardOptimizer(inner)

  if grads_and_vars is None:
    grads_and_vars = optimizer.compute_gradients(total_loss)
  grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
  if not grads_and_vars:
    raise ValueError("get_train_op: no trainable variable has a gradient "
                     "w.r.t. the loss")
  variables = [v for _, v in grads_and_vars]
  # Sparse gradients (embedding lookups) are made dense: the global norm must
  # see duplicate rows summed, and the update uses the fused dense kernels.
  clipped, gnorm = scale_gradients(
      [tf.convert_to_tensor(g) for g, _ in grads_and_vars],
      [_var_name(v) for v in variables], FLAGS.clip,
      getattr(FLAGS, "n_layer", None),
      getattr(FLAGS, "lr_layer_decay_rate", 1.0))
  inner.apply_if = update_applied(gnorm, total_loss, FLAGS.use_tpu)
  train_op = optimizer.apply_gradients(zip(clipped, variables),
                                       global_step=global_step)
  return train_op, learning_rate, gnorm


def update_applied(gnorm, total_loss, use_tpu=False):
  """Whether `get_train_op` applies this step's update: loss and gradient
  norm finite (on every TPU core, so that replicas never disagree).

  Returns:
    bool scalar tensor.
  """
  ok = tf.logical_and(tf.math.is_finite(tf.cast(total_loss, tf.float32)),
                      tf.math.is_finite(gnorm))
  if use_tpu:
    bad = tf.compat.v1.tpu.cross_replica_sum(1.0 - tf.cast(ok, tf.float32))
    ok = tf.equal(bad, 0.0)
  return ok


################################################################################
# Checkpoints.
################################################################################
def resolve_checkpoint(path, flag_name="checkpoint"):
  """Turns a checkpoint prefix, a directory or `{dir}/latest` into a prefix.

  Args:
    path: str, a checkpoint prefix (`.../model.ckpt-1000`), a directory or a
      path ending in `latest` (both meaning the directory's latest checkpoint).
    flag_name: str, the flag the path came from, for error messages.

  Returns:
    str, an existing checkpoint prefix.

  Raises:
    ValueError: when no checkpoint exists there.
  """
  ckpt_dir = None
  if os.path.basename(path.rstrip("/")) == "latest":
    ckpt_dir = os.path.dirname(path.rstrip("/")) or "."
  elif tf.io.gfile.isdir(path):
    ckpt_dir = path
  if ckpt_dir is not None:
    prefix = _latest_in_directory(ckpt_dir)
    if prefix is None:
      what = ("holds no checkpoint" if tf.io.gfile.isdir(ckpt_dir) else
              "does not exist")
      raise ValueError(f"{flag_name}={path}: directory {ckpt_dir} {what}; "
                       "train first, or give a checkpoint prefix")
    return prefix
  if not tf.io.gfile.exists(path + ".index"):
    if not tf.io.gfile.exists(path):
      raise ValueError(f"{flag_name}={path}: not a checkpoint (no "
                       f"{path}.index) and no such directory: nothing was "
                       "saved there; train first, or give a checkpoint "
                       "prefix, a directory or DIR/latest")
    raise ValueError(f"{flag_name}={path}: not a checkpoint (no {path}.index); "
                     "give a checkpoint prefix, a directory or DIR/latest")
  return path


def _latest_in_directory(ckpt_dir):
  """The checkpoint a training run in `ckpt_dir` would resume from (the
  newest intact `model.ckpt-N`, whatever the `checkpoint` state file says;
  CheckpointError if the newest is damaged), else the one the state file
  names (other names, e.g. a converted release), else None. Reads only."""
  if checkpoint_io.list_checkpoints(ckpt_dir):
    return checkpoint_io.find_resume_checkpoint(ckpt_dir)
  return tf.train.latest_checkpoint(ckpt_dir)


def _describe_names(names, first=5):
  """Formats `N (first, ...)` for error messages about lists of variables."""
  shown = ", ".join(names[:first])
  return f"{len(names)} ({shown}{', ...' if len(names) > first else ''})"


def get_assignment_map_from_checkpoint(tvars, init_checkpoint,
                                       allow_missing=()):
  """Maps the graph's variables onto same-named checkpoint variables.

  Args:
    tvars: list of variables to initialize.
    init_checkpoint: str, checkpoint prefix.
    allow_missing: iterable of regular expressions; variables matching one of
      them may be absent from the checkpoint (e.g. a new fine-tuning head).

  Returns:
    (assignment_map, initialized_names): dict checkpoint name -> variable, and
    the sorted names of the variables that will be initialized.

  Raises:
    ValueError: when a model variable is missing from the checkpoint or has
      another shape there. Optimizer slots and step counters may be missing.
  """
  ckpt_shapes = dict(tf.train.list_variables(init_checkpoint))
  assignment_map, missing, mismatched = {}, [], []
  for var in tvars:
    name = _var_name(var)
    if name not in ckpt_shapes:
      if not (is_optimizer_variable(name) or
              any(re.search(p, name) for p in allow_missing)):
        missing.append(name)
      continue
    shape = var.shape.as_list()
    if list(ckpt_shapes[name]) != shape:
      mismatched.append(f"{name} {shape} vs {list(ckpt_shapes[name])}")
      continue
    assignment_map[name] = var
  if missing:
    raise ValueError(f"init_checkpoint={init_checkpoint} lacks "
                     f"{_describe_names(missing)} model variables")
  if mismatched:
    raise ValueError(f"init_checkpoint={init_checkpoint}: shape mismatch "
                     "(model vs checkpoint) for "
                     f"{_describe_names(mismatched)} variables")
  return assignment_map, sorted(assignment_map)


def init_from_checkpoint(FLAGS, global_vars=False, allow_missing=()):
  """Warm-starts the graph's variables from `FLAGS.init_checkpoint` by name.

  Args:
    FLAGS: object with `init_checkpoint` (None/"" = do nothing; a prefix, a
      directory or `{dir}/latest`) and `use_tpu`.
    global_vars: bool, initialize all global variables (optimizer slots and
      the step too, where the checkpoint has them) instead of only the
      trainable ones.
    allow_missing: iterable of regular expressions naming variables that may
      be absent from the checkpoint.

  Returns:
    With `FLAGS.use_tpu`, a `tpu_scaffold` function for
    `TPUEstimatorSpec(scaffold_fn=...)` that performs the initialization;
    otherwise None (the initialization is already set up).

  Raises:
    ValueError: when the checkpoint does not exist or does not cover the model.
  """
  if not FLAGS.init_checkpoint:
    return None
  init_checkpoint = resolve_checkpoint(FLAGS.init_checkpoint, "init_checkpoint")
  tvars = (tf.compat.v1.global_variables() if global_vars
           else tf.compat.v1.trainable_variables())
  assignment_map, initialized = get_assignment_map_from_checkpoint(
      tvars, init_checkpoint, allow_missing)
  # Read every tensor once now: a truncated or damaged checkpoint is one
  # line naming its file, not a failure deep inside the first session run.
  checkpoint_io.read_tensors(init_checkpoint, list(assignment_map))

  def tpu_scaffold():
    """Initializes from the checkpoint inside the TPU model function."""
    tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)
    return tf.compat.v1.train.Scaffold()

  if FLAGS.use_tpu:
    scaffold_fn = tpu_scaffold
  else:
    tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)
    scaffold_fn = None

  tf.compat.v1.logging.info("Initialized %d of %d variables from %s:",
                            len(initialized), len(tvars), init_checkpoint)
  for name in initialized:
    tf.compat.v1.logging.info("  %s *INIT_FROM_CKPT*", name)
  return scaffold_fn


def tpu_estimator():
  """`tf.compat.v1.estimator.tpu`, or None: TensorFlow 2.16 removed
  TPUEstimator (the one place that checks)."""
  return getattr(getattr(tf.compat.v1, "estimator", None), "tpu", None)


def require_tpu_estimator(what):
  """`tpu_estimator()`, or a one-line ValueError saying that `what` needs
  TensorFlow 2.15 and how to get it."""
  module = tpu_estimator()
  if module is None:
    raise ValueError(
        f"{what} needs TPUEstimator, which was removed in TensorFlow 2.16 "
        f"(this is TensorFlow {tf.__version__}); use the reference "
        "environment: `bash scripts/setup_env.sh reference`, then "
        "`.venvs/reference/bin/python ...`")
  return module


def tpu_cluster_resolver(tpu, zone=None, project=None):
  """The TPUClusterResolver of `--tpu` (a name, or grpc://ip:port).

  Raises:
    ValueError: one line saying how to name the TPU, or how to run on the
      CPU instead, when no TPU can be found.
  """
  try:
    return tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu, zone=zone, project=project)
  except ValueError as e:
    raise ValueError(f"--use_tpu=True (the TPU trainer's default, as in the "
                     f"release) but no TPU was found ({e}); give --tpu=NAME "
                     "or grpc://ip:port, or --use_tpu=False to run on the "
                     "CPU") from None


def configure_tpu(FLAGS):
  """Builds the TPUEstimator run config.

  Args:
    FLAGS: object with use_tpu, tpu, tpu_zone, gcp_project, master, num_hosts,
      num_core_per_host, iterations, save_steps (None = save at the end, i.e.
      every `train_steps`), max_save, model_dir, train_steps and optionally
      seed (graph-level random seed, None = unseeded).

  Returns:
    `tf.compat.v1.estimator.tpu.RunConfig`.

  Raises:
    RuntimeError: when TPUEstimator is unavailable (TensorFlow >= 2.16).
  """
  tpu = require_tpu_estimator("the TPU run config")
  if FLAGS.use_tpu:
    cluster = tpu_cluster_resolver(FLAGS.tpu, FLAGS.tpu_zone,
                                   FLAGS.gcp_project)
    master = None
  else:
    cluster = None
    master = FLAGS.master
  save_steps = FLAGS.save_steps or getattr(FLAGS, "train_steps", None)
  return tpu.RunConfig(
      master=master,
      cluster=cluster,
      model_dir=FLAGS.model_dir,
      session_config=tf.compat.v1.ConfigProto(allow_soft_placement=True),
      tpu_config=tpu.TPUConfig(
          iterations_per_loop=FLAGS.iterations,
          num_shards=FLAGS.num_hosts * FLAGS.num_core_per_host,
          per_host_input_for_training=(
              tpu.InputPipelineConfig.PER_HOST_V2)),
      keep_checkpoint_max=FLAGS.max_save,
      save_checkpoints_secs=None,
      save_checkpoints_steps=save_steps,
      tf_random_seed=getattr(FLAGS, "seed", None))


def _same_directory(a, b):
  """Whether two directory paths name the same directory, after resolving
  symbolic links (local paths) or normalizing trailing slashes (URLs)."""
  if "://" in a or "://" in b:
    return a.rstrip("/") == b.rstrip("/")
  return os.path.realpath(a) == os.path.realpath(b)


def _check_output_dir(output_model_dir, input_dir, flag_name):
  """Refuses an output directory that is the input's (symlinks resolved) or
  that is not a directory."""
  if not output_model_dir:
    raise ValueError(f"--{flag_name} must be set")
  if _same_directory(output_model_dir, input_dir):
    raise ValueError(f"--{flag_name}={output_model_dir} is the input "
                     f"checkpoint's directory {input_dir} (after resolving "
                     "links); choose another one (its `checkpoint` file "
                     "would be overwritten)")
  if tf.io.gfile.exists(output_model_dir) and not tf.io.gfile.isdir(
      output_model_dir):
    raise ValueError(f"--{flag_name}={output_model_dir} exists and is not a "
                     "directory")


def _write_output(values, output_model_dir, flag_name):
  """Writes `{output_model_dir}/model.ckpt`; a write failure is one line."""
  try:
    return checkpoint_io.write_checkpoint(
        os.path.join(output_model_dir, checkpoint_io.CKPT_BASENAME), values)
  except (tf.errors.OpError, OSError) as e:
    raise ValueError(f"--{flag_name}={output_model_dir}: cannot write the "
                     f"checkpoint ({cli.error_text(e)[:200]})") from None


def clean_ckpt(input_ckpt, output_model_dir):
  """Copies only the model weights of a checkpoint into a new checkpoint.

  Optimizer slots (`*/adam_m`, `*/adam_v`, `*/Adam*`, `beta*_power`),
  `global_step` and the memories (`mems/...`) are dropped.

  Args:
    input_ckpt: str, checkpoint prefix, directory or `{dir}/latest`.
    output_model_dir: str, directory of the new checkpoint `model.ckpt`; must
      differ from the input's directory.

  Returns:
    str, the written checkpoint prefix.

  Raises:
    ValueError: when the input is missing or damaged (naming the file) or
      the output is the input's directory.
  """
  input_ckpt = resolve_checkpoint(input_ckpt, "--clean_input_ckpt")
  _check_output_dir(output_model_dir, os.path.dirname(input_ckpt),
                    "clean_output_model_dir")
  names = [n for n, _ in tf.train.list_variables(input_ckpt)
           if not is_model_state(n)]
  values = checkpoint_io.read_tensors(input_ckpt, names)
  for name in sorted(values):
    tf.compat.v1.logging.info("Include %s", name)
  prefix = _write_output(values, output_model_dir, "clean_output_model_dir")
  tf.compat.v1.logging.info("Wrote %d variables to %s", len(values), prefix)
  return prefix


def is_model_state(var_name):
  """Whether `var_name` is training state rather than a weight: optimizer
  slots, step counters and memories."""
  return is_optimizer_variable(var_name) or var_name.startswith("mems/")


def _model_variable_shapes(ckpt):
  """Returns {name: shape tuple} of a checkpoint's model weights."""
  return {n: tuple(s) for n, s in tf.train.list_variables(ckpt)
          if not is_model_state(n)}


def avg_checkpoints(model_dir, output_model_dir, last_k):
  """Averages the model weights of the last `last_k` checkpoints of a dir.

  The checkpoints are the last `last_k` of the directory's
  `all_model_checkpoint_paths`; each model variable (optimizer slots, the
  step and memories are dropped) is averaged in float64 and cast back to its
  dtype.

  Args:
    model_dir: str, training directory with a `checkpoint` state file.
    output_model_dir: str, directory of the new checkpoint `model.ckpt`; must
      differ from `model_dir`.
    last_k: int >= 1.

  Returns:
    str, the written checkpoint prefix.

  Raises:
    ValueError: on a missing directory, fewer than `last_k` checkpoints,
      damaged checkpoints (naming the file) or checkpoints with different
      variables.
  """
  if last_k < 1:
    raise ValueError(f"--avg_num must be >= 1, got {last_k}")
  if not tf.io.gfile.isdir(model_dir):
    raise ValueError(f"--avg_model_dir={model_dir} is not a directory")
  _check_output_dir(output_model_dir, model_dir, "avg_output_model_dir")
  _, paths = checkpoint_io.read_state_file(model_dir)
  if len(paths) < last_k:
    raise ValueError(f"--avg_model_dir={model_dir} lists {len(paths)} "
                     f"checkpoints, fewer than --avg_num={last_k}")
  paths = paths[-last_k:]
  for path in paths:
    resolve_checkpoint(path, "--avg_model_dir checkpoint")

  shapes = _model_variable_shapes(paths[0])
  for path in paths[1:]:
    diff = set(shapes.items()) ^ set(_model_variable_shapes(path).items())
    if diff:
      raise ValueError(f"checkpoints {paths[0]} and {path} hold different "
                       "variables or shapes: "
                       f"{_describe_names(sorted({n for n, _ in diff}))}")

  tf.compat.v1.logging.info("Averaging %d variables over %s", len(shapes),
                            ", ".join(paths))
  totals, start = {}, time.time()
  for i, path in enumerate(paths):
    for name, value in checkpoint_io.read_tensors(path, sorted(shapes)).items():
      if name not in totals:
        totals[name] = (value.astype(np.float64), value.dtype)
      else:
        totals[name] = (totals[name][0] + value, totals[name][1])
    elapsed = time.time() - start
    tf.compat.v1.logging.info(
        "  %d/%d checkpoints read, %.0fs elapsed, ETA %.0fs", i + 1,
        len(paths), elapsed, elapsed * (len(paths) - i - 1) / (i + 1))
  values = {n: (total / last_k).astype(dtype)
            for n, (total, dtype) in totals.items()}
  prefix = _write_output(values, output_model_dir, "avg_output_model_dir")
  tf.compat.v1.logging.info("Wrote %d averaged variables to %s", len(values),
                            prefix)
  return prefix


def rollback_ckpt(model_dir, step=None):
  """Makes a training directory resume from its newest intact checkpoint
  (or from `step`): newer, damaged checkpoint files are moved into
  `{model_dir}/quarantine/` (never deleted) and the state file is rewritten.

  Returns:
    the checkpoint prefix training resumes from.

  Raises:
    ValueError: when `model_dir` holds no intact checkpoint (or none at
      `step`).
  """
  if not tf.io.gfile.isdir(model_dir):
    raise ValueError(f"--model_dir={model_dir} is not a directory")
  keep, moved = checkpoint_io.rollback(model_dir, step)
  for path in moved:
    tf.compat.v1.logging.info("Moved %s", path)
  tf.compat.v1.logging.info("Training in %s resumes from %s", model_dir, keep)
  return keep
