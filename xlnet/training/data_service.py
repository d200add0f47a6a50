"""A worker's input pipeline run on tf.data service workers
(`--data_service=grpc://HOST:PORT`, docs/distributed.md, "Input on tf.data
service").

The stream a worker reads on the plain path is cut into chunks of
`CHUNK_STEPS` optimizer steps, numbered from the step the run starts at.
The chunks' first steps are the source the dispatcher hands out with
dynamic sharding (`ShardingPolicy.DYNAMIC`): each service worker builds the
plain pipeline positioned at its chunk's first step and sends that chunk's
steps, one step (all the per-replica batches of this worker) per element.
So every step's batches are bit for bit the plain path's batches of some
step; without failures each chunk is read exactly once, after a worker dies
at most once (its chunks in flight are lost); chunks arrive in no fixed
order, two workers' chunks interleaved step by step. The servers are
`data_servers.py`'s.
"""
import contextlib
import functools
import hashlib
import os
import re
import select
import signal
import socket
import sys
import threading
import time
import uuid

from absl import logging
import tensorflow as tf

FLAG = "--data_service"
# Optimizer steps per chunk: a chunk's worker re-reads up to one pass of
# its host's raw records to reach the chunk (the plain path's skip), so
# chunks are long; a dead worker loses at most its chunk in flight.
CHUNK_STEPS = 64
# Seconds the trainer waits for the dispatcher to accept a connection.
CONNECT_TIMEOUT = 10.0
# Seconds the trainer waits for the dispatcher to register its stream.
REGISTER_TIMEOUT = 60.0
# Seconds a blocked wait has to end by itself after a signal (its Python
# handler then runs) before the watchdog ends the process.
_SIGNAL_GRACE = 1.0
# A training step after a signal: at least this long, and twice the longest
# step done so far (a step that runs, however slow, ends and saves).
_STEP_SIGNAL_GRACE = 10.0
# How often the step watchdog looks (seconds).
_STEP_POLL = 0.5
_ADDRESS = re.compile(r"grpc://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})")
_INT64_MAX = 2 ** 63 - 1
# Tells this trainer process's jobs from those of earlier runs.
_PROCESS = uuid.uuid4().hex[:12]


def parse_address(address):
  """(host, port) of a dispatcher address `grpc://HOST:PORT`.

  Raises:
    ValueError: one line naming --data_service when it is malformed.
  """
  match = _ADDRESS.fullmatch(address)
  if not match or not 0 < int(match.group(2)) < 65536:
    raise ValueError(f"{FLAG}={address}: expected grpc://HOST:PORT, the "
                     "address a tf.data service dispatcher listens on "
                     "(data_service.py --port=PORT)")
  return match.group(1).strip("[]"), int(match.group(2))


def check_dispatcher(address, timeout=CONNECT_TIMEOUT):
  """Raises a one-line ValueError naming --data_service unless a server
  accepts connections at `address` within `timeout` seconds (TensorFlow
  itself would retry a missing dispatcher for ever)."""
  host, port = parse_address(address)
  try:
    socket.create_connection((host, port), timeout).close()
  except OSError as e:
    raise ValueError(f"{FLAG}={address}: no dispatcher answers at "
                     f"{host}:{port} within {timeout:g} s "
                     f"({e.strerror or e}); start one with data_service.py "
                     f"--port={port}") from None


# What a trainer's fetch raises when the service no longer knows its job:
# the dispatcher restarted without a journal (data_service.py --work_dir).
LOST_ERRORS = (tf.errors.NotFoundError,)
_ROOT_ERROR = re.compile(r"NOT_FOUND: (.*?)(?: \[\[|$)")


def lost_message(address, err):
  """One line for a trainer whose service stream is gone (`err`, one of
  LOST_ERRORS raised by a step's fetch)."""
  text = " ".join(err.message.split())
  found = _ROOT_ERROR.search(text)
  return (f"{FLAG}={address} no longer serves this run's stream "
          f"({found.group(1) if found else text}); a dispatcher restarted "
          "without data_service.py --work_dir forgets its jobs: rerun the "
          "same command to resume from the checkpoint (if it stops the same "
          "way, restart the workers too), and give the dispatcher "
          "--work_dir to survive its restarts")


def job_name(model_dir, host, start_step):
  """The service job of host `host` of the run in `model_dir` from
  `start_step`, in this process: no other trainer reads this stream, and a
  run restarted while the dispatcher still holds the old job gets a new one
  (a shared name would hand it the old job's unread chunks)."""
  digest = hashlib.sha1(os.path.normpath(model_dir).encode()).hexdigest()
  return f"xlnet-{digest[:16]}-host{host}-step{start_step}-{_PROCESS}"


def distribute(batches_at, start_step, batches_per_step, address, job):
  """The stream of `batches_at` from `start_step`, made on the service.

  Args:
    batches_at: `batches_at(step)` -> the plain dataset of per-replica
      batches from optimizer step `step` (an int64 scalar tensor) on.
    start_step: the first step of the run.
    batches_per_step: elements of `batches_at`'s dataset per step (this
      worker's replicas times accum_steps).
    address: the dispatcher, `grpc://HOST:PORT`.
    job: the service job's name (`job_name`).

  Returns:
    a dataset of the same per-replica batches, `batches_per_step` of one
    step after another.
  """

  def chunk(first_step):
    return (batches_at(first_step).take(CHUNK_STEPS * batches_per_step)
            .batch(batches_per_step, drop_remainder=True))

  chunks = tf.data.Dataset.range(start_step, _INT64_MAX,
                                 CHUNK_STEPS).flat_map(chunk)
  # The stream is registered with the dispatcher here, in C++, which
  # retries an address that answers but is no dispatcher for ever.
  with watched(f"the dispatcher at {address} to register this run's "
               "stream", REGISTER_TIMEOUT):
    steps = chunks.apply(tf.data.experimental.service.distribute(
        processing_mode=tf.data.experimental.service.ShardingPolicy.DYNAMIC,
        service=address, job_name=job))
  return steps.unbatch().prefetch(tf.data.AUTOTUNE)


def _say_and_exit(line, code):
  """Ends the process at once with one line on stderr (the main thread is
  held in C++ and cannot unwind)."""
  print(f"{os.path.basename(sys.argv[0] or 'xlnet')}: {line}",
        file=sys.stderr, flush=True)
  os._exit(code)  # pylint: disable=protected-access


@contextlib.contextmanager
def watched(what, seconds):
  """Bounds a wait of the main thread in TensorFlow's C++ code, which lets
  other threads run but no Python signal handler: a watchdog thread ends
  the process with one line (exit code 1) if the block lasts `seconds`,
  and after SIGTERM or SIGINT (exit code 128 + the signal) if the block
  has not ended within `_SIGNAL_GRACE` seconds of it; otherwise the
  signal's Python handler runs as usual when the block ends. Outside the
  main thread only the bound applies.

  Args:
    what: what the block waits for, for the lines ("the dispatcher at
      ... to register this run's stream").
    seconds: the bound.
  """
  logging.info("Waiting up to %g s for %s", seconds, what)
  with _watchdog(functools.partial(_watch, what, seconds)):
    yield


@contextlib.contextmanager
def _watchdog(watch):
  """Runs `watch(read_fd, done)` in a daemon thread during the block:
  SIGTERM and SIGINT reach it as bytes on `read_fd` (the signal wakeup fd;
  in the main thread only), and `done` (a threading.Event) is set, and a
  zero byte written, as the block ends."""
  done = threading.Event()
  read_fd, write_fd = os.pipe()
  os.set_blocking(write_fd, False)
  try:
    previous = signal.set_wakeup_fd(write_fd)
  except ValueError:  # not the main thread: no signal reaches it
    previous = None
  thread = threading.Thread(target=watch, args=(read_fd, done), daemon=True)
  thread.start()
  try:
    yield
  finally:
    done.set()
    if previous is not None:
      signal.set_wakeup_fd(previous)
    os.write(write_fd, b"\0")  # wakes the watchdog up to see `done`
    thread.join()
    os.close(read_fd)
    os.close(write_fd)


def _watch(what, seconds, read_fd, done):
  """The watchdog of `watched`."""
  deadline = time.monotonic() + seconds
  while not done.is_set():
    ready, _, _ = select.select([read_fd], [], [],
                                max(0.0, deadline - time.monotonic()))
    if done.is_set():
      return
    if not ready:
      _say_and_exit(f"error: gave up waiting for {what} after {seconds:g} "
                    "s: the address answers but no tf.data service "
                    "dispatcher serves it, or it is overloaded; check "
                    f"{FLAG}", 1)
    signums = [b for b in os.read(read_fd, 64) if b]
    if signums and not done.wait(_SIGNAL_GRACE):
      name = signal.Signals(signums[0]).name
      _say_and_exit(f"stopped by {name} while waiting for {what}; nothing "
                    "was trained in this run", 128 + signums[0])


class StepWatch:
  """Bounds the training steps of a run fed by the tf.data service. A step
  waits for its batches in TensorFlow's C++ code, where no Python signal
  handler runs: with a dispatcher that has no worker, or that died, it
  would wait for ever and ignore SIGTERM. A watchdog thread ends the
  process with one line when a step has waited `seconds` (exit code 1), or
  when it has not ended `_STEP_SIGNAL_GRACE` seconds (and twice the
  longest step so far) after SIGTERM or SIGINT, or after its start for a
  signal that came between steps (exit code 128 + the signal); a step that
  ends in time leaves the signal to the trainer's own handler (the step
  agrees to stop, then the trainer saves).

  Usage (`Trainer.train`):
    with watch.running():
      while ...:
        with watch.step(step, saved):
          step_fn(...)
  """

  def __init__(self, address, seconds):
    self.address = address
    self.seconds = seconds
    self._current = None  # (step done before it, last saved step, start)
    self._longest = 0.0

  @contextlib.contextmanager
  def running(self):
    """The watchdog, around the training loop."""
    with _watchdog(self._watch):
      yield self

  @contextlib.contextmanager
  def step(self, done_step, saved_step):
    """One step, after `done_step`; `saved_step`: the newest checkpoint's
    step (None: none yet), for the lines."""
    began = time.monotonic()
    self._current = (done_step, saved_step, began)
    try:
      yield
    finally:
      self._current = None
      self._longest = max(self._longest, time.monotonic() - began)

  def _watch(self, read_fd, done):
    signalled = None  # (signal number, when)
    while not done.is_set():
      ready, _, _ = select.select([read_fd], [], [], _STEP_POLL)
      if ready:
        signums = [b for b in os.read(read_fd, 64) if b]
        if signums and signalled is None:
          signalled = (signums[0], time.monotonic())
      current, now = self._current, time.monotonic()
      if current is None:
        # Between steps the trainer's handler takes a signal; one that came
        # just before a step began is kept: that step must end in time too.
        continue
      done_step, saved, began = current
      kept = (f"model.ckpt-{saved} holds the progress" if saved is not None
              else "nothing was saved yet")
      lost = " (the steps after it are lost)" if saved is not None else ""
      grace = max(_STEP_SIGNAL_GRACE, 2 * self._longest)
      if signalled and now - max(signalled[1], began) >= grace:
        name = signal.Signals(signalled[0]).name
        _say_and_exit(
            f"stopped by {name} while step {done_step + 1} waited for its "
            f"batches from the tf.data service ({FLAG}={self.address}); "
            f"{kept}{lost}; rerun the same command to resume from it",
            128 + signalled[0])
      if now - began >= self.seconds:
        _say_and_exit(
            f"error: step {done_step + 1} waited {self.seconds:g} s for its "
            f"batches from the tf.data service ({FLAG}={self.address}, "
            "--data_service_timeout): does the dispatcher run, with at "
            "least one worker (data_service.py --dispatcher=HOST:PORT)? "
            f"{kept}; rerun the same command to resume from it", 1)

