"""Runs one of the paper's tables with the paper's fine-tuning settings.

`python reproduce.py --table=glue --init_checkpoint=... --data_root=DIR
--work_dir=DIR ...` runs each task of the table through the programs users
run (`run_classifier.py`, `run_squad.py`, `run_race.py`), one after another,
as subprocesses:

  work_dir/{task}/records/      the program's feature records (--output_dir)
  work_dir/{task}/model/        checkpoints, eval results (--model_dir)
  work_dir/{task}/predictions/  SQuAD predictions (--predict_dir)
  work_dir/{task}/log.txt       the program's output (appended)
  work_dir/{task}/result.json   written atomically once the task is done
  work_dir/results.{md,json,png}  the table so far, rewritten after each task

(with `--gcs_dir`, records/, model/ and predictions/ go there instead).

A task with a result.json is skipped; an interrupted one is run again with
the same command, and the program resumes from its model_dir. A failing task
prints one line, its row says "failed", and the table goes on with the next
task; the program then exits with code 1. Settings and figures:
`xlnet/finetuning/paper_settings.py`, docs/reproducing.md.
"""
import ctypes
import json
import os
import shlex
import signal
import subprocess
import sys
import time

from absl import flags
import tensorflow as tf

from xlnet import cli
from xlnet import io_utils
from xlnet.finetuning import paper_settings
from xlnet.finetuning import png_chart
from xlnet.flags import task_catalog
from xlnet.flags import finetuning as finetune_flags

# The repository: the programs live at its root.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
RESULT_FILE = "result.json"
# Flags that replace every task's setting (None: the task's own).
OVERRIDES = tuple(name for name, _, _ in task_catalog.REPRODUCE_OVERRIDES)


def define_flags(flag_values=flags.FLAGS):
  """Defines the flags of reproduce.py (no-op if already there)."""
  if "table" not in flag_values:
    task_catalog.define_reproduce_flags(
        flag_values, tables=list(paper_settings.TABLES))


################################################################################
# Commands. `cfg` is a `ReproduceConfig` (xlnet/finetuning/config.py), its
# fields named after the flags (`finetune_flags.resolve_reproduce`).
################################################################################
def check_settings(cfg):
  """Raises a one-line ValueError naming a missing or bad flag."""
  if not cfg.table:
    raise ValueError("--table is required (one of "
                     f"{', '.join(paper_settings.TABLES)})")
  for name in ("init_checkpoint", "model_config_path", "spiece_model_file",
               "data_root", "work_dir"):
    if not getattr(cfg, name):
      raise ValueError(f"--{name} is required")
  integers = ("num_core_per_host", "num_hosts", "eval_batch_size") + tuple(
      n for n in OVERRIDES if n != "learning_rate")
  for name in integers:
    value, low = getattr(cfg, name), 0 if name == "warmup_steps" else 1
    if value is not None and value < low:
      raise ValueError(f"--{name}={value} must be >= {low}")
  if "://" in cfg.work_dir:
    raise ValueError(f"--work_dir={cfg.work_dir} must be a local "
                     "directory (logs and results); give Cloud Storage as "
                     "--gcs_dir")
  if cfg.learning_rate is not None and cfg.learning_rate <= 0:
    raise ValueError(f"--learning_rate={cfg.learning_rate} must be > 0")


def effective_settings(task, cfg):
  """The task's settings for --model_size with the override flags applied.

  Returns:
    dict with learning_rate, batch (global), steps, warmup, seq_len,
    save_steps, iterations, layer_decay.
  """
  s = task.settings(cfg.model_size)
  pick = lambda field, own: own if getattr(cfg, field) is None else getattr(
      cfg, field)
  steps = pick("train_steps", s.steps)
  return dict(learning_rate=pick("learning_rate", s.learning_rate),
              batch=pick("train_batch_size", s.batch), steps=steps,
              warmup=pick("warmup_steps", min(s.warmup, steps)),
              seq_len=pick("max_seq_length", s.seq_len),
              save_steps=pick("save_steps", min(s.save_steps, steps)),
              iterations=pick("iterations", min(1000, steps)),
              layer_decay=s.layer_decay)


def per_device_batch(task, batch, cfg):
  """The programs' --train_batch_size for a global `batch`: per GPU without
  --use_tpu (as the release's programs read it), global with it.

  Raises:
    ValueError: when the GPUs do not divide the batch.
  """
  if cfg.use_tpu:
    return batch
  if batch % cfg.num_core_per_host:
    raise ValueError(
        f"--num_core_per_host={cfg.num_core_per_host} does not divide "
        f"the global batch {batch} of {task.name}; use a divisor of it (or "
        "--train_batch_size)")
  return batch // cfg.num_core_per_host


def task_dirs(cfg, task):
  """Paths of one task's outputs: `work_dir/{task}/` for the log and the
  result, `gcs_dir/{task}/` (default: the same) for what the program
  writes."""
  root = os.path.join(cfg.work_dir, task.name)
  data = os.path.join(cfg.gcs_dir or cfg.work_dir, task.name)
  return dict(records=os.path.join(data, "records"),
              model=os.path.join(data, "model"),
              predictions=os.path.join(data, "predictions"),
              log=os.path.join(root, "log.txt"),
              result=os.path.join(root, RESULT_FILE))


def find_data(task, data_root, must_exist=True):
  """The task's data directory: the first of `task.data` under `data_root`
  that exists (and holds `task.data_files`).

  Raises:
    ValueError: naming the expected path when none does (`must_exist`).
  """
  candidates = [os.path.join(data_root, d) if d else data_root
                for d in task.data]
  for path in candidates:
    if os.path.isdir(path) and all(os.path.isfile(os.path.join(path, f))
                                   for f in task.data_files):
      return path
  if not must_exist:
    return candidates[0]
  wanted = candidates[0] + (f" with {', '.join(task.data_files)}"
                            if task.data_files else "")
  raise ValueError(f"--data_root={data_root}: no data for {task.name} "
                   f"(expected {wanted})")


def _program_flags(task, data_dir, dirs, cfg):
  """The program-specific flags of one task."""
  eval_batch = cfg.eval_batch_size
  if task.program == paper_settings.CLASSIFIER:
    return dict(do_train=True, do_eval=True, eval_all_ckpt=True,
                data_dir=data_dir, eval_batch_size=eval_batch, **task.flags)
  if task.program == paper_settings.SQUAD:
    return dict(do_train=True, do_predict=True,
                train_file=os.path.join(data_dir, task.flags["train_file"]),
                predict_file=os.path.join(data_dir,
                                          task.flags["predict_file"]),
                predict_dir=dirs["predictions"], predict_batch_size=eval_batch,
                max_query_length=(cfg.max_query_length or
                                  task.flags["max_query_length"]))
  return dict(do_train=True, do_eval=True, data_dir=data_dir,
              eval_batch_size=eval_batch, eval_split=task.flags["eval_split"],
              max_qa_length=cfg.max_qa_length or task.flags["max_qa_length"])


def task_command(task, data_dir, cfg):
  """The argv that runs `task` (python, program, --flag=value ...)."""
  s = effective_settings(task, cfg)
  dirs = task_dirs(cfg, task)
  values = dict(
      model_config_path=cfg.model_config_path,
      spiece_model_file=cfg.spiece_model_file,
      init_checkpoint=cfg.init_checkpoint, uncased=cfg.uncased,
      output_dir=dirs["records"], model_dir=dirs["model"],
      max_seq_length=s["seq_len"], learning_rate=s["learning_rate"],
      train_batch_size=per_device_batch(task, s["batch"], cfg),
      train_steps=s["steps"], warmup_steps=s["warmup"],
      save_steps=s["save_steps"], iterations=s["iterations"],
      lr_layer_decay_rate=s["layer_decay"], adam_epsilon=1e-6,
      weight_decay=0.0, num_hosts=cfg.num_hosts,
      num_core_per_host=cfg.num_core_per_host)
  if cfg.use_tpu:
    values.update(use_tpu=True, tpu=cfg.tpu, use_bfloat16=True)
  if cfg.seed is not None:
    values["seed"] = cfg.seed
  values.update(_program_flags(task, data_dir, dirs, cfg))
  return ([sys.executable, os.path.join(REPO_ROOT, task.program)] +
          [f"--{k}={v}" for k, v in values.items() if v is not None])


################################################################################
# Running a task and reading its number.
################################################################################
def _die_with_parent():
  """In the child: ask Linux to kill it when reproduce.py dies (even by
  SIGKILL), so no orphaned trainer writes beside a rerun."""
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
  except (OSError, AttributeError):
    pass


def run_command(command, log_path):
  """Runs `command`, appending its output to `log_path`.

  Returns:
    None on success, else a one-line reason (exit code and the log's last
    line).
  """
  os.makedirs(os.path.dirname(log_path), exist_ok=True)
  with open(log_path, "a") as log:
    log.write(f"\n$ {shlex.join(command)}\n")
    log.flush()
    code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT,
                           cwd=REPO_ROOT, preexec_fn=_die_with_parent)
  if code == 0:
    return None
  with open(log_path, errors="replace") as log:
    lines = [line.strip() for line in log if line.strip()]
  last = lines[-1] if lines else ""
  return f"{os.path.basename(command[1])} exited with code {code}: {last}"


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


def make_row(task, cfg, status, ours=None, wall_time=None):
  """One row of results.json (numbers in the paper's units)."""
  paper = task.paper(cfg.model_size)
  diff = None if ours is None or paper is None else round(ours - paper, 4)
  return dict(task=task.name, label=task.label, metric=task.metric.name,
              ours=None if ours is None else round(ours, 4), paper=paper,
              diff=diff, steps=effective_settings(task, cfg)["steps"],
              wall_time_s=None if wall_time is None else round(wall_time, 1),
              status=status)


def run_task(task, command, cfg):
  """Runs one task and writes its result.json when it succeeds.

  Returns:
    (row, failure reason or None).
  """
  dirs = task_dirs(cfg, task)
  start = time.time()
  reason = run_command(command, dirs["log"])
  if reason is None:
    try:
      ours = task.metric.paper_units(read_metric(task, dirs))
    except (OSError, ValueError, tf.errors.OpError) as e:
      reason = cli.error_text(e)
  if reason is not None:
    return make_row(task, cfg, "failed"), reason
  row = make_row(task, cfg, "done", ours, time.time() - start)
  io_utils.atomic_write(dirs["result"], json.dumps(
      dict(row=row, command=command), indent=1) + "\n")
  return row, None


def finished_row(task, command, cfg):
  """The row of a task finished by an earlier run, or None.

  Raises:
    ValueError: when it was made by a different command (settings), whose
      checkpoints a rerun would mix with.
  """
  path = task_dirs(cfg, task)["result"]
  if not os.path.exists(path):
    return None
  with open(path) as f:
    done = json.load(f)
  if done.get("command", [])[1:] != command[1:]:
    raise ValueError(f"{path} was made with other settings; use another "
                     "--work_dir or delete that task's directory")
  return done["row"]


################################################################################
# Progress and reports.
################################################################################
def format_duration(seconds):
  """`45s`, `3m05s` or `2h07m`."""
  seconds = int(round(seconds))
  if seconds < 60:
    return f"{seconds}s"
  if seconds < 3600:
    return f"{seconds // 60}m{seconds % 60:02d}s"
  return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_line(index, total, label, elapsed, durations):
  """The line printed when task `index` (1-based) of `total` starts.

  Args:
    elapsed: seconds since this run started.
    durations: seconds taken by the tasks this run finished (the ETA is
      their mean times the tasks left, this one included).
  """
  line = (f"[{index}/{total}] {label}: starting; elapsed "
          f"{format_duration(elapsed)}")
  if not durations:
    return line + "; ETA unknown until a task finishes"
  left = (total - index + 1) * sum(durations) / len(durations)
  return (line + f"; ETA {format_duration(left)} from {len(durations)} "
          f"finished task(s)")


def _cell(value, digits=2):
  """A number for the Markdown table, or an em dash."""
  return "—" if value is None else f"{value:.{digits}f}"


def markdown_report(title, rows):
  """results.md: a title, the table and what the chart shows."""
  lines = [f"# {title}", "",
           "| task | metric | ours | paper | difference | steps | wall time "
           "| status |", "|---|---|---|---|---|---|---|---|"]
  for r in rows:
    wall = "—" if r["wall_time_s"] is None else format_duration(
        r["wall_time_s"])
    lines.append(f"| {r['label']} | {r['metric']} | {_cell(r['ours'])} | "
                 f"{_cell(r['paper'])} | {_cell(r['diff'])} | {r['steps']} "
                 f"| {wall} | {r['status']} |")
  lines += ["", "results.png: per task, left to right in this order, ours "
            "(blue) beside the paper's figure (orange), bars from 0 on one "
            "scale.", ""]
  return "\n".join(lines)


def write_reports(cfg, rows):
  """Writes results.md, results.json and results.png into --work_dir."""
  size = "XLNet-Large" if cfg.model_size == "large" else "XLNet-Base"
  title = f"{size}, {paper_settings.TITLES[cfg.table]}"
  out = lambda name: os.path.join(cfg.work_dir, name)
  io_utils.atomic_write(out("results.md"), markdown_report(title, rows))
  io_utils.atomic_write(out("results.json"), json.dumps(
      dict(table=cfg.table, model_size=cfg.model_size, rows=rows),
      indent=1) + "\n")
  png_chart.write_bar_chart(out("results.png"),
                            [(r["ours"], r["paper"]) for r in rows])


################################################################################
# The program.
################################################################################
class TasksFailed(cli.Stop):
  """Some tasks failed (each said why); exit code 1."""


def commands_of(tasks, cfg):
  """{task name: argv}; checks every task's data first unless --dry_run."""
  return {t.name: task_command(
      t, find_data(t, cfg.data_root, not cfg.dry_run), cfg)
          for t in tasks}


def run(cfg):
  """Runs (or with --dry_run prints) the table; returns the rows."""
  check_settings(cfg)
  tasks = paper_settings.select(cfg.table, cfg.tasks)
  commands = commands_of(tasks, cfg)
  if cfg.dry_run:
    for task in tasks:
      print(shlex.join(commands[task.name]), flush=True)
    return None
  rows = {t.name: finished_row(t, commands[t.name], cfg) or
          make_row(t, cfg, "pending") for t in tasks}
  start, durations, failed = time.time(), [], []
  for index, task in enumerate(tasks, 1):
    if rows[task.name]["status"] == "done":
      print(f"[{index}/{len(tasks)}] {task.label}: done by an earlier run, "
            "skipped", flush=True)
      continue
    print(progress_line(index, len(tasks), task.label, time.time() - start,
                        durations), flush=True)
    rows[task.name], reason = run_task(task, commands[task.name], cfg)
    if reason is None:
      durations.append(rows[task.name]["wall_time_s"])
    else:
      failed.append(task.name)
      print(f"{cli.program_name()}: {task.name} failed: {reason} (log: "
            f"{task_dirs(cfg, task)['log']})", file=sys.stderr,
            flush=True)
    write_reports(cfg, list(rows.values()))
  write_reports(cfg, list(rows.values()))
  print(f"Results: {os.path.join(cfg.work_dir, 'results.md')}", flush=True)
  if failed:
    raise TasksFailed(f"{len(failed)} of {len(tasks)} task(s) failed: "
                      f"{', '.join(failed)} (see each task's log.txt)")
  return list(rows.values())


def main(unused_argv):
  """absl main: resolves the parsed flags once and runs the table."""
  run(finetune_flags.resolve_reproduce(flags.FLAGS))


def entry_point():
  """`python reproduce.py ...`: defines the flags and runs `main`."""
  cli.run(main, define_flags)
