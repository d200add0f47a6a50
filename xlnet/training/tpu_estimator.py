"""TPUEstimator: the graph-mode optimizer and the run config of the
release's TPU path (TensorFlow <= 2.15; `tpu_estimator()` says whether this
TensorFlow has it).

  * `get_train_op`: warmup + poly/cos learning rate, Adam or Adam with
    decoupled weight decay, global-norm clipping, optional layer-wise decay,
    all from an `OptimizerConfig` (the update of `optimizer.py`).
  * `guarded_train_op`: that update, counting the steps it skipped.
  * `training_model_fn`: the model function of pretraining and fine-tuning
    alike: the caller's loss, the guarded update, the scalars' host call.
  * `configure_tpu`, `estimator`: the TPUEstimator and its `RunConfig`.
  * `train`: the training run of pretraining and fine-tuning alike: stop
    after a signal (saved) or a skipped update (not saved), a lost run lock
    (saving nothing more), checkpoints pruned to `max_save`.
"""
import tensorflow as tf

from xlnet.training import checkpoint_io
from xlnet.training import optimizer as optimizer_lib
from xlnet.training import progress
from xlnet.training import run_lock
from xlnet.training import strategies

def _root_variable_scope():
  """Context manager entering the root variable scope with AUTO_REUSE.

  Optimizer slots and the global step get fixed checkpoint names
  (`{var}/adam_m`, `global_step`) wherever `get_train_op` is called from.
  """
  return tf.compat.v1.variable_scope(
      tf.compat.v1.VariableScope(reuse=tf.compat.v1.AUTO_REUSE, name=""))


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
  `apply_gradients` increments `global_step` itself after all updates.

  Why a second driver of the one update (`optimizer.variable_update`,
  which `optimizer.AdamState` drives on the engine): TPUEstimator runs a
  TF1 graph whose optimizer must be a `tf.compat.v1.train.Optimizer`, so
  that `CrossShardOptimizer` can wrap it (summing the cores' gradients in
  `apply_gradients`) and its slots are graph variables made by
  `get_variable` in the root scope, restored by name by the Estimator's
  saver. The engine's state instead lives in `tf.Variable`s made under a
  strategy's scope and updated per device by `strategy.extended.update`,
  saved by `train_state`. The two drivers differ in where the variables
  live and how the update is placed, not in the numbers:
  tests/training/test_adam_drivers.py checks that both give the same
  weights, bit for bit, step by step.
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
                    zip(optimizer_lib.ADAM_POWER_NAMES, optimizer_lib.BETAS)]
      powers = [p.read_value() for p in power_vars]
    slots = []
    for _, param in pairs:
      name = checkpoint_io.variable_name(param)
      if not hasattr(param, "handle"):
        raise ValueError(f"AdamWeightDecayOptimizer needs resource "
                         f"variables; {name} is a reference variable")
      slots.append([self._root_variable(n, param.shape.as_list(), 0.0)
                    for n in optimizer_lib.slot_names(name,
                                                      not self.tf_adam)])

    def apply():
      updates = [optimizer_lib.variable_update(
          param, checkpoint_io.variable_name(param), m, v,
          tf.convert_to_tensor(grad), learning_rate, self.epsilon,
          self.weight_decay_rate, powers)
                 for (grad, param), (m, v) in zip(pairs, slots)]
      with tf.control_dependencies(updates):
        return tf.group(*[p.assign(p * b) for p, b in
                          zip(power_vars, optimizer_lib.BETAS)], *updates)

    if self.apply_if is None:
      update = apply()
    else:
      update = tf.cond(self.apply_if, apply, tf.no_op)
    finish = []
    if global_step is not None:
      with tf.control_dependencies([update]):
        finish.append(tf.compat.v1.assign_add(global_step, 1))
    return tf.group(update, *finish, name=name or self.get_name())


def get_train_op(optimizer, total_loss, grads_and_vars=None, use_tpu=False):
  """Builds the graph-mode training op.

  Args:
    optimizer: an `OptimizerConfig` (its `n_layer` None: one more than the
      largest `model/transformer/layer_{l}/` index among the variables).
    total_loss: float scalar tensor; differentiated w.r.t. the trainable
      variables but those `optimizer.freeze_layers` freezes (no gradient,
      no slot, no update) unless `grads_and_vars` is given.
    grads_and_vars: optional list of (gradient, variable), used as is
      instead of differentiating.
    use_tpu: bool, see below.

  With `use_tpu` the optimizer is wrapped in `CrossShardOptimizer`: as
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
    ValueError: on an invalid schedule or when no variable has a gradient.
  """
  c = optimizer
  with _root_variable_scope():
    global_step = tf.compat.v1.train.get_or_create_global_step()
  learning_rate = optimizer_lib.scheduled_learning_rate(c, global_step)

  inner = AdamWeightDecayOptimizer(
      learning_rate=learning_rate, epsilon=c.adam_epsilon,
      weight_decay_rate=c.weight_decay, tf_adam=c.weight_decay == 0)
  graph_optimizer = inner
  if use_tpu:
    graph_optimizer = tf.compat.v1.tpu.CrossShardOptimizer(inner)

  if grads_and_vars is None:
    grads_and_vars = graph_optimizer.compute_gradients(
        total_loss, var_list=_trained_variables(c.freeze_layers))
  grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
  if not grads_and_vars:
    raise ValueError("get_train_op: no trainable variable has a gradient "
                     "w.r.t. the loss")
  variables = [v for _, v in grads_and_vars]
  # Sparse gradients (embedding lookups) are made dense: the global norm must
  # see duplicate rows summed, and the update uses the fused dense kernels.
  clipped, gnorm = optimizer_lib.clipped_gradients(
      c, [tf.convert_to_tensor(g) for g, _ in grads_and_vars],
      [checkpoint_io.variable_name(v) for v in variables])
  inner.apply_if = update_applied(gnorm, total_loss, use_tpu)
  train_op = graph_optimizer.apply_gradients(zip(clipped, variables),
                                             global_step=global_step)
  return train_op, learning_rate, gnorm


def _trained_variables(freeze_layers):
  """The graph's trainable variables but those `freeze_layers` freezes
  (`optimizer.trained`); None (all of them) when it freezes none."""
  if not freeze_layers:
    return None
  variables = tf.compat.v1.trainable_variables()
  trained = optimizer_lib.trained(
      [checkpoint_io.variable_name(v) for v in variables], freeze_layers)
  return [v for v, t in zip(variables, trained) if t]


def update_applied(gnorm, total_loss, use_tpu=False):
  """Whether `get_train_op` applies this step's update: loss and gradient
  norm finite (on every TPU core, so that replicas never disagree).

  Returns:
    bool scalar tensor.
  """
  ok = optimizer_lib.finite_step(total_loss, gnorm)
  if use_tpu:
    bad = tf.compat.v1.tpu.cross_replica_sum(1.0 - tf.cast(ok, tf.float32))
    ok = tf.equal(bad, 0.0)
  return ok


def tpu_estimator():
  """`tf.compat.v1.estimator.tpu`, or None: TensorFlow 2.16 removed
  TPUEstimator (the one place that checks)."""
  return getattr(getattr(tf.compat.v1, "estimator", None), "tpu", None)


def chosen(tpu_engine):
  """Whether `tpu_engine` ("auto", "estimator" or "strategy") runs
  TPUEstimator (else the engine on a TPUStrategy): "auto" does where
  TensorFlow has it.

  Raises:
    ValueError: "estimator" on TensorFlow >= 2.16.
  """
  if tpu_engine == "estimator":
    require_tpu_estimator(
        "--tpu_engine=estimator (use --tpu_engine=strategy on this version)")
    return True
  if tpu_engine == "strategy":
    return False
  return tpu_estimator() is not None


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


def configure_tpu(device, checkpoint, num_shards, iterations, train_steps,
                  seed=None):
  """Builds the TPUEstimator run config.

  Args:
    device: a `DeviceConfig` (use_tpu, tpu, tpu_zone, gcp_project, master).
    checkpoint: a `CheckpointConfig` (model_dir, save_steps: None = save at
      the end, i.e. every `train_steps`; max_save).
    num_shards: int, TPU cores over all hosts.
    iterations: int, steps per TPU loop.
    train_steps: int, the run's length.
    seed: graph-level random seed, None = unseeded.

  Returns:
    `tf.compat.v1.estimator.tpu.RunConfig`.

  Raises:
    ValueError: when TPUEstimator is unavailable (TensorFlow >= 2.16) or no
      TPU is found.
  """
  tpu = require_tpu_estimator("the TPU run config")
  if device.use_tpu:
    cluster = strategies.tpu_cluster_resolver(device.tpu, device.tpu_zone,
                                              device.gcp_project)
    master = None
  else:
    cluster = None
    master = device.master
  return tpu.RunConfig(
      master=master,
      cluster=cluster,
      model_dir=checkpoint.model_dir,
      session_config=tf.compat.v1.ConfigProto(allow_soft_placement=True),
      tpu_config=tpu.TPUConfig(
          iterations_per_loop=iterations,
          num_shards=num_shards,
          per_host_input_for_training=(
              tpu.InputPipelineConfig.PER_HOST_V2)),
      keep_checkpoint_max=checkpoint.max_save,
      save_checkpoints_secs=None,
      save_checkpoints_steps=checkpoint.save_steps or train_steps,
      tf_random_seed=seed)


def estimator(model_fn, device, checkpoint, layout, iterations, train_steps,
              seed=None, **batch_sizes):
  """The TPUEstimator of a run.

  Args:
    model_fn: the TPUEstimator model function.
    device, checkpoint: the run's `DeviceConfig` and `CheckpointConfig`.
    layout: its `BatchLayout` (`num_cores` shards).
    iterations, train_steps, seed: as `configure_tpu`.
    **batch_sizes: `train_batch_size`, `predict_batch_size` (global).
  """
  return tpu_estimator().TPUEstimator(
      model_fn=model_fn,
      config=configure_tpu(device, checkpoint, layout.num_cores, iterations,
                           train_steps, seed),
      use_tpu=device.use_tpu, **batch_sizes)


def nonfinite_counter():
  """`train/nonfinite_steps` (int64): steps whose update was skipped because
  the loss or the gradient norm was not finite."""
  with _root_variable_scope():
    return tf.compat.v1.get_variable(
        "train/nonfinite_steps", [], dtype=tf.int64, trainable=False,
        initializer=tf.compat.v1.zeros_initializer())


def guarded_train_op(optimizer, total_loss, use_tpu=False):
  """`get_train_op`, counting the updates it skips (`nonfinite_counter`,
  which makes `train` stop).

  Returns:
    (train_op, learning_rate, gnorm, applied): as `get_train_op`, and
    whether this step's update is applied (bool scalar).
  """
  train_op, learning_rate, gnorm = get_train_op(optimizer, total_loss,
                                                use_tpu=use_tpu)
  applied = update_applied(gnorm, total_loss, use_tpu)
  with tf.control_dependencies([train_op]):
    count = nonfinite_counter().assign_add(1 - tf.cast(applied, tf.int64))
  return tf.group(train_op, count), learning_rate, gnorm, applied


################################################################################
# The model function of a training run (pretraining and fine-tuning).
################################################################################
SUMMARY_EVERY = 100


def training_model_fn(step_fn, optimizer, use_tpu, scaffold_fn_of,
                      summary_dir=None):
  """The TPUEstimator model function of a training run: the caller's loss,
  the guarded update (`guarded_train_op`), what the caller runs after the
  update, and optionally the run's scalars.

  Args:
    step_fn: `step_fn(features, labels)` -> (loss, after_update): the
      float32 scalar loss of the model it builds, and None or
      `after_update(applied)` -> list of ops that run after the update
      (`applied`: bool scalar, whether the update changed the weights).
    optimizer: the run's `OptimizerConfig`.
    use_tpu: bool, as `get_train_op`.
    scaffold_fn_of: () -> the warm start's `scaffold_fn` or None
      (`warm_start.init_from_checkpoint`), called once the model is built.
    summary_dir: where `scalars_host_call` writes the run's scalars; None:
      no host call.

  Returns:
    model_fn(features, labels, mode, params) -> `TPUEstimatorSpec`.
  """

  def model_fn(features, labels, mode, params):
    del params
    loss, after_update = step_fn(features, labels)
    scaffold_fn = scaffold_fn_of()
    train_op, learning_rate, gnorm, applied = guarded_train_op(
        optimizer, loss, use_tpu)
    if after_update is not None:
      with tf.control_dependencies([train_op]):
        after = after_update(applied)
      train_op = tf.group(train_op, *after)
    host_call = None
    if summary_dir is not None:
      host_call = (scalars_host_call(summary_dir), [
          tf.reshape(x, [1]) for x in (tf.compat.v1.train.get_global_step(),
                                       loss, learning_rate, gnorm)])
    return tpu_estimator().TPUEstimatorSpec(
        mode=mode, loss=loss, train_op=train_op, host_call=host_call,
        scaffold_fn=scaffold_fn)

  return model_fn


def scalars_host_call(summary_dir):
  """A host call writing the cores' mean scalars every `SUMMARY_EVERY`
  steps: `train/total_loss`, `train/lr`, `train/gnorm`.

  Returns:
    host_call_fn(global_step [n], total_loss [n], lr [n], gnorm [n]) where
    n is the number of cores (each core sends one value).
  """

  def host_call_fn(global_step, total_loss, lr, gnorm):
    step = global_step[0]
    writer = tf.compat.v2.summary.create_file_writer(summary_dir)
    with writer.as_default(), tf.compat.v2.summary.record_if(
        tf.equal(step % SUMMARY_EVERY, 0)):
      tf.compat.v2.summary.scalar("train/total_loss",
                                  tf.reduce_mean(total_loss), step=step)
      tf.compat.v2.summary.scalar("train/lr", tf.reduce_mean(lr), step=step)
      tf.compat.v2.summary.scalar("train/gnorm", tf.reduce_mean(gnorm),
                                  step=step)
      return tf.compat.v1.summary.all_v2_summary_ops()

  return host_call_fn


def diverged(step):
  """The error of a run whose loss or gradient norm became non-finite."""
  where = f"by step {step}" if step is not None else "in the last loop"
  return progress.Diverged(
      f"non-finite loss or gradient norm {where}: those updates were skipped "
      "(no weight changed), so the newest checkpoint in --model_dir holds "
      "the last finite state. Lower --learning_rate or raise --warmup_steps "
      "and rerun to resume from it")


class _StopHook(tf.compat.v1.train.SessionRunHook):
  """Stops after the current step (loop on TPU) when a signal arrived, and
  fails when an update was skipped for a non-finite loss (the skipped
  update changed no weight, so what is saved stays the last finite
  state)."""

  def __init__(self, signals):
    self.signals = signals

  def begin(self):
    self._counter = nonfinite_counter()
    self._step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs([self._counter, self._step])

  def after_run(self, run_context, run_values):
    count, step = run_values.results
    if count:
      raise diverged(step)
    if self.signals.signum is not None:
      run_context.request_stop()


class _PruneListener(tf.compat.v1.train.CheckpointSaverListener):
  """Keeps at most `max_save` checkpoints on disk, those of earlier runs in
  the same model_dir included."""

  def __init__(self, model_dir, max_save):
    self.model_dir, self.max_save = model_dir, max_save

  def after_save(self, session, global_step_value):
    del session, global_step_value
    checkpoint_io.prune(self.model_dir, self.max_save)


def train(tpu_run, input_fn, model_dir, train_steps, max_save=None):
  """Trains the TPUEstimator `tpu_run` (its model function builds its update
  with `guarded_train_op`) until `train_steps`; the caller holds the run
  lock of `model_dir`.

  Raises:
    progress.Interrupted: after a signal (saved).
    progress.Diverged: an update was skipped (the weights stay the last
      finite ones).
    run_lock.LockLost: the run lock was lost (nothing more saved).
  """
  checkpoint_io.clean_model_dir(model_dir)
  checkpoint_io.prune(model_dir, max_save)
  lock_hook, lock_listener = lock_guards(model_dir)
  with progress.SignalCatcher() as signals:
    try:
      tpu_run.train(input_fn=input_fn, max_steps=train_steps,
                    hooks=[_StopHook(signals), lock_hook],
                    saving_listeners=[lock_listener,
                                      _PruneListener(model_dir, max_save)])
    except tf.compat.v1.train.NanLossDuringTrainingError:
      # The estimator's own NaN check on the reported loss came first.
      raise diverged(None) from None
  if signals.signum is not None:
    raise progress.interrupted(signals.signum, checkpoint_io.step_of(
        tf.train.latest_checkpoint(model_dir)), model_dir)


class _LockHook(tf.compat.v1.train.SessionRunHook):
  """Stops after a loop whose run lock the heartbeat found lost."""

  def __init__(self, model_dir):
    self.model_dir = model_dir

  def after_run(self, run_context, run_values):
    del run_context, run_values
    run_lock.check_held(self.model_dir, read=False)


class _LockListener(tf.compat.v1.train.CheckpointSaverListener):
  """Reads the run lock before every save (the final one included)."""

  def __init__(self, model_dir):
    self.model_dir = model_dir

  def before_save(self, session, global_step_value):
    del session, global_step_value
    run_lock.check_held(self.model_dir)


def lock_guards(model_dir):
  """The hook and the saving listener that end a TPUEstimator run with
  `run_lock.LockLost`, saving nothing more, once the run lock of
  `model_dir` was removed or taken over.

  Returns:
    (SessionRunHook, CheckpointSaverListener).
  """
  return _LockHook(model_dir), _LockListener(model_dir)
