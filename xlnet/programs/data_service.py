"""A tf.data service server for `--data_service` (`python data_service.py
--port=PORT` starts the dispatcher; `... --port=PORT
--dispatcher=HOST:PORT` a worker): logs its address, serves until SIGTERM
or SIGINT, then stops and exits 0, or 1 when TensorFlow's stop hangs
(docs/distributed.md, "Input on tf.data service")."""
import os
import signal
import sys
import threading

from absl import flags

from xlnet import validation
from xlnet.programs import cli
from xlnet.flags import tool_catalog
from xlnet.training import waits

# Seconds a signalled server waits for TensorFlow's stop. A worker's stop
# waits for its requests to the dispatcher, which it retries while the
# dispatcher is gone or busy (90 s seen); a worker keeps no state the
# dispatcher needs, so ending without that stop loses nothing.
STOP_WAIT = 10.0


def serve_until_signal(server, say, what, stop_wait=STOP_WAIT):
  """Says `what` once SIGTERM and SIGINT are caught (a signal right after
  the line is handled), blocks until one comes, then stops `server` and
  ends the process. The stop holds the interpreter in C++ (TensorFlow's
  binding keeps the GIL), so it is bounded by a timer outside it: after
  `stop_wait` seconds the process ends with exit code 1, as the line
  before the stop says. After the stop the process ends at once, exit code
  0 (`_end_now`)."""
  signalled, received = threading.Event(), []

  def on_signal(signum, unused_frame):
    received.append(signal.Signals(signum).name)
    signalled.set()

  previous = {s: signal.signal(s, on_signal)
              for s in (signal.SIGTERM, signal.SIGINT)}
  try:
    say(what)
    while not signalled.wait(3600):
      pass
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)
  say(f"{received[0]}: stopping (exit code 1 if TensorFlow's stop of the "
      f"server has not returned in {stop_wait:g} s)")
  with waits.exit_after(stop_wait):
    server._stop()  # pylint: disable=protected-access
  say(f"{received[0]}: stopped")
  _end_now()


def _end_now():
  """Ends the process with exit code 0, its output flushed, without
  releasing the stopped server: TensorFlow's release joins the server's
  threads, and a worker's heartbeat thread waits for a task that asks a
  killed dispatcher for its next split, retrying for ever (seen: a worker
  alive 60 s after "stopped"). The server keeps nothing to save."""
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(0)  # pylint: disable=protected-access


def check_flags(flag_values):
  """Raises a one-line ValueError naming the first flag of data_service.py
  that is out of its range (the timeouts by their rule,
  `validation.check_timeout`)."""
  port = flag_values.port
  if port is None or not 0 < port < 65536:
    raise ValueError(f"--port={port}: give the port this server listens "
                     "on (1-65535)")
  for name in ("dispatcher_timeout", "worker_timeout_ms"):
    validation.check_value(name, flag_values[name].value)


def main(unused_argv):
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.training import data_servers
  f = flags.FLAGS
  check_flags(f)
  say = lambda line: print(f"{cli.program_name()}: {line}", flush=True)
  if f.dispatcher:
    dispatcher = data_servers.dispatcher_address(f.dispatcher)
    say(f"worker at {f.host}:{f.port} for the dispatcher {dispatcher}")
    server = data_servers.start_worker(f.port, dispatcher, f.host,
                                       f.dispatcher_timeout, say)
    what = (f"worker at {f.host}:{f.port} serving the dispatcher "
            f"{dispatcher}")
  else:
    server = data_servers.start_dispatcher(f.port, f.work_dir,
                                           f.worker_timeout_ms)
    what = (f"dispatcher at grpc://{f.host}:{f.port} (trainers: "
            f"train_gpu.py --data_service=grpc://{f.host}:{f.port})")
  serve_until_signal(server, say, what)


def entry_point():
  """`python data_service.py ...`."""
  cli.run(main, tool_catalog.define_data_service_server_flags)
