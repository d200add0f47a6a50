"""The run lock of a model directory (xlnet/training/run_lock.py): one holder, stale
locks (dead pid, expired lease) taken over, the heartbeat, the release."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from xlnet.training import run_lock


def _write_lock(model_dir, age=0.0, **holder):
  """A lock file as another trainer left it, last refreshed `age` s ago."""
  path = os.path.join(model_dir, run_lock.LOCK_NAME)
  with open(path, "w") as f:
    json.dump(dict({"start": "2020-01-01T00:00:00Z", "token": "theirs"},
                   **holder), f)
  stamp = time.time() - age
  os.utime(path, (stamp, stamp))
  return path


def _dead_pid():
  proc = subprocess.Popen([sys.executable, "-c", ""])
  proc.wait()
  return proc.pid


def test_a_second_holder_is_refused_with_the_directory_and_the_holder(
    tmp_path):
  token = run_lock.acquire(str(tmp_path))
  with pytest.raises(run_lock.Locked) as caught:
    run_lock.acquire(str(tmp_path))
  message = str(caught.value)
  assert f"--model_dir={tmp_path} is in use by another trainer" in message
  assert f"pid {os.getpid()} on host {socket.gethostname()}" in message
  assert "\n" not in message
  run_lock.release(str(tmp_path), token)
  assert not (tmp_path / run_lock.LOCK_NAME).exists()


@pytest.mark.parametrize("holder, age, taken", [
    ("dead pid here", 0.0, True),
    ("live pid here", 0.0, False),
    ("other host, fresh", 60.0, False),
    ("other host, lease expired", 700.0, True),
    ("unreadable, lease expired", 700.0, True),
])
def test_stale_locks_are_taken_over_and_live_ones_kept(tmp_path, holder, age,
                                                       taken):
  """A lock whose pid is gone on this host, or that nobody refreshed for
  longer than the lease (600 s), is taken over; a live one is not."""
  here = socket.gethostname()
  fields = {"dead pid here": dict(host=here, pid=_dead_pid()),
            "live pid here": dict(host=here, pid=os.getppid()),
            "other host, fresh": dict(host=here + "-other", pid=1),
            "other host, lease expired": dict(host=here + "-other", pid=1),
            "unreadable, lease expired": {}}[holder]
  path = _write_lock(str(tmp_path), age, **fields)
  if holder.startswith("unreadable"):
    with open(path, "w") as f:
      f.write("{not json")
    os.utime(path, (time.time() - age,) * 2)
  if taken:
    token = run_lock.acquire(str(tmp_path))
    with open(path) as f:
      assert json.load(f)["token"] == token
  else:
    with pytest.raises(run_lock.Locked, match="is in use by another trainer"):
      run_lock.acquire(str(tmp_path))


def test_hold_refreshes_the_lock_and_releases_it_on_an_error(tmp_path):
  path = str(tmp_path / run_lock.LOCK_NAME)
  with pytest.raises(RuntimeError):
    with run_lock.hold(str(tmp_path), heartbeat=0.05):
      os.utime(path, (time.time() - 500,) * 2)
      time.sleep(0.5)
      assert time.time() - os.stat(path).st_mtime < 5  # refreshed
      raise RuntimeError("boom")
  assert not os.path.exists(path)


def test_release_leaves_a_lock_taken_over_by_another_trainer(tmp_path):
  token = run_lock.acquire(str(tmp_path))
  _write_lock(str(tmp_path), host="elsewhere", pid=1)
  run_lock.release(str(tmp_path), token)
  assert (tmp_path / run_lock.LOCK_NAME).exists()


def test_inactive_hold_takes_no_lock(tmp_path):
  """The non-chief workers of a multi-host run neither take nor need it."""
  token = run_lock.acquire(str(tmp_path))
  with run_lock.hold(str(tmp_path), active=False):
    pass
  run_lock.release(str(tmp_path), token)
