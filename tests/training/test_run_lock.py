"""The run lock of a model directory (xlnet/training/run_lock.py): one holder, stale
locks (dead pid, expired lease) taken over, the heartbeat, the release."""
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from xlnet.programs import cli
from xlnet.training import checkpoint_io
from xlnet.training import run_lock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


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


@pytest.mark.quick
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
            # (A live holder took its lock after it started.)
            "live pid here": dict(host=here, pid=os.getppid(),
                                  start=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                      time.gmtime())),
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


@pytest.mark.quick
def test_a_lock_whose_pid_runs_another_process_is_taken_over(tmp_path):
  """A lock left by a process that is gone never blocks the next run, even
  when its pid runs again: this process's own pid, which a fresh
  container gives its process every time (not a lock this process took),
  or a process started after the lock was written (the pid was reused).
  A lock of this process's own is kept."""
  here = socket.gethostname()
  later = subprocess.Popen([sys.executable, "-c",
                            "import time; time.sleep(60)"])
  try:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for pid, start in ((os.getpid(), now), (later.pid, "2020-01-01T00:00:00Z")):
      path = _write_lock(str(tmp_path), 0.0, host=here, pid=pid, start=start)
      token = run_lock.acquire(str(tmp_path))
      with open(path) as f:
        assert json.load(f)["token"] == token
      run_lock.release(str(tmp_path), token)
  finally:
    later.kill()
    later.wait()
  token = run_lock.acquire(str(tmp_path))
  with pytest.raises(run_lock.Locked, match=f"pid {os.getpid()} on host"):
    run_lock.acquire(str(tmp_path))
  run_lock.release(str(tmp_path), token)


def test_hold_refreshes_the_lock_and_releases_it_on_an_error(tmp_path):
  path = str(tmp_path / run_lock.LOCK_NAME)
  with pytest.raises(RuntimeError):
    with run_lock.hold(str(tmp_path), heartbeat=0.05):
      os.utime(path, (time.time() - 500,) * 2)
      time.sleep(0.5)
      assert time.time() - os.stat(path).st_mtime < 5  # refreshed
      raise RuntimeError("boom")
  assert not os.path.exists(path)


@pytest.mark.quick
def test_a_stop_at_the_edge_of_a_hold_block_leaves_no_lock(tmp_path):
  """SIGTERM raises where it lands: in `contextlib`'s `__enter__` after
  the lock was taken, or as `__exit__` begins, no `finally` of `hold`
  runs; the lock stayed until the process ended (a rerun then took it
  over as stale). `cli.guarded` releases it as the program ends."""
  path = tmp_path / "run" / run_lock.LOCK_NAME
  callers = tmp_path / "caller"  # a lock the program's caller holds
  callers.mkdir()

  def main(argv):
    del argv
    block = run_lock.hold(str(path.parent))
    block.__enter__()  # as if the stop came before the `with` took it
    assert path.exists()
    raise cli.Terminated("stopped by SIGTERM")

  with run_lock.hold(str(callers)):
    with pytest.raises(SystemExit) as ended:
      with contextlib.redirect_stderr(io.StringIO()):
        cli.guarded(main)(["prog"])
    assert (callers / run_lock.LOCK_NAME).exists()
  assert ended.value.code == 143
  assert not path.exists()


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



def _stale_lock(model_dir, kind, dead_pid):
  """The lock of a trainer that is gone, known as such by `kind`."""
  if kind == "dead pid here":
    return _write_lock(model_dir, host=socket.gethostname(), pid=dead_pid)
  if kind == "lease expired":
    return _write_lock(model_dir, age=700.0, host="elsewhere", pid=1)
  path = os.path.join(model_dir, run_lock.LOCK_NAME)
  open(path, "wb").close()  # its writer died between create and write
  os.utime(path, (time.time() - 60.0,) * 2)
  return path


# Says `ready` once imported, then takes the lock of the directories it
# reads, one per line `DIR START`, at the time START (so that every racer
# calls acquire at the same moment), and answers `won TOKEN` or `locked`.
_RACER = r"""
import sys, time
from xlnet.training import run_lock
print("ready", flush=True)
for line in sys.stdin:
  model_dir, start = line.split()
  while time.time() < float(start):
    pass
  try:
    print("won", run_lock.acquire(model_dir), flush=True)
  except run_lock.Locked:
    print("locked", flush=True)
"""


def test_racers_on_a_stale_lock_take_it_over_exactly_once(tmp_path):
  """Three processes that find a dead trainer's lock at the same moment:
  exactly one takes it over, every round, and nothing but its lock is left
  (each used to remove the fresh lock another had just made: two or three
  won about one round in four)."""
  dead_pid = _dead_pid()
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
  racers = [subprocess.Popen([sys.executable, "-c", _RACER], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True) for _ in range(3)]
  kinds = ["dead pid here", "lease expired", "empty, written 60 s ago"]
  try:
    assert [racer.stdout.readline() for racer in racers] == ["ready\n"] * 3
    for r in range(150):
      model_dir = tmp_path / f"round{r}"
      model_dir.mkdir()
      path = _stale_lock(str(model_dir), kinds[r % 3], dead_pid)
      start = time.time() + 0.05
      for racer in racers:
        racer.stdin.write(f"{model_dir} {start}\n")
        racer.stdin.flush()
      answers = [racer.stdout.readline().split() for racer in racers]
      winners = [a[1] for a in answers if a[0] == "won"]
      assert len(winners) == 1, (r, kinds[r % 3], answers)
      with open(path) as f:
        assert json.load(f)["token"] == winners[0]
      assert os.listdir(model_dir) == [run_lock.LOCK_NAME], r
  finally:
    for racer in racers:
      racer.stdin.close()
      racer.wait(timeout=60)


def test_a_late_taker_leaves_the_new_holders_lock_in_place(tmp_path,
                                                          monkeypatch):
  """A process that judged the lock stale before another took it over, and
  wins the takeover claim after it, finds the new holder's fresh lock: it
  leaves it where it is. (It used to move the lock away to judge it and put
  it back; a third process creating a lock in that moment made two
  holders: seen once in 150 rounds of the three-process race above.)"""
  model_dir = str(tmp_path)
  token = run_lock.acquire(model_dir)  # the new holder, after a takeover
  path = run_lock.lock_path(model_dir)
  created = []
  real_rename = os.rename

  def rename_then_a_third_creates(src, dst):
    real_rename(src, dst)
    if src == path and not created:  # the moment without a lock
      created.append(run_lock.acquire(model_dir))

  monkeypatch.setattr(run_lock.os, "rename", rename_then_a_third_creates)
  run_lock._take_over(path, "late", run_lock.LEASE_SECONDS)  # pylint: disable=protected-access
  assert created == []
  with open(path) as f:
    assert json.load(f)["token"] == token
  assert os.listdir(model_dir) == [run_lock.LOCK_NAME]


def _guarded(main):
  """Runs `main` as a program's main runs (`cli.guarded`): (exit code,
  stderr)."""
  err = io.StringIO()
  with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as done:
    cli.guarded(lambda argv: main())(["train_gpu.py"])
  return done.value.code, err.getvalue()


def test_a_lock_that_is_a_directory_is_one_line_naming_it(tmp_path):
  """It used to end any trainer with a traceback."""
  path = tmp_path / run_lock.LOCK_NAME
  path.mkdir()

  def main():
    with run_lock.hold(str(tmp_path)):
      pass

  code, err = _guarded(main)
  assert code == 2
  assert err == (f"{cli.program_name()}: error: {path} is a directory, not "
                 "a trainer's lock file; nothing of this program made it: "
                 f"remove it (`rm -r {path}`) and rerun\n")
  assert path.is_dir()


UNREADABLE = {
    "empty": b"",
    "binary": b"\x89PNG\r\n\x1a\n\xff\xfe\x00garbage",
    "pid not a number": json.dumps({"host": socket.gethostname(),
                                    "pid": "12ab", "token": "x"}).encode(),
    "no host": b'{"pid": 12}',
    "a JSON list": b"[1, 2]",
}


@pytest.mark.parametrize("content", sorted(UNREADABLE))
def test_a_fresh_lock_without_a_record_names_the_file_cause_and_remedy(
    tmp_path, content):
  """Written a moment ago, it may be a starting trainer's (created, not yet
  written): refused, naming the file, what is wrong and what to do (it
  used to say `pid ? on host ?`, or a UTF-8 error without the file, and
  block the directory for 10 minutes)."""
  path = tmp_path / run_lock.LOCK_NAME
  path.write_bytes(UNREADABLE[content])
  with pytest.raises(run_lock.Locked) as caught:
    run_lock.acquire(str(tmp_path))
  size = len(UNREADABLE[content])
  what = "empty" if not size else f"{size} bytes, not a lock record"
  assert str(caught.value) == (
      f"--model_dir={tmp_path}: {path} holds no lock record ({what}, "
      "written 0 s ago): a trainer may be creating it right now; if none "
      f"runs on this directory, remove {path} or rerun in 10 s (it is then "
      "taken over)")
  assert path.read_bytes() == UNREADABLE[content]


@pytest.mark.parametrize("content", sorted(UNREADABLE))
def test_an_old_lock_without_a_record_is_taken_over(tmp_path, content,
                                                    caplog):
  """Seconds after it was written, a lock that holds no record was left by
  a writer that died between creating and writing it (or lost to a
  crash): taken over with a warning naming the file and why."""
  path = tmp_path / run_lock.LOCK_NAME
  path.write_bytes(UNREADABLE[content])
  os.utime(path, (time.time() - 30,) * 2)
  token = run_lock.acquire(str(tmp_path))
  assert json.loads(path.read_text())["token"] == token
  assert f"Taking over the stale lock {path}" in caplog.text
  assert "its writer died before writing it" in caplog.text


def _take_over_by_another(model_dir):
  """What another trainer does to this one's lock once its lease expired:
  removes it and makes its own; here in one rename, so that a heartbeat
  sees this trainer's lock or the other's, never the moment between (a
  lock seen removed is the next test's case)."""
  aside = os.path.join(model_dir, "aside")
  os.makedirs(aside)
  made = _write_lock(aside, host="elsewhere", pid=1)
  path = os.path.join(model_dir, run_lock.LOCK_NAME)
  os.replace(made, path)
  os.rmdir(aside)
  return path


def test_a_holder_whose_lock_is_taken_over_or_removed_is_stopped(tmp_path):
  """`check_held` reads the lock (before a save); with read=False it
  relies on what the heartbeat found (every step). The lock another trainer
  took over stays with it."""
  model_dir = str(tmp_path)
  with pytest.raises(run_lock.LockLost) as caught:
    with run_lock.hold(model_dir, heartbeat=3600):  # no beat in this block
      run_lock.check_held(model_dir)
      path = _take_over_by_another(model_dir)
      run_lock.check_held(model_dir, read=False)  # not noticed yet
      run_lock.check_held(model_dir)
  assert str(caught.value) == (
      f"--model_dir={model_dir}: {path} was taken over by another trainer "
      "(pid 1 on host elsewhere since 2020-01-01T00:00:00Z) after this "
      "one's lease of 600 s expired (a stall, or clocks apart on a shared "
      "file system); this trainer stopped and saves nothing more, so that "
      "two trainers never write one directory. Once no other trainer runs "
      "there, rerun the same command to resume from the newest checkpoint")
  with open(path) as f:
    assert json.load(f)["token"] == "theirs"

  os.remove(path)
  with pytest.raises(run_lock.LockLost, match=f"{path} was removed while "
                     "this trainer ran"):
    with run_lock.hold(model_dir, heartbeat=0.05):
      os.remove(path)
      time.sleep(1.0)
      run_lock.check_held(model_dir, read=False)  # the heartbeat noticed
  assert not os.path.exists(path)
  run_lock.check_held(model_dir)  # held by nobody in this process


@pytest.mark.eager
@pytest.mark.parametrize("noticed_by", ["the save", "the heartbeat"])
def test_a_trainer_whose_lock_is_taken_over_saves_nothing_more(tmp_path,
                                                               noticed_by):
  """After step 2 another trainer takes the lock over: the trainer stops
  before its next save (it reads the lock) or, between saves, before its
  next step once the heartbeat noticed; no checkpoint is written after."""
  from tests import train_fixtures as fx  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path)
  trainer = fx.make_trainer(fx.tiny_flags(), 1, model_dir)
  rng = np.random.RandomState(0)
  batches = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(2)]
  trainer.build(fx.batches_dataset(batches[:1]).element_spec)
  steps = []

  def on_step(step, out):
    del out
    steps.append(step)
    if step == 2:
      _take_over_by_another(model_dir)
      if noticed_by == "the heartbeat":
        time.sleep(1.0)

  save_steps = 1 if noticed_by == "the save" else None
  with pytest.raises(run_lock.LockLost, match="was taken over by another "
                     "trainer"):
    with run_lock.hold(model_dir, heartbeat=0.05):
      trainer.train(trainer.distribute(lambda _: fx.batches_dataset(batches)),
                    10, save_steps=save_steps, on_step=on_step)
  assert steps == [1, 2]
  saved = [step for step, _ in checkpoint_io.list_checkpoints(model_dir)]
  assert saved == ([1] if noticed_by == "the save" else [])
  assert sorted(os.listdir(model_dir)) == sorted(
      [run_lock.LOCK_NAME] + [
          name for name in ("checkpoint", "model.ckpt-1.index",
                            "model.ckpt-1.data-00000-of-00001")
          if save_steps])


def test_estimator_runs_stop_before_a_step_or_save_without_their_lock(
    tmp_path):
  """TPUEstimator's trainers (train_tpu.py, fine-tuning on TPUs) check
  their lock after every loop (the heartbeat's finding) and before every
  save (read), the final one included."""
  from xlnet.training import tpu_estimator  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path)
  hook, listener = tpu_estimator.lock_guards(model_dir)
  with pytest.raises(run_lock.LockLost):
    with run_lock.hold(model_dir, heartbeat=0.05):
      hook.after_run(None, None)
      listener.before_save(None, 0)
      _take_over_by_another(model_dir)
      with pytest.raises(run_lock.LockLost):
        listener.before_save(None, 0)
      time.sleep(1.0)
      hook.after_run(None, None)


@pytest.mark.slow
def test_train_gpu_stalled_past_its_lease_stops_with_one_line(tmp_path):
  """train_gpu.py stalls (SIGSTOP) while another trainer takes its lock
  over; resumed, it stops at its next save with one line and exit code 1,
  writing no checkpoint."""
  from tests import train_fixtures as fx  # pylint: disable=g-import-not-at-top
  records = fx.shared_program_records(2)
  model_dir = tmp_path / "m"
  proc = subprocess.Popen(
      fx.program_command("train_gpu.py", records, model_dir,
                         "--train_steps=300", "--save_steps=50"),
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  out, path = [], None
  for line in proc.stdout:
    out.append(line)
    if path is None and "] [3] | gnorm" in line:
      proc.send_signal(signal.SIGSTOP)
      path = _take_over_by_another(str(model_dir))
      proc.send_signal(signal.SIGCONT)
  code = proc.wait(timeout=300)
  text = "".join(out)
  assert code == 1, text[-3000:]
  assert "Traceback" not in text
  assert text.strip().splitlines()[-1] == (
      f"train_gpu.py: error: --model_dir={model_dir}: {path} was taken over "
      "by another trainer (pid 1 on host elsewhere since "
      "2020-01-01T00:00:00Z) after this one's lease of 600 s expired (a "
      "stall, or clocks apart on a shared file system); this trainer "
      "stopped and saves nothing more, so that two trainers never write one "
      "directory. Once no other trainer runs there, rerun the same command "
      "to resume from the newest checkpoint")
  assert checkpoint_io.list_checkpoints(str(model_dir)) == []
  with open(path) as f:
    assert json.load(f)["token"] == "theirs"


def test_a_lock_moved_away_for_a_moment_by_a_takeover_check_stays_ours(
    tmp_path, monkeypatch):
  """A racer checking whether the lock is stale renames it away, reads it
  and puts it back (`_remove_if`). When the lock it moved is the fresh one
  this process just made, and this process looks in between, the lock
  comes back holding this process's token: it is this process's, not
  another trainer's (all three racers of the test above once answered
  'locked', CI of stop 30)."""
  path = str(tmp_path / run_lock.LOCK_NAME)
  original = run_lock._holds
  moved = path + ".moved-by-another-racer"
  calls = []

  def holds_while_moved_away(lock, token):
    calls.append(lock)
    if len(calls) > 1:
      return original(lock, token)
    os.rename(path, moved)  # the other racer's `_remove_if` renames it
    try:
      return original(lock, token)  # nothing there: False
    finally:
      os.rename(moved, path)  # found fresh, so put back

  monkeypatch.setattr(run_lock, "_holds", holds_while_moved_away)
  token = run_lock.acquire(str(tmp_path))
  with open(path) as f:
    assert json.load(f)["token"] == token
  assert sorted(os.listdir(tmp_path)) == [run_lock.LOCK_NAME]
