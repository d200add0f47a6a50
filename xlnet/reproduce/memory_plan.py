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
x replicas x accum_steps` exactly. A measured point outranks the model: a
micro-batch that a published measurement or the user's calibration says
fits (`MeasuredPoint`) is never refused. A refusal names what would fit
(`--recompute`, `--freeze_layers`, float16/bfloat16, larger devices).
"""
import dataclasses
import math
from typing import Optional

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
    measured: the `MeasuredPoint`s of such a device, which outrank the
      estimate.
  """
  activation_factor: float
  weight_copies: float
  source: str
  measured: tuple = ()


@dataclasses.dataclass(frozen=True)
class MeasuredPoint:
  """A micro-batch measured to fit a device. The plan never refuses it, nor
  fewer sequences, shorter ones, more memory, recomputation or frozen
  layers (each needs no more memory); with accumulation where the device's
  weight copies leave the sums room (`StepMemory.weight_copy_bytes`).

  Attributes:
    sizes: the model's `memory_model.ModelSizes`.
    task_kinds: the heads it holds for.
    seq_len: tokens per sequence.
    sequences: sequences per device and micro-step (a RACE question is 4).
    precision: "fp32", "fp16" or "bf16".
    accumulate: measured with --accum_steps > 1.
    device_memory_gb: the least device memory it fits, GiB.
    source: where it was measured (a plan line names it).
    recompute, freeze_layers: measured with --recompute, --freeze_layers.
  """
  sizes: memory_model.ModelSizes
  task_kinds: tuple
  seq_len: int
  sequences: int
  precision: str
  accumulate: bool
  device_memory_gb: float
  source: str
  recompute: bool = False
  freeze_layers: int = 0

  def covers(self, step, micro_batch, device_memory_gb, terms):
    """Whether this point says `micro_batch` examples of `step` (a
    `_Step`) fit `device_memory_gb`."""
    rows = task_kinds.get(step.task_kind).sequences_per_example
    return (memory_model.ModelSizes.of(step.config) == self.sizes
            and step.task_kind in self.task_kinds
            and step.precision == self.precision
            and step.seq_len <= self.seq_len
            and micro_batch * rows <= self.sequences
            and device_memory_gb >= self.device_memory_gb
            and step.recompute >= self.recompute
            and step.freeze_layers >= self.freeze_layers
            and (self.accumulate or not step.accumulate
                 or terms.weight_copies >= 1))


# The released models' sizes (xlnet/configs/xlnet_{base,large}.json).
RELEASED_SIZES = {
    "XLNet-Base": memory_model.ModelSizes(12, 768, 12, 64, 3072, 32000),
    "XLNet-Large": memory_model.ModelSizes(24, 1024, 16, 64, 4096, 32000),
}
# The largest batch that ran on one 16 GB GPU with the release's
# run_classifier.py and run_squad.py (TensorFlow 1.13.1, fp32, Adam, no
# accumulation): its README, "Memory Issue during Finetuning"
# (https://github.com/zihangdai/xlnet#memory-issue-during-finetuning).
# {(model, seq_len): sequences}; RACE runs the classifier's backbone on 4
# sequences per question and a summary head.
RELEASE_16GB = {("XLNet-Base", 64): 120, ("XLNet-Base", 128): 56,
                ("XLNet-Base", 256): 24, ("XLNet-Base", 512): 8,
                ("XLNet-Large", 64): 16, ("XLNet-Large", 128): 8,
                ("XLNet-Large", 256): 2, ("XLNet-Large", 512): 1}
PUBLISHED_POINTS = tuple(
    MeasuredPoint(RELEASED_SIZES[name], tuple(task_kinds.NAMES), seq_len,
                  batch, "fp32", False, 16,
                  f"the release measured {batch} x {seq_len} of {name} on a "
                  "16 GB GPU")
    for (name, seq_len), batch in RELEASE_16GB.items())


# Fitted to the published GPU measurements of the release's programs (its
# README's 16 GB table, zihangdai/xlnet#101, #115; docs/performance.md,
# "Held to the published GPU measurements"): of the pairs (activation factor
# in steps of 0.05, weight copies in steps of 0.5) that put the batch one
# above every published maximum over 90% of the memory, the one whose plans
# come closest to the published batches. The cause is not measured here
# (no GPU): nothing here says which temporaries the terms are.
PUBLISHED = DeviceTerms(1.2, 4.5, "published GPU measurements of the "
                        "release's programs (docs/performance.md)",
                        PUBLISHED_POINTS)
# Format of a calibration file (bench/finetune_memory.py writes them).
CALIBRATION_FORMAT = "xlnet-tf fine-tuning memory calibration 1"


def step_peak_bytes(xlnet_config, task_kind, seq_len, micro_batch, precision,
                    accumulate=False, terms=PUBLISHED, recompute=False,
                    freeze_layers=0):
  """Estimated peak bytes per device of one fine-tuning training step (see
  `memory_model.step_memory`) on a device whose additions are `terms`."""
  return memory_model.step_memory(
      xlnet_config, task_kind, seq_len, micro_batch, precision, accumulate,
      recompute, freeze_layers).device_peak_bytes(terms)


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
      seq_len, micro_batch, precision, accumulate, peak_bytes (and
      recompute, freeze_layers where measured with them).
    source: the terms' `source`.

  Returns:
    `DeviceTerms` whose measured points are the points' and
    `PUBLISHED_POINTS`.
  """
  steps = []
  for p in points:
    est = memory_model.step_memory(
        p["config"], p["task_kind"], p["seq_len"], p["micro_batch"],
        p["precision"], p["accumulate"], p.get("recompute", False),
        p.get("freeze_layers", 0))
    steps.append((est, p["peak_bytes"] / memory_model.ALLOCATOR_OVERHEAD))
  best, measured = None, measured_points(points, source)
  for quarter in range(0, 41):
    copies = quarter / 4
    factor = max(0.0, max(
        (peak - sum(e.state.values()) - e.weight_copy_bytes(copies))
        / e.activation_bytes for e, peak in steps))
    terms = DeviceTerms(factor, copies, source, measured)
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
    accumulate=settings_files.BOOLEAN, peak_bytes=settings_files.POSITIVE,
    recompute=settings_files.BOOLEAN,
    freeze_layers=settings_files.NON_NEGATIVE_INTEGER),
    required=("config", "task_kind", "seq_len", "micro_batch", "precision",
              "accumulate", "peak_bytes"))
_CALIBRATION = settings_files.Fields(dict(
    format=settings_files.one_of(CALIBRATION_FORMAT),
    device=settings_files.STRING,
    points=settings_files.ListOf(_POINT, non_empty=True)),
    required=("format", "points"))


def measured_points(points, source):
  """The `MeasuredPoint`s of a calibration's points (`fit_terms`) and the
  published ones: each calibrated point fits a device whose
  `DEVICE_MEMORY_FRACTION` holds its measured peak."""
  return tuple(MeasuredPoint(
      memory_model.ModelSizes.of(p["config"]), (p["task_kind"],),
      p["seq_len"], p["micro_batch"] * task_kinds.get(
          p["task_kind"]).sequences_per_example, p["precision"],
      p["accumulate"], p["peak_bytes"] / GIB / DEVICE_MEMORY_FRACTION,
      f"{source} measured {p['micro_batch']} x {p['seq_len']}",
      p.get("recompute", False), p.get("freeze_layers", 0))
               for p in points) + PUBLISHED_POINTS


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
class _Step:
  """What a plan asks of each micro-batch size: the model, the task, the
  length and the options that change the memory."""
  config: object  # an `XLNetConfig`, a dict of its keys or `ModelSizes`
  task_kind: str
  seq_len: int
  precision: str
  accumulate: bool
  recompute: bool = False
  freeze_layers: int = 0

  def fit(self, micro_batch, device_memory_gb, terms):
    """(fits, estimated GiB, the source of the measured point that says it
    fits where the estimate does not, else None)."""
    estimated_gb = step_peak_bytes(
        self.config, self.task_kind, self.seq_len, micro_batch,
        self.precision, self.accumulate, terms, self.recompute,
        self.freeze_layers) / GIB
    if estimated_gb <= DEVICE_MEMORY_FRACTION * device_memory_gb:
      return True, estimated_gb, None
    point = next((p for p in terms.measured
                  if p.covers(self, micro_batch, device_memory_gb, terms)),
                 None)
    return point is not None, estimated_gb, point and point.source


@dataclasses.dataclass(frozen=True)
class AccumulationPlan:
  """How to run a global batch on `replicas` devices of a given memory.

  Attributes:
    micro_batch: examples per replica per micro-step (the programs'
      --train_batch_size without --use_tpu).
    accum_steps: micro-steps per optimizer step (--accum_steps).
    estimated_gb: estimated peak per device, GiB.
    fits: estimated_gb <= budget_gb, or a measured point says it fits.
    budget_gb: DEVICE_MEMORY_FRACTION of device_memory_gb.
    measured: the measured point that says the micro-batch fits where the
      estimate is over the budget (`MeasuredPoint.source`), else None.
    recompute, freeze_layers: planned with --recompute, --freeze_layers.
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
  measured: Optional[str] = None
  recompute: bool = False
  freeze_layers: int = 0

  def summary(self):
    """One line: the split and the estimate."""
    kind = task_kinds.get(self.task_kind)
    rows = kind.sequences_per_example
    unit = kind.examples + (f" (x{rows} sequences)" if rows > 1 else "")
    options = option_words(self.recompute, self.freeze_layers)
    fit = (f" (plan fills {DEVICE_MEMORY_FRACTION:.0%})" if not self.measured
           else f" (over the plan's {DEVICE_MEMORY_FRACTION:.0%}, but "
           f"{self.measured})")
    return (f"{self.task_kind} {self.global_batch} x {self.seq_len} "
            f"{self.precision}{options}: {self.micro_batch} {unit} per "
            f"device x {self.replicas} device(s) x {self.accum_steps} "
            f"accumulation step(s); about {self.estimated_gb:.1f} of "
            f"{self.device_memory_gb:g} GiB per device{fit}")


def option_words(recompute, freeze_layers):
  """" with --recompute --freeze_layers=N" of the options set ("" when
  none is)."""
  words = (["--recompute"] if recompute else []) + (
      [f"--freeze_layers={freeze_layers}"] if freeze_layers else [])
  return " with " + " ".join(words) if words else ""


def max_micro_batch(xlnet_config, task_kind, seq_len, precision,
                    device_memory_gb, accumulate=True, terms=PUBLISHED,
                    recompute=False, freeze_layers=0):
  """The most examples per device and micro-step that fit
  `device_memory_gb` GiB (0: not even one): by the estimate within
  `DEVICE_MEMORY_FRACTION`, or by a measured point of `terms`.

  Args:
    accumulate: with --accum_steps > 1 (the gradient sums take room).
    terms: the device's `DeviceTerms`.
    recompute, freeze_layers: --recompute, --freeze_layers.
  """
  step = _Step(xlnet_config, task_kind, seq_len, precision, accumulate,
               recompute, freeze_layers)
  fits = lambda b: step.fit(b, device_memory_gb, terms)[0]  # noqa: E731
  low, high = 0, 1
  while fits(high):  # the estimate, and the points covered, grow with it
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
                      terms=PUBLISHED, recompute=False, freeze_layers=0):
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
    recompute: --recompute (activation recomputation).
    freeze_layers: --freeze_layers (the embedding and the lower layers
      frozen).

  Returns:
    an `AccumulationPlan` with global_batch = micro_batch x replicas x
    accum_steps.

  Raises:
    ValueError: on a bad argument, a global batch that the replicas do not
      divide, or when even one example per micro-step does not fit (one
      line naming the options that would: `fitting_options`).
  """
  memory_model.check(task_kind, precision)
  _positive_int("seq_len", seq_len)
  _positive_int("global_batch", global_batch)
  _positive_int("replicas", replicas)
  validation.check_value("device_memory_gb", device_memory_gb)
  validation.check_value("freeze_layers", freeze_layers)
  validation.check_freeze_layers(
      freeze_layers, memory_model.ModelSizes.of(xlnet_config).n_layer)
  if global_batch % replicas:
    raise ValueError(
        f"global batch {global_batch} is not a multiple of {replicas} "
        "replicas: no integer micro-batch keeps it exactly")
  budget_gb = DEVICE_MEMORY_FRACTION * device_memory_gb
  per_replica = global_batch // replicas
  for accum in _divisors(per_replica):
    micro = per_replica // accum
    step = _Step(xlnet_config, task_kind, seq_len, precision, accum > 1,
                 recompute, freeze_layers)
    fits, estimated_gb, measured = step.fit(micro, device_memory_gb, terms)
    if fits:
      return AccumulationPlan(
          task_kind, seq_len, global_batch, replicas, precision,
          device_memory_gb, budget_gb, micro, accum, estimated_gb, True,
          terms.source, measured, recompute, freeze_layers)
  options = fitting_options(step, device_memory_gb, terms)
  raise ValueError(
      f"{task_kind} at {seq_len} tokens in {precision}"
      f"{option_words(recompute, freeze_layers)}: even 1 example per "
      f"micro-step needs about {estimated_gb:.1f} GiB, more than "
      f"{budget_gb:.1f} GiB ({DEVICE_MEMORY_FRACTION:.0%} of "
      f"{device_memory_gb:g} GiB); "
      + (f"would fit: {'; '.join(options)}" if options else
         "nothing of --recompute, --freeze_layers, --use_fp16 would fit")
      + "; or a shorter --max_seq_length")


# Device memories a refusal tries, GiB.
DEVICE_SIZES = (24, 32, 40, 48, 80)


def fitting_options(step, device_memory_gb, terms):
  """What would fit one example per micro-step where `step` (a `_Step`)
  does not: --recompute, --use_fp16 or --use_bfloat16 (together where
  neither alone does), the fewest --freeze_layers, the smallest larger
  device; each with its estimate ("--recompute (about 9.2 GiB)"). More
  devices would not: each still needs one example."""
  def fit(**changes):
    return dataclasses.replace(step, **changes).fit(1, device_memory_gb,
                                                    terms)
  tried = []
  if not step.recompute:
    tried.append(("--recompute", fit(recompute=True)))
  if step.precision == "fp32":
    tried.append(("--use_fp16 or --use_bfloat16", fit(precision="bf16")))
    if not any(ok for _, (ok, _, _) in tried):
      tried.append(("--recompute with --use_fp16 or --use_bfloat16",
                    fit(recompute=True, precision="bf16")))
  n_layer = memory_model.ModelSizes.of(step.config).n_layer
  frozen = next(((n, fit(freeze_layers=n)) for n in range(
      step.freeze_layers + 1, n_layer + 1) if fit(freeze_layers=n)[0]), None)
  if frozen:
    tried.append((f"--freeze_layers={frozen[0]}", frozen[1]))
  found = [f"{words} (about {gb:.1f} GiB)" for words, (ok, gb, _) in tried
           if ok]
  larger = next((gib for gib in DEVICE_SIZES if gib > device_memory_gb
                 and step.fit(1, gib, terms)[0]), None)
  return found + ([f"{larger} GB devices"] if larger else [])
