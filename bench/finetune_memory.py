"""Peak memory of one fine-tuning training step: measured, against the
analytic model of `xlnet/reproduce/memory_plan.py`.

Each point of the grid runs in a process of its own: it builds the
fine-tuning engine's `Trainer` with the task's loss (the heads the programs
train: classification, SQuAD, RACE), runs one step, resets the allocator's
statistics, runs a second step and reads the allocator's peak
(`tf.config.experimental.get_memory_info`): weights, Adam slots and every
tensor of the step. On the CPU that is TensorFlow's BFC allocator, which
importing `xlnet` turns on; with a GPU visible the same script reads
`GPU:0` instead, unchanged.

Usage (from the repository root):
  python bench/finetune_memory.py                    # --grid=check
  python bench/finetune_memory.py --grid=calibration
  python bench/finetune_memory.py --points=squad:bf16:2:256:512:4
  python bench/finetune_memory.py --calibrate=WORK_DIR/memory_calibration.json
A point is task:precision:layers:d_model:seq_len:batch[:accum_steps]
(heads of 64, d_inner = 4 d_model, --n_token tokens), or
task:precision:base|large:seq_len:batch[:accum_steps] (xlnet/configs/);
batch counts examples per micro-step (a RACE example is 4 sequences): with
accum_steps each optimizer step runs accum_steps micro-batches of that size.
Options follow a point after "+": +recompute (activation recomputation,
RunConfig.recompute), +freeze=N (OptimizerConfig.freeze_layers), +xla (the
step jit-compiled, as on a TPU); e.g. classifier:fp32:2:512:512:4+recompute.

--calibrate measures XLNet-Base and -Large at 128 and 512 tokens (two
batches each, --precision; a few minutes on a GPU) and writes the peaks as
a calibration file that reproduce.py --device_memory_gb plans with
(--memory_calibration=FILE, or found as work_dir/memory_calibration.json).
"""
import argparse
import dataclasses
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

GIB = 2.0 ** 30
TASKS = {"classifier": "cls", "squad": "squad", "race": "race"}

# Shapes for setting the model's one constant, and different shapes to
# check it on (tasks, precisions, depths, widths, lengths, batches and
# accumulation the calibration never saw).
GRIDS = {
    "calibration": [
        "classifier:fp32:2:512:512:4", "classifier:fp32:2:512:256:8",
        "classifier:bf16:2:512:512:4", "classifier:bf16:2:512:256:8",
    ],
    "check": [
        "classifier:fp32:3:384:384:6", "classifier:fp32:1:768:128:16",
        "classifier:fp16:2:256:256:4", "classifier:fp32:2:512:64:1",
        "squad:fp32:2:512:512:4", "squad:bf16:3:256:384:8",
        "squad:fp32:2:256:128:32", "race:fp32:2:256:256:2",
        "race:bf16:2:384:512:1", "race:fp32:4:256:128:4",
        "classifier:fp32:2:512:256:16:4", "squad:bf16:2:256:512:4:2",
    ],
}


# --calibrate's points: model:seq_len:batch[:accum][+options], batches
# small enough for a 16 GB device (docs/performance.md, "Held to the
# published GPU measurements"); two batches per length separate the batch's
# share; one with accumulation, two with recomputation.
CALIBRATION_POINTS = ("base:128:4", "base:128:8", "base:512:1", "base:512:2",
                      "large:128:2", "large:128:4", "large:512:1",
                      "large:512:2", "large:512:1:2", "large:512:2+recompute",
                      "large:512:4+recompute")
# The tables' device memories, GiB.
TABLE_GIB = (16, 24, 40, 80)


def _released(name):
  """The XLNetConfig of xlnet/configs/xlnet_{name}.json."""
  from xlnet import model as model_lib  # pylint: disable=g-import-not-at-top
  return model_lib.XLNetConfig(json_path=os.path.join(
      ROOT, "xlnet", "configs", f"xlnet_{name}.json"))


def fit_table():
  """Markdown: sequences per device and micro-step, Base and Large, with
  accumulation, without and with --recompute."""
  from xlnet import task_kinds  # pylint: disable=g-import-not-at-top
  from xlnet.reproduce import memory_plan
  lines = ["| model | task | precision | " + " | ".join(
      f"{g} GB" for g in TABLE_GIB) + " |",
           "|---" * (3 + len(TABLE_GIB)) + "|"]
  for name in ("base", "large"):
    config = _released(name)
    for kind in task_kinds.NAMES:
      rows = task_kinds.get(kind).sequences_per_example
      for precision, label in (("fp32", "fp32"), ("bf16", "fp16/bf16")):
        for recompute in (False, True):
          cells = ["/".join(str(rows * memory_plan.max_micro_batch(
              config, kind, seq_len, precision, gib, recompute=recompute))
                            for seq_len in (128, 256, 512))
                   for gib in TABLE_GIB]
          lines.append(f"| XLNet-{name.capitalize()} | {kind} | {label}"
                       f"{' --recompute' if recompute else ''} | "
                       + " | ".join(cells) + " |")
  return "\n".join(lines)


def _split(config, kind, settings, replicas, precision, gib, **options):
  """"micro x accum" of a setting's plan, or "does not fit"."""
  from xlnet.reproduce import memory_plan  # pylint: disable=g-import-not-at-top
  try:
    plan = memory_plan.plan_accumulation(config, kind, settings.seq_len,
                                         settings.batch, replicas, precision,
                                         gib, **options)
  except ValueError:
    return "does not fit"
  return f"{plan.micro_batch} x {plan.accum_steps}"


def _fewest_frozen(config, kind, settings, replicas, precision, gib):
  """"N: micro x accum" of the fewest --freeze_layers that plan a setting
  that does not fit without (none: "-")."""
  if _split(config, kind, settings, replicas, precision, gib) != (
      "does not fit"):
    return "-"
  for n in range(1, config.n_layer + 1):
    split = _split(config, kind, settings, replicas, precision, gib,
                   freeze_layers=n)
    if split != "does not fit":
      return f"{n}: {split}"
  return "does not fit"


def plan_table(replicas=(1, 4)):
  """Markdown: the accumulation the paper's settings need, without and
  with --recompute, and the fewest --freeze_layers where 16 GB does not
  fit."""
  from xlnet.reproduce import paper_settings as ps  # pylint: disable=g-import-not-at-top
  squad, race = ps.SQUAD_TABLE[0], ps.RACE_TABLE[0]
  imdb, yelp = ps.CLASSIFICATION[0], ps.CLASSIFICATION[2]
  glue = sorted({t.large.batch for t in ps.GLUE})
  settings = [("large", "squad", squad.large, "SQuAD"),
              ("base", "squad", squad.base, "SQuAD"),
              ("large", "race", race.large, "RACE (questions)")]
  settings += [("large", "classifier", s, label) for s, label in (
      [(ps.Settings(0, b, 0, 0, 128, 0, ""), "GLUE") for b in glue]
      + [(imdb.large, "IMDB"), (yelp.large, "Yelp, Amazon, DBpedia, AG")])]
  columns = [(16, {}), (16, {"recompute": True}), (24, {}),
             (24, {"recompute": True}), (40, {}), (80, {})]
  lines = ["| setting | model | GPUs | precision | " + " | ".join(
      f"{g} GB{' --recompute' if o else ''}" for g, o in columns)
           + " | 16 GB --freeze_layers |",
           "|---" * (5 + len(columns)) + "|"]
  for name, kind, s, label in settings:
    config = _released(name)
    for n in replicas:
      for precision, plabel in (("fp32", "fp32"), ("bf16", "fp16/bf16")):
        cells = [_split(config, kind, s, n, precision, g, **o)
                 for g, o in columns]
        cells.append(_fewest_frozen(config, kind, s, n, precision, 16))
        lines.append(f"| {label} {s.batch} x {s.seq_len} | "
                     f"{name.capitalize()} | {n} | {plabel} | "
                     + " | ".join(cells) + " |")
  return "\n".join(lines)


def released_config(name):
  """The sizes of xlnet/configs/xlnet_{name}.json (base, large)."""
  with open(os.path.join(ROOT, "xlnet", "configs",
                         f"xlnet_{name}.json")) as f:
    config = json.load(f)
  return {k: config[k] for k in ("n_layer", "d_model", "n_head", "d_head",
                                 "d_inner", "ff_activation", "untie_r",
                                 "n_token")}


# A point's options ("+name" or "+name=value" after it).
OPTIONS = ("recompute", "freeze", "xla")


def parse_point(text, n_token):
  """task:precision:layers:d_model:seq_len:batch[:accum][+option...] (or
  task:precision:base|large:seq_len:batch[:accum][+option...]) -> dict."""
  text, *given = text.split("+")
  options = {name: value or True
             for name, value in (o.partition("=")[::2] for o in given)}
  if set(options) - set(OPTIONS):
    raise SystemExit(f"finetune_memory.py: error: bad option in {given}: "
                     f"expected some of {', '.join(OPTIONS)}")
  options["freeze"] = int(options.get("freeze") or 0)
  parts = text.split(":")
  if len(parts) > 2 and parts[2] in ("base", "large") and len(parts) in (5,
                                                                         6):
    seq_len, batch = map(int, parts[3:5])
    return dict(task=parts[0], precision=parts[1], seq_len=seq_len,
                batch=batch, accum=int(parts[5]) if len(parts) == 6 else 1,
                config=released_config(parts[2]), options=options)
  if len(parts) not in (6, 7) or parts[0] not in TASKS:
    raise SystemExit(f"finetune_memory.py: error: bad point {text!r}: "
                     "expected task:precision:layers:d_model:seq_len:batch"
                     f"[:accum] with task in {sorted(TASKS)}")
  n_layer, d_model, seq_len, batch = map(int, parts[2:6])
  return dict(task=parts[0], precision=parts[1], seq_len=seq_len,
              batch=batch, accum=int(parts[6]) if len(parts) == 7 else 1,
              config=dict(n_layer=n_layer, d_model=d_model,
                          n_head=max(1, d_model // 64), d_head=64,
                          d_inner=4 * d_model, ff_activation="gelu",
                          untie_r=True, n_token=n_token), options=options)


def model_estimate(point):
  """The memory model's `StepMemory` of a point."""
  from xlnet.reproduce import memory_model  # pylint: disable=g-import-not-at-top
  options = point["options"]
  return memory_model.step_memory(
      point["config"], point["task"], point["seq_len"], point["batch"],
      point["precision"], accumulate=point["accum"] > 1,
      recompute=bool(options.get("recompute")),
      freeze_layers=options["freeze"])


def built_step(point, pool_gib):
  """The fine-tuning `Trainer` of `point` (this process), its train step
  and its input: (trainer, step, iterator, device name)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import xlnet  # noqa: F401  (the BFC CPU allocator, before any op)
  import tensorflow as tf
  from bench import finetune_step
  from xlnet import model as model_lib
  from xlnet.finetuning import config as finetune_config
  from xlnet.training import config
  from xlnet.training import trainer as trainer_lib

  device = "GPU:0" if tf.config.list_physical_devices("GPU") else "CPU:0"
  if device == "CPU:0" and pool_gib:
    # TensorFlow's CPU BFC allocator grows its pool in regions of powers of
    # two and does not split a region's chunk for a tensor more than half
    # its size: at start-up a variable can hold up to twice its bytes. A
    # GPU's allocator takes the whole memory as one region. One region of
    # pool_gib (reserved, not touched: no physical memory) does the same.
    pool = tf.raw_ops.Empty(shape=[pool_gib, 2 ** 28], dtype=tf.float32,
                            init=False)
    del pool
  precision, options = point["precision"], point["options"]
  run = dict(use_bfloat16=precision == "bf16", use_fp16=precision == "fp16")
  if options.get("recompute"):
    run["recompute"] = True
  model = finetune_config.ModelConfig(
      xlnet_config=model_lib.XLNetConfig(**point["config"]),
      run=dataclasses.replace(finetune_config.DEFAULT_RUN, **run))
  frozen = {"freeze_layers": options["freeze"]} if options["freeze"] else {}
  task = TASKS[point["task"]]
  batch = finetune_step.features(task, point["batch"], point["seq_len"],
                                 np.random.RandomState(0),
                                 point["config"]["n_token"])
  if task == "cls":
    del batch["is_real_example"]
  dataset = tf.data.Dataset.from_tensors(batch).repeat()
  loss_fn, _ = finetune_step.heads(task, model)
  work = os.environ.get("TMPDIR", "/tmp")
  trainer = trainer_lib.Trainer(
      tf.distribute.get_strategy(),
      lambda f, m, t: (loss_fn(f, t), None, {}),
      config.OptimizerConfig(learning_rate=2e-5, train_steps=10 ** 6,
                             adam_epsilon=1e-6, **frozen),
      os.path.join(work, "unused-finetune-memory-model-dir"),
      accum_steps=point["accum"],
      train=config.TrainConfig(seed=1, use_fp16=precision == "fp16",
                               use_xla=bool(options.get("xla"))))
  trainer.build(dataset.element_spec)
  return (trainer, trainer.make_train_step(),
          iter(trainer.distribute(lambda _: dataset)), device)


def measure(point, pool_gib):
  """Peak bytes of the second training step at `point` (this process)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf
  trainer, step, iterator, device = built_step(point, pool_gib)
  step(iterator, False)  # trace; the first step allocates for good
  tf.config.experimental.reset_memory_stats(device)
  before = tf.config.experimental.get_memory_info(device)["current"]
  step(iterator, False)
  info = tf.config.experimental.get_memory_info(device)
  name = device
  if device == "GPU:0":
    details = tf.config.experimental.get_device_details(
        tf.config.list_physical_devices("GPU")[0])
    name = f"GPU:0 {details.get('device_name', '')}".strip()
  return dict(device=name, peak=info["peak"], before=before,
              params=sum(int(np.prod(v.shape)) for v in trainer.trainable))


def calibration_record(points, results):
  """The calibration file's content (`memory_plan.read_calibration`).

  Args:
    points: parsed points (`parse_point`).
    results: their measurements (`measure`), in the same order.
  """
  from xlnet.reproduce import memory_plan  # pylint: disable=g-import-not-at-top
  return {"format": memory_plan.CALIBRATION_FORMAT,
          "device": results[0]["device"],
          "points": [dict(config=p["config"], task_kind=p["task"],
                          seq_len=p["seq_len"], micro_batch=p["batch"],
                          precision=p["precision"],
                          accumulate=p["accum"] > 1, peak_bytes=r["peak"],
                          recompute=bool(p["options"].get("recompute")),
                          freeze_layers=p["options"]["freeze"])
                     for p, r in zip(points, results)]}


def calibrate(args):
  """Measures `CALIBRATION_POINTS` (or --points) and writes the file
  --calibrate names, whole or not at all."""
  texts = (args.points.split(",") if args.points else
           [f"classifier:{args.precision}:{p}" for p in CALIBRATION_POINTS])
  points = [parse_point(t, args.n_token) for t in texts]
  results = []
  for text in texts:
    results.append(max((run_point(text, args) for _ in range(args.repeats)),
                       key=lambda r: r["peak"]))
    print(f"{text}: peak {results[-1]['peak'] / 2 ** 20:.1f} MiB on "
          f"{results[-1]['device']}", flush=True)
  from xlnet import io_utils  # pylint: disable=g-import-not-at-top
  io_utils.atomic_write(args.calibrate, json.dumps(
      calibration_record(points, results), indent=1).encode())
  print(f"wrote {args.calibrate}: reproduce.py --device_memory_gb plans "
        f"with it (--memory_calibration={args.calibrate})")


def phase_of(est):
  """The model's peak moment: the update or the top layer's phase."""
  if est.update_peak >= est.activation_peak:
    return "update"
  return max(est.top, key=est.top.get)


def run_point(text, args):
  """Measures one point in a child process; returns its result dict."""
  cmd = [sys.executable, os.path.abspath(__file__), "--measure", text,
         f"--n_token={args.n_token}", f"--pool_gib={args.pool_gib}"]
  out = subprocess.run(cmd, capture_output=True, text=True, check=False)
  lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
  if out.returncode or not lines:
    raise SystemExit(f"finetune_memory.py: error: point {text} failed "
                     f"(exit {out.returncode}):\n{out.stderr[-2000:]}")
  return json.loads(lines[-1])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--grid", default="check", choices=sorted(GRIDS))
  parser.add_argument("--points", default="",
                      help="Comma-separated points instead of --grid.")
  parser.add_argument("--n_token", type=int, default=32000)
  parser.add_argument("--repeats", type=int, default=2,
                      help="Runs of each point (the executor's order, and "
                      "so the peak, varies from run to run).")
  parser.add_argument("--pool_gib", type=int, default=8,
                      help="On the CPU, reserve the allocator's pool as one "
                      "region of this many GiB first, as on a GPU (0: let it "
                      "grow in regions).")
  parser.add_argument("--tables", action="store_true",
                      help="Print the model's tables for XLNet-Base and "
                      "-Large (no measurement).")
  parser.add_argument("--calibrate", metavar="FILE",
                      help="Measure this device at XLNet-Base and -Large, "
                      "128 and 512 tokens, and write the calibration FILE "
                      "that reproduce.py --device_memory_gb plans with.")
  parser.add_argument("--precision", default="fp32",
                      choices=("fp32", "fp16", "bf16"),
                      help="With --calibrate: the precision to measure.")
  parser.add_argument("--measure", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.calibrate:
    calibrate(args)
    return
  if args.measure:
    print(json.dumps(measure(parse_point(args.measure, args.n_token),
                             args.pool_gib)))
    return
  if args.tables:
    print(fit_table() + "\n\n" + plan_table())
    return
  from xlnet.reproduce import memory_model  # pylint: disable=g-import-not-at-top
  points = args.points.split(",") if args.points else GRIDS[args.grid]
  mib = 2.0 ** 20
  print(f"MiB; point = task:precision:layers:d_model:seq:batch[:accum]; "
        f"peak: the largest of {args.repeats} run(s) (and the smallest); "
        "tensors: the model's bytes of tensors, model = tensors x "
        f"{memory_model.ALLOCATOR_OVERHEAD} (ALLOCATOR_OVERHEAD); held: "
        "between steps, measured and model")
  print(f"{'point':32s} {'peak':>8s} {'(min)':>8s} {'tensors':>8s} "
        f"{'ratio':>6s} {'model':>8s} {'error':>7s} {'held':>7s} "
        f"{'model':>7s}  model's peak moment")
  ratios = []
  for text in points:
    point = parse_point(text, args.n_token)
    runs = [run_point(text, args) for _ in range(args.repeats)]
    got = max(runs, key=lambda r: r["peak"])
    low = min(r["peak"] for r in runs)
    est = model_estimate(point)
    want_params = memory_model.param_count(point["config"], point["task"])
    note = "" if got["params"] == want_params else (
        f"  (parameters: built {got['params']}, model {want_params})")
    ratios.append(got["peak"] / est.tensor_bytes)
    print(f"{text:32s} {got['peak'] / mib:8.1f} {low / mib:8.1f} "
          f"{est.tensor_bytes / mib:8.1f} {ratios[-1]:6.3f} "
          f"{est.peak_bytes / mib:8.1f} "
          f"{est.peak_bytes / got['peak'] - 1:+7.1%} "
          f"{got['before'] / mib:7.1f} {sum(est.state.values()) / mib:7.1f}"
          f"  {phase_of(est)} ({got['device']}){note}", flush=True)
  if not ratios:
    return
  print(f"measured peak / tensors: {min(ratios):.3f} to {max(ratios):.3f}; "
        "model error: "
        f"{min(memory_model.ALLOCATOR_OVERHEAD / r for r in ratios) - 1:+.1%} "
        f"to {max(memory_model.ALLOCATOR_OVERHEAD / r for r in ratios) - 1:+.1%}")


if __name__ == "__main__":
  main()
