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

Over several hosts every host runs the same command with its own
`--task_index` (or TF_CONFIG, which the programs inherit), --work_dir and
--gcs_dir shared: each task's program trains on every host, and the chief
(process 0) alone holds the work dir's lock, evaluates and writes
result.json and results.*; another host writes only its program's output,
to `work_dir/{task}/log.process-{i}.txt`.

A task with a result.json is skipped; an interrupted one is run again with
the same command, and the program resumes from its model_dir. A failing task
prints one line, its row says "failed", and the table goes on with the next
task; the program then exits with code 1. SIGTERM and SIGINT (Ctrl-C) are
passed on to the running task, which saves a checkpoint and stops; the
program waits for it and exits with code 143 / 130. One run at a time per
work dir: it holds `work_dir/trainer.lock` (`xlnet/training/run_lock.py`).
Paths are made absolute, and the settings a result.json was made with are
compared with the work dir's own path left out, so a work dir may be moved.
Settings and figures: `xlnet/finetuning/paper_settings.py`,
docs/reproducing.md.
"""
import contextlib
import ctypes
import dataclasses
import json
import math
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
HOST_FLAGS = ("worker_hosts", "task_index")
# Flags naming files or directories (local ones are made absolute).
PATH_FLAGS = ("init_checkpoint", "model_config_path", "spiece_model_file",
              "data_root", "work_dir")


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
  for name in PATH_FLAGS:
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


def absolute_paths(cfg):
  """`cfg` with its local paths absolute: the programs run in the
  repository's directory, not in the one reproduce.py was started in."""
  return dataclasses.replace(cfg, **{
      name: os.path.abspath(getattr(cfg, name))
      for name in PATH_FLAGS + ("gcs_dir",)
      if getattr(cfg, name) and "://" not in getattr(cfg, name)})


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
  --use_tpu (as the release's programs read it; the GPUs of every host of
  --worker_hosts/TF_CONFIG), global with it.

  Raises:
    ValueError: when the GPUs do not divide the batch.
  """
  if cfg.use_tpu:
    return batch
  hosts = strategies.cluster_workers(cfg.worker_hosts)
  if batch % (cfg.num_core_per_host * hosts):
    on_hosts = f" on each of {hosts} hosts" if hosts > 1 else ""
    raise ValueError(
        f"--num_core_per_host={cfg.num_core_per_host}{on_hosts} does not "
        f"divide the global batch {batch} of {task.name}; use a divisor of "
        "it (or --train_batch_size)")
  return batch // (cfg.num_core_per_host * hosts)


def task_dirs(cfg, task):
  """Paths of one task's outputs: `work_dir/{task}/` for the log and the
  result, `gcs_dir/{task}/` (default: the same) for what the program
  writes."""
  root = os.path.join(cfg.work_dir, task.name)
  data = os.path.join(cfg.gcs_dir or cfg.work_dir, task.name)
  process = strategies.cluster_task(cfg.worker_hosts, cfg.task_index)[0]
  return dict(records=os.path.join(data, "records"),
              model=os.path.join(data, "model"),
              predictions=os.path.join(data, "predictions"),
              log=os.path.join(root, f"log.process-{process}.txt" if process
                               else "log.txt"),
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
  if cfg.worker_hosts:
    values.update(worker_hosts=cfg.worker_hosts, task_index=cfg.task_index)
  if cfg.seed is not None:
    values["seed"] = cfg.seed
  values.update(_program_flags(task, data_dir, dirs, cfg))
  return ([sys.executable, os.path.join(REPO_ROOT, task.program)] +
          [f"--{k}={v}" for k, v in values.items() if v is not None])


################################################################################
# Running a task and reading its number.
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
  """While a task runs: SIGTERM and SIGINT to reproduce.py are passed on to
  it (its trainer saves a checkpoint at the end of the step and exits),
  and reproduce.py keeps waiting for it.

  Attributes:
    signum: the first signal received, or None.
  """

  def __init__(self):
    self.signum = None
    self._proc = None
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
    self._proc = proc
    while self._pending:
      self._send(self._pending.pop(0))

  def _handle(self, signum, frame):
    del frame
    if self.signum is None:
      self.signum = signum
      with contextlib.suppress(OSError):  # stdout may be gone
        print(f"{signal.Signals(signum).name} received: passed on to the "
              "running task; waiting for it to save and stop", flush=True)
    if self._proc is None:
      self._pending.append(signum)
    else:
      self._send(signum)

  def _send(self, signum):
    if self._proc.poll() is None:
      self._proc.send_signal(signum)


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


def run_command(command, log_path):
  """Runs `command`, appending its output to `log_path`; SIGTERM/SIGINT
  meanwhile are passed on to it (`SignalRelay`) and it is waited for.

  Returns:
    (None on success, else a one-line reason (exit code and the log's last
    line); the signal received while it ran, or None).
  """
  with open_log(log_path, command) as log, SignalRelay() as relay:
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, cwd=REPO_ROOT,
                            preexec_fn=_child_setup)
    relay.attach(proc)
    code = proc.wait()
  if code == 0:
    return None, relay.signum
  with open(log_path, errors="replace") as log:
    lines = [line.strip() for line in log if line.strip()]
  last = lines[-1] if lines else ""
  return (f"{os.path.basename(command[1])} exited with code {code}: {last}",
          relay.signum)


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
    (row, failure reason or None, the signal received while it ran or
    None).
  """
  dirs = task_dirs(cfg, task)
  start = time.time()
  reason, signum = run_command(command, dirs["log"])
  if reason is None:
    try:
      ours = task.metric.paper_units(read_metric(task, dirs))
    except (OSError, ValueError, tf.errors.OpError) as e:
      reason = cli.error_text(e)
  if reason is not None:
    status = "failed" if signum is None else "interrupted"
    return make_row(task, cfg, status), reason, signum
  row = make_row(task, cfg, "done", ours, time.time() - start)
  content = dict(row=row, command=command, work_dir=cfg.work_dir)
  io_utils.atomic_write(
      dirs["result"], json.dumps(content, indent=1) + "\n",
      safe=(f"{task.name} finished and its checkpoints are intact; make "
            "room and rerun the same command to evaluate and record it"))
  return row, None, signum


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


def read_result(path, task):
  """The content of a finished task's result.json, checked
  (`result_problem`).

  Raises:
    ValueError: one line naming the file, what is wrong with it and the
      remedy.
  """
  remedy = (f"delete it to run {task.name} again (it resumes from its "
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
    raise ValueError(f"{path} does not hold a finished task's result "
                     f"({problem}); {remedy}")
  return done


def command_flags(command):
  """{name: value} of a task's argv: `program` (its file name) and every
  `--flag`."""
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
      compare equal when they are equal below it (a moved work dir).
  """
  (old_flags, old_dir), (new_flags, new_dir) = [
      (command_flags(command), work_dir) for command, work_dir in (old, new)]
  names = [name for name in dict.fromkeys(list(old_flags) + list(new_flags))
           if name.lstrip("-") not in HOST_FLAGS and
           _in_work_dir(old_flags.get(name), old_dir) !=
           _in_work_dir(new_flags.get(name), new_dir)]
  shown = [f"{name} was {old_flags.get(name, 'not set')}, now "
           f"{new_flags.get(name, 'not set')}" for name in names[:limit]]
  more = [f"{len(names) - limit} more"] if len(names) > limit else []
  return "; ".join(shown + more)


def finished_row(task, command, cfg):
  """The row of a task finished by an earlier run, or None.

  Raises:
    ValueError: when its result.json is unreadable or of the wrong shape,
      or was made by a different command (settings), whose checkpoints a
      rerun would mix with; one line naming the file, the cause and the
      remedy.
  """
  dirs = task_dirs(cfg, task)
  path = dirs["result"]
  if not os.path.lexists(path):
    return None
  done = read_result(path, task)
  differences = settings_differences(
      (done["command"], done.get("work_dir", cfg.work_dir)),
      (command, cfg.work_dir))
  if differences:
    outputs = sorted({os.path.dirname(path),
                      os.path.dirname(dirs["model"])})
    raise ValueError(
        f"{path} was made with other settings ({differences}); use another "
        f"--work_dir, or delete {' and '.join(outputs)} to run {task.name} "
        "again with these")
  row = done["row"]
  return make_row(task, cfg, "done", row["ours"], row.get("wall_time_s"))


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


def interrupted(signum, task, reason):
  """The `progress.Interrupted` (exit code 128 + signum) of a run stopped
  by `signum` while `task` ran (`reason`: why the task stopped, None when
  it finished)."""
  name = signal.Signals(signum).name
  what = (f"after {task.name} finished" if reason is None else
          f"(passed on to {task.name}: {reason})")
  return progress.Interrupted(
      f"stopped by {name} {what}; rerun the same command to go on", signum)


def run(cfg):
  """Runs (or with --dry_run prints) the table; returns the rows."""
  check_settings(cfg)
  cfg = absolute_paths(cfg)
  tasks = paper_settings.select(cfg.table, cfg.tasks)
  commands = commands_of(tasks, cfg)
  if cfg.dry_run:
    for task in tasks:
      print(shlex.join(commands[task.name]), flush=True)
    return None
  chief = strategies.cluster_task(cfg.worker_hosts, cfg.task_index)[0] == 0
  with work_dir_lock(cfg.work_dir, chief):
    return (run_tasks if chief else run_worker_tasks)(tasks, commands, cfg)


def run_worker_tasks(tasks, commands, cfg):
  """A multi-host run's part on a host other than the chief: runs every
  task the chief has not finished (its program trains with the chief's and
  leaves evaluation to it); writes no result and no report.

  Raises:
    TasksFailed: after the last task, when some program failed here.
    progress.Interrupted: SIGTERM/SIGINT arrived while a task ran.
  """
  failed = []
  for index, task in enumerate(tasks, 1):
    if finished_row(task, commands[task.name], cfg):
      print(f"[{index}/{len(tasks)}] {task.label}: done by an earlier run, "
            "skipped", flush=True)
      continue
    print(f"[{index}/{len(tasks)}] {task.label}: starting (the chief "
          "evaluates and records it)", flush=True)
    reason, signum = run_command(commands[task.name],
                                 task_dirs(cfg, task)["log"])
    if signum is not None:
      raise interrupted(signum, task, reason)
    if reason is not None:
      failed.append(task.name)
      print(f"{cli.program_name()}: {task.name} failed: {reason} (log: "
            f"{task_dirs(cfg, task)['log']})", file=sys.stderr, flush=True)
  if failed:
    raise TasksFailed(f"{len(failed)} of {len(tasks)} task(s) failed here: "
                      f"{', '.join(failed)} (see each task's log)")
  return None


def run_tasks(tasks, commands, cfg):
  """Runs the tasks not finished by an earlier run; returns the rows.

  Raises:
    TasksFailed: after the last task, when some failed.
    progress.Interrupted: SIGTERM/SIGINT arrived while a task ran (passed
      on to it, and waited for).
  """
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
    rows[task.name], reason, signum = run_task(task, commands[task.name],
                                               cfg)
    if signum is not None:
      write_reports(cfg, list(rows.values()))
      raise interrupted(signum, task, reason)
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
