"""xlnet/runs/children.py, in this process, on stand-in programs: a signal
passed on to the running child once and the queue stopped, a child killed
with its driver, parallel children and the first failure, a watcher that
stops a child (which saves), and a child stopped on an error."""
import os
import signal
import subprocess
import sys
import time

import pytest

from xlnet import errors
from xlnet.runs import children

pytestmark = [pytest.mark.quick, pytest.mark.tf_version]


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch):
  monkeypatch.setattr(children, "POLL_SECONDS", 0.05)


def _program(tmp_path, name, source):
  """[python, tmp_path/name] running `source`."""
  path = tmp_path / name
  path.write_text(source)
  return [sys.executable, str(path)]


def _logged(path):
  """The lines a child wrote to its log (after the command line)."""
  return path.read_text().split("\n")[2:-1]


def _gone(pid):
  """Whether process `pid` has ended (a zombie no one reaped has too)."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().rsplit(")", 1)[1].split()[0] == "Z"
  except FileNotFoundError:
    return True


# A trainer's stand-in: its process and group ids, then it waits for
# SIGTERMs; 0.3 s after the first it says how many it got and exits.
_COUNTS_SIGTERMS = r"""
import os, signal, sys, time
got = []
signal.signal(signal.SIGTERM, lambda *_: got.append(1))
print(f"pid {os.getpid()} group {os.getpgid(0)}", flush=True)
deadline = time.time() + 30
while not got and time.time() < deadline:
  time.sleep(0.01)
time.sleep(0.3)
print(f"got {len(got)} SIGTERM", flush=True)
"""


def test_a_signal_reaches_the_running_child_once_and_nothing_starts_after(
    tmp_path, capsys):
  """SIGTERM to this process (sent when the child's first line is seen)
  reaches the child once; the child runs in its own process group (Ctrl-C
  at a terminal reaches only the driver); the next command never starts,
  and this process's own handler is back afterwards."""
  before = signal.getsignal(signal.SIGTERM)
  first, second = tmp_path / "first.log", tmp_path / "second.log"
  sent = []

  def watcher(line):
    if line.startswith("pid ") and not sent:
      sent.append(line)
      os.kill(os.getpid(), signal.SIGTERM)

  ran = children.run(
      [_program(tmp_path, "trainer.py", _COUNTS_SIGTERMS),
       _program(tmp_path, "next.py", "print('started')\n")],
      [str(first), str(second)], watcher=watcher)
  assert (ran.failure, ran.signum, ran.stop) == (None, signal.SIGTERM, None)
  pid, group = sent[0].split()[1::2]
  assert pid == group
  assert _logged(first) == [sent[0], "got 1 SIGTERM"]
  assert not second.exists()
  assert capsys.readouterr().out == (
      "SIGTERM received: passed on to the running task; waiting for it to "
      "save and stop\n")
  assert signal.getsignal(signal.SIGTERM) is before


# A driver of one child that sleeps; the child's pid is in its log.
_DRIVER = r"""
import sys
sys.path.insert(0, sys.argv[1])
from xlnet.runs import children
children.run([[sys.executable, "-c", "import os, time; "
               "print(os.getpid(), flush=True); time.sleep(60)"]],
             [sys.argv[2]])
"""


def test_a_child_dies_with_its_driver_even_by_sigkill(tmp_path):
  log = tmp_path / "child.log"
  driver = subprocess.Popen([sys.executable, "-c", _DRIVER,
                             children.REPO_ROOT, str(log)])
  deadline = time.time() + 30
  while time.time() < deadline and not (log.exists() and _logged(log)):
    time.sleep(0.02)
  pid = int(_logged(log)[0])
  assert not _gone(pid)
  driver.kill()
  driver.wait()
  deadline = time.time() + 5
  while time.time() < deadline and not _gone(pid):
    time.sleep(0.02)
  assert _gone(pid)


def test_children_run_side_by_side_and_a_failure_starts_no_other(tmp_path):
  """Two at a time: `a` fails once `b` has started (it waits for it, so it
  would time out one at a time); `b` is waited for, `c` never starts; the
  failure names a's script, its code and its log's last line."""
  started = tmp_path / "b-started"
  a = _program(tmp_path, "a.py", (
      "import os, sys, time\nprint('chatter', flush=True)\n"
      "deadline = time.time() + 10\n"
      f"while not os.path.exists({str(started)!r}):\n"
      "  if time.time() > deadline: sys.exit('b never started')\n"
      "  time.sleep(0.01)\n"
      "print('error: --x: expected 1, got 2', flush=True)\nsys.exit(3)\n"))
  b = _program(tmp_path, "b.py", (
      f"import time\nopen({str(started)!r}, 'w').close()\n"
      "time.sleep(0.5)\nprint('b done')\n"))
  c = _program(tmp_path, "c.py", "print('c ran')\n")
  logs = [tmp_path / "logs" / f"{name}.log" for name in "abc"]
  (tmp_path / "logs").mkdir()
  logs[0].write_text("an earlier run\n")
  ran = children.run([a, b, c], list(map(str, logs)), parallel=2)
  assert (ran.failure, ran.signum, ran.stop) == (
      "a.py exited with code 3: error: --x: expected 1, got 2", None, None)
  assert logs[0].read_text() == (  # appended after the command line
      f"an earlier run\n\n$ {sys.executable} {a[1]}\nchatter\n"
      "error: --x: expected 1, got 2\n")
  assert _logged(logs[1]) == ["b done"]
  assert not logs[2].exists()


# A trainer's stand-in: two held-out lines as train_gpu.py logs them, then
# it waits; SIGTERM makes it save and stop.
_TRAINER = r"""
import signal, sys, time
def stop(*_):
  print("saved model.ckpt-3000 and stopped", flush=True)
  sys.exit(0)
signal.signal(signal.SIGTERM, stop)
for step in (500, 3000):
  print(f"I1129 held_out.py:86] [{step}] eval | loss 6.2", flush=True)
time.sleep(60)
print("went", "on", flush=True)  # the log holds this source too
"""


class _Plateau(errors.Stop):
  pass


def test_a_watcher_sees_every_new_line_and_its_stop_makes_the_child_save(
    tmp_path):
  log = tmp_path / "train.log"
  seen = []

  def watcher(line):
    seen.append(line)
    return _Plateau(line) if "[3000] eval" in line else None

  began = time.time()
  ran = children.run([_program(tmp_path, "train.py", _TRAINER)], [str(log)],
                     watcher=watcher)
  assert time.time() - began < 20
  assert isinstance(ran.stop, _Plateau)
  assert str(ran.stop) == "I1129 held_out.py:86] [3000] eval | loss 6.2"
  assert (ran.failure, ran.signum) == (None, None)
  assert seen == _logged(log) == [
      "I1129 held_out.py:86] [500] eval | loss 6.2", str(ran.stop),
      "saved model.ckpt-3000 and stopped"]


def test_an_error_while_children_run_stops_them(tmp_path):
  """The watcher fails on the child's first line: the child gets SIGTERM
  and is waited for before the error goes on."""
  log = tmp_path / "trainer.log"

  def watcher(line):
    raise RuntimeError(line)

  began = time.time()
  with pytest.raises(RuntimeError) as raised:
    children.run([_program(tmp_path, "trainer.py", _COUNTS_SIGTERMS)],
                 [str(log)], watcher=watcher)
  assert time.time() - began < 20
  assert _logged(log) == [str(raised.value), "got 1 SIGTERM"]
  assert _gone(str(raised.value).split()[1])
