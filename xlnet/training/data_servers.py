"""The tf.data service servers `data_service.py` runs: a dispatcher, which
hands out the chunks of the trainers' streams (`data_service.py` of this
package), and workers, which make them.

TensorFlow starts either server without looking at its port (gRPC shares
a port between servers, so a second dispatcher would serve a port a
running one serves, and trainers would reach either) and a worker waits
for its dispatcher in C++ for ever, holding the interpreter (no signal
handler runs). So the port is checked first, a worker waits for its
dispatcher in Python (bounded, stopped by signals), and TensorFlow's own
start is bounded by a timer outside the interpreter.
"""
import socket
import time

import tensorflow as tf

from xlnet import errors
from xlnet.training import waits

_POLL = 0.5
_REPORT = 30.0


def dispatcher_address(value):
  """HOST:PORT of `--dispatcher`, given as HOST:PORT or as the trainers'
  grpc://HOST:PORT.

  Raises:
    ValueError: one line naming --dispatcher when it is malformed.
  """
  address = value[len("grpc://"):] if value.startswith("grpc://") else value
  host, _, port = address.rpartition(":")
  if not host or not port.isdigit() or not 0 < int(port) < 65536:
    raise ValueError(f"--dispatcher={value}: expected HOST:PORT of a "
                     "running dispatcher (data_service.py --port=PORT)")
  return address


def check_port(port, dispatcher=None):
  """Raises a one-line ValueError naming --port unless no server listens
  on `port` of this machine (a worker's `dispatcher` named on the same
  port: its own dispatcher's)."""
  try:
    socket.create_server(("", port)).close()
  except OSError as e:
    if dispatcher and dispatcher.rpartition(":")[2] == str(port):
      raise ValueError(f"--port={port} is the port of --dispatcher="
                       f"{dispatcher}: a worker needs a port of its own "
                       f"(e.g. --port={port + 1})") from None
    raise ValueError(f"--port={port}: {waits.reason(e)}; another "
                     "server serves this port (a dispatcher or worker "
                     "already running?): stop it or choose another port"
                     ) from None


def check_work_dir(work_dir):
  """Raises a one-line ValueError naming --work_dir when it names a file
  (the journal is a directory, made when missing)."""
  if (work_dir and tf.io.gfile.exists(work_dir) and
      not tf.io.gfile.isdir(work_dir)):
    raise ValueError(f"--work_dir={work_dir} is a file: the dispatcher "
                     "journals its state in a directory (made if missing)")


def start_dispatcher(port, work_dir=None, worker_timeout_ms=None):
  """Starts a tf.data service dispatcher on `port` (all interfaces).

  Args:
    port: the port it listens on.
    work_dir: where it journals its state, so that a restarted dispatcher
      resumes its jobs (None: no journal; a restart loses the jobs).
    worker_timeout_ms: a worker silent this long is dropped and its chunks
      are no longer waited for (None: TensorFlow's default).

  Returns:
    the running `tf.data.experimental.service.DispatchServer`.

  Raises:
    ValueError: one line naming --port or --work_dir.
  """
  check_port(port)
  check_work_dir(work_dir)
  config = tf.data.experimental.service.DispatcherConfig(
      port=port, work_dir=work_dir, fault_tolerant_mode=bool(work_dir),
      worker_timeout_ms=worker_timeout_ms)
  try:
    return tf.data.experimental.service.DispatchServer(config)
  except tf.errors.OpError as e:
    raise ValueError(f"the dispatcher did not start on --port={port} "
                     f"(--work_dir={work_dir}): {errors.error_text(e)}"
                     ) from None


def wait_for_dispatcher(dispatcher, timeout, say):
  """Returns once a server accepts connections at `dispatcher` (HOST:PORT),
  waiting `timeout` seconds at most; `say(line)` tells the user what it
  waits for.

  Raises:
    errors.Stop: one line when nothing answered in time.
    errors.Terminated: SIGTERM, one line.
  """
  deadline = time.monotonic() + timeout
  waited = 0.0
  try:
    while not waits.answers(dispatcher, _POLL):
      left = deadline - time.monotonic()
      if left <= 0:
        raise errors.Stop(f"no dispatcher answered at {dispatcher} within "
                          f"--dispatcher_timeout={timeout:g} s: start it "
                          "first (data_service.py --port=PORT) or raise "
                          "--dispatcher_timeout")
      if waited == 0.0 or timeout - left - waited >= _REPORT:
        waited = timeout - left
        say(f"waiting up to {left:.0f} s more for the dispatcher at "
            f"{dispatcher} (--dispatcher_timeout)")
      time.sleep(min(_POLL, left))
  except errors.Terminated:
    raise errors.Terminated(f"stopped by SIGTERM while waiting for the "
                            f"dispatcher at {dispatcher}") from None


def start_worker(port, dispatcher, host, timeout, say=print):
  """Starts a tf.data service worker on `port` serving the dispatcher at
  `dispatcher` (HOST:PORT); trainers reach it at `host`:`port`. Waits for
  the dispatcher up to `timeout` seconds (`wait_for_dispatcher`), then
  registers with it; TensorFlow's registration holds the interpreter, so
  SIGTERM and SIGINT have their default effect meanwhile (the process
  ends) and a registration that takes `timeout` seconds ends the process
  with code 1 (an address that accepts connections but is no dispatcher).

  Returns:
    the running `tf.data.experimental.service.WorkerServer`.
  """
  check_port(port, dispatcher)
  wait_for_dispatcher(dispatcher, timeout, say)
  say(f"registering with the dispatcher at {dispatcher} (exit code 1 if "
      f"it has not answered as a dispatcher in {timeout:g} s)")
  config = tf.data.experimental.service.WorkerConfig(
      dispatcher_address=dispatcher, worker_address=f"{host}:{port}",
      port=port)
  with waits.default_signals(), waits.exit_after(timeout):
    return tf.data.experimental.service.WorkerServer(config)
