"""The gradient-accumulation plan that fits a device while keeping the
global batch, and what a device adds to the memory model's count.

The count of a fine-tuning step's tensors (`memory_model.py`) was checked
against TensorFlow's CPU allocator. On a GPU the published measurements
need more (docs/performance.md, "Held to the published GPU measurements"):
a `DeviceTerms` carries what a device adds, either `PUBLISHED` (fitted to
those measurements) or one read from a calibration file that
bench/finetune_memory.py writes on the user's GPU (`read_calibration`).

`plan_accumulation` picks the smallest `accum_steps` whose micro-batch fits
`DEVICE_MEMORY_FRACTION` of the device, keeping `global_batch = micro_batch
x replicas x accum_steps` exactly.
"""
import dataclasses
import math

from absl import logging

from xlnet import settings_files
from xlnet import task_kinds
from xlnet import validation
from xlnet.reproduce import memory_model

GIB = 2 ** 30
# Of the device's memory, the share the plan fills with the estimate. The
# rest is what TensorFlow leaves to the driver (0.5-1.5 GiB); what the
# CPU-checked count does not see on a GPU is `DeviceTerms`' (`PUBLISHED`
# was fitted with this share).
DEVICE_MEMORY_FRACTION = 0.9


################################################################################
# What a device adds to the count.
################################################################################
@dataclasses.dataclass(frozen=True)
class DeviceTerms:
  """What a device's peak adds to the counted tensors
  (`memory_model.StepMemory`).

  peak = ALLOCATOR_OVERHEAD x (state + activation_factor x activations
  + weight_copies x 4 bytes per weight), at the activations' peak and the
  update's alike (`memory_model.ALLOCATOR_OVERHEAD`).

  Attributes:
    activation_factor: the activations' multiplier (what grows with the
      batch: likely per-layer temporaries kept for the backward pass,
      workspaces, fragmentation).
    weight_copies: float32 copies of the weights beyond the state (what
      grows with the weights: likely gradient and clipping copies, Adam's
      update temporaries).
    source: where the terms come from, as the plan's first line says it.
  """
  activation_factor: float
  weight_copies: float
  source: str


# Fitted to the published GPU measurements of the release's programs (its
# README's 16 GB table, zihangdai/xlnet#101, #115; docs/performance.md,
# "Held to the published GPU measurements"): of the pairs (activation factor
# in steps of 0.05, weight copies in steps of 0.5) that put the batch one
# above every published maximum over 90% of the memory, the one whose plans
# come closest to the published batches. The cause is not measured here
# (no GPU): nothing here says which temporaries the terms are.
PUBLISHED = DeviceTerms(1.2, 4.5, "published GPU measurements of the "
                        "release's programs (docs/performance.md)")
# Format of a calibration file (bench/finetune_memory.py writes them).
CALIBRATION_FORMAT = "xlnet-tf fine-tuning memory calibration 1"


def step_peak_bytes(xlnet_config, task_kind, seq_len, micro_batch, precision,
                    accumulate=False, terms=PUBLISHED):
  """Estimated peak bytes per device of one fine-tuning training step (see
  `memory_model.step_memory`) on a device whose additions are `terms`."""
  return memory_model.step_memory(
      xlnet_config, task_kind, seq_len, micro_batch, precision,
      accumulate).device_peak_bytes(terms)


################################################################################
# A calibration file: measured peaks of the user's device.
################################################################################
def fit_terms(points, source):
  """The `DeviceTerms` whose estimate is at least every measured peak and
  least above them: for each weight_copies of a grid (steps of 0.25), the
  smallest activation_factor that covers every point; of those, the pair
  whose estimates exceed the peaks least in sum.

  Args:
    points: dicts with config (an `XLNetConfig`'s sizes), task_kind,
      seq_len, micro_batch, precision, accumulate, peak_bytes.
    source: the terms' `source`.
  """
  steps = []
  for p in points:
    est = memory_model.step_memory(
        p["config"], p["task_kind"], p["seq_len"], p["micro_batch"],
        p["precision"], p["accumulate"])
    steps.append((est, p["peak_bytes"] / memory_model.ALLOCATOR_OVERHEAD))
  best = None
  for quarter in range(0, 41):
    copies = quarter / 4
    factor = max(0.0, max(
        (peak - sum(e.state.values()) - copies * e.state["weights"])
        / e.activation_bytes for e, peak in steps))
    terms = DeviceTerms(factor, copies, source)
    excess = sum(
        e.device_peak_bytes(terms) / memory_model.ALLOCATOR_OVERHEAD - peak
        for e, peak in steps)
    if best is None or excess < best[0]:
      best = (excess, terms)
  return best[1]


_SIZES = ("n_layer", "d_model", "n_head", "d_head", "d_inner", "n_token")
# What a calibration file holds (`settings_files.read`).
_POINT = settings_files.Fields(dict(
    config=settings_files.Fields(
        {name: settings_files.POSITIVE_INTEGER for name in _SIZES},
        required=_SIZES),
    task_kind=settings_files.one_of(*task_kinds.NAMES),
    seq_len=settings_files.POSITIVE_INTEGER,
    micro_batch=settings_files.POSITIVE_INTEGER,
    precision=settings_files.one_of(*memory_model.PRECISION_BYTES),
    accumulate=settings_files.BOOLEAN, peak_bytes=settings_files.POSITIVE),
    required=("config", "task_kind", "seq_len", "micro_batch", "precision",
              "accumulate", "peak_bytes"))
_CALIBRATION = settings_files.Fields(dict(
    format=settings_files.one_of(CALIBRATION_FORMAT),
    device=settings_files.STRING,
    points=settings_files.ListOf(_POINT, non_empty=True)),
    required=("format", "points"))


def read_calibration(path, device=None):
  """The `DeviceTerms` fitted to the peaks of a calibration file; a
  warning says the plan may not hold when `device` (this run's, e.g.
  "GPU:0 NVIDIA A100-SXM4-40GB" or "CPU:0", as bench/finetune_memory.py
  names them) is not the one the file was measured on.

  Raises:
    ValueError: one line naming the file, and the key and what was
      expected when it is not a calibration of bench/finetune_memory.py.
  """
  remedy = "bench/finetune_memory.py writes one on the device"
  data = settings_files.read(path, _CALIBRATION, "memory calibration",
                             remedy, label=f"--memory_calibration={path}")
  if data is None:
    raise ValueError(f"--memory_calibration={path}: No such file or "
                     f"directory ({remedy})")
  measured = data.get("device", "an unnamed device")
  if device is not None and measured != device:
    logging.warning(
        "--memory_calibration=%s was measured on %s, this run's device is "
        "%s: the plan may not hold (%s)", path, measured, device, remedy)
  return fit_terms(data["points"], f"calibration file {path} (measured on "
                   f"{measured})")


def device_terms(calibration_path=None, device=None):
  """The `DeviceTerms` a plan holds the memory model to: those fitted to
  the calibration file at `calibration_path` (`read_calibration`, which
  warns unless it was measured on `device`), else the published GPU
  measurements (`PUBLISHED`)."""
  if calibration_path is None:
    return PUBLISHED
  return read_calibration(calibration_path, device)


def precision_of(use_tpu, use_bfloat16, use_fp16):
  """The plan's precision of the programs' flags: "bf16" (a TPU, or
  --use_bfloat16), "fp16" (--use_fp16) or "fp32"."""
  if use_bfloat16 or use_tpu:
    return "bf16"
  return "fp16" if use_fp16 else "fp32"


################################################################################
# The plan.
################################################################################
@dataclasses.dataclass(frozen=True)
class AccumulationPlan:
  """How to run a global batch on `replicas` devices of a given memory.

  Attributes:
    micro_batch: examples per replica per micro-step (the programs'
      --train_batch_size without --use_tpu).
    accum_steps: micro-steps per optimizer step (--accum_steps).
    estimated_gb: estimated peak per device, GiB.
    fits: estimated_gb <= budget_gb.
    budget_gb: DEVICE_MEMORY_FRACTION of device_memory_gb.
  """
  task_kind: str
  seq_len: int
  global_batch: int
  replicas: int
  precision: str
  device_memory_gb: float
  budget_gb: float
  micro_batch: int
  accum_steps: int
  estimated_gb: float
  fits: bool
  source: str = PUBLISHED.source

  def summary(self):
    """One line: the split and the estimate."""
    kind = task_kinds.get(self.task_kind)
    rows = kind.sequences_per_example
    unit = kind.examples + (f" (x{rows} sequences)" if rows > 1 else "")
    return (f"{self.task_kind} {self.global_batch} x {self.seq_len} "
            f"{self.precision}: {self.micro_batch} {unit} per device x "
            f"{self.replicas} device(s) x {self.accum_steps} accumulation "
            f"step(s); about {self.estimated_gb:.1f} of "
            f"{self.device_memory_gb:g} GiB per device (plan fills "
            f"{DEVICE_MEMORY_FRACTION:.0%})")


def max_micro_batch(xlnet_config, task_kind, seq_len, precision,
                    device_memory_gb, accumulate=True, terms=PUBLISHED):
  """The most examples per device and micro-step whose estimate fits
  `DEVICE_MEMORY_FRACTION` of `device_memory_gb` GiB (0: not even one).

  Args:
    accumulate: with --accum_steps > 1 (the gradient sums take room).
    terms: the device's `DeviceTerms`.
  """
  budget = DEVICE_MEMORY_FRACTION * device_memory_gb * GIB
  fits = lambda b: step_peak_bytes(  # noqa: E731
      xlnet_config, task_kind, seq_len, b, precision, accumulate,
      terms) <= budget
  low, high = 0, 1
  while fits(high):  # the estimate grows with the batch
    low, high = high, 2 * high
  while high - low > 1:
    mid = (low + high) // 2
    low, high = (mid, high) if fits(mid) else (low, mid)
  return low


def _divisors(n):
  """Positive divisors of n, ascending."""
  small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
  return sorted(set(small + [n // d for d in small]))


def _positive_int(name, value):
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise ValueError(f"{name} must be a positive integer, got {value!r}")


def plan_accumulation(xlnet_config, task_kind, seq_len, global_batch,
                      replicas, precision, device_memory_gb,
                      terms=PUBLISHED):
  """The smallest accumulation whose micro-batch fits each device.

  Args:
    xlnet_config: an `XLNetConfig` (or a dict of its keys).
    task_kind: a kind of `task_kinds` ("classifier", "squad", "race").
    seq_len: tokens per sequence.
    global_batch: examples per optimizer step over all replicas (RACE:
      questions).
    replicas: devices training in sync (all hosts).
    precision: "fp32", "fp16" or "bf16".
    device_memory_gb: memory of one device in GiB (16, 24, 40, 80).
    terms: the device's `DeviceTerms` (`PUBLISHED`, or `read_calibration`).

  Returns:
    an `AccumulationPlan` with global_batch = micro_batch x replicas x
    accum_steps.

  Raises:
    ValueError: on a bad argument, a global batch that the replicas do not
      divide, or when even one example per micro-step does not fit.
  """
  memory_model.check(task_kind, precision)
  _positive_int("seq_len", seq_len)
  _positive_int("global_batch", global_batch)
  _positive_int("replicas", replicas)
  validation.check_value("device_memory_gb", device_memory_gb)
  if global_batch % replicas:
    raise ValueError(
        f"global batch {global_batch} is not a multiple of {replicas} "
        "replicas: no integer micro-batch keeps it exactly")
  budget_gb = DEVICE_MEMORY_FRACTION * device_memory_gb
  per_replica = global_batch // replicas
  estimated_gb = None
  for accum in _divisors(per_replica):
    micro = per_replica // accum
    estimated_gb = step_peak_bytes(xlnet_config, task_kind, seq_len, micro,
                                   precision, accum > 1, terms) / GIB
    if estimated_gb <= budget_gb:
      return AccumulationPlan(
          task_kind, seq_len, global_batch, replicas, precision,
          device_memory_gb, budget_gb, micro, accum, estimated_gb, True,
          terms.source)
  raise ValueError(
      f"{task_kind} at {seq_len} tokens in {precision}: even 1 example per "
      f"micro-step needs about {estimated_gb:.1f} GiB, more than "
      f"{budget_gb:.1f} GiB ({DEVICE_MEMORY_FRACTION:.0%} of "
      f"{device_memory_gb:g} GiB)")
