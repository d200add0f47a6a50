"""One trainer per `--model_dir`: a lock file with a heartbeat.

A trainer (the chief of a multi-host run; the other workers never write
outside their checkpoint shards) holds `{model_dir}/trainer.lock` while it
runs. The file holds JSON `{"host", "pid", "start", "token"}` and is
rewritten every `HEARTBEAT_SECONDS` by a daemon thread, so its modification
time says the holder is alive, on local disks, shared file systems and
gs:// alike.

A second trainer on the same directory stops at once (`Locked`, exit code
1) with one line naming the directory and the holder. A lock is stale, and
is taken over with a warning, when its holder ran on this host and its pid
is gone (a SIGKILLed trainer), or when it was not refreshed for longer than
`LEASE_SECONDS` (a holder on another host that died). Creation is atomic
where the file system allows it (O_EXCL on local paths); on gs:// a trainer
writes its token, waits, and checks that the token it reads back is its
own. Readers (evaluation, prediction) take no lock.
"""
import contextlib
import json
import os
import socket
import threading
import time
import uuid

from absl import logging
import tensorflow as tf

from xlnet import cli
from xlnet import io_utils

LOCK_NAME = "trainer.lock"
HEARTBEAT_SECONDS = 30
LEASE_SECONDS = 600
# gs:// has no exclusive create: how long a writer waits before checking that
# the lock it wrote is still its own.
_SETTLE_SECONDS = 2.0


class Locked(cli.Stop):
  """Another live trainer holds the model directory. Exit code 1."""


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


def read_holder(path):
  """(holder dict or {} when unreadable, seconds since the last refresh),
  or None when there is no lock file."""
  try:
    with tf.io.gfile.GFile(path, "r") as f:
      text = f.read()
    age = time.time() - tf.io.gfile.stat(path).mtime_nsec / 1e9
  except tf.errors.NotFoundError:
    return None
  try:
    holder = json.loads(text)
  except ValueError:
    holder = {}
  return (holder if isinstance(holder, dict) else {}), age


def _pid_alive(pid):
  try:
    os.kill(int(pid), 0)
  except ProcessLookupError:
    return False
  except (PermissionError, ValueError, TypeError, OverflowError):
    return True
  return True


def stale_reason(holder, age, lease=LEASE_SECONDS):
  """Why a lock is stale ("pid 12 is gone", ...), or None when its holder
  may still run."""
  if age > lease:
    return f"not refreshed for {age:.0f} s (lease {lease} s)"
  if (holder.get("host") == socket.gethostname() and "pid" in holder and
      not _pid_alive(holder["pid"])):
    return f"pid {holder['pid']} is gone"
  return None


def describe(holder):
  """`pid 12 on host h since 2024-01-01T00:00:00Z` (what is known)."""
  return (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')} "
          f"since {holder.get('start', '?')}")


def _create(path, content):
  """Creates the lock file with `content`; False when it already exists."""
  if _is_local(path):
    try:
      fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
      return False
    with os.fdopen(fd, "w") as f:
      f.write(content)
    return True
  if tf.io.gfile.exists(path):
    return False
  io_utils.atomic_write(path, content)
  time.sleep(_SETTLE_SECONDS)
  got = read_holder(path)
  return got is not None and got[0].get("token") == json.loads(
      content)["token"]


def acquire(model_dir, lease=LEASE_SECONDS):
  """Takes the lock of `model_dir`, taking over a stale one.

  Returns:
    the token (str) written into the lock.

  Raises:
    Locked: another trainer holds it and is alive.
    ValueError: `model_dir` is not a writable directory.
  """
  path = lock_path(model_dir)
  io_utils.ensure_writable_dir(model_dir, "model_dir")
  token = uuid.uuid4().hex
  for _ in range(3):
    if _create(path, _record(token)):
      io_utils.remove_stale_tmp(path)  # of a heartbeat cut by a kill
      return token
    found = read_holder(path)
    if found is None:
      continue  # released meanwhile
    holder, age = found
    reason = stale_reason(holder, age, lease)
    if reason is None:
      raise Locked(f"--model_dir={model_dir} is in use by another trainer "
                   f"({describe(holder)}; {path}); wait for it to finish or "
                   "use another --model_dir")
    logging.warning("Taking over the stale lock %s of %s: %s", path,
                    describe(holder), reason)
    io_utils.remove_quietly(path)
  raise Locked(f"--model_dir={model_dir}: could not take {path} (other "
               "trainers are starting on it)")


def release(model_dir, token):
  """Removes the lock of `model_dir` if it still holds `token`."""
  path = lock_path(model_dir)
  found = read_holder(path)
  if found is not None and found[0].get("token") == token:
    io_utils.remove_quietly(path)


class _Heartbeat(threading.Thread):
  """Rewrites the lock every `period` seconds while it holds `token`."""

  def __init__(self, model_dir, token, period):
    super().__init__(daemon=True, name="run-lock-heartbeat")
    self.path, self.token, self.period = (lock_path(model_dir), token,
                                          period)
    self.stopped = threading.Event()

  def run(self):
    while not self.stopped.wait(self.period):
      found = read_holder(self.path)
      if found is None or found[0].get("token") != self.token:
        logging.error("%s no longer holds this trainer's token (taken over "
                      "by %s?)", self.path, describe(found[0]) if found
                      else "nobody")
        return
      try:
        io_utils.atomic_write(self.path, json.dumps(found[0]))
      except (tf.errors.OpError, OSError) as e:
        logging.warning("Cannot refresh %s: %s", self.path,
                        cli.error_text(e))


@contextlib.contextmanager
def hold(model_dir, active=True, lease=LEASE_SECONDS,
         heartbeat=HEARTBEAT_SECONDS):
  """Holds the lock of `model_dir` for the `with` block (nothing when not
  `active`: the non-chief workers of a multi-host run).

  Released on every exit of the block: normal, an exception, a signal
  turned into an exception; a SIGKILL leaves it, to be taken over.
  """
  if not active:
    yield
    return
  token = acquire(model_dir, lease)
  beat = _Heartbeat(model_dir, token, heartbeat)
  beat.start()
  try:
    yield
  finally:
    beat.stopped.set()
    beat.join()
    release(model_dir, token)
