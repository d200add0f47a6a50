"""One trainer per `--model_dir`: a lock file with a heartbeat.

A trainer (the chief of a multi-host run; the other workers never write
outside their checkpoint shards) holds `{model_dir}/trainer.lock` while it
runs. The file holds JSON `{"host", "pid", "start", "token"}`; a daemon
thread refreshes its modification time every `HEARTBEAT_SECONDS`, so the
time says the holder is alive, on local disks, shared file systems and
gs:// alike.

A second trainer on the same directory stops at once (`Locked`, exit code
1) with one line naming the directory and the holder. A lock is stale when
its holder ran on this host and its pid is gone (a SIGKILLed trainer, a
crash) or runs another process (this one, which did not take it; one
started after the lock was written: the pid was reused), when
it was not refreshed for longer than `LEASE_SECONDS` (a holder on another
host that died), or when it is no lock record (empty, binary) and older
than `_WRITE_GRACE_SECONDS` (a writer that died between creating and
writing it, or a crash of the machine).

Taking a stale lock over is atomic: a process first creates the claim
`trainer.lock.takeover` exclusively (only one process takes over at a
time), then renames the stale lock away, checks that what it moved is
still stale (else puts it back) and deletes it; the lock itself is only
ever made by an exclusive create, so of several processes that found the
same stale lock exactly one holds it afterwards. Creation is exclusive
where the file system allows it (O_EXCL, atomic rename on local and
shared POSIX file systems); on gs:// a writer writes its token, waits, and
checks that the token it reads back is its own.

A trainer whose lock is gone or holds another token (it was taken over
after this trainer's lease expired: a stall, clocks apart on a shared file
system) stops without saving anything more: the heartbeat notices it,
`check_held` raises `LockLost`, and the trainers call it at every step and
before every save. Readers (evaluation, prediction) take no lock.
"""
import calendar
import contextlib
import json
import os
import random
import socket
import stat
import threading
import time
import uuid

from absl import logging

from xlnet import errors
from xlnet import io_utils
from xlnet import signals

LOCK_NAME = "trainer.lock"
HEARTBEAT_SECONDS = 30
LEASE_SECONDS = 600
# gs:// has no exclusive create: how long a writer waits before checking that
# the lock it wrote is still its own.
_SETTLE_SECONDS = 2.0
# A lock file that holds no lock record may be one that a trainer created
# and is writing right now; older than this, its writer died in between (or
# the machine crashed and lost the bytes).
_WRITE_GRACE_SECONDS = 10.0
# A takeover is a few file operations; a claim older than this was left by
# a process that died during one.
_CLAIM_SECONDS = 30.0
_CLAIM_SUFFIX = ".takeover"
_ATTEMPTS = 50
# A lock's start time has whole seconds; a process's, clock ticks since a
# boot time of whole seconds.
_CLOCK_SLACK_SECONDS = 2.0
# The tokens of the locks this process took (`acquire`) and still holds.
_TAKEN = set()


class Locked(errors.Stop):
  """Another live trainer holds the model directory. Exit code 1."""


class LockLost(errors.Stop):
  """This trainer's lock was removed or taken over. Exit code 1."""


def lock_path(model_dir):
  """`{model_dir}/trainer.lock`."""
  return os.path.join(model_dir, LOCK_NAME)


def _is_local(path):
  return "://" not in path


def _record(token):
  """This process's lock content (a JSON str)."""
  return json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                     "start": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                            time.gmtime()),
                     "token": token})


class Found:
  """A lock file as read: `holder` (the record: a dict with a str `host`
  and an int `pid`, or None when the bytes are no lock record), `size`
  (bytes) and `age` (seconds since its last refresh)."""

  def __init__(self, holder, size, age):
    self.holder, self.size, self.age = holder, size, age

  def token(self):
    return (self.holder or {}).get("token")


def _parse(data):
  """The holder record in the bytes of a lock file, or None."""
  try:
    holder = json.loads(data.decode("utf-8"))
  except ValueError:  # not UTF-8 (UnicodeDecodeError) or not JSON
    return None
  if (not isinstance(holder, dict) or not isinstance(holder.get("host"), str)
      or type(holder.get("pid")) is not int or holder["pid"] <= 0):
    return None
  return holder


def read_lock(path):
  """The lock file `path` as a `Found`, or None when there is none.

  Raises:
    ValueError: `path` is a directory or another non-regular file (one
      line naming it and the remedy).
  """
  try:
    if _is_local(path):
      info = os.stat(path)
      if not stat.S_ISREG(info.st_mode):
        raise _not_a_file(path, stat.S_ISDIR(info.st_mode))
      with open(path, "rb") as f:
        data = f.read()
      mtime = info.st_mtime
    else:
      gfile = io_utils.url_files()
      if gfile.isdir(path):
        raise _not_a_file(path, True)
      data = gfile.read(path, binary=True)
      mtime = gfile.mtime(path)
  except (FileNotFoundError, *errors.tf_errors("NotFoundError")):
    return None
  return Found(_parse(data), len(data), time.time() - mtime)


def _not_a_file(path, is_dir):
  what = "a directory" if is_dir else "not a regular file"
  return ValueError(
      f"{path} is {what}, not a trainer's lock file; nothing of this "
      f"program made it: remove it (`rm -r {path}`) and rerun")


def _pid_alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except (PermissionError, OverflowError):
    return True
  return True


def _started_at(pid):
  """When the process `pid` of this host started (seconds since the
  epoch), or None where /proc does not say."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      ticks = int(f.read().rpartition(")")[2].split()[19])
    with open("/proc/stat") as f:
      boot = next(int(line.split()[1]) for line in f
                  if line.startswith("btime "))
    return boot + ticks / os.sysconf("SC_CLK_TCK")
  except (OSError, ValueError, IndexError, StopIteration):
    return None


def _gone_reason(holder):
  """Why the holder of a lock written on this host is gone, or None: its
  pid runs nothing, or runs another process, which cannot have written
  the lock: this one (a lock it did not take: its writer had the same
  pid, as a fresh container's process has), or one started after the
  lock was written (the pid was reused)."""
  pid = holder["pid"]
  if not _pid_alive(pid):
    return f"pid {pid} is gone"
  if pid == os.getpid() and holder.get("token") not in _TAKEN:
    return f"pid {pid} is this process, which did not take it"
  try:
    written = calendar.timegm(time.strptime(holder.get("start"),
                                            "%Y-%m-%dT%H:%M:%SZ"))
  except (TypeError, ValueError):
    return None
  started = _started_at(pid)
  if started is not None and started > written + _CLOCK_SLACK_SECONDS:
    return (f"pid {pid} now runs another process, started after the lock "
            "was written")
  return None


def stale_reason(found, lease=LEASE_SECONDS):
  """Why the lock `found` (a `Found`) is stale ("pid 12 is gone", ...), or
  None when its holder may still run."""
  if found.holder is None:
    if found.age > _WRITE_GRACE_SECONDS:
      return (f"it holds no lock record ({_contents(found)}, written "
              f"{found.age:.0f} s ago): its writer died before writing it")
    return None
  if found.age > lease:
    return f"not refreshed for {found.age:.0f} s (lease {lease} s)"
  if found.holder["host"] == socket.gethostname():
    return _gone_reason(found.holder)
  return None


def _contents(found):
  return ("empty" if not found.size else
          f"{found.size} bytes, not a lock record")


def describe(holder):
  """`pid 12 on host h since 2024-01-01T00:00:00Z` (what is known)."""
  return (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')} "
          f"since {holder.get('start', '?')}")


def _create(path, content):
  """Creates `path` holding `content`; False when it already exists."""
  if _is_local(path):
    try:
      fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
      return False
    try:
      with os.fdopen(fd, "w") as f:
        f.write(content)
    except OSError as e:  # e.g. a full disk: no empty lock may stay
      os.remove(path)
      error = io_utils.resource_error(path, e, (
          "no lock file is left: make room and rerun"))
      if error is None:
        raise
      raise error from None
    return True
  if io_utils.exists(path):
    return False
  io_utils.atomic_write(path, content)
  time.sleep(_SETTLE_SECONDS)
  return _holds(path, json.loads(content)["token"])


def _holds(path, token):
  """Whether the lock file `path` holds `token`."""
  found = read_lock(path)
  return found is not None and found.token() == token


def _remove_if(path, keep):
  """Removes the lock file `path` unless `keep(Found)`: on local file
  systems by renaming it away first, so that the file judged is the file
  removed (one put there meanwhile is put back).

  A file is judged as it stands before it is moved: one to keep is never
  moved, since putting it back leaves a moment without a lock in which
  another process's create succeeds (two holders: a process that found a
  lock stale, then won the takeover claim after another had taken it over,
  moved the new holder's lock away).

  Returns:
    the removed `Found`, or None.
  """
  try:
    found = read_lock(path)
  except ValueError:  # not a file: left as it is here, refused on gs://
    if _is_local(path):
      return None
    raise
  if found is None or keep(found):
    return None
  if not _is_local(path):
    io_utils.remove_quietly(path)
    return found
  moved = io_utils.tmp_path_for(path)
  try:
    os.rename(path, moved)
  except FileNotFoundError:
    return None
  try:
    found = read_lock(moved)
  except ValueError:  # not a file: put back as it was
    os.rename(moved, path)
    return None
  if keep(found):
    _put_back(moved, path)
    return None
  os.remove(moved)
  return found


def _put_back(moved, path):
  """Renames the lock file `moved` back to `path`, never over a lock made
  meanwhile (where the file system has hard links)."""
  try:
    os.link(moved, path)
  except FileExistsError:
    pass  # its holder finds its lock gone and stops (`check_held`)
  except OSError:  # no hard links here
    os.rename(moved, path)
    return
  os.remove(moved)


def _take_over(path, token, lease):
  """Removes the stale lock `path` if this process wins the takeover claim
  (else waits a moment: another process is taking it over)."""
  claim = path + _CLAIM_SUFFIX
  if not _create(claim, _record(token)):
    other = read_lock(claim)
    if other is not None and stale_reason(other, _CLAIM_SECONDS):
      _remove_if(claim, lambda c: not stale_reason(c, _CLAIM_SECONDS))
    time.sleep(random.uniform(0.01, 0.05))
    return
  try:
    removed = _remove_if(path, lambda f: not stale_reason(f, lease))
    if removed is not None:
      logging.warning("Taking over the stale lock %s (%s): %s", path,
                      describe(removed.holder) if removed.holder else
                      "no holder named", stale_reason(removed, lease))
  finally:
    _remove_if(claim, lambda c: c.token() != token)


def _locked(model_dir, path, found, flag, user):
  """The `Locked` of a lock `found` that is not stale."""
  if found.holder is None:
    return Locked(
        f"--{flag}={model_dir}: {path} holds no lock record "
        f"({_contents(found)}, written {found.age:.0f} s ago): a {user} "
        "may be creating it right now; if none runs on this directory, "
        f"remove {path} or rerun in {_WRITE_GRACE_SECONDS:.0f} s (it is "
        "then taken over)")
  return Locked(f"--{flag}={model_dir} is in use by another {user} "
                f"({describe(found.holder)}; {path}); wait for it to finish "
                f"or use another --{flag}")


def acquire(model_dir, lease=LEASE_SECONDS, flag="model_dir",
            user="trainer"):
  """Takes the lock of `model_dir`, taking over a stale one.

  Args:
    model_dir: str, the directory to lock.
    lease: seconds after which a lock not refreshed is stale.
    flag: the flag that named `model_dir`, for messages.
    user: what holds such locks ("trainer", "reproduce.py run"), for
      messages.

  Returns:
    the token (str) written into the lock.

  Raises:
    Locked: another trainer holds it and is alive.
    ValueError: `model_dir` is not a writable directory, or its lock is
      not a file.
    io_utils.ResourceError: the lock cannot be written (a full disk); no
      lock file is left.
  """
  path = lock_path(model_dir)
  io_utils.ensure_writable_dir(model_dir, flag)
  token = uuid.uuid4().hex
  for _ in range(_ATTEMPTS):
    if _create(path, _record(token)) and _holds(path, token):
      io_utils.remove_stale_tmp(path)  # of a takeover or heartbeat cut short
      _TAKEN.add(token)
      return token
    found = read_lock(path)
    if found is None:
      continue  # released meanwhile
    if found.token() == token:
      # Ours after all: a takeover's check had moved it away for a moment
      # when `_holds` looked, and has put it back.
      io_utils.remove_stale_tmp(path)
      _TAKEN.add(token)
      return token
    if stale_reason(found, lease) is None:
      raise _locked(model_dir, path, found, flag, user)
    _take_over(path, token, lease)
  raise Locked(f"--{flag}={model_dir}: could not take {path} (others "
               "are starting on it)")


def release(model_dir, token):
  """Removes the lock of `model_dir` if it still holds `token`."""
  _remove_if(lock_path(model_dir), lambda found: found.token() != token)
  _TAKEN.discard(token)


def lost_reason(path, token, lease=LEASE_SECONDS):
  """Why the lock file `path` no longer holds `token`, or None."""
  try:
    found = read_lock(path)
  except ValueError as e:
    return str(e)
  if found is None:
    return (f"{path} was removed while this trainer ran (by hand, or by "
            f"another trainer after this one's lease of {lease} s "
            "expired)")
  if found.token() != token:
    return (f"{path} was taken over by another trainer "
            f"({describe(found.holder or {})}) after this one's lease of "
            f"{lease} s expired (a stall, or clocks apart on a shared file "
            "system)")
  return None


class _Heartbeat(threading.Thread):
  """Refreshes the lock every `period` seconds while it holds `token`;
  `lost` says why it stopped holding it (None while it does)."""

  def __init__(self, model_dir, token, period, lease):
    super().__init__(daemon=True, name="run-lock-heartbeat")
    self.path, self.token, self.period, self.lease = (
        lock_path(model_dir), token, period, lease)
    self.lost = None
    self.stopped = threading.Event()

  def run(self):
    while not self.stopped.wait(self.period):
      try:
        self.lost = lost_reason(self.path, self.token, self.lease)
        if self.lost:
          return
        self._refresh()
      except (OSError, *errors.tf_errors("OpError")) as e:  # a hiccup
        logging.warning("Cannot refresh %s: %s", self.path,
                        errors.error_text(e))

  def _refresh(self):
    """Marks the lock as alive: a new modification time (local file
    systems: the file stays the same, so a lock that another trainer made
    meanwhile is never replaced), or the record rewritten (gs://)."""
    if _is_local(self.path):
      os.utime(self.path)
      return
    found = read_lock(self.path)
    if found is not None and found.token() == self.token:
      io_utils.atomic_write(self.path, json.dumps(found.holder))


# lock path -> the `_Heartbeat` of a lock this process holds.
_HELD = {}


def check_held(model_dir, read=True):
  """Raises `LockLost` when this process holds the lock of `model_dir` (in
  `hold`) and it was removed or taken over meanwhile.

  Args:
    model_dir: the directory about to be written.
    read: read the lock file now (before a save); False relies on what
      the heartbeat last found (cheap enough for every step).
  """
  beat = _HELD.get(lock_path(model_dir))
  if beat is None:
    return
  problem = beat.lost or (read and lost_reason(beat.path, beat.token,
                                               beat.lease))
  if problem:
    raise LockLost(
        f"--model_dir={model_dir}: {problem}; this trainer stopped and "
        "saves nothing more, so that two trainers never write one "
        "directory. Once no other trainer runs there, rerun the same "
        "command to resume from the newest checkpoint")


@contextlib.contextmanager
def hold(model_dir, active=True, lease=LEASE_SECONDS,
         heartbeat=HEARTBEAT_SECONDS, flag="model_dir", user="trainer"):
  """Holds the lock of `model_dir` for the `with` block (nothing when not
  `active`: the non-chief workers of a multi-host run); `flag` and `user`
  as in `acquire`.

  Released on every exit of the block: normal, an exception, a signal
  turned into an exception; a SIGKILL leaves it, to be taken over.
  """
  if not active:
    yield
    return
  beat = None
  try:
    # A SIGTERM between creating the lock file and writing its record would
    # leave a lock without a record, which blocks a rerun for
    # _WRITE_GRACE_SECONDS: signals wait for the lock to be taken (and for
    # it to be released, below), then stop the block here.
    with signals.deferred_signals():
      token = acquire(model_dir, lease, flag, user)
      beat = _Heartbeat(model_dir, token, heartbeat, lease)
      _HELD[beat.path] = beat
      beat.start()
    yield
  finally:
    if beat is not None:
      _let_go(beat)


def _let_go(beat):
  """Stops the heartbeat `beat` and removes its lock, if still held; a
  signal that arrives before they are held back (in the calls that set up
  `deferred_signals`) raises after the release, which is then retried."""
  stopped = None
  while beat.path in _HELD:
    try:
      with signals.deferred_signals():
        beat.stopped.set()
        beat.join()
        _remove_if(beat.path, lambda found: found.token() != beat.token)
        _TAKEN.discard(beat.token)
        _HELD.pop(beat.path, None)
    except errors.Terminated as e:
      stopped = e
  if stopped is not None:
    raise stopped


def held_paths():
  """The lock files this process holds now (a frozenset of paths)."""
  return frozenset(_HELD)


def release_held(kept=frozenset()):
  """Releases every lock this process still holds but those at the paths
  `kept` (`held_paths()` before the program ran: a caller's own). A signal
  can stop a program at the edges of a `hold` block, where no `finally` of
  it runs (in `contextlib`'s `__enter__` after the lock was taken; at the
  start of its `__exit__`); `cli.guarded` calls this as the program's
  `main` ends, so no lock outlives its program."""
  for path, beat in list(_HELD.items()):
    if path not in kept:
      _let_go(beat)
