"""The cluster's start-up wait (`xlnet/training/cluster_wait.py`): bounded,
naming the tasks that never answered, ended at once by SIGTERM and Ctrl-C,
and refusing a port another process holds. Real sockets on loopback, in
this process; the programs' whole start-up (TensorFlow's C++ wait after
it) in tests/finetuning/test_multi_worker.py."""
import os
import signal
import socket
import threading
import time

import pytest

from tests import loopback
from xlnet import errors
from xlnet import signals
from xlnet.training import cluster_wait
from xlnet.training import waits


def _config(ports, kind="worker", index=0):
  return {"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
          "task": {"type": kind, "index": index}}


@pytest.mark.quick
def test_addresses_and_tasks_are_read_as_tf_config_names_them():
  assert cluster_wait.split_address("10.0.0.2:2222") == ("10.0.0.2", 2222)
  assert cluster_wait.split_address("[::1]:2222") == ("::1", 2222)
  for bad in ("10.0.0.2", "h:0", "h:x", ":2222", "h:70000"):
    with pytest.raises(ValueError, match="expected HOST:PORT"):
      cluster_wait.split_address(bad)
  config = {"cluster": {"worker": ["b:1", "c:1"], "chief": ["a:1"]},
            "task": {"type": "worker", "index": 1}}
  assert cluster_wait.tasks(config) == [
      ("chief 0", "a:1"), ("worker 0", "b:1"), ("worker 1", "c:1")]
  assert cluster_wait.own_task(config) == "worker 1"


@pytest.mark.quick
@pytest.mark.tf_version
def test_the_wait_ends_at_its_bound_naming_the_tasks_that_never_answered():
  """Worker 1 listens, worker 2 never does: after the bound, one line
  names worker 2 and its address (not worker 1); meanwhile this task's own
  port accepts connections (how the others see it waiting)."""
  own, silent = loopback.free_port(), loopback.free_port()
  peer = socket.create_server(("127.0.0.1", 0))
  config = _config([own, peer.getsockname()[1], silent])
  seen = []

  def knock():
    time.sleep(0.2)
    seen.append(waits.answers(f"127.0.0.1:{own}", 1.0))

  knocker = threading.Thread(target=knock)
  knocker.start()
  start = time.monotonic()
  with peer, pytest.raises(errors.Stop) as stop:
    cluster_wait.wait_for_peers(config, 0.8)
  elapsed = time.monotonic() - start
  knocker.join()
  assert str(stop.value) == (
      "the cluster did not form within --cluster_timeout=0.8 s: worker 2 at "
      f"127.0.0.1:{silent} never answered; start every host with the same "
      "--worker_hosts (or TF_CONFIG cluster) and its own --task_index, or "
      "raise --cluster_timeout")
  assert 0.8 <= elapsed < 3.0
  assert seen == [True]


def test_the_wait_returns_once_every_task_answered():
  peers = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
  config = _config([loopback.free_port()] + [p.getsockname()[1] for p in peers])
  start = time.monotonic()
  cluster_wait.wait_for_peers(config, 30)
  assert time.monotonic() - start < 2.0
  for p in peers:
    p.close()


@pytest.mark.parametrize("signum, exception", [
    (signal.SIGTERM, errors.Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_sigterm_and_ctrl_c_end_the_wait_at_once(signum, exception):
  """A signal 0.3 s into a 30 s wait ends it within a second; SIGTERM's
  line names the task not seen yet."""
  config = _config([loopback.free_port(), loopback.free_port()], index=1)
  timer = threading.Timer(0.3, os.kill, (os.getpid(), signum))
  start = time.monotonic()
  # Ctrl-C as a program gets it (a pytest-xdist worker ignores SIGINT).
  ctrl_c = signal.signal(signal.SIGINT, signal.default_int_handler)
  try:
    with signals.sigterm_raises(), pytest.raises(exception) as stopped:
      timer.start()
      cluster_wait.wait_for_peers(config, 30)
  finally:
    signal.signal(signal.SIGINT, ctrl_c)
  assert time.monotonic() - start < 1.5
  if signum == signal.SIGTERM:
    worker0 = config["cluster"]["worker"][0]
    assert str(stopped.value) == (
        f"stopped by SIGTERM while waiting for the cluster (worker 0 at "
        f"{worker0} not seen yet); nothing was trained; rerun the same "
        "command")


def test_a_port_another_process_holds_is_one_line_naming_the_address():
  holder = socket.create_server(("127.0.0.1", 0))
  port = holder.getsockname()[1]
  with holder, pytest.raises(ValueError) as refused:
    cluster_wait.wait_for_peers(_config([port, loopback.free_port()]), 30)
  assert str(refused.value).startswith(
      f"this task (worker 0) cannot listen on its cluster address "
      f"127.0.0.1:{port} (--worker_hosts or TF_CONFIG): ")
  assert "another process holds port" in str(refused.value)


def test_a_task_missing_from_its_cluster_is_one_line():
  config = _config([loopback.free_port()], index=3)
  with pytest.raises(ValueError, match="TF_CONFIG task worker 3 is not in "
                     "its cluster"):
    cluster_wait.wait_for_peers(config, 30)
