"""Programs run as children (`run`): each appends its output to its log,
at most `parallel` at a time, SIGTERM and SIGINT passed on to those running
(`SignalRelay`), each new line of their logs shown to an optional watcher
that may stop them, every one started waited for.

A child runs in its own process group, so Ctrl-C at the terminal reaches
only the driver, which passes it on once (a second SIGINT would stop a
trainer without saving), and Linux kills it when the driver dies, even by
SIGKILL (`PR_SET_PDEATHSIG`): no orphan writes beside a rerun.
"""
import contextlib
import ctypes
import dataclasses
import os
import shlex
import signal
import subprocess
from typing import Optional

from xlnet import errors
from xlnet import io_utils

# The repository: the programs the children run are its scripts.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# How often a watcher is shown the new lines of the logs, seconds.
POLL_SECONDS = 2.0


def child_setup():
  """In the child, before its program starts: its own process group, and
  SIGKILL when its parent dies (module docstring)."""
  os.setpgid(0, 0)
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
  except (OSError, AttributeError):
    pass


class SignalRelay:
  """While children run: SIGTERM and SIGINT to this process are passed on
  to each (a trainer saves a checkpoint at the end of the step and exits),
  and this process keeps waiting for them.

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
      _send(proc, signum)

  def _handle(self, signum, frame):
    del frame
    if self.signum is None:
      self.signum = signum
      with contextlib.suppress(OSError):  # stdout may be gone
        print(f"{signal.Signals(signum).name} received: passed on to the "
              "running task; waiting for it to save and stop", flush=True)
    self._pending.append(signum)
    for proc in self._procs:
      _send(proc, signum)


def _send(proc, signum):
  """`signum` to `proc` while it runs."""
  if proc.poll() is None:
    proc.send_signal(signum)


def open_log(log_path, command):
  """Opens the log `log_path` for appending and writes the command line
  (flushed: the program's output follows it in the same file).

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


@dataclasses.dataclass
class Outcome:
  """How `run` ended.

  Attributes:
    failure: None when every command it started exited with 0, else one
      line: the first failing one's program, its exit code and its log's
      last line.
    signum: the first SIGTERM/SIGINT received while they ran, or None.
    stop: what the watcher returned to stop them, or None.
  """
  failure: Optional[str] = None
  signum: Optional[int] = None
  stop: Optional[BaseException] = None


class _Child:
  """A started command: its process, and how far its log was shown."""

  def __init__(self, command, log_path, cwd, relay):
    self.command, self.log_path = command, log_path
    with open_log(log_path, command) as log:
      self.offset = os.path.getsize(log_path)
      self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT,
                                   cwd=cwd, preexec_fn=child_setup)
    relay.attach(self.proc)

  def new_lines(self):
    """The whole lines its log got since the last call."""
    try:
      with open(self.log_path, "rb") as f:
        f.seek(self.offset)
        data = f.read()
    except OSError:
      return []
    end = data.rfind(b"\n") + 1
    self.offset += end
    return data[:end].decode("utf-8", "replace").splitlines()

  def failure(self):
    """The one line of a failed child."""
    return (f"{os.path.basename(self.command[1])} exited with code "
            f"{self.proc.returncode}: {last_line(self.log_path)}")


def _wait(proc, seconds):
  """Waits for `proc` to end, at most `seconds` (None: no limit)."""
  with contextlib.suppress(subprocess.TimeoutExpired):
    proc.wait(timeout=seconds)


def _terminate(running):
  """SIGTERM to the children of `running` still running: they save and
  stop."""
  for child in running:
    _send(child.proc, signal.SIGTERM)


def _show(running, watcher, outcome):
  """Shows `watcher` the new lines of the running children's logs; the
  first stop it returns is the outcome's, and SIGTERMs them."""
  for child in running:
    for line in child.new_lines():
      stop = watcher(line)
      if stop is not None and outcome.stop is None:
        outcome.stop = stop
        _terminate(running)


def run(commands, log_paths, parallel=1, watcher=None, cwd=None):
  """Runs `commands` in their order, at most `parallel` at a time, each
  appending its output to its log. None starts after a signal, a failure
  or a stop; every one started is waited for.

  Args:
    commands: argvs, each an interpreter and its script first (a failure
      names the script).
    log_paths: the log of each command.
    parallel: how many run at once.
    watcher: None, or a function of each new whole line of the running
      commands' logs (shown every POLL_SECONDS) that returns None to go on
      or an exception to stop with: those running get SIGTERM (they save
      and stop), and it is the outcome's `stop`.
    cwd: the children's working directory (None: this process's).

  Returns:
    an `Outcome`.

  Raises:
    ResourceError / ValueError: a log cannot be written (one line); those
      running got SIGTERM and were waited for, as on any other error.
  """
  outcome, waiting, running = Outcome(), list(zip(commands, log_paths)), []
  with SignalRelay() as relay:
    try:
      while running or waiting:
        while waiting and len(running) < parallel and not (
            outcome.failure or outcome.stop or relay.signum):
          running.append(_Child(*waiting.pop(0), cwd, relay))
        if not running:
          break
        _wait(running[0].proc, None if watcher is None else POLL_SECONDS)
        ended = [child for child in running if child.proc.poll() is not None]
        if watcher is not None:
          _show(running, watcher, outcome)
        for child in ended:
          running.remove(child)
          if child.proc.returncode and outcome.failure is None:
            outcome.failure = child.failure()
    except BaseException:
      _terminate(running)
      for child in running:
        child.proc.wait()
      raise
    outcome.signum = relay.signum
  return outcome
