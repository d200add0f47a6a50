"""Runs one of the paper's tables with the paper's fine-tuning settings.

`python reproduce.py --table=glue --init_checkpoint=... --data_root=DIR
--work_dir=DIR ...` runs each task of the table, with each of --num_seeds
seeds, through the programs users run (`run_classifier.py`, `run_squad.py`,
`run_race.py`), one after another, as subprocesses:

  work_dir/{task}/records/               feature records, shared by the
                                         task's seeds (--output_dir)
  work_dir/{task}/seed-{s}/model/        checkpoints, eval results
  work_dir/{task}/seed-{s}/predictions/  SQuAD predictions (--predict_dir)
  work_dir/{task}/seed-{s}/log.txt       the program's output (appended)
  work_dir/{task}/seed-{s}/prepro-{i}.log  SQuAD preprocessing shard i
  work_dir/{task}/seed-{s}/result.json   written atomically once the run
                                         is done
  work_dir/results.{md,json,png}  the table so far (per task the median and
                                  range of its runs), rewritten after each

(with `--gcs_dir`, records/ and each seed's model/ and predictions/ go
there instead). A work dir of an earlier version (model/, log.txt and
result.json directly in `{task}/`) is moved into this layout on the first
run (`migrate_earlier_layout`).

Over several GPU hosts every host runs the same command with its own
`--task_index` (or TF_CONFIG, which the programs inherit), --work_dir and
--gcs_dir shared: each run's program trains on every host, and the chief
(process 0) alone holds the work dir's lock, evaluates and writes
result.json and results.*; another host writes only its program's output,
to `work_dir/{task}/seed-{s}/log.process-{i}.txt`.

A run with a result.json is skipped; an interrupted one is run again with
the same command, and the program resumes from its model_dir. A failing run
prints one line, its task's row says "failed", and the table goes on with
the next; the program then exits with code 1. SIGTERM and SIGINT (Ctrl-C)
are passed on to the running program(s), which save a checkpoint and stop;
reproduce.py waits for them and exits with code 143 / 130. One run at a
time per work dir: it holds `work_dir/trainer.lock`
(`xlnet/training/run_lock.py`). Paths are made absolute, and the settings a
result.json was made with are compared with the work dir's own path left
out, so a work dir may be moved. Settings, figures and their sources:
`xlnet/finetuning/paper_settings.py`, docs/reproducing.md.
"""
import contextlib
import ctypes
import dataclasses
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from typing import Optional

from absl import flags
import tensorflow as tf

from xlnet.programs import cli
from xlnet import io_utils
from xlnet import model as model_lib
from xlnet import validation
from xlnet.downloads import sources as download_sources
from xlnet.finetuning import memory_plan
from xlnet.finetuning import paper_settings
from xlnet.finetuning import reproduce_report as report
from xlnet.flags import configs as flag_configs
from xlnet.flags import finetuning as finetune_flags
from xlnet.flags import task_catalog
from xlnet.training import config as train_config_lib
from xlnet.training import progress
from xlnet.training import run_lock
from xlnet.training import strategies

# The repository: the programs live at its root.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
RESULT_FILE = "result.json"
# Flags that replace every task's setting (None: the task's own).
OVERRIDES = tuple(name for name, _, _ in task_catalog.REPRODUCE_OVERRIDES)
# Flags naming this host's place in a multi-host run: not settings of a
# result (a rerun may use other hosts or ports).
HOST_FLAGS = ("worker_hosts", "task_index", "cluster_timeout")
# Flags naming files or directories (local ones are made absolute).
PATH_FLAGS = ("init_checkpoint", "model_config_path", "spiece_model_file",
              "data_root", "work_dir")
# Flags an earlier version did not pass, and the value the programs took
# then (their defaults): a command without one equals one with this value.
IMPLIED_FLAGS = {"seed": str(train_config_lib.DEFAULT_SEED),
                 "accum_steps": "1", "use_fp16": "False",
                 "use_bfloat16": "False"}
# A task's outputs in the layout of an earlier version ({task}/...).
EARLIER_LAYOUT = ("model", "predictions", "log.txt", RESULT_FILE)


def define_flags(flag_values=flags.FLAGS):
  """Defines the flags of reproduce.py (no-op if already there)."""
  if "table" not in flag_values:
    task_catalog.define_reproduce_flags(
        flag_values, tables=list(paper_settings.TABLES))


def warn(message):
  """Prints `prog: warning: message` to stderr."""
  print(f"{cli.program_name()}: warning: {message}", file=sys.stderr,
        flush=True)


################################################################################
# Settings. `cfg` is a `ReproduceConfig` (xlnet/finetuning/config.py), its
# fields named after the flags (`finetune_flags.resolve_reproduce`).
################################################################################
def check_settings(cfg):
  """Raises a one-line ValueError naming a missing flag or a bad place (the
  values themselves were checked when `cfg` was built)."""
  if not cfg.table:
    raise ValueError("--table is required (one of "
                     f"{', '.join(paper_settings.TABLES)})")
  for name in PATH_FLAGS:
    if not getattr(cfg, name):
      raise ValueError(f"--{name} is required{_fetched_by(name, cfg)}")
  if "://" in cfg.work_dir:
    raise ValueError(f"--work_dir={cfg.work_dir} must be a local "
                     "directory (logs and results); give Cloud Storage as "
                     "--gcs_dir")
  if cfg.use_tpu and not (cfg.tpu and (cfg.gcs_dir or "").startswith(
      "gs://")):
    raise ValueError(
        f"--use_tpu needs --tpu (got {cfg.tpu}) and a gs:// --gcs_dir (got "
        f"{cfg.gcs_dir}): a TPU reads and writes only Cloud Storage, and "
        "--work_dir keeps the logs and results locally")


def absolute_paths(cfg):
  """`cfg` with its local paths absolute: the programs run in the
  repository's directory, not in the one reproduce.py was started in."""
  return dataclasses.replace(cfg, **{
      name: os.path.abspath(getattr(cfg, name))
      for name in PATH_FLAGS + ("gcs_dir",)
      if getattr(cfg, name) and "://" not in getattr(cfg, name)})


def seeds(cfg):
  """The seeds each task runs with: --num_seeds (default: the table's,
  `paper_settings.DEFAULT_SEEDS`) consecutive ones from --seed (default:
  the programs' default seed)."""
  first = train_config_lib.DEFAULT_SEED if cfg.seed is None else cfg.seed
  count = cfg.num_seeds or paper_settings.DEFAULT_SEEDS[cfg.table]
  return list(range(first, first + count))


def effective_settings(task, cfg):
  """The task's settings for --model_size with the override flags applied.

  Returns:
    dict with learning_rate, batch (global), steps, warmup, seq_len,
    save_steps, iterations, layer_decay, adam_epsilon.
  """
  s = task.settings(cfg.model_size)
  pick = lambda field, own: own if getattr(cfg, field) is None else getattr(
      cfg, field)
  steps = pick("train_steps", s.steps)
  return dict(learning_rate=pick("learning_rate", s.learning_rate),
              batch=pick("train_batch_size", s.batch), steps=steps,
              warmup=pick("warmup_steps", scaled_warmup(s, steps)),
              seq_len=pick("max_seq_length", s.seq_len),
              save_steps=pick("save_steps", min(s.save_steps, steps)),
              iterations=pick("iterations", min(1000, steps)),
              layer_decay=s.layer_decay, adam_epsilon=s.adam_epsilon)


def scaled_warmup(settings, steps):
  """The warm-up of a run of `steps` steps: the paper's fraction of them
  (`settings`: the task's `paper_settings.Settings`), so that a shortened
  run still trains mostly after its warm-up."""
  return round(settings.warmup * steps / settings.steps)


def note_scaled_warmup(task, cfg, settings):
  """Says, in one line on stderr, when --train_steps scaled the paper's
  warm-up (`scaled_warmup`)."""
  paper = task.settings(cfg.model_size)
  if cfg.warmup_steps is not None or settings["steps"] == paper.steps:
    return
  print(f"{cli.program_name()}: {task.name}: --train_steps="
        f"{settings['steps']}: warm-up scaled to {settings['warmup']} steps "
        f"(the paper's {paper.warmup} of {paper.steps}, the same fraction); "
        "--warmup_steps sets it", file=sys.stderr, flush=True)


def warn_long_warmup(task, settings):
  """Warns, in the words of the programs (`validation.long_warmup_message`),
  when a task's warm-up outlasts its training (an override of either)."""
  message = validation.long_warmup_message(settings["warmup"],
                                           settings["steps"])
  if message:
    warn(f"{task.name}: {message}")


################################################################################
# The batch plan: the global batch as micro-batches of the devices.
################################################################################
@dataclasses.dataclass(frozen=True)
class BatchPlan:
  """How one optimizer step's global batch is computed.

  global_batch = micro_batch * replicas * accum_steps (RACE: questions of 4
  sequences each).

  Attributes:
    global_batch: examples per optimizer step (the table's batch).
    replicas: devices over all hosts (GPUs, or TPU cores).
    accum_steps: micro-batches accumulated per optimizer step.
    micro_batch: examples per replica per micro-batch.
    precision: "fp32", "fp16" or "bf16".
    use_tpu: the programs' --train_batch_size is then the global
      micro-batch (over all cores), else the per-replica one.
    estimated_gb, device_memory_gb: with --device_memory_gb, the memory
      model's estimate of a device's peak (`memory_plan`) and the memory.
    memory_source: what the estimate holds to (`memory_plan.DeviceTerms`).
  """
  global_batch: int
  replicas: int
  accum_steps: int
  micro_batch: int
  precision: str
  use_tpu: bool = False
  estimated_gb: Optional[float] = None
  device_memory_gb: Optional[float] = None
  memory_source: Optional[str] = None

  @property
  def train_batch_size(self):
    """The programs' --train_batch_size."""
    return self.micro_batch * (self.replicas if self.use_tpu else 1)

  def describe(self):
    """One line, e.g. `global batch 32 = 8 per device x 4 devices x 1
    accumulation step; fp32`."""
    steps = "step" if self.accum_steps == 1 else "steps"
    devices = "device" if self.replicas == 1 else "devices"
    fit = ("" if self.estimated_gb is None else
           f"; about {self.estimated_gb:.1f} of {self.device_memory_gb:g} "
           f"GiB per device (memory model held to {self.memory_source})")
    return (f"global batch {self.global_batch} = {self.micro_batch} per "
            f"device x {self.replicas} {devices} x {self.accum_steps} "
            f"accumulation {steps}; {self.precision}{fit}")


def precision(cfg):
  """"bf16" (--use_bfloat16, or a TPU), "fp16" (--use_fp16) or "fp32"."""
  return memory_plan.precision_of(cfg.use_tpu, cfg.use_bfloat16,
                                  cfg.use_fp16)


def model_config(cfg):
  """The pretrained model's XLNetConfig (--model_config_path), which
  --device_memory_gb plans with; None without that flag.

  Raises:
    ValueError: one line naming the flag when it cannot be read.
  """
  if cfg.device_memory_gb is None:
    return None
  try:
    return model_lib.XLNetConfig(json_path=cfg.model_config_path)
  except (ValueError, OSError, tf.errors.OpError) as e:
    raise ValueError(f"--model_config_path={cfg.model_config_path}: "
                     f"{cli.error_text(e)} (--device_memory_gb plans with "
                     "the model's sizes)") from None


def hosts(cfg):
  """The hosts whose devices share each batch: --num_hosts on a TPU; on
  GPUs the workers of --worker_hosts or TF_CONFIG, which --num_hosts must
  leave at 1 or repeat (as the programs read it).

  Raises:
    ValueError: one line when --num_hosts contradicts the cluster.
  """
  return flag_configs.num_hosts(cfg, cfg.use_tpu)  # cfg: fields as flags


# A calibration file in the work dir that --device_memory_gb plans with
# when --memory_calibration is not given.
CALIBRATION_FILE = "memory_calibration.json"


def device_terms(cfg):
  """What --device_memory_gb holds the memory model to: the file of
  --memory_calibration, else work_dir/memory_calibration.json, else the
  published GPU measurements (`memory_plan.PUBLISHED`).

  Raises:
    ValueError: one line naming the file when it cannot be read.
  """
  path = cfg.memory_calibration
  if path is None and cfg.work_dir:
    found = os.path.join(cfg.work_dir, CALIBRATION_FILE)
    path = found if os.path.exists(found) else None
  return memory_plan.device_terms(path)


def memory_batch_plan(task, batch, seq_len, cfg, xlnet_config, terms):
  """The `BatchPlan` whose accumulation is the smallest that fits
  --device_memory_gb per device (`memory_plan.plan_accumulation`), by the
  memory model held to `terms` (`device_terms`).

  Raises:
    ValueError: one line naming the task when even one example per device
      does not fit, or the devices do not divide the batch.
  """
  replicas = cfg.num_core_per_host * hosts(cfg)
  try:
    plan = memory_plan.plan_accumulation(
        xlnet_config, task.kind, seq_len, batch, replicas, precision(cfg),
        cfg.device_memory_gb, terms)
  except ValueError as e:
    raise ValueError(
        f"--device_memory_gb={cfg.device_memory_gb:g}: {task.name}: {e}; "
        "use --use_fp16 or --use_bfloat16, larger devices, or a shorter "
        "--max_seq_length") from None
  return BatchPlan(batch, replicas, plan.accum_steps, plan.micro_batch,
                   precision(cfg), use_tpu=cfg.use_tpu,
                   estimated_gb=plan.estimated_gb,
                   device_memory_gb=cfg.device_memory_gb,
                   memory_source=plan.source)


def batch_plan(task, batch, cfg):
  """The `BatchPlan` of `task`'s global `batch` on `hosts` x
  --num_core_per_host devices with --accum_steps (default 1).

  Raises:
    ValueError: when devices x accumulation steps do not divide the batch.
  """
  replicas = cfg.num_core_per_host * hosts(cfg)
  accum = cfg.accum_steps or 1
  if batch % (replicas * accum):
    parts = [f"--num_core_per_host={cfg.num_core_per_host}"]
    if hosts(cfg) > 1:
      parts.append(f"{hosts(cfg)} hosts")
    if accum > 1:
      parts.append(f"--accum_steps={accum}")
    product = "" if len(parts) == 1 else f" ({replicas * accum})"
    raise ValueError(
        f"{' x '.join(parts)}{product} does not divide the global batch "
        f"{batch} of {task.name}; use a divisor of it (or "
        "--train_batch_size)")
  return BatchPlan(batch, replicas, accum, batch // (replicas * accum),
                   precision(cfg), use_tpu=cfg.use_tpu)


################################################################################
# Commands.
################################################################################
def task_dirs(cfg, task, seed):
  """Paths of one run's outputs: `work_dir/{task}/seed-{seed}/` for the
  logs and the result, `gcs_dir/{task}/` (default: the work dir's) for
  what the programs write (records shared by the task's seeds)."""
  root = os.path.join(cfg.work_dir, task.name, f"seed-{seed}")
  data = os.path.join(cfg.gcs_dir or cfg.work_dir, task.name)
  process = strategies.cluster_task(cfg.worker_hosts, cfg.task_index)[0]
  return dict(records=os.path.join(data, "records"),
              model=os.path.join(data, f"seed-{seed}", "model"),
              predictions=os.path.join(data, f"seed-{seed}", "predictions"),
              log=os.path.join(root, f"log.process-{process}.txt" if process
                               else "log.txt"),
              result=os.path.join(root, RESULT_FILE),
              prepro_log=os.path.join(root, "prepro-{}.log"))


def find_data(task, data_root):
  """The task's data directory: the first of `task.data` under `data_root`
  that exists (and holds `task.data_files`).

  Returns:
    (path, None), or (the first expected path, what is missing: naming
    where download.py puts the data) when none does.
  """
  candidates = [os.path.join(data_root, d) if d else data_root
                for d in task.data]
  for path in candidates:
    if os.path.isdir(path) and all(os.path.isfile(os.path.join(path, f))
                                   for f in task.data_files):
      return path, None
  place = download_sources.data_dir(task.name)
  expected = os.path.join(data_root, place) if place else candidates[0]
  wanted = expected + (f" with {', '.join(task.data_files)}"
                       if task.data_files else "")
  return candidates[0], f"{task.name} (expected {wanted})"


def _fetched_by(flag, cfg):
  """How to get what a missing path flag names (words for its message)."""
  if flag in ("init_checkpoint", "model_config_path", "spiece_model_file"):
    return (": the released model's files; `python download.py "
            "--data_root=DIR --only=models` fetches them and prints the "
            "flags to pass")
  if flag == "data_root":
    return (": the directory of the data sets; `python download.py "
            f"--data_root=DIR --only={cfg.table}` fetches the table's")
  return ""


def find_all_data(tasks, cfg):
  """{task name: data directory}, every task's data looked for.

  Raises:
    ValueError: one line naming every missing data set and the download.py
      command that fetches them (with --dry_run a warning instead).
  """
  found = {t.name: find_data(t, cfg.data_root) for t in tasks}
  missing = [problem for _, problem in found.values() if problem]
  if missing:
    names = ",".join(name for name, (_, problem) in found.items() if problem)
    message = (f"--data_root={cfg.data_root}: no data for "
               f"{'; '.join(missing)}; `python download.py --only={names} "
               f"--data_root={cfg.data_root}` fetches it")
    if not cfg.dry_run:
      raise ValueError(message)
    warn(message)
  return {name: path for name, (path, _) in found.items()}


def _program_flags(task, data_dir, dirs, cfg):
  """The program-specific flags of one task."""
  eval_batch = cfg.eval_batch_size
  if task.program == paper_settings.CLASSIFIER:
    # Every checkpoint is evaluated and the best reported, as the author's
    # GLUE runs did (eval_all_ckpt=True, zihangdai/xlnet#96).
    return dict(do_train=True, do_eval=True, eval_all_ckpt=True,
                data_dir=data_dir, eval_batch_size=eval_batch, **task.flags)
  if task.program == paper_settings.SQUAD:
    return dict(do_train=True, do_predict=True,
                train_file=os.path.join(data_dir, task.flags["train_file"]),
                predict_file=os.path.join(data_dir,
                                          task.flags["predict_file"]),
                predict_dir=dirs["predictions"], predict_batch_size=eval_batch,
                max_query_length=(cfg.max_query_length or
                                  task.flags["max_query_length"]),
                num_proc=cfg.num_proc)
  return dict(do_train=True, do_eval=True, data_dir=data_dir,
              eval_batch_size=eval_batch, eval_split=task.flags["eval_split"],
              max_qa_length=cfg.max_qa_length or task.flags["max_qa_length"])


def _argv(program, values):
  """python, the program's path and `--flag=value` of the values set."""
  return ([sys.executable, os.path.join(REPO_ROOT, program)] +
          [f"--{k}={v}" for k, v in values.items() if v is not None])


def task_command(task, data_dir, cfg, seed, plan):
  """The argv that runs `task` with `seed` and the BatchPlan `plan`
  (python, program, --flag=value ...)."""
  s = effective_settings(task, cfg)
  dirs = task_dirs(cfg, task, seed)
  values = dict(
      model_config_path=cfg.model_config_path,
      spiece_model_file=cfg.spiece_model_file,
      init_checkpoint=cfg.init_checkpoint, uncased=cfg.uncased,
      output_dir=dirs["records"], model_dir=dirs["model"],
      max_seq_length=s["seq_len"], learning_rate=s["learning_rate"],
      train_batch_size=plan.train_batch_size, accum_steps=plan.accum_steps,
      train_steps=s["steps"], warmup_steps=s["warmup"],
      save_steps=s["save_steps"], iterations=s["iterations"],
      lr_layer_decay_rate=s["layer_decay"], adam_epsilon=s["adam_epsilon"],
      weight_decay=0.0, num_hosts=hosts(cfg),
      num_core_per_host=cfg.num_core_per_host, seed=seed,
      use_fp16=cfg.use_fp16, use_bfloat16=plan.precision == "bf16")
  if cfg.use_tpu:
    values.update(use_tpu=True, tpu=cfg.tpu)
  if cfg.worker_hosts:
    values.update(worker_hosts=cfg.worker_hosts, task_index=cfg.task_index)
  if strategies.cluster_workers(cfg.worker_hosts) > 1:
    values.update(cluster_timeout=cfg.cluster_timeout)
  values.update(_program_flags(task, data_dir, dirs, cfg))
  return _argv(task.program, values)


def prepro_commands(task, command):
  """The `run_squad.py --do_prepro` command of each shard --proc_id of
  --num_proc that a SQuAD task's `command` trains on (run in parallel
  before it); none for other tasks or one shard (the training program then
  writes the records itself)."""
  given = command_flags(command)  # {"--name": value}
  if task.program != paper_settings.SQUAD or given["--num_proc"] == "1":
    return []
  # The flags the records' names and keys depend on, as the training has.
  shared = ("spiece_model_file", "train_file", "output_dir", "uncased",
            "max_seq_length", "max_query_length", "seed", "num_proc")
  values = dict(do_prepro=True, **{name: given[f"--{name}"]
                                   for name in shared})
  return [_argv(task.program, dict(values, proc_id=i))
          for i in range(int(given["--num_proc"]))]


@dataclasses.dataclass(frozen=True)
class Run:
  """One task with one seed: its plan, preprocessing and training
  commands."""
  task: paper_settings.Task
  seed: int
  plan: BatchPlan
  prepro: tuple
  command: tuple

  @property
  def label(self):
    """e.g. `STS-B (seed 2)`."""
    return f"{self.task.label} (seed {self.seed})"

  @property
  def name(self):
    """e.g. `sts-b (seed 2)`."""
    return f"{self.task.name} (seed {self.seed})"


def plan_runs(tasks, cfg):
  """Every run of the table, seed by seed (each seed runs the whole table,
  so the first pass gives every task's number).

  Raises:
    ValueError: a missing data set (all named at once) or a batch the
      devices do not divide.
  """
  data = find_all_data(tasks, cfg)
  xlnet_config = model_config(cfg)
  terms = None if xlnet_config is None else device_terms(cfg)
  plans = {}
  for task in tasks:
    settings = effective_settings(task, cfg)
    note_scaled_warmup(task, cfg, settings)
    warn_long_warmup(task, settings)
    plans[task.name] = (
        batch_plan(task, settings["batch"], cfg) if xlnet_config is None
        else memory_batch_plan(task, settings["batch"], settings["seq_len"],
                               cfg, xlnet_config, terms))
  runs = []
  for seed in seeds(cfg):
    for task in tasks:
      command = task_command(task, data[task.name], cfg, seed,
                             plans[task.name])
      runs.append(Run(task, seed, plans[task.name],
                      tuple(map(tuple, prepro_commands(task, command))),
                      tuple(command)))
  return runs


def plan_line(run, cfg):
  """The comment line printed before a run: its batch plan and its
  target with the target's source."""
  target = run.task.target(cfg.model_size)
  aim = ("no published target" if target is None else
         f"target {target.value} ({target.source})")
  unit = (" (questions, 4 sequences each)" if run.task.kind == "race"
          else "")
  return f"# {run.name}: {run.plan.describe()}{unit}; {aim}"


################################################################################
# Running commands and reading a task's number.
################################################################################
def _child_setup():
  """In the child, before the program starts: its own process group, so
  that Ctrl-C at the terminal reaches only reproduce.py, which passes it on
  once (a second SIGINT would stop the task without saving); and ask Linux
  to kill it when reproduce.py dies (even by SIGKILL), so no orphaned
  trainer writes beside a rerun."""
  os.setpgid(0, 0)
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
  except (OSError, AttributeError):
    pass


class SignalRelay:
  """While tasks run: SIGTERM and SIGINT to reproduce.py are passed on to
  each (a trainer saves a checkpoint at the end of the step and exits),
  and reproduce.py keeps waiting for them.

  Attributes:
    signum: the first signal received, or None.
  """

  def __init__(self):
    self.signum = None
    self._procs = []
    self._pending = []
    self._previous = {}

  def __enter__(self):
    for signum in (signal.SIGTERM, signal.SIGINT):
      self._previous[signum] = signal.signal(signum, self._handle)
    return self

  def __exit__(self, *exc):
    for signum, previous in self._previous.items():
      signal.signal(signum, previous)
    return False

  def attach(self, proc):
    """Passes on to `proc` (a Popen) the signals received so far and those
    to come."""
    self._procs.append(proc)
    for signum in self._pending:
      self._send(proc, signum)

  def _handle(self, signum, frame):
    del frame
    if self.signum is None:
      self.signum = signum
      with contextlib.suppress(OSError):  # stdout may be gone
        print(f"{signal.Signals(signum).name} received: passed on to the "
              "running task; waiting for it to save and stop", flush=True)
    self._pending.append(signum)
    for proc in self._procs:
      self._send(proc, signum)

  @staticmethod
  def _send(proc, signum):
    if proc.poll() is None:
      proc.send_signal(signum)


def open_log(log_path, command):
  """Opens the task log `log_path` for appending and writes the command
  line (flushed: the program's output follows it in the same file).

  Raises:
    ResourceError / ValueError: one line naming the log when it cannot be
      written (a full disk, a file size limit, no permission).
  """
  log = None
  try:
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    log = open(log_path, "ab")
    log.write(f"\n$ {shlex.join(command)}\n".encode())
    log.flush()
    return log
  except OSError as e:
    if log is not None:
      with contextlib.suppress(OSError):  # the unwritten rest again
        log.close()
    safe = ("the task was not started; make room (or fix the permission) "
            "and rerun the same command")
    raise io_utils.resource_error(log_path, e, safe) or ValueError(
        f"cannot write {log_path}: {cli.error_text(e)}") from None


def _last_line(log_path):
  """The last non-blank line of a log ("" when none)."""
  with open(log_path, errors="replace") as log:
    lines = [line.strip() for line in log if line.strip()]
  return lines[-1] if lines else ""


def run_commands(commands, log_paths, parallel=1):
  """Runs `commands`, at most `parallel` at a time, each appending its
  output to its log; SIGTERM/SIGINT meanwhile are passed on to those
  running (`SignalRelay`), and no new one starts after a signal or a
  failure. Every started command is waited for.

  Returns:
    (None on success, else a one-line reason (the first failing command's
    exit code and its log's last line); the signal received, or None).
  """
  failures = []
  with contextlib.ExitStack() as stack:
    relay = stack.enter_context(SignalRelay())
    waiting = list(zip(commands, log_paths))
    running = []
    while waiting or running:
      while (waiting and len(running) < parallel and not failures and
             relay.signum is None):
        command, log_path = waiting.pop(0)
        try:
          log = stack.enter_context(open_log(log_path, command))
        except BaseException:
          _stop(running)
          raise
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT,
                                cwd=REPO_ROOT, preexec_fn=_child_setup)
        relay.attach(proc)
        running.append((proc, command, log_path))
      if relay.signum is not None or failures:
        waiting = []
      if not running:
        break
      proc, command, log_path = running.pop(0)
      if proc.wait():
        failures.append((command, proc.returncode, log_path))
  if not failures:
    return None, relay.signum
  command, code, log_path = failures[0]
  return (f"{os.path.basename(command[1])} exited with code {code}: "
          f"{_last_line(log_path)}", relay.signum)


def _stop(running):
  """SIGTERM to the (proc, command, log) of `running`, and waits for them:
  none is left writing when reproduce.py stops on an error."""
  for proc, _, _ in running:
    if proc.poll() is None:
      proc.terminate()
  for proc, _, _ in running:
    proc.wait()


def run_command(command, log_path):
  """`run_commands` of one command."""
  return run_commands([command], [log_path])


def _best_classifier_line(path, task_name):
  """The `best` entry of `task_name` / dev in run_classifier's
  eval_results.txt, as a dict."""
  with tf.io.gfile.GFile(path) as f:
    for line in f:
      kind, *fields = line.rstrip("\n").split("\t")
      entry = dict(field.partition("=")[::2] for field in fields)
      if (kind == "best" and entry.get("task") == task_name and
          entry.get("split") == "dev"):
        return entry
  raise ValueError(f"{path} holds no best dev result of {task_name}")


def read_metric(task, dirs):
  """The task's metric (the program's value, before paper units).

  Raises:
    ValueError / OSError: naming the result file when it lacks the number.
  """
  if task.program == paper_settings.CLASSIFIER:
    path = os.path.join(dirs["model"], "eval_results.txt")
    entry = _best_classifier_line(path, task.flags["task_name"])
  else:
    name = ("eval_results.json" if task.program == paper_settings.SQUAD else
            f"eval_results_{task.flags['eval_split']}.json")
    folder = dirs["predictions" if task.program == paper_settings.SQUAD
                  else "model"]
    path = os.path.join(folder, name)
    with tf.io.gfile.GFile(path) as f:
      entry = json.load(f)
  if task.metric.key not in entry:
    raise ValueError(f"{path} has no {task.metric.key}")
  return float(entry[task.metric.key])


def run_one(run, cfg):
  """Runs one task with one seed (its preprocessing shards in parallel
  first, at most one per core) and writes its result.json when it
  succeeds.

  Returns:
    (run row, failure reason or None, the signal received while it ran or
    None).
  """
  dirs = task_dirs(cfg, run.task, run.seed)
  start = time.time()
  reason, signum = None, None
  if run.prepro:
    reason, signum = run_commands(
        run.prepro, [dirs["prepro_log"].format(i)
                     for i in range(len(run.prepro))],
        parallel=len(os.sched_getaffinity(0)))
  if reason is None and signum is None:
    reason, signum = run_command(list(run.command), dirs["log"])
  if reason is None and signum is None:
    try:
      ours = run.task.metric.paper_units(read_metric(run.task, dirs))
    except (OSError, ValueError, tf.errors.OpError) as e:
      reason = cli.error_text(e)
  if reason is not None or signum is not None:
    status = "failed" if signum is None else "interrupted"
    return report.run_row(run.task, run.seed, status), reason, signum
  row = report.run_row(run.task, run.seed, "done", ours, time.time() - start)
  content = dict(row=row, command=list(run.command), work_dir=cfg.work_dir)
  io_utils.atomic_write(
      dirs["result"], json.dumps(content, indent=1) + "\n",
      safe=(f"{run.name} finished and its checkpoints are intact; make "
            "room and rerun the same command to evaluate and record it"))
  return row, None, signum


################################################################################
# Finished runs.
################################################################################
def _is_number(value):
  return (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value))


def result_problem(done):
  """What is wrong with the content of a result.json (a parsed JSON
  value), or None when it holds `{"row": {"status": "done", "ours": number,
  "wall_time_s": number or null, ...}, "command": [str, ...],
  "work_dir": str}` ("work_dir" is absent in those of earlier versions)."""
  if not isinstance(done, dict):
    return "not a JSON object"
  command = done.get("command")
  if not (isinstance(command, list) and len(command) >= 2 and
          all(isinstance(arg, str) for arg in command)):
    return '"command" is not a list of strings'
  if not isinstance(done.get("work_dir", ""), str):
    return '"work_dir" is not a string'
  row = done.get("row")
  if not isinstance(row, dict) or row.get("status") != "done":
    return '"row" is not an object with "status": "done"'
  if not _is_number(row.get("ours")):
    return f'"row" has "ours": {json.dumps(row.get("ours"))}, not a number'
  wall = row.get("wall_time_s")
  if wall is not None and not (_is_number(wall) and wall >= 0):
    return (f'"row" has "wall_time_s": {json.dumps(wall)}, not a number '
            ">= 0")
  return None


def read_result(path, run):
  """The content of a finished run's result.json, checked
  (`result_problem`).

  Raises:
    ValueError: one line naming the file, what is wrong with it and the
      remedy.
  """
  remedy = (f"delete it to run {run.name} again (it resumes from its "
            "checkpoints)")
  try:
    with open(path, "rb") as f:
      text = f.read()
  except OSError as e:
    raise ValueError(f"cannot read {path} ({e.strerror or e}); "
                     f"{remedy}") from None
  if not text.strip():
    raise ValueError(f"{path} is empty; {remedy}")
  try:
    done = json.loads(text)
  except ValueError as e:  # not JSON, or not UTF-8
    raise ValueError(f"{path} is not valid JSON (truncated or edited? "
                     f"{cli.error_text(e)}); {remedy}") from None
  problem = result_problem(done)
  if problem is not None:
    raise ValueError(f"{path} does not hold a finished run's result "
                     f"({problem}); {remedy}")
  return done


def command_flags(command):
  """{name: value} of a task's argv: `program` (its file name) and every
  `--flag` (the name with its dashes)."""
  flag_values = dict(arg.partition("=")[::2] for arg in command[2:])
  return dict(program=os.path.basename(command[1]), **flag_values)


def _in_work_dir(value, work_dir):
  """`value` with a leading `work_dir` written `{work_dir}`."""
  if value is not None and (value == work_dir or
                            value.startswith(work_dir + os.sep)):
    return "{work_dir}" + value[len(work_dir):]
  return value


def settings_differences(old, new, limit=3):
  """`--flag was X, now Y; ...` for the flags of two runs of a task that
  differ, at most `limit` of them named ("" when none does).

  Args:
    old, new: (argv, work dir) of each run; paths under each run's work dir
      compare equal when they are equal below it (a moved work dir), and a
      flag of `IMPLIED_FLAGS` that one does not set equals its value there.
  """
  (old_flags, old_dir), (new_flags, new_dir) = [
      (command_flags(command), work_dir) for command, work_dir in (old, new)]
  value = lambda given, name, work_dir: _in_work_dir(
      given.get(name, IMPLIED_FLAGS.get(name[2:])), work_dir)
  names = [name for name in dict.fromkeys(list(old_flags) + list(new_flags))
           if name[2:] not in HOST_FLAGS and
           value(old_flags, name, old_dir) !=
           value(new_flags, name, new_dir)]
  shown = [f"{name} was {old_flags.get(name, 'not set')}, now "
           f"{new_flags.get(name, 'not set')}" for name in names[:limit]]
  more = [f"{len(names) - limit} more"] if len(names) > limit else []
  return "; ".join(shown + more)


def finished_row(run, cfg):
  """The run row of a run finished by an earlier reproduce.py, or None.

  Raises:
    ValueError: when its result.json is unreadable or of the wrong shape,
      or was made by a different command (settings), whose checkpoints a
      rerun would mix with; one line naming the file, the cause and the
      remedy.
  """
  dirs = task_dirs(cfg, run.task, run.seed)
  path = dirs["result"]
  if not os.path.lexists(path):
    return None
  done = read_result(path, run)
  differences = settings_differences(
      (done["command"], done.get("work_dir", cfg.work_dir)),
      (run.command, cfg.work_dir))
  if differences:
    outputs = sorted({os.path.dirname(path),
                      os.path.dirname(dirs["model"])})
    raise ValueError(
        f"{path} was made with other settings ({differences}); use another "
        f"--work_dir, or delete {' and '.join(outputs)} to run {run.name} "
        "again with these")
  row = done["row"]
  return report.run_row(run.task, run.seed, "done", row["ours"],
                        row.get("wall_time_s"))


def _earlier_seed(task_root):
  """The seed of a run in the earlier layout: its result.json's or its
  log's last command's --seed, else the programs' default."""
  commands = []
  with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
    with open(os.path.join(task_root, RESULT_FILE), "rb") as f:
      commands.append(json.loads(f.read())["command"])
  with contextlib.suppress(OSError):
    with open(os.path.join(task_root, "log.txt"), errors="replace") as f:
      lines = [l[2:] for l in f.read().split("\n") if l.startswith("$ ")]
    if lines:
      with contextlib.suppress(ValueError):
        commands.append(shlex.split(lines[-1]))
  for command in commands:
    found = [arg[len("--seed="):] for arg in command
             if isinstance(arg, str) and arg.startswith("--seed=")]
    if found and re.fullmatch(r"-?\d+", found[-1]):
      return int(found[-1])
  return train_config_lib.DEFAULT_SEED


def migrate_earlier_layout(cfg, task):
  """Moves the outputs of an earlier version's single run of `task`
  (`{task}/model`, `predictions/`, `log.txt`, `result.json`) into
  `{task}/seed-{s}/`, s being the seed that run used, and rewrites the
  paths in its result.json's command to match. The records stay where
  they are (`{task}/records`). Returns the seed, or None when there is
  nothing to move.

  Raises:
    ValueError: (one line) when the run's checkpoints are in Cloud Storage
      (--gcs_dir; moving them is left to the user), or its seed directory
      is taken.
  """
  root = os.path.join(cfg.work_dir, task.name)
  data = os.path.join(cfg.gcs_dir or cfg.work_dir, task.name)
  local = [n for n in EARLIER_LAYOUT if os.path.lexists(os.path.join(root, n))]
  remote = "://" in data and any(
      tf.io.gfile.exists(os.path.join(data, n)) for n in EARLIER_LAYOUT[:2])
  if not (local or remote):
    return None
  seed = _earlier_seed(root)
  if remote:
    raise ValueError(
        f"{data} holds {task.name}'s run in the layout of an earlier "
        f"reproduce.py; move its model/ and predictions/ into "
        f"{data}/seed-{seed}/ (gsutil -m mv) and {' and '.join(local)} of "
        f"{root} into {root}/seed-{seed}/, then rerun")
  target = os.path.join(root, f"seed-{seed}")
  taken = [n for n in local if os.path.lexists(os.path.join(target, n))]
  if taken:
    raise ValueError(
        f"{root} holds {', '.join(local)} of an earlier reproduce.py and "
        f"{target} already holds {', '.join(taken)}; delete one of them")
  result = os.path.join(root, RESULT_FILE)
  if os.path.isfile(result):
    _rewrite_paths(result, root, target)
  os.makedirs(target, exist_ok=True)
  for name in local:
    os.rename(os.path.join(root, name), os.path.join(target, name))
  print(f"{task.name}: moved {', '.join(local)} of an earlier reproduce.py "
        f"into {target}", flush=True)
  return seed


def _rewrite_paths(path, root, target):
  """Rewrites, in the result.json `path`, its command's model and
  predictions directories under `root` to their new place in `target`
  (a file that does not parse is moved as it is, and refused later)."""
  try:
    with open(path, "rb") as f:
      done = json.loads(f.read())
    command = done["command"]
    moved = {os.path.join(root, n): os.path.join(target, n)
             for n in EARLIER_LAYOUT[:2]}
    done["command"] = [
        re.sub(r"^(--\w+=)(.*)$", lambda m: m[1] + next(
            (new + m[2][len(old):] for old, new in moved.items()
             if m[2] == old or m[2].startswith(old + os.sep)), m[2]), arg)
        for arg in command]
  except (OSError, ValueError, TypeError, KeyError):
    return
  io_utils.atomic_write(path, json.dumps(done, indent=1) + "\n")


################################################################################
# Progress.
################################################################################
def progress_line(index, total, label, elapsed, durations):
  """The line printed when run `index` (1-based) of `total` starts.

  Args:
    elapsed: seconds since this reproduce.py started.
    durations: seconds taken by the runs it finished (the ETA is their
      mean times the runs left, this one included).
  """
  line = (f"[{index}/{total}] {label}: starting; elapsed "
          f"{report.format_duration(elapsed)}")
  if not durations:
    return line + "; ETA unknown until a run finishes"
  left = (total - index + 1) * sum(durations) / len(durations)
  return (line + f"; ETA {report.format_duration(left)} from "
          f"{len(durations)} finished run(s)")


################################################################################
# The program.
################################################################################
class TasksFailed(cli.Stop):
  """Some runs failed (each said why); exit code 1."""


@contextlib.contextmanager
def work_dir_lock(work_dir, active=True):
  """Holds the lock of `work_dir` (`run_lock.hold`) for the `with` block,
  so that two runs never write one work dir (nothing when not `active`:
  the other hosts of a multi-host run).

  Raises:
    run_lock.Locked: another reproduce.py run holds it (one line).
    ValueError / ResourceError: the work dir cannot be written (one line).
  """
  with contextlib.ExitStack() as stack:
    try:
      stack.enter_context(run_lock.hold(work_dir, active, flag="work_dir",
                                        user="reproduce.py run"))
    except (OSError, tf.errors.OpError) as e:
      error = io_utils.resource_error(
          run_lock.lock_path(work_dir), e, "nothing was run; make room (or "
          "fix the permission) and rerun")
      if error is None:
        raise
      raise error from None
    yield


def interrupted(signum, run, reason):
  """The `progress.Interrupted` (exit code 128 + signum) of a reproduce.py
  stopped by `signum` while `run` ran (`reason`: why it stopped, None when
  it finished)."""
  name = signal.Signals(signum).name
  what = (f"after {run.name} finished" if reason is None else
          f"(passed on to {run.name}: {reason})")
  return progress.Interrupted(
      f"stopped by {name} {what}; rerun the same command to go on", signum)


def print_dry_run(runs, cfg):
  """Prints every run as a shell script: its plan as a comment, its
  preprocessing shards in the background, then its command."""
  for run in runs:
    print(plan_line(run, cfg), flush=True)
    for command in run.prepro:
      print(shlex.join(command) + " &", flush=True)
    if run.prepro:
      print("wait", flush=True)
    print(shlex.join(run.command), flush=True)


def run(cfg):
  """Runs (or with --dry_run prints) the table; returns the task rows."""
  check_settings(cfg)
  cfg = absolute_paths(cfg)
  tasks = paper_settings.select(cfg.table, cfg.tasks)
  runs = plan_runs(tasks, cfg)
  if cfg.dry_run:
    print_dry_run(runs, cfg)
    return None
  chief = strategies.cluster_task(cfg.worker_hosts, cfg.task_index)[0] == 0
  with work_dir_lock(cfg.work_dir, chief):
    if not chief:
      return run_worker_runs(runs, cfg)
    for task in tasks:
      migrate_earlier_layout(cfg, task)
    return run_table(tasks, runs, cfg)


def run_worker_runs(runs, cfg):
  """A multi-host run's part on a host other than the chief: runs every
  run the chief has not finished (its program trains with the chief's and
  leaves evaluation to it); writes no result and no report.

  Raises:
    TasksFailed: after the last run, when some program failed here.
    progress.Interrupted: SIGTERM/SIGINT arrived while a run ran.
  """
  failed = []
  for index, run_ in enumerate(runs, 1):
    if finished_row(run_, cfg):
      print(f"[{index}/{len(runs)}] {run_.label}: done by an earlier run, "
            "skipped", flush=True)
      continue
    print(f"[{index}/{len(runs)}] {run_.label}: starting (the chief "
          "evaluates and records it)", flush=True)
    log = task_dirs(cfg, run_.task, run_.seed)["log"]
    reason, signum = run_command(list(run_.command), log)
    if signum is not None:
      raise interrupted(signum, run_, reason)
    if reason is not None:
      failed.append(run_.name)
      print(f"{cli.program_name()}: {run_.name} failed: {reason} (log: "
            f"{log})", file=sys.stderr, flush=True)
  if failed:
    raise TasksFailed(f"{len(failed)} of {len(runs)} run(s) failed here: "
                      f"{', '.join(failed)} (see each run's log)")
  return None


class Table:
  """The task rows of the table as its runs finish."""

  def __init__(self, tasks, runs, cfg):
    self.tasks, self.cfg = tasks, cfg
    self.runs = {(r.task.name, r.seed): finished_row(r, cfg) or
                 report.run_row(r.task, r.seed, "pending") for r in runs}

  def rows(self):
    """The task rows (`report.task_row`), in the table's order."""
    return [report.task_row(
        task, self.cfg.model_size, effective_settings(task, self.cfg)["steps"],
        [row for (name, _), row in sorted(self.runs.items(),
                                          key=lambda kv: kv[0][1])
         if name == task.name]) for task in self.tasks]

  def write(self):
    """Writes results.md, results.json and results.png."""
    size = "XLNet-Large" if self.cfg.model_size == "large" else "XLNet-Base"
    report.write_reports(self.cfg.work_dir, self.cfg.table,
                         self.cfg.model_size,
                         f"{size}, {paper_settings.TITLES[self.cfg.table]}",
                         self.rows())


def run_table(tasks, runs, cfg):
  """Runs the runs not finished by an earlier reproduce.py; returns the
  task rows.

  Raises:
    TasksFailed: after the last run, when some failed.
    progress.Interrupted: SIGTERM/SIGINT arrived while a run ran (passed
      on to it, and waited for).
  """
  table = Table(tasks, runs, cfg)
  start, durations, failed = time.time(), [], []
  for index, run_ in enumerate(runs, 1):
    key = (run_.task.name, run_.seed)
    if table.runs[key]["status"] == "done":
      print(f"[{index}/{len(runs)}] {run_.label}: done by an earlier run, "
            "skipped", flush=True)
      continue
    print(plan_line(run_, cfg), flush=True)
    print(progress_line(index, len(runs), run_.label, time.time() - start,
                        durations), flush=True)
    table.runs[key], reason, signum = run_one(run_, cfg)
    if signum is not None:
      table.write()
      raise interrupted(signum, run_, reason)
    if reason is None:
      durations.append(table.runs[key]["wall_time_s"])
    else:
      failed.append(run_.name)
      print(f"{cli.program_name()}: {run_.name} failed: {reason} (log: "
            f"{task_dirs(cfg, run_.task, run_.seed)['log']})",
            file=sys.stderr, flush=True)
    table.write()
  table.write()
  print(f"Results: {os.path.join(cfg.work_dir, 'results.md')}", flush=True)
  if failed:
    raise TasksFailed(f"{len(failed)} of {len(runs)} run(s) failed: "
                      f"{', '.join(failed)} (see each run's log.txt)")
  return table.rows()


def main(unused_argv):
  """absl main: resolves the parsed flags once and runs the table."""
  run(finetune_flags.resolve_reproduce(flags.FLAGS))


def entry_point():
  """`python reproduce.py ...`: defines the flags and runs `main`."""
  cli.run(main, define_flags)
