"""What a table runs (`api.plan_table`): each task's settings with the
override flags applied, its batch as micro-batches of the devices (with
--device_memory_gb, planned by `memory_plan.py`), the directories of each
run and the commands of the programs that make it.
"""
import dataclasses
import os
import sys
from typing import Optional

import tensorflow as tf

from xlnet import errors
from xlnet import model as model_lib
from xlnet import task_kinds
from xlnet import validation
from xlnet.downloads import sources as download_sources
from xlnet.reproduce import memory_plan
from xlnet.reproduce import paper_settings
from xlnet.runs import children
from xlnet.training import config as train_config_lib
from xlnet.training import strategies

RESULT_FILE = "result.json"
# Flags that replace every task's setting (None: the task's own).
OVERRIDES = tuple(name for name, _, _ in paper_settings.OVERRIDE_FLAGS)
# Flags naming this host's place in a multi-host run: not settings of a
# result (a rerun may use other hosts or ports).
HOST_FLAGS = ("worker_hosts", "task_index", "cluster_timeout")
# Flags naming files or directories (local ones are made absolute).
PATH_FLAGS = ("init_checkpoint", "model_config_path", "spiece_model_file",
              "data_root", "work_dir")
# Flags an earlier version did not pass, and the value the programs took
# then (their defaults): a command without one equals one with this value
# (named as `command_flags` names them).
IMPLIED_FLAGS = {"--seed": str(train_config_lib.DEFAULT_SEED),
                 "--accum_steps": "1", "--use_fp16": "False",
                 "--use_bfloat16": "False", "--recompute": "False",
                 "--freeze_layers": "0"}
# A task's outputs in the layout of an earlier version ({task}/...).
EARLIER_LAYOUT = ("model", "predictions", "log.txt", RESULT_FILE)


def warn(message):
  """Prints `prog: warning: message` to stderr."""
  print(f"{errors.program_name()}: warning: {message}", file=sys.stderr,
        flush=True)


################################################################################
# Settings. `cfg` is a `ReproduceConfig` (xlnet/reproduce/config.py), its
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
  print(f"{errors.program_name()}: {task.name}: --train_steps="
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
    measured: the measured point that says the micro-batch fits where the
      estimate is over the plan's share (`memory_plan.MeasuredPoint`).
    recompute, freeze_layers: --recompute, --freeze_layers.
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
  measured: Optional[str] = None
  recompute: bool = False
  freeze_layers: int = 0

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
           f"GiB per device (memory model held to {self.memory_source}"
           + (f"; over its share, but {self.measured})" if self.measured
              else ")"))
    options = memory_plan.option_words(self.recompute, self.freeze_layers)
    return (f"global batch {self.global_batch} = {self.micro_batch} per "
            f"device x {self.replicas} {devices} x {self.accum_steps} "
            f"accumulation {steps}; {self.precision}{options}{fit}")


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
                     f"{errors.error_text(e)} (--device_memory_gb plans with "
                     "the model's sizes)") from None


def hosts(cfg):
  """The hosts whose devices share each batch: --num_hosts on a TPU; on
  GPUs the workers of --worker_hosts or TF_CONFIG, which --num_hosts must
  leave at 1 or repeat (as the programs read it).

  Raises:
    ValueError: one line when --num_hosts contradicts the cluster.
  """
  return strategies.num_hosts(cfg, cfg.use_tpu)  # cfg: fields as flags


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
  return memory_plan.device_terms(path, strategies.device_name())


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
        cfg.device_memory_gb, terms, cfg.recompute, cfg.freeze_layers)
  except ValueError as e:
    raise ValueError(f"--device_memory_gb={cfg.device_memory_gb:g}: "
                     f"{task.name}: {e}") from None
  return BatchPlan(batch, replicas, plan.accum_steps, plan.micro_batch,
                   precision(cfg), use_tpu=cfg.use_tpu,
                   estimated_gb=plan.estimated_gb,
                   device_memory_gb=cfg.device_memory_gb,
                   memory_source=plan.source, measured=plan.measured,
                   recompute=cfg.recompute, freeze_layers=cfg.freeze_layers)


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
                   precision(cfg), use_tpu=cfg.use_tpu,
                   recompute=cfg.recompute, freeze_layers=cfg.freeze_layers)


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
  return ([sys.executable, os.path.join(children.REPO_ROOT, program)] +
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
      use_fp16=cfg.use_fp16, use_bfloat16=plan.precision == "bf16",
      # the memory savers only where set (None: not passed)
      recompute=plan.recompute or None,
      freeze_layers=plan.freeze_layers or None)
  if cfg.use_tpu:
    values.update(use_tpu=True, tpu=cfg.tpu)
  if cfg.worker_hosts:
    values.update(worker_hosts=cfg.worker_hosts, task_index=cfg.task_index)
  if strategies.cluster_workers(cfg.worker_hosts) > 1:
    values.update(cluster_timeout=cfg.cluster_timeout)
  values.update(_program_flags(task, data_dir, dirs, cfg))
  return _argv(task.program, values)


def command_flags(command):
  """{name: value} of a task's argv: `program` (its file name) and every
  `--flag` (the name with its dashes)."""
  flag_values = dict(arg.partition("=")[::2] for arg in command[2:])
  return dict(program=os.path.basename(command[1]), **flag_values)


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
  kind = task_kinds.get(run.task.kind)
  rows = kind.sequences_per_example
  unit = f" ({kind.examples}, {rows} sequences each)" if rows > 1 else ""
  return f"# {run.name}: {run.plan.describe()}{unit}; {aim}"


