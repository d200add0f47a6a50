"""The training engine shared by pretraining and fine-tuning.

One training loop runs on every device layout through a `tf.distribute`
strategy (`create_strategy`): one device (CPU or GPU), the GPUs of one host
(or logical CPU devices), several hosts (`MultiWorkerMirroredStrategy`,
configured by `TF_CONFIG`), or TPU cores (`TPUStrategy`).

The model is the unchanged `tf.compat.v1.get_variable` graph code, wrapped
once in `tf.compat.v1.make_template` so that a `tf.function` step can call it;
the template adds the scope `xlnet/` to every variable name, which is stripped
again when checkpoints are written and read, so checkpoints carry the released
names (`model/transformer/...`).

One optimizer step (`Trainer._replica_step`), per replica:
  1. forward and backward passes over `accum_steps` micro-batches (their
     gradients are averaged; memories advance from micro-batch to
     micro-batch), dropout seeded statelessly from (seed, step, replica,
     micro-batch);
  2. gradients averaged over replicas (as the release averaged GPU towers),
     clipped by their global norm, scaled per layer;
  3. the Adam/AdamW update of `model_utils.adam_update`, applied only when the
     loss and the gradient norm are finite; otherwise nothing changes and the
     loop stops with `Diverged` after saving the last finite state (with
     float16 loss scaling an overflow above scale 1 only skips the update
     and halves the scale; see `Trainer._step_outcome`).
Memories are per-replica variables (`synchronization=ON_READ`): every replica
reads and writes its own; checkpoints keep every replica's memories under
`mems/replica_{r}/layer_{i}`.

Checkpoints (`xlnet/training/checkpoint_io.py`) are written by name, atomically, one
shard per worker (named by `process_index`: chief first, then workers)
merged by the chief, and only at step boundaries: on `save_steps`, at the
end, after SIGTERM/SIGINT (`Interrupted`), after a corrupted input record
(`DataCorrupted`) and before `Diverged`. A save that meets a resource
failure (no space, file too large, ...) ends the run with one line
(`io_utils.ResourceError`).
"""
import json
import os
import signal
import time

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet.training import checkpoint_io
from xlnet import cli
from xlnet.training import config
from xlnet import io_utils
from xlnet.training import model_utils
from xlnet import modeling

TEMPLATE_SCOPE = "xlnet"
# Dynamic loss scaling (float16): the finite steps in a row after which the
# scale doubles (the first scale: `TrainConfig.loss_scale`).
LOSS_SCALE_GROWTH_STEPS = 2000
# Below 1 a loss scale no longer protects float16 gradients: an overflow at
# scale 1 ends the run (Diverged) instead of lowering it further.
MIN_LOSS_SCALE = 1.0
MEM_NAME = "mems/replica_{replica}/layer_{layer}"


################################################################################
# Errors that end a run after its state was saved.
################################################################################
class StopTraining(cli.Stop):
  """Training stopped early after saving; `exit_code` is the exit status."""


class Interrupted(StopTraining):
  """SIGTERM/SIGINT arrived; a checkpoint of the last full step was saved."""
  is_error = False

  def __init__(self, message, signum):
    super().__init__(message)
    self.exit_code = 128 + signum


class Diverged(StopTraining):
  """The loss or the gradient norm became non-finite."""


class DataCorrupted(StopTraining):
  """An input record could not be read."""


################################################################################
# Strategies.
################################################################################
def worker_tf_config(worker_hosts, task_index):
  """The TF_CONFIG of worker `task_index` of `worker_hosts` ("h1:p,h2:p")."""
  hosts = [h for h in worker_hosts.split(",") if h]
  if not 0 <= task_index < len(hosts):
    raise ValueError(f"--task_index={task_index} must be in [0, "
                     f"{len(hosts)}) for --worker_hosts={worker_hosts}")
  return json.dumps({"cluster": {"worker": hosts},
                     "task": {"type": "worker", "index": task_index}})


def cluster_workers(worker_hosts=None):
  """Number of workers: those of `worker_hosts` ("h1:p,h2:p") when given,
  else those named by TF_CONFIG (1 when it is unset)."""
  if worker_hosts:
    return len([h for h in worker_hosts.split(",") if h])
  config = os.environ.get("TF_CONFIG")
  if not config:
    return 1
  try:
    cluster = json.loads(config).get("cluster", {})
  except json.JSONDecodeError as e:
    raise ValueError(f"TF_CONFIG is not valid JSON: {e}") from None
  return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def create_strategy(num_core_per_host=1, worker_hosts=None, task_index=None,
                    use_tpu=False, tpu=None, tpu_zone=None, gcp_project=None):
  """Chooses and creates the tf.distribute strategy.

  Call it before any other TensorFlow op (logical CPU devices and the
  multi-worker runtime must be configured first).

  Args:
    num_core_per_host: replicas on this host: GPUs, or logical CPU devices
      when no GPU is visible (1: the default strategy on one device).
    worker_hosts, task_index: several hosts: comma-separated host:port of
      every worker and this worker's index (they build TF_CONFIG); a
      TF_CONFIG naming several workers works as well.
    use_tpu, tpu, tpu_zone, gcp_project: a TPUStrategy on the named TPU.

  Returns:
    a `tf.distribute.Strategy`.
  """
  if worker_hosts:
    os.environ["TF_CONFIG"] = worker_tf_config(worker_hosts, task_index or 0)
  if use_tpu:
    resolver = model_utils.tpu_cluster_resolver(tpu, tpu_zone, gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  gpus = tf.config.list_physical_devices("GPU")
  if cluster_workers() > 1:
    if len(gpus) not in (0, num_core_per_host):
      logging.warning("%d GPUs visible on this worker; all are used "
                      "(--num_core_per_host=%d)", len(gpus),
                      num_core_per_host)
    return tf.distribute.MultiWorkerMirroredStrategy()
  if gpus and len(gpus) < num_core_per_host:
    raise ValueError(f"--num_core_per_host={num_core_per_host} but only "
                     f"{len(gpus)} GPU(s) are visible")
  if num_core_per_host == 1:
    return tf.distribute.get_strategy()
  if gpus:
    return tf.distribute.MirroredStrategy(
        [f"/gpu:{i}" for i in range(num_core_per_host)])
  logging.warning("No GPU visible: the %d replicas run on logical CPU "
                  "devices.", num_core_per_host)
  ensure_cpu_devices(num_core_per_host)
  return tf.distribute.MirroredStrategy(
      [f"/cpu:{i}" for i in range(num_core_per_host)])


def ensure_cpu_devices(n):
  """Splits the CPU into at least `n` logical devices (before TF starts)."""
  cpu = tf.config.list_physical_devices("CPU")[0]
  if len(tf.config.get_logical_device_configuration(cpu) or [None]) >= n:
    return
  try:
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * n)
  except RuntimeError:
    raise ValueError(f"{n} logical CPU devices are needed but TensorFlow "
                     "was started with fewer; create the strategy before "
                     "running any TensorFlow op") from None


def is_chief(strategy):
  """Whether this process writes checkpoints, logs and summaries."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type:
    return True
  return (resolver.task_type == "chief" or
          (resolver.task_type == "worker" and resolver.task_id == 0 and
           "chief" not in resolver.cluster_spec().as_dict()))


def process_index(task_type, task_id, cluster):
  """A process's index among the cluster's processes: the chief first (0),
  then the workers in order, as MultiWorkerMirroredStrategy numbers its
  input pipelines and replicas.

  Args:
    task_type: "chief" or "worker" (None: a single process).
    task_id: int, the index within its task type.
    cluster: dict task type -> list of addresses (the TF_CONFIG cluster).

  Returns:
    int in [0, number of chief and worker tasks).
  """
  if not task_type or task_type == "chief":
    return 0
  if task_type != "worker":
    raise ValueError(f"TF_CONFIG task type {task_type!r}: only 'chief' and "
                     "'worker' tasks train (see docs/distributed.md)")
  return len(cluster.get("chief", [])) + int(task_id or 0)


def worker_index(strategy):
  """This process's index among the workers (0 on one host): names its
  checkpoint shard and its record files."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type:
    return 0
  return process_index(resolver.task_type, resolver.task_id,
                       resolver.cluster_spec().as_dict())


def num_workers(strategy):
  """Number of processes that take part in a multi-worker strategy (1 for
  every other strategy)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if (resolver is None or not isinstance(
      strategy, tf.distribute.MultiWorkerMirroredStrategy)):
    return 1
  spec = resolver.cluster_spec().as_dict()
  return len(spec.get("worker", [])) + len(spec.get("chief", []))


################################################################################
# What a resumed run must keep.
################################################################################
LAYOUT_FILE = "batch_layout.json"


def check_batch_layout(model_dir, layout, resuming):
  """Records the batch layout of a run in `model_dir`; refuses to resume
  with another one (the data position of a resumed run is counted in steps
  of that layout).

  Args:
    model_dir: the run's directory (the caller holds its run lock).
    layout: dict flag name -> int, e.g. train_batch_size, num_core_per_host,
      num_hosts, accum_steps.
    resuming: whether the run resumes from a checkpoint of `model_dir`.

  Raises:
    ValueError: one line naming the first flag whose value differs from
      the recorded one.
  """
  path = os.path.join(model_dir, LAYOUT_FILE)
  if resuming and tf.io.gfile.exists(path):
    try:
      with tf.io.gfile.GFile(path) as f:
        saved = json.load(f)
    except ValueError as e:
      raise ValueError(f"{path} is not valid JSON ({e})") from None
    for name, value in layout.items():
      if name in saved and saved[name] != value:
        raise ValueError(
            f"--{name}={value} but {model_dir} was trained with "
            f"--{name}={saved[name]} ({path}): a resumed run continues the "
            f"data where it stopped only with the same batch layout; rerun "
            f"with --{name}={saved[name]} or use another --model_dir")
  io_utils.atomic_write(path, json.dumps(layout, sort_keys=True) + "\n")


################################################################################
# TensorBoard.
################################################################################
# TensorBoard shows a summary as a scalar curve when its metadata names the
# "scalars" plugin; tf.summary.write (core TensorFlow) needs no tensorboard
# package, which TensorFlow >= 2.16 no longer installs.
_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(
        plugin_name="scalars")).SerializeToString()


def write_scalars(writer, values, step):
  """Writes {tag: float} as TensorBoard scalars at `step` and flushes."""
  with writer.as_default():
    for tag, value in values.items():
      tf.summary.write(tag, tf.constant(float(value), tf.float32), step=step,
                       metadata=_SCALAR_METADATA)
  writer.flush()


################################################################################
# Progress.
################################################################################
def format_duration(seconds):
  """`seconds` as e.g. `3d 04:05:06` or `04:05:06`."""
  seconds = int(round(seconds))
  days, seconds = divmod(seconds, 86400)
  hours, seconds = divmod(seconds, 3600)
  text = f"{hours:02d}:{seconds // 60:02d}:{seconds % 60:02d}"
  return f"{days}d {text}" if days else text


class StepLogger:
  """The `on_step` callback of `Trainer.train` that logs progress.

  Every `iterations` steps, after the first step of a run and at the end,
  it logs one line (the program's `line_fn` text for the mean loss since the
  previous line, then the throughput and an ETA) and writes the line's
  scalars and the throughput to TensorBoard.

  Args:
    iterations, train_steps, start_step: ints.
    units_per_step: what one step processes (tokens, examples).
    unit: their name, e.g. "tokens".
    writer: a summary writer (the chief's) or None.
    line_fn: `line_fn(step, mean_loss, out)` -> (text, {tag: value});
      `out` holds the step's loss, gnorm and lr.

  Attributes:
    history: list of (step, loss) of every step of this run.
  """

  def __init__(self, iterations, train_steps, start_step, units_per_step,
               unit, writer, line_fn):
    self.iterations, self.train_steps = iterations, train_steps
    self.units_per_step, self.unit = units_per_step, unit
    self.writer, self.line_fn = writer, line_fn
    self.history = []
    self._losses = []
    self._last_step, self._last_time = start_step, time.time()

  def __call__(self, step, out):
    self.history.append((step, float(out["loss"])))
    self._losses.append(float(out["loss"]))
    if not (step % self.iterations == 0 or len(self.history) == 1 or
            step == self.train_steps):
      return
    now = time.time()
    rate = ((step - self._last_step) * self.units_per_step /
            max(now - self._last_time, 1e-9))
    eta = (self.train_steps - step) * self.units_per_step / max(rate, 1e-9)
    text, scalars = self.line_fn(step, float(np.mean(self._losses)), out)
    logging.info("%s | %.1f %s/s | ETA %s", text, rate, self.unit,
                 format_duration(eta))
    if self.writer is not None:
      write_scalars(self.writer, dict(scalars, **{
          f"{self.unit}_per_sec": rate}), step)
    self._last_step, self._last_time, self._losses = step, now, []


################################################################################
# Signals.
################################################################################
class SignalCatcher:
  """Turns the first SIGTERM/SIGINT into a request to stop at a step boundary.

  A second signal gets the default behaviour (immediate exit); checkpoints
  are written atomically, so even then nothing half-written is visible.
  """

  def __init__(self):
    self.signum = None
    self._previous = {}

  def __enter__(self):
    for signum in (signal.SIGTERM, signal.SIGINT):
      try:
        self._previous[signum] = signal.signal(signum, self._handle)
      except ValueError:  # not the main thread: leave signals alone
        pass
    return self

  def _handle(self, signum, frame):
    del frame
    self.signum = signum
    for other, previous in self._previous.items():
      signal.signal(other, previous)
    logging.warning("%s received: stopping after this step and saving a "
                    "checkpoint", signal.Signals(signum).name)

  def __exit__(self, *exc):
    for signum, previous in self._previous.items():
      signal.signal(signum, previous)
    return False


################################################################################
# The trainer.
################################################################################
def checkpoint_name(variable, scope=TEMPLATE_SCOPE):
  """A template variable's checkpoint (released) name: its name without the
  template's scope (`xlnet/`, or `xlnet_1/` for a second template)."""
  name = variable.name.split(":")[0]
  prefix = scope + "/"
  return name[len(prefix):] if name.startswith(prefix) else name


def load_template_variables(template, prefix):
  """Assigns every variable of a built `make_template` template from the
  checkpoint `prefix`, by its released name.

  Raises:
    checkpoint_io.CheckpointError: a variable is missing, unreadable or of
      another shape.
  """
  variables = {checkpoint_name(v, template.variable_scope.name): v
               for v in template.variables}
  values = checkpoint_io.read_tensors(prefix, sorted(variables))
  for name, var in variables.items():
    if tuple(values[name].shape) != tuple(var.shape):
      raise checkpoint_io.CheckpointError(
          f"{prefix}: {name} has shape {list(values[name].shape)}, the "
          f"model needs {var.shape.as_list()}")
    var.assign(values[name])


def _zeros_like_spec(spec):
  """A zero tensor of a (static) TensorSpec."""
  return tf.zeros(spec.shape, spec.dtype)


class MemoryConfig:
  """Shape of the per-replica memories: n_layer x [mem_len, bsz, d_model]."""

  def __init__(self, n_layer, mem_len, bsz, d_model):
    self.n_layer, self.mem_len, self.bsz, self.d_model = (
        n_layer, mem_len, bsz, d_model)


class Trainer:
  """Builds the model's variables, the train step and the checkpoints.

  Args:
    strategy: from `create_strategy`.
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
    self.loss_scaling = train.use_fp16
    self.initial_loss_scale = scale = train.loss_scale
    if self.loss_scaling and not scale >= MIN_LOSS_SCALE:
      raise ValueError(f"--loss_scale={scale} must be >= {MIN_LOSS_SCALE:g}: "
                       "a smaller scale cannot keep float16 gradients from "
                       "overflowing")
    self.chief = is_chief(strategy)
    self.worker = worker_index(strategy)
    self.num_replicas = strategy.num_replicas_in_sync
    self._template = tf.compat.v1.make_template(TEMPLATE_SCOPE, loss_fn)
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
    weight_decay = self.optimizer.weight_decay
    tf.random.set_seed(self.seed)  # the initial weights (0 seeds too)
    with self.strategy.scope():
      features = {k: _zeros_like_spec(s) for k, s in element_spec.items()}
      mems = None
      if self.memory:
        m = self.memory
        mems = [tf.zeros([m.mem_len, m.bsz, m.d_model])] * m.n_layer
      self._template(features, mems, False)  # creates the model variables
      self.trainable = list(self._template.trainable_variables)
      self.names = [self._name(v) for v in self.trainable]
      self.slots = []
      for var, name in zip(self.trainable, self.names):
        self.slots.append([
            tf.Variable(tf.zeros(var.shape, tf.float32), trainable=False,
                        name=slot_name.replace("/", "_"))
            for slot_name in model_utils.slot_names(name, weight_decay)])
      self.global_step = tf.Variable(
          0, dtype=tf.int64, trainable=False, name="global_step",
          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      self.powers = []
      if not weight_decay:
        self.powers = [tf.Variable(b, dtype=tf.float32, trainable=False,
                                   name=n)
                       for n, b in zip(model_utils.ADAM_POWER_NAMES,
                                       (model_utils.BETA_1,
                                        model_utils.BETA_2))]
      self.loss_scale = self.good_steps = None
      if self.loss_scaling:
        self.loss_scale = tf.Variable(
            float(self.initial_loss_scale),
            dtype=tf.float32, trainable=False, name="loss_scale",
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        self.good_steps = tf.Variable(
            0, dtype=tf.int64, trainable=False, name="loss_scale_good_steps",
            aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
      self.mem_vars = []
      if self.memory:
        self.mem_vars = [
            tf.Variable(tf.zeros([m.mem_len, m.bsz, m.d_model]),
                        trainable=False, name=f"mems_layer_{i}",
                        synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            for i in range(m.n_layer)]
    self._state = {}  # checkpoint name -> (mirrored) variable
    for var, name, slots in zip(self.trainable, self.names, self.slots):
      self._state[name] = var
      for slot, slot_name in zip(slots, model_utils.slot_names(
          name, weight_decay)):
        self._state[slot_name] = slot
    for var in self._template.non_trainable_variables:
      self._state[self._name(var)] = var
    self._state["global_step"] = self.global_step
    if self.loss_scaling:
      self._state["loss_scale"] = self.loss_scale
      self._state["loss_scale_good_steps"] = self.good_steps
    for var, name in zip(self.powers, model_utils.ADAM_POWER_NAMES):
      self._state[name] = var
    self.local_replica_ids = self._local_replica_ids()
    self._built = True
    logging.info("Model: %d trainable variables, %d parameters; %d replicas",
                 len(self.trainable),
                 sum(int(np.prod(v.shape)) for v in self.trainable),
                 self.num_replicas)

  @property
  def template(self):
    """The model function `template(features, mems, is_training)`; calling
    it outside the train step reads the trained variables (evaluation)."""
    return self._template

  def _name(self, variable):
    """The checkpoint name of one of the template's variables."""
    return checkpoint_name(variable, self._template.variable_scope.name)

  def _local_replica_ids(self):
    """Global replica ids of this worker's replicas, in local order."""
    ids = self.strategy.run(tf.function(
        lambda: tf.distribute.get_replica_context().replica_id_in_sync_group))
    return [int(t) for t in self.strategy.experimental_local_results(ids)]

  # --------------------------------------------------------------------------
  # The step.
  # --------------------------------------------------------------------------
  def _dropout_seed(self, step, micro):
    """Stateless dropout seed of (seed, step, replica, micro-batch)."""
    replica = tf.distribute.get_replica_context().replica_id_in_sync_group
    seed = tf.constant([self.seed, 0x584C4E], tf.int64)
    for value in (step, replica, micro):
      seed = tf.random.experimental.stateless_fold_in(
          seed, tf.cast(value, tf.int64))
    return seed

  def _forward_backward(self, features, mems, step, micro):
    """Loss, dense gradients and new memories of one micro-batch.

    With float16 (`use_fp16`) the loss is multiplied by the loss scale
    before differentiating, so that small gradients survive float16, and
    the float32 gradients are divided by it again.
    """
    with tf.GradientTape() as tape:
      with modeling.stateless_dropout_seed(self._dropout_seed(step, micro)):
        loss, new_mems, _ = self._template(features, mems, True)
      scale = self.loss_scale.read_value() if self.loss_scaling else None
      target = loss * scale if self.loss_scaling else loss
    grads = tape.gradient(target, self.trainable)
    grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
             for g, v in zip(grads, self.trainable)]
    if self.loss_scaling:
      grads = [g / scale for g in grads]
    return loss, grads, new_mems

  def _accumulate(self, features, mems, step):
    """Mean loss and gradients over `accum_steps` micro-batches."""
    if self.accum_steps == 1:
      return self._forward_backward(features, mems, step, 0)

    def body(i, loss_sum, grad_sums, mems):
      micro = {k: v[i] for k, v in features.items()}
      loss, grads, new_mems = self._forward_backward(
          micro, mems or None, step, i)
      return (i + 1, loss_sum + loss, [a + g for a, g in zip(grad_sums, grads)],
              list(new_mems) if mems else mems)

    init = (tf.constant(0), tf.constant(0.0),
            [tf.zeros_like(v) for v in self.trainable], list(mems or []))
    _, loss_sum, grad_sums, mems = tf.while_loop(
        lambda i, *_: i < self.accum_steps, body, init)
    k = float(self.accum_steps)
    return loss_sum / k, [g / k for g in grad_sums], mems or None

  def _replica_step(self, features, stop_flag):
    """One optimizer step of one replica; returns replica-identical scalars."""
    ctx = tf.distribute.get_replica_context()
    opt = self.optimizer
    step = self.global_step.read_value()
    mems = [v.read_value() for v in self.mem_vars] or None
    loss, grads, new_mems = self._accumulate(features, mems, step)
    # (tf.identity places the broadcast flag on this replica's device; the
    # all-reduce needs a device for every value.)
    loss, grads, stop = ctx.all_reduce(
        tf.distribute.ReduceOp.MEAN, (loss, grads, tf.identity(stop_flag)))
    grads, gnorm = model_utils.scale_gradients(
        grads, self.names, opt.clip, opt.n_layer, opt.lr_layer_decay_rate)
    lr = model_utils.learning_rate_schedule(
        step, opt.learning_rate, opt.warmup_steps, opt.train_steps,
        opt.decay_method, opt.min_lr_ratio)
    applied, ok = self._step_outcome(loss, gnorm)
    ctx.merge_call(self._apply, args=(grads, lr, applied, ok))
    for var, new in zip(self.mem_vars, new_mems or []):
      var.assign(tf.where(ok, new, var.read_value()))
    return {"loss": loss, "gnorm": gnorm, "lr": lr, "ok": ok,
            "applied": applied, "stop": stop > 0}

  def _step_outcome(self, loss, gnorm):
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
    finite = tf.logical_and(tf.math.is_finite(loss), tf.math.is_finite(gnorm))
    if not self.loss_scaling:
      return finite, finite
    ok = tf.logical_and(tf.math.is_finite(loss), tf.logical_or(
        finite, self.loss_scale.read_value() > 1.0))
    return tf.logical_and(finite, ok), ok

  def _apply(self, strategy, grads, lr, applied, ok):
    """Cross-replica: the guarded Adam/AdamW update (only when `applied`),
    the step counter (counts every step that did not diverge: `ok`) and the
    loss scale."""
    opt = self.optimizer
    powers = [p.read_value() for p in self.powers] or [0.0, 0.0]

    def update(var, grad, m, v, lr, ok, rate):
      def apply():
        with tf.control_dependencies([model_utils.adam_update(
            var, m, v, grad, lr, opt.adam_epsilon, rate, *powers)]):
          return tf.constant(True)
      return tf.cond(ok, apply, lambda: tf.constant(False))

    done = []
    for var, grad, (m, v), name in zip(self.trainable, grads, self.slots,
                                       self.names):
      rate = model_utils.decay_rate_of(name, opt.weight_decay)
      done.append(strategy.extended.update(
          var, update, args=(grad, m, v, lr, applied, rate), group=False))
    with tf.control_dependencies(tf.nest.flatten(done)):
      for power, beta in zip(self.powers, (model_utils.BETA_1,
                                           model_utils.BETA_2)):
        strategy.extended.update(
            power, lambda p, ok, b=beta: p.assign(tf.where(ok, p * b, p)),
            args=(applied,))
      strategy.extended.update(
          self.global_step,
          lambda s, ok: s.assign_add(tf.cast(ok, tf.int64)), args=(ok,))
      if self.loss_scaling:
        self._update_loss_scale(strategy, applied, ok)

  def _update_loss_scale(self, strategy, applied, ok):
    """Halves the loss scale after an overflow (never below
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
      replica_step = tf.function(replica_step, jit_compile=True)
    elif self.use_xla:
      self._forward_backward = tf.function(self._forward_backward,
                                           jit_compile=True)

    @tf.function
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
    """Distributes a per-worker dataset of per-replica batches.

    Args:
      dataset_fn: `dataset_fn(input_context)` -> dataset whose consecutive
        elements go to this worker's replicas in turn (replica 0, 1, ...,
        then replica 0 again), each one replica's batch.

    Returns:
      a distributed dataset; with accum_steps > 1 each replica receives
      `accum_steps` of its consecutive batches stacked on a new axis 0.
    """
    k = self.accum_steps

    def grouped(input_context):
      dataset = dataset_fn(input_context)
      if k == 1:
        return dataset
      n = max(1, self.num_replicas // input_context.num_input_pipelines)
      # [s0r0, s0r1, s1r0, s1r1, ...] -> replica r gets [s0rr, s1rr, ...].
      def regroup(batch):
        return {key: tf.reshape(
            tf.transpose(tf.reshape(v, [k, n] + v.shape[1:].as_list()),
                         [1, 0] + list(range(2, v.shape.ndims + 1))),
            [n * k] + v.shape[1:].as_list())
                for key, v in batch.items()}
      return (dataset.batch(n * k, drop_remainder=True)
              .map(regroup).unbatch().batch(k, drop_remainder=True))

    return self.strategy.distribute_datasets_from_function(grouped)

  # --------------------------------------------------------------------------
  # Checkpoints.
  # --------------------------------------------------------------------------
  def _barrier(self):
    """Waits until every worker got here (a tiny all-reduce)."""
    if num_workers(self.strategy) > 1:
      self.strategy.run(tf.function(
          lambda: tf.distribute.get_replica_context().all_reduce(
              tf.distribute.ReduceOp.SUM, 1.0)))

  def save(self, step=None, max_save=None):
    """Writes `model.ckpt-{step}` atomically; every worker must call it.

    Returns:
      the checkpoint prefix.

    Raises:
      io_utils.ResourceError: no space, file too large, read-only,
        permission (the failed save's files removed first).
    """
    step = int(self.global_step.numpy()) if step is None else step
    final = checkpoint_io.checkpoint_prefix(self.model_dir, step)
    values = {}
    if self.chief:
      values = {name: var.read_value() for name, var in self._state.items()}
    for layer, var in enumerate(self.mem_vars):
      for replica, value in zip(self.local_replica_ids,
                                self.strategy.experimental_local_results(var)):
        values[MEM_NAME.format(replica=replica, layer=layer)] = value
    writers = num_workers(self.strategy) if self.mem_vars else 1
    attempt = f"{step}"
    try:
      if values:
        checkpoint_io.save_shard(
            checkpoint_io.shard_prefix(final, self.worker, attempt), values)
      self._barrier()
      if self.chief:
        checkpoint_io.publish(
            final, [checkpoint_io.shard_prefix(final, w, attempt)
                    for w in range(writers)], self.model_dir, max_save)
        logging.info("Saved checkpoint %s", final)
    except (tf.errors.OpError, OSError) as e:
      raise checkpoint_io.save_failure(final, e) from None
    self._barrier()
    return final

  def restore(self, prefix):
    """Loads every variable from `prefix` (memories of this worker's
    replicas; zeros with a warning when the checkpoint has none for them).

    Raises:
      checkpoint_io.CheckpointError: when a variable is missing or the
        checkpoint cannot be read.
    """
    values = checkpoint_io.read_tensors(prefix, list(self._state))
    self.load_values(values, source=prefix)
    self._restore_memories(prefix)
    if self.loss_scaling and self.loss_scale.numpy() < MIN_LOSS_SCALE:
      logging.warning("%s holds a loss scale of %g; training resumes with "
                      "%g", prefix, self.loss_scale.numpy(), MIN_LOSS_SCALE)
      self.loss_scale.assign(MIN_LOSS_SCALE)

  def load_values(self, values, source="values"):
    """Assigns {checkpoint name: array} to the named variables (model,
    optimizer state, step); names not in `values` keep their value."""
    for name, value in values.items():
      var = self._state[name]
      if tuple(np.shape(value)) != tuple(var.shape):
        raise checkpoint_io.CheckpointError(
            f"{source}: {name} has shape {list(np.shape(value))}, the "
            f"model needs {var.shape.as_list()} (another model config?)")
      var.assign(value)

  def state_values(self):
    """{checkpoint name: np.ndarray} of the model, optimizer and step."""
    return {name: var.numpy() for name, var in self._state.items()}

  def replica_memories(self):
    """{replica id: [np.ndarray per layer]} of this worker's replicas."""
    out = {r: [] for r in self.local_replica_ids}
    for var in self.mem_vars:
      for replica, value in zip(self.local_replica_ids,
                                self.strategy.experimental_local_results(
                                    var)):
        out[replica].append(value.numpy())
    return out

  def _restore_memories(self, prefix):
    """Each local replica reads `mems/replica_{r}/layer_{i}`."""
    if not self.mem_vars:
      return
    names = [MEM_NAME.format(replica=r, layer=i)
             for i in range(len(self.mem_vars))
             for r in self.local_replica_ids]
    shapes = dict(tf.train.list_variables(prefix))
    want = [self.memory.mem_len, self.memory.bsz, self.memory.d_model]
    if any(list(shapes.get(n, [])) != want for n in names):
      logging.warning(
          "%s has no memories for replicas %s with shape %s (saved with "
          "another device layout or batch?): they start from zeros.", prefix,
          self.local_replica_ids, want)
      return
    values = checkpoint_io.read_tensors(prefix, names)
    for layer, var in enumerate(self.mem_vars):
      for replica, component in zip(
          self.local_replica_ids, self.strategy.experimental_local_results(
              var)):
        component.assign(values[MEM_NAME.format(replica=replica,
                                                layer=layer)])

  def init_from_checkpoint(self, path, allow_missing=()):
    """Warm start: loads the model variables found by name in `path` (a
    checkpoint prefix, a directory or DIR/latest); optimizer state starts
    fresh.

    Raises:
      ValueError: when the checkpoint lacks a model variable (other than
        those matching `allow_missing`) or has another shape.
    """
    prefix = model_utils.resolve_checkpoint(path, "--init_checkpoint")
    model_vars = {self._name(v): v for v in self._template.variables}

    class _Named:  # get_assignment_map_from_checkpoint reads .name/.shape
      def __init__(self, name, var):
        self.name, self.shape = name, var.shape

    assignment, names = model_utils.get_assignment_map_from_checkpoint(
        [_Named(n, v) for n, v in model_vars.items()], prefix, allow_missing)
    values = checkpoint_io.read_tensors(prefix, list(assignment))
    for name in names:
      model_vars[name].assign(values[name])
    logging.info("Initialized %d of %d model variables from %s", len(names),
                 len(model_vars), prefix)

  # --------------------------------------------------------------------------
  # The loop.
  # --------------------------------------------------------------------------
  def train(self, dist_dataset, train_steps, save_steps=None, max_save=None,
            on_step=None, on_corrupt_data=None):
    """Runs optimizer steps until `train_steps` (global step).

    Args:
      dist_dataset: from `distribute`, positioned at the current step.
      train_steps: int, the global step to stop at.
      save_steps: save every this many steps (None: only at the end).
      max_save: checkpoints kept on disk.
      on_step: callback(step, metrics) after every step (logging).
      on_corrupt_data: callback(error) -> str naming the corrupted file(s),
        called after the progress was saved.

    Returns:
      the global step reached.

    Raises:
      Interrupted, Diverged, DataCorrupted: after saving the last good state.
    """
    step_fn = self.make_train_step()
    iterator = iter(dist_dataset)
    step = int(self.global_step.numpy())
    saved = step
    with SignalCatcher() as signals:
      while step < train_steps:
        try:
          out = step_fn(iterator, signals.signum is not None)
        except tf.errors.DataLossError as e:
          self.save(max_save=max_save)
          where = on_corrupt_data(e) if on_corrupt_data else e.message
          raise DataCorrupted(
              f"a corrupted input record stopped training after step {step}"
              f" (progress saved in model.ckpt-{step}): {where}") from None
        if not out["ok"]:
          prefix = self.save(max_save=max_save)
          what = ("non-finite loss ({}) or float16 gradients that "
                  "overflow at loss scale 1 (gradient norm {})"
                  if self.loss_scaling else
                  "non-finite loss ({}) or gradient norm ({})").format(
                      out["loss"], out["gnorm"])
          raise Diverged(
              f"{what} at step {step + 1}: the update was not applied; the "
              f"last finite state (step {step}) is saved in {prefix}. Lower "
              "--learning_rate or raise --warmup_steps and rerun to resume "
              "from it")
        step += 1
        if on_step:
          on_step(step, out)
        if save_steps and step % save_steps == 0:
          self.save(step, max_save)
          saved = step
        if out["stop"]:
          if saved != step:
            self.save(step, max_save)
          name = (signal.Signals(signals.signum).name if signals.signum
                  else "a signal on another worker")
          raise Interrupted(
              f"stopped by {name} after step {step}; checkpoint "
              f"model.ckpt-{step} saved in {self.model_dir}; rerun the same "
              "command to resume", signals.signum or signal.SIGTERM)
    if saved != step:
      self.save(step, max_save)
    return step


################################################################################
# Inference.
################################################################################
REAL = "_real_example"


def pad_to_full_steps(dataset, per_replica, num_replicas):
  """Re-batches a finite dataset into full steps over every replica.

  Examples keep their order; zero examples (marked `REAL` = 0, real ones 1)
  fill the last step, so every replica gets a full static batch (what XLA
  and TPUs need) and no example is dropped.

  Args:
    dataset: finite dataset of batch-major feature dicts (any batch sizes).
    per_replica: examples per replica batch.
    num_replicas: replicas fed by this dataset.

  Returns:
    a dataset of `[per_replica, ...]` batches whose count is a multiple of
    `num_replicas`.
  """
  examples = dataset.unbatch().map(lambda f: dict(f, **{REAL: 1}))
  zero = {k: tf.zeros(s.shape, s.dtype)
          for k, s in examples.element_spec.items()}
  padding = tf.data.Dataset.from_tensors(zero).repeat(
      per_replica * num_replicas - 1)
  step = per_replica * num_replicas
  # Take whole steps of the real examples plus as much padding as the last
  # step needs (the padded stream is cut at a step boundary).
  return (examples.concatenate(padding)
          .batch(step, drop_remainder=True)
          .unbatch().batch(per_replica, drop_remainder=True))


class Predictor:
  """Runs a model's forward pass over a dataset on every replica.

  Args:
    strategy: from `create_strategy`.
    outputs_fn: `outputs_fn(features)` -> dict of per-example tensors
      (batch-major), built with `tf.compat.v1.get_variable` (it runs inside
      `make_template`).
  """

  def __init__(self, strategy, outputs_fn):
    self.strategy = strategy
    self._template = tf.compat.v1.make_template(TEMPLATE_SCOPE, outputs_fn)
    self._built = False
    self._step = tf.function(self._distributed_step)

  def _replica_step(self, features):
    """The outputs of one replica's batch, with its real-example mask."""
    features = dict(features)
    real = features.pop(REAL)
    out = dict(self._template(features))
    out[REAL] = real
    return out

  def _distributed_step(self, iterator):
    return self.strategy.run(self._replica_step, args=(next(iterator),))

  def _name(self, variable):
    return checkpoint_name(variable, self._template.variable_scope.name)

  def restore(self, prefix, element_spec):
    """Builds the model for `element_spec` (one replica's batch) and loads
    every model variable from `prefix` by name.

    Raises:
      checkpoint_io.CheckpointError: a variable is missing or unreadable.
    """
    if not self._built:
      with self.strategy.scope():
        self._template({k: _zeros_like_spec(s)
                        for k, s in element_spec.items()})
      self._built = True
    load_template_variables(self._template, prefix)

  def predict(self, dataset, per_replica):
    """The outputs of every example of a finite dataset, in input order.

    Args:
      dataset: finite dataset of batch-major feature dicts (this worker's).
      per_replica: examples per replica batch.

    Returns:
      dict name -> np.ndarray `[num_examples, ...]`.
    """
    n = self.strategy.num_replicas_in_sync
    padded = pad_to_full_steps(dataset, per_replica, n)
    dist = self.strategy.distribute_datasets_from_function(lambda _: padded)
    chunks = {}
    iterator = iter(dist)
    while True:
      try:
        out = self._step(iterator)
      except (tf.errors.OutOfRangeError, StopIteration):
        break
      for key, value in out.items():
        # Replica r of a step holds the step's r-th batch (round robin).
        chunks.setdefault(key, []).extend(
            t.numpy() for t in self.strategy.experimental_local_results(value))
    if not chunks:
      return {}
    out = {k: np.concatenate(v) for k, v in chunks.items()}
    real = out.pop(REAL).astype(bool)
    return {k: v[real] for k, v in out.items()}
