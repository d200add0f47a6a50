"""Running one run (`runner.run_one`): its programs as subprocesses, each
with its log, SIGTERM and SIGINT passed on to them (`SignalRelay`); its
number read from what the program wrote, and its result.json.
"""
import contextlib
import ctypes
import json
import os
import shlex
import signal
import subprocess
import time

import tensorflow as tf

from xlnet import errors
from xlnet import io_utils
from xlnet.reproduce import paper_settings
from xlnet.reproduce import plan
from xlnet.reproduce import report

################################################################################
# Running commands and reading a task's number.
################################################################################
def child_setup():
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
        f"cannot write {log_path}: {errors.error_text(e)}") from None


def last_line(log_path):
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
                                cwd=plan.REPO_ROOT, preexec_fn=child_setup)
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
          f"{last_line(log_path)}", relay.signum)


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
  dirs = plan.task_dirs(cfg, run.task, run.seed)
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
      reason = errors.error_text(e)
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


