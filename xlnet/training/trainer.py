"""The training loop shared by pretraining and fine-tuning.

`Trainer` runs on every strategy (`strategies.for_training`). The model
is a `make_template` (`template.py`); the optimizer's variables and update
are `optimizer.AdamState`; checkpoints are `train_state.ShardedState`.

One optimizer step (`Trainer._replica_step`), per replica:
  1. forward and backward passes over `accum_steps` micro-batches (their
     gradients are averaged; memories advance from micro-batch to
     micro-batch), dropout seeded statelessly from (seed, step, replica,
     micro-batch); the gradients are those of the trained variables, all
     but the ones `OptimizerConfig.freeze_layers` freezes, which have no
     slots either;
  2. gradients averaged over replicas (as the release averaged GPU towers),
     clipped by their global norm, scaled per layer;
  3. the Adam/AdamW update of `optimizer.variable_update`, applied only when
     the loss and the gradient norm are finite; otherwise nothing changes
     and the loop stops with `Diverged` after saving the last finite state
     (with float16 loss scaling an overflow above scale 1 only skips the
     update and halves the scale; see `AdamState.outcome`).
Memories are per-replica variables (`synchronization=ON_READ`): every replica
reads and writes its own; checkpoints keep every replica's memories under
`mems/replica_{r}/layer_{i}`.

Checkpoints are written only at step boundaries: on `save_steps`, at the
end, after SIGTERM/SIGINT (`Interrupted`), after a corrupted input record
(`DataCorrupted`) and before `Diverged`. A save that meets a resource
failure (no space, file too large, ...) ends the run with one line
(`io_utils.ResourceError`). A trainer whose run lock was removed or taken
over (`run_lock.check_held`, before every step and every save) stops with
one line and saves nothing more (`run_lock.LockLost`).
"""
import contextlib

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet import errors
from xlnet import modeling
from xlnet.training import checkpoint_io
from xlnet.training import checkpoint_resume
from xlnet.training import config
from xlnet.training import optimizer as optimizer_lib
from xlnet.training import progress
from xlnet.training import run_lock
from xlnet.training import step_log
from xlnet.training import strategies
from xlnet.training import template as template_lib
from xlnet.training import train_state
from xlnet.training import warm_start


class MemoryConfig:
  """Shape of the per-replica memories: n_layer x [mem_len, bsz, d_model]."""

  def __init__(self, n_layer, mem_len, bsz, d_model):
    self.n_layer, self.mem_len, self.bsz, self.d_model = (
        n_layer, mem_len, bsz, d_model)

  @property
  def shape(self):
    """`[mem_len, bsz, d_model]` of one layer's memory."""
    return config.memory_shape(self.mem_len, self.bsz, self.d_model)

  def zeros(self):
    """n_layer float32 zero tensors `shape`: the memories that build the
    model's variables."""
    return [tf.zeros(self.shape)] * self.n_layer

  def variables(self):
    """n_layer per-replica float32 variables `shape` of zeros (every
    replica reads and writes its own); call inside `strategy.scope()`."""
    return [tf.Variable(tf.zeros(self.shape), trainable=False,
                        name=f"mems_layer_{i}",
                        synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            for i in range(self.n_layer)]


class Trainer:
  """Builds the model's variables, runs the train step and the loop.

  Args:
    strategy: from `strategies.for_training`.
    loss_fn: `loss_fn(features, mems, is_training)` -> `(loss, new_mems,
      outputs)`: builds the model with `tf.compat.v1.get_variable` (it runs
      inside `make_template`); `features` are one replica's batch-major
      tensors, `mems` a list of float32 `[mem_len, bsz, d_model]` or None,
      `loss` a float32 scalar, `outputs` a dict of per-example tensors
      (the held-out evaluation sums them; training ignores them).
    optimizer: an `OptimizerConfig` (schedule, Adam/AdamW, clipping, layer
      decay).
    model_dir: checkpoints and summaries.
    memory: a `MemoryConfig`, or None (no memories).
    accum_steps: micro-batches per optimizer step.
    train: a `TrainConfig`: `seed` seeds the initial weights and dropout
      (with the step, replica and micro-batch); `use_xla` jit-compiles the
      per-replica step (the whole step on one device or TPU; forward and
      backward with several mirrored devices); `use_fp16` scales the loss
      (dynamic, from `loss_scale`).
  """

  def __init__(self, strategy, loss_fn, optimizer, model_dir, memory=None,
               accum_steps=1, train=config.TrainConfig()):
    if accum_steps < 1:
      raise ValueError(f"--accum_steps={accum_steps} must be >= 1")
    self.strategy = strategy
    self.optimizer = optimizer
    self.model_dir = model_dir
    self.memory = memory
    self.accum_steps = accum_steps
    self.seed = int(train.seed)
    # The graph-level seed, before any dataset is made: a seeded tf.data
    # shuffle combines it with its op seed, so the input order then depends
    # on the seed alone, not on what the process did before.
    tf.random.set_seed(self.seed)
    self.use_xla = train.use_xla
    # Dropout masks from fewer random bits (modeling._byte_keep_mask): same
    # distribution, faster on the CPU; their shapes depend on the data, which
    # XLA and TPUs do not allow, and on a GPU the random numbers are cheap.
    self.byte_masks = not self.use_xla and strategies.runs_on_cpu(strategy)
    self.adam = optimizer_lib.AdamState(optimizer, train)
    self.chief = strategies.is_chief(strategy)
    self.worker = strategies.worker_index(strategy)
    self.num_replicas = strategy.num_replicas_in_sync
    # The model function `template(features, mems, is_training)`; called
    # outside the train step it reads the trained variables (evaluation).
    self.template = tf.compat.v1.make_template(template_lib.TEMPLATE_SCOPE,
                                               loss_fn)
    self._built = False

  # --------------------------------------------------------------------------
  # Variables.
  # --------------------------------------------------------------------------
  def build(self, element_spec):
    """Creates every variable (model, optimizer, step, memories).

    Args:
      element_spec: one replica's batch: a dict of static TensorSpec, as the
        dataset given to `distribute` yields it.
    """
    if self._built:
      return
    tf.random.set_seed(self.seed)  # the initial weights (0 seeds too)
    with self.strategy.scope():
      features = {k: template_lib.zeros_like_spec(s)
                  for k, s in element_spec.items()}
      mems = self.memory.zeros() if self.memory else None
      self.template(features, mems, False)  # creates the model variables
      weights = _named(self.template, self.template.trainable_variables)
      self.trainable, self.names = _trained_part(
          list(weights.values()), list(weights), self.optimizer.freeze_layers)
      self.adam.build(self.trainable, self.names)
      self.global_step = tf.Variable(
          0, dtype=tf.int64, trainable=False, name="global_step",
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      self.mem_vars = self.memory.variables() if self.memory else []
    variables = dict(weights, **self.adam.variables(),
                     **_named(self.template,
                              self.template.non_trainable_variables))
    variables["global_step"] = self.global_step
    self.local_replica_ids = strategies.local_replica_ids(self.strategy)
    self.state = train_state.ShardedState(
        self.strategy, self.model_dir, variables, self.mem_vars,
        self.local_replica_ids)
    self._built = True
    logging.info("Model: %d trainable variables, %d parameters; %d replicas",
                 len(self.trainable),
                 sum(int(np.prod(v.shape)) for v in self.trainable),
                 self.num_replicas)

  # --------------------------------------------------------------------------
  # The step.
  # --------------------------------------------------------------------------
  def _forward_backward(self, features, mems, step, micro):
    """Loss, dense gradients and new memories of one micro-batch.

    With float16 (`use_fp16`) the loss is multiplied by the loss scale
    before differentiating, so that small gradients survive float16, and
    the float32 gradients are divided by it again.
    """
    with tf.GradientTape() as tape:
      with modeling.stateless_dropout_seed(_dropout_seed(self.seed, step,
                                                         micro),
                                           byte_masks=self.byte_masks):
        loss, new_mems, _ = self.template(features, mems, True)
      scaling = self.adam.loss_scaling
      scale = self.adam.loss_scale.read_value() if scaling else None
      target = loss * scale if scaling else loss
    grads = tape.gradient(target, self.trainable)
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
             for g, v in zip(grads, self.trainable)]
    if scaling:
      grads = [g / scale for g in grads]
    return loss, grads, new_mems

  def _replica_step(self, features, stop_flag):
    """One optimizer step of one replica; returns replica-identical scalars."""
    ctx = tf.distribute.get_replica_context()
    step = self.global_step.read_value()
    mems = [v.read_value() for v in self.mem_vars] or None
    loss, grads, new_mems = _accumulated(
        self._forward_backward, features, mems, step, self.accum_steps,
        self.trainable)
    # (tf.identity places the broadcast flag on this replica's device; the
    # all-reduce needs a device for every value.)
    loss, grads, stop = ctx.all_reduce(
        tf.distribute.ReduceOp.MEAN, (loss, grads, tf.identity(stop_flag)))
    grads, gnorm = self.adam.clip(grads)
    lr = self.adam.learning_rate(step)
    applied, ok = self.adam.outcome(loss, gnorm)
    ctx.merge_call(self._apply, args=(grads, lr, applied, ok))
    for var, new in zip(self.mem_vars, new_mems or []):
      var.assign(tf.where(ok, new, var.read_value()))
    return {"loss": loss, "gnorm": gnorm, "lr": lr, "ok": ok,
            "applied": applied, "stop": stop > 0}

  def _apply(self, strategy, grads, lr, applied, ok):
    """Cross-replica: the guarded Adam/AdamW update (only when `applied`),
    then the step counter (counts every step that did not diverge: `ok`)
    and the loss scale."""
    with tf.control_dependencies(self.adam.apply(strategy, grads, lr,
                                                 applied)):
      strategy.extended.update(
          self.global_step,
          lambda s, ok: s.assign_add(tf.cast(ok, tf.int64)), args=(ok,))
      if self.adam.loss_scaling:
        self.adam.update_loss_scale(strategy, applied, ok)

  def make_train_step(self):
    """The tf.function running one step on every replica.

    Returns:
      step(iterator, stop_flag) -> dict of numpy scalars (loss, gnorm, lr,
      ok, stop).
    """
    replica_step = self._replica_step
    whole_step_xla = self.use_xla and (
        self.num_replicas == 1 or
        isinstance(self.strategy, tf.distribute.TPUStrategy))
    if whole_step_xla:
      replica_step = tf.function(replica_step, jit_compile=True,
                                 autograph=False)
    elif self.use_xla:
      self._forward_backward = tf.function(self._forward_backward,
                                           jit_compile=True, autograph=False)

    # Traced as written (no autograph): the step's Python has no control
    # flow on tensors, and autograph's rewrite of every function it calls
    # was a third of the tracing (a program's first step: 8.0 -> 5.5 s).
    @tf.function(autograph=False)
    def step(iterator, stop_flag):
      features = next(iterator)
      return self.strategy.run(replica_step, args=(features, stop_flag))

    def run(iterator, stop_flag):
      out = step(iterator, tf.constant(float(stop_flag)))
      return {k: self.strategy.experimental_local_results(v)[0].numpy()
              for k, v in out.items()}

    return run

  # --------------------------------------------------------------------------
  # Data.
  # --------------------------------------------------------------------------
  def distribute(self, dataset_fn):
    """`strategies.distribute_batches` with this trainer's accum_steps."""
    return strategies.distribute_batches(self.strategy, dataset_fn,
                                         self.accum_steps)

  # --------------------------------------------------------------------------
  # Checkpoints (`train_state.ShardedState`) and warm start.
  # --------------------------------------------------------------------------
  def save(self, step=None, max_save=None):
    """Writes `model.ckpt-{step}` (default: the global step) atomically;
    every worker must call it. Returns the checkpoint prefix."""
    step = int(self.global_step.numpy()) if step is None else step
    return self.state.save(step, max_save)

  def restore(self, prefix):
    """Loads every variable and this worker's memories from `prefix`."""
    self.state.restore(prefix)
    self.adam.lift_loss_scale(prefix)

  def init_from_checkpoint(self, path, allow_missing=()):
    """Warm start: the model variables found by name in `path` (a prefix, a
    directory or DIR/latest); the optimizer state starts fresh."""
    warm_start.init_template_from_checkpoint(self.template, path,
                                             allow_missing)

  # --------------------------------------------------------------------------
  # The loop.
  # --------------------------------------------------------------------------
  def train(self, dist_dataset, train_steps, save_steps=None, max_save=None,
            on_step=None, on_corrupt_data=None, input_lost=None,
            out_of_memory=None, step_watch=None):
    """Runs optimizer steps until `train_steps` (global step).

    Args:
      dist_dataset: from `distribute`, positioned at the current step.
      train_steps: int, the global step to stop at.
      save_steps: save every this many steps (None: only at the end).
      max_save: checkpoints kept on disk.
      on_step: callback(step, metrics) after every step (logging).
      on_corrupt_data, input_lost, out_of_memory: how a step's errors end
        the run (`_step_errors`).
      step_watch: bounds each step's wait for a remote input and ends a
        step blocked after a signal (`data_service.StepWatch`); None: no
        bound.

    Returns:
      the global step reached.

    Raises:
      Interrupted, Diverged, DataCorrupted, InputLost: after saving the last
        good state.
      OutOfMemory: a step ran out of device memory (with `out_of_memory`);
        nothing is saved (the failed step may have updated some weights),
        the newest checkpoint stays as it was.
      WorkerLost: another worker of a multi-worker run stopped; nothing
        could be saved.
    """
    step_fn = self.make_train_step()
    iterator = iter(dist_dataset)
    step = int(self.global_step.numpy())
    saved = step
    watch = step_watch or _NO_WATCH
    with peers_watched(self, lambda: step), watch.running():
      with progress.SignalCatcher() as signals:
        while step < train_steps:
          run_lock.check_held(self.model_dir, read=False)
          with _step_errors(self, step, max_save, on_corrupt_data,
                            input_lost, out_of_memory):
            with watch.step(step, saved or None):
              out = step_fn(iterator, signals.signum is not None)
          if not out["ok"]:
            prefix = self.save(max_save=max_save)
            raise progress.diverged(step, out, prefix,
                                    self.adam.loss_scaling)
          step += 1
          if on_step:
            on_step(step, out)
          if save_steps and step % save_steps == 0:
            self.save(step, max_save)
            saved = step
          if out["stop"]:
            if saved != step:
              self.save(step, max_save)
            raise progress.interrupted(signals.signum, step, self.model_dir)
      if saved != step:
        self.save(step, max_save)
    return step


def _named(template, variables):
  """{checkpoint name: variable} of some of the template's `variables`."""
  scope = template.variable_scope.name
  return {template_lib.checkpoint_name(v, scope): v for v in variables}


def _trained_part(weights, names, freeze_layers):
  """The variables of the model's `weights` (`names`: their checkpoint
  names) that train: all but those `freeze_layers` freezes, which get no
  gradient, no slot and no update (they are saved with the model all the
  same). Logs what it freezes.

  Returns:
    (the trained variables, their names).
  """
  trained = optimizer_lib.trained(names, freeze_layers)
  frozen = [v for v, t in zip(weights, trained) if not t]
  if frozen:
    logging.info("Frozen (--freeze_layers=%d): %d variables, %d parameters",
                 freeze_layers, len(frozen),
                 sum(int(np.prod(v.shape)) for v in frozen))
  return ([v for v, t in zip(weights, trained) if t],
          [n for n, t in zip(names, trained) if t])


def _accumulated(forward_backward, features, mems, step, accum_steps,
                 trainable):
  """Mean loss and gradients over `accum_steps` micro-batches.

  Args:
    forward_backward: `Trainer._forward_backward(features, mems, step,
      micro)` -> (loss, dense gradients, new mems) of one micro-batch.
    features: one replica's batch; with accum_steps > 1 each feature has a
      leading micro-batch axis.
    mems: list of float32 memories, or None.
    step: int64 scalar, the optimizer step.
    accum_steps: int, micro-batches per step.
    trainable: the trainable variables, in the gradients' order.

  Returns:
    (mean loss, mean gradients, the last micro-batch's new mems or None).
  """
  if accum_steps == 1:
    return forward_backward(features, mems, step, 0)

  def body(i, loss_sum, grad_sums, mems):
    micro = {k: v[i] for k, v in features.items()}
    loss, grads, new_mems = forward_backward(micro, mems or None, step, i)
    # The first micro-batch's gradients are the sums (0 + g0 = g0).
    grad_sums = tf.cond(
        i > 0, lambda: [a + g for a, g in zip(grad_sums, grads)],
        lambda: grads)
    return (i + 1, loss_sum + loss, grad_sums,
            list(new_mems) if mems else mems)

  # The sums' initial values are never read (the first iteration replaces
  # them): the weights, already in memory. Zeros would be folded by
  # grappler into constants of the weights' shapes that the step holds for
  # good (4 bytes per weight).
  init = (tf.constant(0), tf.constant(0.0),
          [v.read_value() for v in trainable], list(mems or []))
  # One micro-batch at a time: the micro-batches do not depend on each
  # other until their gradients are summed, so the loop would start the
  # next ones before this one is done (by default up to 10 iterations at
  # once), each with its activations (bench/finetune_memory.py).
  _, loss_sum, grad_sums, mems = tf.while_loop(
      lambda i, *_: i < accum_steps, body, init, parallel_iterations=1)
  k = float(accum_steps)
  return loss_sum / k, [g / k for g in grad_sums], mems or None


def _dropout_seed(seed, step, micro):
  """Stateless dropout seed (int64 `[2]`) of (seed, step, replica,
  micro-batch), in a replica context."""
  replica = tf.distribute.get_replica_context().replica_id_in_sync_group
  out = tf.constant([seed, 0x584C4E], tf.int64)
  for value in (step, replica, micro):
    out = tf.random.experimental.stateless_fold_in(
        out, tf.cast(value, tf.int64))
  return out


@contextlib.contextmanager
def peers_watched(trainer, step_now=lambda: None):
  """Turns the error of a collective op whose peer worker is gone (it
  crashed, was killed, or stopped on an error of its own) into one line
  (`progress.WorkerLost`) on a multi-worker run.

  Args:
    trainer: the `Trainer` of the run.
    step_now: () -> the last step done, or None before training.
  """
  try:
    yield
  except progress.peer_errors() as e:
    if strategies.num_workers(trainer.strategy) == 1:
      raise
    found = checkpoint_io.list_checkpoints(trainer.model_dir)
    raise progress.worker_lost(step_now(), found[-1][1] if found else None,
                               trainer.model_dir, e) from None


@contextlib.contextmanager
def _step_errors(trainer, step, max_save, on_corrupt_data, input_lost,
                 out_of_memory):
  """Turns the errors of the step after `step` into `Trainer.train`'s
  one-line stops, saving the progress first where the step changed nothing.

  Args:
    trainer: the `Trainer`.
    step: int, the steps done.
    max_save: checkpoints kept on disk.
    on_corrupt_data: callback(error) -> str naming the corrupted file(s)
      (a corrupted record, or one with a token id beyond the vocabulary:
      `errors.is_bad_data`), called after the progress was saved; None:
      TensorFlow's cause.
    input_lost: (error types, describe) of a remote input (the tf.data
      service): those errors, raised by a step's fetch of its batches, mean
      the stream is gone; the progress is saved and InputLost says
      describe(error). None: no such input.
    out_of_memory: () -> what to run instead when a step runs out of device
      memory (the plan, the device, a safer command); None: the error goes
      up as it is.
  """
  lost_errors, describe_lost = input_lost or ((), None)
  try:
    yield
  except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
    if not errors.is_bad_data(e):
      raise
    trainer.save(max_save=max_save)
    # (Without a callback, TensorFlow's cause, not its graph stack.)
    where = (on_corrupt_data(e) if on_corrupt_data
             else errors.op_error_cause(e))
    raise progress.DataCorrupted(
        "a corrupted input record stopped training after step "
        f"{step} (progress saved in model.ckpt-{step}): {where}") from None
  except tf.errors.ResourceExhaustedError:
    if out_of_memory is None:
      raise
    found = checkpoint_io.list_checkpoints(trainer.model_dir)
    raise progress.out_of_memory(
        step, found[-1][1] if found else None, trainer.model_dir,
        out_of_memory()) from None
  except lost_errors as e:  # the fetch comes before any update
    trainer.save(max_save=max_save)
    raise progress.InputLost(
        f"the input stopped training after step {step} (progress "
        f"saved in model.ckpt-{step}): {describe_lost(e)}") from None


class _NoWatch:
  """`Trainer.train`'s step watch when none is given."""

  def running(self):
    return contextlib.nullcontext()

  def step(self, done_step, saved_step):
    del done_step, saved_step
    return contextlib.nullcontext()


_NO_WATCH = _NoWatch()


def fit(trainer, dataset_fn_at, optimizer, checkpoint, iterations,
        units_per_step, unit, log_line, allow_missing=(), same_run=None,
        prepare=None, on_step=None, on_corrupt_data=None, input_lost=None,
        out_of_memory=None, step_watch=None):
  """The training run of pretraining and fine-tuning alike: resumes from
  the newest checkpoint of `trainer.model_dir` (else warm-starts from
  `checkpoint.init_checkpoint`, else starts fresh) and trains to
  `optimizer.train_steps`, logging progress; the caller holds the run lock.

  Args:
    trainer: a `Trainer` (not built yet).
    dataset_fn_at: `dataset_fn_at(start_step)` -> `dataset_fn(context)`,
      one replica's batches of this worker after the `start_step` optimizer
      steps already done (exact resume).
    optimizer, checkpoint: the run's `OptimizerConfig`, `CheckpointConfig`.
    iterations: steps per progress line.
    units_per_step, unit: what a step consumes over all replicas (e.g.
      `train_batch_size * seq_len`, "tokens"), for the rate and the ETA.
    log_line: `step_log.StepLogger`'s `log_line(step, mean_loss, out)`.
    allow_missing: regular expressions of variables `init_checkpoint` may
      lack (a new head).
    same_run: dict flag name -> value that every worker must share
      (`strategies.check_same_run`), or None.
    prepare: `prepare(resuming)`, run on the chief before anything is
      built: checks and records of the run in its model_dir (the frozen
      layers' are checked and recorded here after it:
      `train_state.check_frozen_layers`).
    on_step: `on_step(logger, writer)` -> the per-step callback (default:
      the logger).
    on_corrupt_data, input_lost, out_of_memory, step_watch: as
      `Trainer.train`.

  Returns:
    list of (step, loss) of every step of this run.
  """
  model_dir = trainer.model_dir
  resume = checkpoint_resume.find_resume_checkpoint(model_dir)
  start = checkpoint_io.step_of(resume) if resume else 0
  dataset_fn = dataset_fn_at(start)
  # A worker whose peer stops on an error of its own (the chief refusing
  # the layout) learns it in a collective op of the set-up.
  with peers_watched(trainer):
    if same_run is not None:
      strategies.check_same_run(trainer.strategy, same_run)
    if trainer.chief and prepare is not None:
      prepare(resume is not None)
    if trainer.chief:
      train_state.check_frozen_layers(
          model_dir, trainer.optimizer.freeze_layers, resume is not None)
    dist_dataset = trainer.distribute(dataset_fn)
    trainer.build(dataset_fn(tf.distribute.InputContext()).element_spec)
    if resume:
      trainer.restore(resume)
      logging.info("Resumed from %s at step %d", resume, start)
    elif checkpoint.init_checkpoint:
      trainer.init_from_checkpoint(checkpoint.init_checkpoint, allow_missing)
  writer = None
  if trainer.chief:
    checkpoint_io.clean_model_dir(model_dir)
    writer = tf.summary.create_file_writer(model_dir)
  logger = step_log.StepLogger(iterations, optimizer.train_steps, start,
                              units_per_step, unit, writer, log_line)
  trainer.train(dist_dataset, optimizer.train_steps, checkpoint.save_steps,
                checkpoint.max_save or None,
                on_step=on_step(logger, writer) if on_step else logger,
                on_corrupt_data=on_corrupt_data, input_lost=input_lost,
                out_of_memory=out_of_memory, step_watch=step_watch)
  return logger.history
