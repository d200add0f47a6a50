"""The optimizer step of every trainer: learning-rate schedule, gradient
clipping and layer-wise decay, the Adam/AdamW update, and `AdamState`, the
optimizer's variables and guarded update under a `tf.distribute` strategy.

The update of one variable (`variable_update`: moments, bias correction,
decay and its exclusions), the clipping and layer-wise decay
(`scale_gradients`), the schedule and the guard (`finite_step`) are the one
Adam/AdamW of both trainers: `AdamState` runs them under a strategy, the
graph-mode `tpu_estimator.AdamWeightDecayOptimizer` under TPUEstimator (why
that second driver stays: its docstring).
"""
import math
import re

from absl import logging
import tensorflow as tf

from xlnet import validation
from xlnet.training import config as config_lib

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
_BACKBONE_RE = re.compile(r"(^|/)model/transformer/")


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
    ValueError: one line naming the first setting that breaks its rule
      (`xlnet/validation.py`: an unknown `decay_method`, a value out of
      range).
  """
  for name, value in (("decay_method", decay_method),
                      ("warmup_steps", warmup_steps),
                      ("train_steps", train_steps),
                      ("min_lr_ratio", min_lr_ratio)):
    validation.check_value(name, value)

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


def scheduled_learning_rate(config, step):
  """The float32 learning rate of `config` (an `OptimizerConfig`: its
  schedule) at the integer scalar tensor `step`; see
  `learning_rate_schedule`."""
  return learning_rate_schedule(step, config.learning_rate,
                                config.warmup_steps, config.train_steps,
                                config.decay_method, config.min_lr_ratio)


def clipped_gradients(config, gradients, var_names):
  """(gradients clipped by `config.clip` and scaled per layer, gnorm
  before clipping) under `config` (an `OptimizerConfig`); see
  `scale_gradients`."""
  return scale_gradients(gradients, var_names, config.clip, config.n_layer,
                         config.lr_layer_decay_rate)


def is_frozen(var_name, freeze_layers):
  """Whether `freeze_layers` (N, `OptimizerConfig.freeze_layers`) freezes
  the variable `var_name`: it gets no gradient, no update, no slot.

  N >= 1 freezes every variable of the backbone (`model/transformer/`) but
  those of layers N and up: the word embedding and `mask_emb`, layers
  0..N-1, and the relative-attention biases and segment embeddings
  (`r_w_bias`, `r_r_bias`, `r_s_bias`, `seg_embed`). Those hold every
  layer's values in one variable (one row per layer with untie_r, one
  value for all without); they are frozen whole, the rows of the trained
  layers too, so that no gradient is computed below layer N. The heads
  (the summary, the LM loss's bias, a task's layers) always train.
  """
  if not freeze_layers or not _BACKBONE_RE.search(var_name):
    return False
  layer = _LAYER_RE.search(var_name)
  return layer is None or int(layer.group(1)) < freeze_layers


def trained(var_names, freeze_layers):
  """Which of a model's variables `var_names` train under `freeze_layers`.

  Returns:
    list of bools, one per name.

  Raises:
    ValueError: `freeze_layers` above the model's layers (one more than
      the largest `layer_{l}` among the names).
  """
  layers = [_LAYER_RE.search(name) for name in var_names]
  validation.check_freeze_layers(freeze_layers, 1 + max(
      (int(m.group(1)) for m in layers if m), default=-1))
  return [not is_frozen(name, freeze_layers) for name in var_names]


def is_optimizer_variable(var_name):
  """Whether `var_name` is an optimizer slot or step counter, not a weight."""
  return _OPTIMIZER_VAR_RE.search(var_name) is not None


################################################################################
# The update math, shared by the graph-mode optimizer (`tpu_estimator.py`)
# and the tf.distribute trainer (`AdamState`).
################################################################################
BETA_1, BETA_2 = 0.9, 0.999
BETAS = (BETA_1, BETA_2)
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


def variable_update(var, var_name, m, v, grad, learning_rate, epsilon,
                    weight_decay, powers):
  """The Adam/AdamW update of the variable `var_name`, in place: its decay
  rate by name (`decay_rate_of`), then `adam_update`.

  Args:
    var, m, v, grad, learning_rate, epsilon: as `adam_update`.
    var_name: str, the variable's checkpoint name.
    weight_decay: float, the run's rate (0: plain Adam).
    powers: (beta1_power, beta2_power) float32 scalars, (0, 0) for AdamW.

  Returns:
    the update op.
  """
  return adam_update(var, m, v, grad, learning_rate, epsilon,
                     decay_rate_of(var_name, weight_decay), *powers)


def finite_step(loss, gnorm):
  """Whether a step may be applied: loss and gradient norm finite (bool
  scalar; `loss` of any float dtype, read in float32)."""
  return tf.logical_and(tf.math.is_finite(tf.cast(loss, tf.float32)),
                        tf.math.is_finite(gnorm))


################################################################################
# The optimizer state of the tf.distribute trainer.
################################################################################
# Dynamic loss scaling (float16): the finite steps in a row after which the
# scale doubles (the first scale: `TrainConfig.loss_scale`).
LOSS_SCALE_GROWTH_STEPS = 2000
# An overflow at the lowest scale ends the run (Diverged) instead of
# lowering it further.
MIN_LOSS_SCALE = config_lib.MIN_LOSS_SCALE


class AdamState:
  """The optimizer's variables and its guarded update under a strategy.

  Owns the two moment slots of every trainable variable (`slot_names`), TF
  Adam's step counters `beta1_power`/`beta2_power` (plain Adam only) and,
  with float16 (`use_fp16`), the dynamic loss scale and its count of applied
  steps in a row.

  Args:
    config: an `OptimizerConfig`.
    train: a `TrainConfig` (its `use_fp16` and `loss_scale`).

  Raises:
    ValueError: with use_fp16, a `loss_scale` below `MIN_LOSS_SCALE` or
      not finite (`config.check_loss_scale`).
  """

  def __init__(self, config, train):
    self.config = config
    self.loss_scaling = train.use_fp16
    self.initial_loss_scale = train.loss_scale
    if self.loss_scaling:
      config_lib.check_loss_scale(train.loss_scale)
    self.trainable, self.names, self.slots, self.powers = [], [], [], []
    self.loss_scale = self.good_steps = None

  def build(self, trainable, names):
    """Creates the optimizer's variables; call it inside `strategy.scope()`.

    Args:
      trainable: the model's trainable variables (mirrored).
      names: their checkpoint names.
    """
    weight_decay = self.config.weight_decay
    self.trainable, self.names = list(trainable), list(names)
    self.slots = [
        [tf.Variable(tf.zeros(var.shape, tf.float32), trainable=False,
                     name=slot_name.replace("/", "_"))
         for slot_name in slot_names(name, weight_decay)]
        for var, name in zip(self.trainable, self.names)]
    if not weight_decay:
      self.powers = [tf.Variable(b, dtype=tf.float32, trainable=False, name=n)
                     for n, b in zip(ADAM_POWER_NAMES, BETAS)]
    if self.loss_scaling:
      self.loss_scale = tf.Variable(
          float(self.initial_loss_scale),
          dtype=tf.float32, trainable=False, name="loss_scale",
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      self.good_steps = tf.Variable(
          0, dtype=tf.int64, trainable=False, name="loss_scale_good_steps",
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

  def variables(self):
    """{checkpoint name: variable} of the optimizer state."""
    out = {}
    for name, slots in zip(self.names, self.slots):
      out.update(zip(slot_names(name, self.config.weight_decay), slots))
    if self.loss_scaling:
      out["loss_scale"] = self.loss_scale
      out["loss_scale_good_steps"] = self.good_steps
    out.update(zip(ADAM_POWER_NAMES, self.powers))
    return out

  def learning_rate(self, step):
    """The schedule's float32 learning rate at the int64 scalar `step`."""
    return scheduled_learning_rate(self.config, step)

  def clip(self, grads):
    """(clipped and layer-scaled gradients, gnorm); see `scale_gradients`."""
    return clipped_gradients(self.config, grads, self.names)

  def outcome(self, loss, gnorm):
    """Whether the step's update is applied and whether the step counts.

    Args:
      loss, gnorm: float32 scalars (replica-identical).

    Returns:
      (applied, ok) bool scalars; `applied` implies `ok`, so a step that
      changes the weights always counts. Without loss scaling both mean
      "loss and gradient norm finite". With it, an overflow of the scaled
      gradients is routine while the scale can still be lowered (> 1): the
      update is skipped but the step counts (`ok`) and the scale halves; an
      overflow at scale 1, or a non-finite loss, means the run diverged.
    """
    finite = finite_step(loss, gnorm)
    if not self.loss_scaling:
      return finite, finite
    ok = tf.logical_and(tf.math.is_finite(loss), tf.logical_or(
        finite, self.loss_scale.read_value() > 1.0))
    return tf.logical_and(finite, ok), ok

  def apply(self, strategy, grads, lr, applied):
    """Cross-replica: the Adam/AdamW update of every trainable variable and
    the Adam powers, only where `applied` (a bool scalar).

    Returns:
      the update ops, for control dependencies.
    """
    c = self.config
    powers = [p.read_value() for p in self.powers] or [0.0, 0.0]

    def update(var, grad, m, v, lr, ok, name):
      def apply():
        with tf.control_dependencies([variable_update(
            var, name, m, v, grad, lr, c.adam_epsilon, c.weight_decay,
            powers)]):
          return tf.constant(True)
      return tf.cond(ok, apply, lambda: tf.constant(False))

    done = []
    for var, grad, (m, v), name in zip(self.trainable, grads, self.slots,
                                       self.names):
      done.append(strategy.extended.update(
          var, update, args=(grad, m, v, lr, applied, name), group=False))
    done = tf.nest.flatten(done)
    with tf.control_dependencies(done):
      for power, beta in zip(self.powers, BETAS):
        strategy.extended.update(
            power, lambda p, ok, b=beta: p.assign(tf.where(ok, p * b, p)),
            args=(applied,))
    return done

  def update_loss_scale(self, strategy, applied, ok):
    """Cross-replica: halves the loss scale after an overflow (never below
    `MIN_LOSS_SCALE`); doubles it after `LOSS_SCALE_GROWTH_STEPS` applied
    steps in a row; a diverged step (not `ok`) changes neither."""
    good = self.good_steps.read_value() + 1
    grow = good >= LOSS_SCALE_GROWTH_STEPS

    def new_scale(scale, applied, ok):
      lowered = tf.maximum(scale * 0.5, MIN_LOSS_SCALE)
      return scale.assign(tf.where(ok, tf.where(
          applied, tf.where(grow, scale * 2.0, scale), lowered), scale))

    def new_good(count, applied, ok):
      counted = tf.where(tf.logical_and(applied, tf.logical_not(grow)), good,
                         tf.zeros_like(good))
      return count.assign(tf.where(ok, counted, count))

    strategy.extended.update(self.loss_scale, new_scale, args=(applied, ok))
    strategy.extended.update(self.good_steps, new_good, args=(applied, ok))

  def lift_loss_scale(self, source):
    """After a restore: a loss scale that older runs could save, below
    `MIN_LOSS_SCALE` or not finite (with which no update is ever applied),
    is replaced (by the lowest, or by the run's first scale), with a warning
    naming `source`."""
    if not self.loss_scaling:
      return
    saved = float(self.loss_scale.numpy())
    if math.isfinite(saved) and saved >= MIN_LOSS_SCALE:
      return
    scale = MIN_LOSS_SCALE if math.isfinite(saved) else self.initial_loss_scale
    logging.warning("%s holds a loss scale of %g; training resumes with %g",
                    source, saved, scale)
    self.loss_scale.assign(scale)
