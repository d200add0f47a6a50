"""Typed settings of a training run, resolved once by a program (or built in
Python) and passed down: the library never reads command-line flags.

  OptimizerConfig  the schedule and the Adam/AdamW step (`optimizer.py`)
  BatchLayout      global / per-host / per-core batch, accumulation, memory
  DeviceConfig     where the replicas run (GPUs/CPUs, hosts, TPU)
  CheckpointConfig the model directory, warm start and saving
  TrainConfig      the loop: logging, seed, XLA, float16 loss scaling

Every field keeps the name of the flag it comes from, so a message that
names a field names the flag a user types. Each config checks its fields
when built, by the rules the programs' flags follow (`xlnet/validation.py`).
The fields' defaults are run_classifier.py's; `for_program` gives another
program's (`program_defaults.py`, which the flags read too).
"""
import dataclasses
from typing import Optional

from xlnet import configs
from xlnet import validation
from xlnet import program_defaults

DEFAULT_SEED = configs.DEFAULT_SEED
# The configs' own defaults: run_classifier.py's flags'.
_DEFAULTS = program_defaults.of(program_defaults.LIBRARY)
# --use_fp16: the first loss scale (as tf.keras' dynamic loss scale).
INITIAL_LOSS_SCALE = 2.0 ** 15
# Below 1 a loss scale no longer protects float16 gradients.
MIN_LOSS_SCALE = 1.0
# The loss scale is a float32 variable: above this it is infinite.
MAX_LOSS_SCALE = 3.4028234663852886e38


class ForProgram:
  """A config that can take a program's defaults (`for_program`)."""

  @classmethod
  def for_program(cls, program, **given):
    """This config with `program`'s defaults for the fields not `given`:
    what the program runs with the flags `given` and no others.

    Args:
      program: str, one of `program_defaults.PROGRAMS`, e.g. "run_squad"
        (whose --adam_epsilon is 1e-6, not run_classifier.py's 1e-8).
      **given: fields, as to the constructor.
    """
    names = {field.name for field in dataclasses.fields(cls)}
    defaults = {name: value
                for name, value in program_defaults.of(program).items()
                if name in names}
    return cls(**{**defaults, **given})


@dataclasses.dataclass(frozen=True)
class OptimizerConfig(ForProgram):
  """The learning-rate schedule and the optimizer step.

  Attributes:
    learning_rate: peak learning rate.
    train_steps: optimizer steps of the run (the schedule's length).
    warmup_steps: linear warm-up steps.
    decay_method: "poly" (linear to min_lr_ratio) or "cos".
    min_lr_ratio: the final rate as a fraction of the peak.
    adam_epsilon: Adam's epsilon.
    weight_decay: decoupled weight decay (0: plain Adam with bias
      correction, as the release).
    clip: global-norm gradient clipping.
    lr_layer_decay_rate: layer l's gradients scaled by
      rate^(n_layer-1-l) (1: off).
    n_layer: depth of the model (needed by the layer decay).
    freeze_layers: N >= 1 trains nothing of the backbone below layer N:
      its embeddings, its relative-attention biases and segment embeddings
      and layers 0..N-1 get no gradient, no update and no optimizer slot
      (`optimizer.is_frozen`); 0 trains everything.
  """
  learning_rate: float
  train_steps: int
  warmup_steps: int = _DEFAULTS["warmup_steps"]
  decay_method: str = _DEFAULTS["decay_method"]
  min_lr_ratio: float = _DEFAULTS["min_lr_ratio"]
  adam_epsilon: float = _DEFAULTS["adam_epsilon"]
  weight_decay: float = _DEFAULTS["weight_decay"]
  clip: float = _DEFAULTS["clip"]
  lr_layer_decay_rate: float = _DEFAULTS["lr_layer_decay_rate"]
  n_layer: Optional[int] = None
  freeze_layers: int = 0

  def __post_init__(self):
    validation.check_fields(self)
    if self.n_layer is not None:
      validation.check_freeze_layers(self.freeze_layers, self.n_layer)


@dataclasses.dataclass(frozen=True)
class BatchLayout:
  """How one optimizer step's examples are split; fixed for a model_dir.

  Attributes:
    train_batch_size: examples of one optimizer step's micro-batch over all
      hosts (the global batch).
    num_hosts: hosts (workers) reading data.
    num_core_per_host: replicas per host (GPUs, CPU devices, TPU cores).
    accum_steps: micro-batches accumulated per optimizer step.

  The memories' length is the model's (`RunConfig.mem_len`).
  """
  train_batch_size: int
  num_hosts: int = 1
  num_core_per_host: int = 1
  accum_steps: int = 1

  def __post_init__(self):
    validation.check_fields(self)
    n_cores = self.num_hosts * self.num_core_per_host
    if self.train_batch_size % n_cores:
      raise ValueError(
          f"--train_batch_size={self.train_batch_size} is not divisible by "
          f"the number of cores num_hosts*num_core_per_host={n_cores}")

  @property
  def num_cores(self):
    """Replicas over all hosts."""
    return self.num_hosts * self.num_core_per_host

  @property
  def bsz_per_host(self):
    """Rows one host reads per micro-batch."""
    return self.train_batch_size // self.num_hosts

  @property
  def bsz_per_core(self):
    """Rows one replica trains on per micro-batch."""
    return self.bsz_per_host // self.num_core_per_host

  def memory_shape(self, mem_len, d_model):
    """`[mem_len, bsz_per_core, d_model]` of one replica's memory of one
    layer, or None without memories (`mem_len` 0 or None)."""
    return memory_shape(mem_len, self.bsz_per_core, d_model)

  def on_one_device(self):
    """The layout of held-out evaluation: one host batch at a time on one
    device, the memories carried as in training."""
    return dataclasses.replace(self, train_batch_size=self.bsz_per_host,
                               num_hosts=1, num_core_per_host=1,
                               accum_steps=1)

  def record(self):
    """What a resumed run must keep (stored in model_dir/batch_layout.json)."""
    return {"train_batch_size": self.train_batch_size,
            "num_hosts": self.num_hosts,
            "num_core_per_host": self.num_core_per_host,
            "accum_steps": self.accum_steps}


def memory_shape(mem_len, bsz, d_model):
  """`[mem_len, bsz, d_model]`: one layer's memory on one replica (`bsz` its
  rows), or None without memories (`mem_len` 0 or None)."""
  return [mem_len, bsz, d_model] if mem_len else None


# Seconds the workers of a cluster wait for each other by default: hosts
# started by hand, one after the other, join within minutes.
CLUSTER_TIMEOUT = 600.0
# Seconds a training step waits for its batches from the tf.data service
# (a dispatcher with no worker, or one that died, sends none): longer than
# any step's own time, tracing and compiling the first included.
DATA_SERVICE_TIMEOUT = 600.0


@dataclasses.dataclass(frozen=True)
class DeviceConfig:
  """Where the replicas run.

  Attributes:
    use_tpu: run on a TPU (TPUStrategy or TPUEstimator).
    tpu, tpu_zone, gcp_project, master, tpu_job_name: the TPU's address.
    worker_hosts: comma-separated host:port of every GPU worker, or None
      (one host, or TF_CONFIG).
    task_index: this worker's index in worker_hosts (0 = chief).
    cluster_timeout: seconds the workers wait for each other at the start
      before they stop with one line (`cluster_wait.py`).
    tpu_engine: "auto", "estimator" or "strategy" (pretraining on TPUs).
    data_service: a tf.data service dispatcher, grpc://HOST:PORT, whose
      workers run the pretraining input pipeline (`data_service.py`); ""
      runs it in the trainer.
    data_service_timeout: seconds a step waits for its batches from the
      service before the trainer stops with one line.
  """
  use_tpu: bool = False
  tpu: Optional[str] = None
  tpu_zone: Optional[str] = None
  gcp_project: Optional[str] = None
  master: Optional[str] = None
  tpu_job_name: Optional[str] = None
  worker_hosts: Optional[str] = None
  task_index: int = 0
  cluster_timeout: float = CLUSTER_TIMEOUT
  tpu_engine: str = "auto"
  data_service: str = ""
  data_service_timeout: float = DATA_SERVICE_TIMEOUT

  def __post_init__(self):
    validation.check_fields(self)


@dataclasses.dataclass(frozen=True)
class CheckpointConfig(ForProgram):
  """Where a run's state lives and how often it is saved.

  Attributes:
    model_dir: checkpoints, summaries, the run lock; a run resumes from the
      newest intact checkpoint found here.
    init_checkpoint: weights to start from (ignored when resuming).
    save_steps: steps between checkpoints (None: only at the end).
    max_save: checkpoints kept (0: all).
  """
  model_dir: str
  init_checkpoint: Optional[str] = None
  save_steps: Optional[int] = _DEFAULTS["save_steps"]
  max_save: int = _DEFAULTS["max_save"]

  def __post_init__(self):
    if not self.model_dir:
      raise ValueError("--model_dir is required (checkpoints and summaries)")
    validation.check_fields(self)


@dataclasses.dataclass(frozen=True)
class TrainConfig(ForProgram):
  """The training loop.

  Attributes:
    iterations: steps between log lines (and per TPU loop).
    seed: seeds the initial weights, the data order and dropout.
    use_xla: jit-compile the training step.
    use_fp16: float16 activations with dynamic loss scaling.
    loss_scale: the first loss scale with use_fp16 (see
      `check_loss_scale`).
  """
  iterations: int = _DEFAULTS["iterations"]
  seed: int = _DEFAULTS["seed"]
  use_xla: bool = False
  use_fp16: bool = False
  loss_scale: float = INITIAL_LOSS_SCALE

  def __post_init__(self):
    validation.check_fields(self)
    check_loss_scale(self.loss_scale)


def check_loss_scale(scale):
  """Raises ValueError unless `scale` can be a first loss scale: >= 1 (a
  smaller one cannot keep float16 gradients from overflowing) and finite
  as a float32 (an infinite one makes every step overflow: no update would
  ever be applied)."""
  if not scale >= MIN_LOSS_SCALE:  # NaN too
    raise ValueError(f"--loss_scale={scale} must be >= {MIN_LOSS_SCALE:g}: "
                     "a smaller scale cannot keep float16 gradients from "
                     "overflowing")
  if not scale <= MAX_LOSS_SCALE:
    raise ValueError(
        f"--loss_scale={scale} must be finite, at most {MAX_LOSS_SCALE:.6g} "
        "(float32's largest; the default is 2**15 = 32768): an infinite "
        "scale makes every step's gradients overflow, so that no update is "
        "ever applied")
