"""`--data_service` on loopback: a dispatcher and two workers
(`data_service.py`, each its own process on a free 127.0.0.1 port) make the
training input; the steps they send are the plain path's steps bit for bit,
each chunk's in order and none twice; train_gpu.py trains through them and
finishes after one worker is killed (SIGKILL) mid-run; the servers stop on
SIGTERM with exit code 0, or 1 after 10 s when TensorFlow's stop hangs; a
malformed or silent address is one line naming the flag
(docs/distributed.md, "Input on tf.data service")."""
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests import in_process
from tests import loopback
from tests import train_fixtures as fx
from xlnet import configs as shipped_configs
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import pretraining as pretrain_flags
from xlnet.pretraining import inputs
from xlnet.pretraining import pretrain
from xlnet.training import data_servers
from xlnet.training import data_service

pytestmark = pytest.mark.eager

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
CORES = 2  # replicas of the trainer (logical CPU devices)


def spawn_server(*flags):
  """`data_service.py` with `flags`, started (see `started`)."""
  return subprocess.Popen(
      [sys.executable, os.path.join(REPO, "data_service.py"), *flags],
      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
      env=ENV)


def started(proc):
  """`proc` of `spawn_server`, once it logged its address."""
  line = proc.stdout.readline()
  assert re.match(r"data_service.py: (dispatcher|worker) at ", line), line
  return proc


def stop(proc):
  """SIGTERM; the server must end with exit code 0 and "SIGTERM: stopped",
  or, when TensorFlow's own stop hangs (seen in CI), with exit code 1 after
  the line that announced that bound."""
  proc.send_signal(signal.SIGTERM)
  out, _ = proc.communicate(timeout=60)
  last = {0: "SIGTERM: stopped", 1: _stopping_line(10)}.get(proc.returncode)
  assert out.splitlines()[-1] == f"data_service.py: {last}", out


def _stopping_line(seconds):
  return (f"SIGTERM: stopping (exit code 1 if TensorFlow's stop of the "
          f"server has not returned in {seconds} s)")


@contextlib.contextmanager
def loopback_cluster(*dispatcher_flags):
  """A dispatcher (workers silent 2 s are dropped; `dispatcher_flags` too)
  and two workers; yields (the --data_service address, the worker
  processes, a function that stops the dispatcher and starts it again with
  the same flags); at the end every server still running must stop on
  SIGTERM with exit code 0, the workers first (docs/distributed.md)."""
  port, *worker_ports = loopback.free_ports(3)
  flags = [f"--port={port}", "--host=127.0.0.1", "--worker_timeout_ms=2000",
           *dispatcher_flags]
  # Started together (workers wait for their dispatcher): each start is
  # mostly TensorFlow's import.
  servers = [spawn_server(*flags)] + [
      spawn_server(f"--port={worker_port}", "--host=127.0.0.1",
                   f"--dispatcher=127.0.0.1:{port}")
      for worker_port in worker_ports]

  def restart_dispatcher():
    stop(servers[0])
    servers[0] = started(spawn_server(*flags))

  try:
    for proc in servers:
      started(proc)
    yield f"grpc://127.0.0.1:{port}", servers[1:], restart_dispatcher
  finally:
    for proc in servers[1:] + servers[:1]:
      if proc.poll() is None:
        stop(proc)


@pytest.fixture(scope="module")
def record_dir():
  return fx.shared_program_records(CORES)


@pytest.fixture(scope="module")
def token_record_dir():
  """The same text as token records (span masks sampled online)."""
  return fx.shared_program_records(CORES, record_kind="tokens")


def train_configs(record_dir, model_dir, address=""):
  """train_gpu.py's configs of the tiny run on `record_dir`."""
  # The shipped config, wherever the tests run from.
  run = [f"--model_config_path={shipped_configs.resolve(a.split('=')[1])}"
         if a.startswith("--model_config_path=") else a
         for a in fx.PROGRAM_RUN]
  argv = ["train_gpu.py", f"--record_info_dir={record_dir}",
          f"--model_dir={model_dir}", *run, f"--num_core_per_host={CORES}",
          f"--data_service={address}"]
  return pretrain_flags.for_train_gpu(flag_catalog.parse_flags(argv))


def steps_of(dataset, num_steps):
  """The first `num_steps` steps of a per-worker dataset: lists of CORES
  per-core batches (dicts of numpy arrays)."""
  batches = [{k: v.numpy() for k, v in b.items()}
             for b in dataset.take(num_steps * CORES)]
  return [batches[i:i + CORES] for i in range(0, len(batches), CORES)]


def step_key(step):
  """The bytes of a step's batches (equal keys: equal steps)."""
  return b"".join(b[k].tobytes() for b in step for k in sorted(b))


def check_well_formed(batch, num_predict):
  """Shapes and the per-example invariants of the permutation features."""
  bsz, seq_len = batch["input_k"].shape
  assert batch["perm_mask"].shape == (bsz, seq_len, seq_len)
  assert batch["target_mapping"].shape == (bsz, num_predict, seq_len)
  assert set(np.unique(batch["perm_mask"])) <= {0.0, 1.0}
  # A target row is one position; a padding row (mask 0) none.
  np.testing.assert_array_equal(batch["target_mapping"].sum(-1),
                                batch["target_mask"])
  assert set(np.unique(batch["target_mapping"])) <= {0.0, 1.0}
  # No target sees itself (its token is what it predicts).
  rows, slots = np.nonzero(batch["target_mask"])
  positions = batch["target_mapping"][rows, slots].argmax(-1)
  assert (batch["perm_mask"][rows, positions, positions] == 1).all()


def test_malformed_or_silent_address_is_one_line_naming_the_flag():
  for bad in ("127.0.0.1:5050", "grpc://127.0.0.1", "grpc://h:0",
              "grpc://h:5050/x", "http://h:5050"):
    with pytest.raises(ValueError, match=r"^--data_service=.* expected "
                       r"grpc://HOST:PORT") as e:
      data_service.check_dispatcher(bad)
    assert "\n" not in str(e.value)
  address = f"grpc://127.0.0.1:{loopback.free_port()}"
  with pytest.raises(ValueError, match=rf"^--data_service={address}: no "
                     "dispatcher answers at 127.0.0.1:") as e:
    data_service.check_dispatcher(address, timeout=2)
  assert "\n" not in str(e.value)


def _server(*flags):
  """data_service.py with `flags`, in this process: (exit code, stdout
  lines, stderr's last line)."""
  result = in_process.run_program("data_service.py", *flags, cwd=REPO)
  return (result.returncode, result.stdout.splitlines(),
          result.stderr.strip().splitlines()[-1])


@pytest.mark.tf_version
def test_a_server_on_a_busy_port_or_a_file_as_journal_is_one_line(
    tmp_path):
  """Each refused before any server starts, one line naming the flag: a
  port another program listens on; --work_dir naming a file; a worker
  given its own dispatcher's port (here in the trainers' grpc:// form,
  which a worker takes too)."""
  with socket.create_server(("127.0.0.1", 0)) as held:
    port = held.getsockname()[1]
    code, out, last = _server(f"--port={port}")
    assert (code, out) == (2, [])
    assert last == (f"data_service.py: error: --port={port}: Address "
                    "already in use; another server serves this port (a "
                    "dispatcher or worker already running?): stop it or "
                    "choose another port")
    code, out, last = _server(f"--port={port}",
                              f"--dispatcher=grpc://127.0.0.1:{port}")
    assert code == 2
    assert last == (f"data_service.py: error: --port={port} is the port of "
                    f"--dispatcher=127.0.0.1:{port}: a worker needs a port "
                    f"of its own (e.g. --port={port + 1})")
  (journal := tmp_path / "journal").write_text("")
  code, out, last = _server(f"--port={loopback.free_port()}", f"--work_dir={journal}")
  assert (code, out) == (2, [])
  assert last == (f"data_service.py: error: --work_dir={journal} is a file: "
                  "the dispatcher journals its state in a directory (made "
                  "if missing)")


def test_a_worker_whose_dispatcher_is_not_running_says_so_and_stops():
  """It prints its address and what it waits for at once, then stops
  after --dispatcher_timeout with one line (exit 1)."""
  dispatcher, port = f"127.0.0.1:{loopback.free_port()}", loopback.free_port()
  code, out, last = _server(f"--port={port}", f"--dispatcher={dispatcher}",
                            "--dispatcher_timeout=1")
  assert code == 1
  assert out == [
      f"data_service.py: worker at localhost:{port} for the dispatcher "
      f"{dispatcher}",
      f"data_service.py: waiting up to 1 s more for the dispatcher at "
      f"{dispatcher} (--dispatcher_timeout)"]
  assert last == (f"data_service.py: error: no dispatcher answered at "
                  f"{dispatcher} within --dispatcher_timeout=1 s: start it "
                  "first (data_service.py --port=PORT) or raise "
                  "--dispatcher_timeout")


_STUCK_SERVER = """
import ctypes
from xlnet.programs import data_service

class Stuck:  # TensorFlow's stop hung in C++, holding the GIL
  def _stop(self):
    ctypes.PyDLL(None).sleep(3600)  # (PyDLL keeps the GIL during the call)

data_service.serve_until_signal(Stuck(), print, "serving", stop_wait=1)
print("returned")  # (never: the process ends in the call)
"""


def test_a_server_whose_stop_hangs_still_ends_on_sigterm():
  """SIGTERM right after the server's address line is caught; a stop that
  holds the interpreter past the bound ends the process anyway (exit code
  1), as the line before it said."""
  proc = subprocess.Popen([sys.executable, "-c", _STUCK_SERVER],
                          stdout=subprocess.PIPE, text=True, cwd=REPO,
                          env=ENV)
  assert proc.stdout.readline() == "serving\n"
  proc.send_signal(signal.SIGTERM)
  sent = time.monotonic()
  out, _ = proc.communicate(timeout=30)
  assert time.monotonic() - sent < 5.0
  assert (proc.returncode, out) == (1, _stopping_line(1) + "\n")


_SERVER_WHOSE_RELEASE_HANGS = """
import ctypes
from xlnet.programs import data_service

class Held:  # TensorFlow's release of a stopped worker whose dispatcher is
  def _stop(self):  # gone: it joins a thread that retries it for ever
    pass
  def __del__(self):
    ctypes.PyDLL(None).sleep(3600)

data_service.serve_until_signal(Held(), print, "serving", stop_wait=1)
"""


def test_a_stopped_server_ends_without_waiting_for_its_release():
  """After "stopped" the process ends at once, exit code 0: a worker whose
  dispatcher was killed mid-job stayed alive after that line, its
  server's release waiting on the dead dispatcher."""
  proc = subprocess.Popen([sys.executable, "-c", _SERVER_WHOSE_RELEASE_HANGS],
                          stdout=subprocess.PIPE, text=True, cwd=REPO,
                          env=ENV)
  assert proc.stdout.readline() == "serving\n"
  proc.send_signal(signal.SIGTERM)
  try:
    out, _ = proc.communicate(timeout=10)
  finally:
    proc.kill()
  assert (proc.returncode, out.splitlines()[-1]) == (0, "SIGTERM: stopped")


@pytest.mark.tf_version
def test_a_second_dispatcher_on_a_served_port_is_refused():
  """TensorFlow's servers share a port (gRPC's SO_REUSEPORT): without the
  check a second dispatcher would serve it too and trainers would reach
  either."""
  port = loopback.free_port()
  running = data_servers.start_dispatcher(port)
  try:
    code, out, last = _server(f"--port={port}")
  finally:
    running._stop()  # pylint: disable=protected-access
  assert (code, out) == (2, [])
  assert last.startswith(f"data_service.py: error: --port={port}: Address "
                         "already in use; another server serves this port")


def test_the_service_sends_the_plain_paths_steps_on_token_records(
    token_record_dir, tmp_path):
  """Two chunks' worth of steps from two workers, on token records (the
  service's workers sample the span masks online, keyed by position as the
  plain path does): every step is a step of the plain stream bit for bit,
  none twice, each chunk's steps in order from its first; and well-formed.
  (On example records: the dispatcher restart test, below.)"""
  plain_configs = train_configs(token_record_dir, tmp_path / "m")
  input_fn, _ = inputs.training_input_fn(plain_configs)
  context = tf.distribute.InputContext()
  chunk = data_service.CHUNK_STEPS
  with loopback_cluster() as (address, _, _):
    configs = train_configs(token_record_dir, tmp_path / "m", address)
    served = steps_of(pretrain.dataset_fn_at(configs, input_fn)(0)(context),
                      2 * chunk)
  check_served(served, plain_configs, input_fn)


def check_served(served, plain_configs, input_fn):
  """Every served step is a step of the plain stream bit for bit, none
  twice, each chunk's steps in order from its first, from two chunks at
  least; and well-formed."""
  chunk = data_service.CHUNK_STEPS
  plain = steps_of(pretrain.dataset_fn_at(plain_configs, input_fn)(0)(
      tf.distribute.InputContext()), 4 * chunk)
  index = {step_key(s): i for i, s in enumerate(plain)}
  assert len(index) == len(plain)  # the keys tell the steps apart
  found = [index.get(step_key(s)) for s in served]
  assert None not in found and len(set(found)) == len(found)
  by_chunk = {}
  for i in found:
    by_chunk.setdefault(i // chunk, []).append(i)
  for c, seen in by_chunk.items():
    assert seen == list(range(c * chunk, c * chunk + len(seen))), seen
  assert len(by_chunk) >= 2  # both workers sent chunks
  for step in served:
    for batch in step:
      check_well_formed(batch, plain_configs.data.num_predict)


@pytest.mark.tf_version
def test_a_dispatcher_restarted_with_its_work_dir_keeps_the_stream(
    record_dir, tmp_path):
  """data_service.py --work_dir journals the jobs: a dispatcher stopped
  (SIGTERM) mid-stream and started again on its port with the same
  --work_dir lets the trainer's stream go on, with the guarantees of an
  uninterrupted one (plain steps, none twice, chunks in order, from both
  workers), on example records."""
  plain_configs = train_configs(record_dir, tmp_path / "m")
  input_fn, _ = inputs.training_input_fn(plain_configs)
  chunk = data_service.CHUNK_STEPS
  with loopback_cluster(f"--work_dir={tmp_path / 'journal'}") as (
      address, _, restart_dispatcher):
    configs = train_configs(record_dir, tmp_path / "m", address)
    batches = iter(pretrain.dataset_fn_at(configs, input_fn)(0)(
        tf.distribute.InputContext()))

    def take(n):
      return [[{k: v.numpy() for k, v in next(batches).items()}
               for _ in range(CORES)] for _ in range(n)]

    served = take(chunk // 2)
    restart_dispatcher()
    served += take(chunk + chunk // 2)
  check_served(served, plain_configs, input_fn)


def train_on_service(record_dir, model_dir, address, steps, at_step, act):
  """Runs train_gpu.py --data_service=`address` for `steps` steps, calling
  `act()` once when it logs step `at_step`.

  Returns:
    (its command, its exit code, its output lines).
  """
  cmd = fx.program_command(
      "train_gpu.py", record_dir, model_dir, f"--train_steps={steps}",
      f"--num_core_per_host={CORES}", f"--data_service={address}")
  proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, cwd=REPO,
                          env=ENV)
  out, acted = [], False
  for line in proc.stdout:
    out.append(line)
    if not acted and re.search(rf"\] \[{at_step}\] \|", line):
      act()
      acted = True
  return cmd, proc.wait(timeout=300), out


def logged_steps(text):
  """The steps a trainer's progress lines name, in order."""
  return [int(m.group(1)) for m in re.finditer(r"\] \[(\d+)\] \|", text)]


@pytest.mark.slow
@pytest.mark.only_env("latest", why="a trainer process on the service; run on the newest TensorFlow, whose service changes")
def test_train_gpu_on_an_address_that_is_no_dispatcher_ends_at_sigterm(
    record_dir, tmp_path):
  """--data_service names a port that accepts connections but is no
  dispatcher: TensorFlow retries the stream's registration for ever in
  C++, where no Python signal handler runs. The trainer says what it waits
  for; SIGTERM then ends it within seconds with one line (exit 143)."""
  with socket.create_server(("127.0.0.1", 0)) as fake:
    address = f"grpc://127.0.0.1:{fake.getsockname()[1]}"
    cmd = fx.program_command(
        "train_gpu.py", record_dir, tmp_path / "m", "--train_steps=2",
        f"--num_core_per_host={CORES}", f"--data_service={address}")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=REPO,
                            env=ENV)
    out = []
    for line in proc.stdout:
      out.append(line)
      if f"for the dispatcher at {address} to register" in line:
        break
    time.sleep(2)  # into TensorFlow's retries
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    out += proc.communicate(timeout=60)[0].splitlines(keepends=True)
  stopped_after = time.monotonic() - sent
  assert proc.returncode == 128 + signal.SIGTERM, "".join(out[-20:])
  assert stopped_after < 5.0
  assert out[-1].rstrip("\n") == (
      f"train_gpu.py: stopped by SIGTERM while waiting for the dispatcher "
      f"at {address} to register this run's stream; nothing was trained in "
      "this run")


@pytest.mark.slow
@pytest.mark.only_env("latest", why="a trainer process on the service, minutes of CI; run on the newest TensorFlow, whose service changes")
def test_train_gpu_survives_a_killed_worker(record_dir, tmp_path):
  """train_gpu.py --data_service trains all its steps though one of the two
  workers is SIGKILLed at step 10."""
  steps = 150
  with loopback_cluster() as (address, workers, _):
    _, code, out = train_on_service(
        record_dir, tmp_path / "m", address, steps, 10,
        lambda: workers[0].send_signal(signal.SIGKILL))
    assert code == 0, "".join(out[-20:])
    assert workers[0].wait(timeout=10) == -signal.SIGKILL
  assert logged_steps("".join(out)) == list(range(1, steps + 1))
  assert tf.train.latest_checkpoint(str(tmp_path / "m")).endswith(
      f"model.ckpt-{steps}")


@pytest.mark.slow
@pytest.mark.only_env("latest", why="a trainer process on the service, minutes of CI; run on the newest TensorFlow, whose service changes")
def test_train_gpu_saves_and_says_so_when_the_dispatcher_forgets_its_job(
    record_dir, tmp_path):
  """A dispatcher restarted without --work_dir has lost the trainer's job:
  train_gpu.py saves the steps it made, ends with one line naming
  --data_service and --work_dir, exit code 1; the same command, on a fresh
  service, then resumes from that step and finishes."""
  steps = 150
  with loopback_cluster() as (address, _, restart_dispatcher):
    cmd, code, out = train_on_service(record_dir, tmp_path / "m", address,
                                      steps, 2, restart_dispatcher)
    assert code == 1, "".join(out[-20:])
    logged = logged_steps("".join(out))
    last = logged[-1]
    assert logged == list(range(1, last + 1)) and last < steps
    # (TensorFlow may log a warning of its own after it, at exit. Its
    # reason in the parentheses is TensorFlow's words, which vary.)
    (error,) = [line.rstrip("\n") for line in out
                if line.startswith("train_gpu.py: error:")]
    assert re.fullmatch(
        re.escape(f"train_gpu.py: error: the input stopped training after "
                  f"step {last} (progress saved in model.ckpt-{last}): "
                  f"--data_service={address} no longer serves this run's "
                  "stream (") + r"[^\n]+\); " + re.escape(
                      "a dispatcher restarted without data_service.py "
                      "--work_dir forgets its jobs: rerun the same command "
                      "to resume from the checkpoint (if it stops the same "
                      "way, restart the workers too), and give the "
                      "dispatcher --work_dir to survive its restarts"),
        error), out[-3:]
    assert tf.train.latest_checkpoint(str(tmp_path / "m")).endswith(
        f"model.ckpt-{last}")
  # The rerun, on a fresh service (the restarted dispatcher's workers may
  # still hold the forgotten job: seen once with TensorFlow 2.21).
  with loopback_cluster() as (address, _, _):
    cmd = [a if not a.startswith("--data_service=") else
           f"--data_service={address}" for a in cmd]
    rerun = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                           env=ENV, timeout=300)
  assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
  resumed = logged_steps(rerun.stdout + rerun.stderr)
  assert resumed == list(range(last + 1, steps + 1))


# A training loop whose step blocks as one waiting for the service's batches
# does: in a system call that a signal's Python handler does not end (PEP
# 475 resumes it), as TensorFlow's C++ wait ignores it.
_BLOCKED_STEP = r"""
import os, select, signal, sys
from xlnet.training import data_service
data_service._STEP_SIGNAL_GRACE = 1.0
watch = data_service.StepWatch("grpc://127.0.0.1:1", float(sys.argv[1]))
signal.signal(signal.SIGTERM, lambda *a: None)  # the trainer's: notes it
blocked, _ = os.pipe()
with watch.running():
  with watch.step(6, 5):
    pass  # a step that ends
  if sys.argv[2] == "between":  # SIGTERM before the next step begins
    os.kill(os.getpid(), signal.SIGTERM)
    select.select([], [], [], 2 * data_service._STEP_POLL)
  print("ready", flush=True)
  with watch.step(7, 5):
    os.read(blocked, 1)
"""


def test_a_step_blocked_on_the_service_ends_at_its_bound_or_at_sigterm():
  """A step that waits for the service's batches (a dispatcher with no
  worker, or a dead one) ends the trainer after --data_service_timeout
  (exit 1), or a second after SIGTERM (exit 143), with one line naming the
  step, the flag and the checkpoint that holds the progress. A SIGTERM
  that came between two steps counts from the next step's start (it was
  dropped, and the blocked step waited out the bound)."""
  procs = [subprocess.Popen(
      [sys.executable, "-c", _BLOCKED_STEP, seconds, signalled],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
      env=ENV)
           for seconds, signalled in (("2", "no"), ("600", "during"),
                                      ("600", "between"))]
  for proc in procs:
    assert proc.stdout.readline() == "ready\n", proc.stderr.read()
  procs[1].send_signal(signal.SIGTERM)
  sent = time.monotonic()
  for proc in procs[1:]:
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and time.monotonic() - sent < 5, err
    assert err.strip().splitlines()[-1] == (
        "-c: stopped by SIGTERM while step 8 waited for its batches from "
        "the tf.data service (--data_service=grpc://127.0.0.1:1); "
        "model.ckpt-5 holds the progress (the steps after it are lost); "
        "rerun the same command to resume from it")
  _, err = procs[0].communicate(timeout=60)
  assert procs[0].returncode == 1, err
  assert err.strip().splitlines()[-1] == (
      "-c: error: step 8 waited 2 s for its batches from the tf.data service "
      "(--data_service=grpc://127.0.0.1:1, --data_service_timeout): does the "
      "dispatcher run, with at least one worker (data_service.py "
      "--dispatcher=HOST:PORT)? model.ckpt-5 holds the progress; rerun the "
      "same command to resume from it")


@pytest.mark.slow
@pytest.mark.only_env("latest", why="a trainer process on the service; run on the newest TensorFlow, whose service changes")
def test_train_gpu_on_a_dispatcher_without_workers_stops_at_its_bound(
    record_dir, tmp_path):
  """A dispatcher that no worker serves sends no batch: the first step
  waits --data_service_timeout seconds, then the trainer stops with one
  line naming the flags and what to start (it waited for ever before)."""
  port = loopback.free_port()
  dispatcher = started(spawn_server(f"--port={port}", "--host=127.0.0.1"))
  try:
    address = f"grpc://127.0.0.1:{port}"
    cmd = fx.program_command(
        "train_gpu.py", record_dir, tmp_path / "m", "--train_steps=2",
        f"--num_core_per_host={CORES}", f"--data_service={address}",
        "--data_service_timeout=5")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                          env=ENV, timeout=300)
  finally:
    stop(dispatcher)
  in_process.assert_ended(proc, 1, (
      "train_gpu.py: error: step 1 waited 5 s for its batches from the "
      f"tf.data service (--data_service={address}, --data_service_timeout): "
      "does the dispatcher run, with at least one worker (data_service.py "
      "--dispatcher=HOST:PORT)? nothing was saved yet; rerun the same "
      "command to resume from it"))
