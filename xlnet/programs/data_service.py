"""A tf.data service server for `--data_service` (`python data_service.py
--port=PORT` starts the dispatcher; `... --port=PORT
--dispatcher=HOST:PORT` a worker): logs its address, serves until SIGTERM
or SIGINT, then stops and exits 0 (docs/distributed.md, "Input on tf.data
service")."""
import signal
import threading

from xlnet.programs import cli
from xlnet.flags import tool_catalog


def serve_until_signal(server):
  """Blocks until SIGTERM or SIGINT, then stops `server`; returns the
  signal's name."""
  stopped, received = threading.Event(), []

  def on_signal(signum, unused_frame):
    received.append(signal.Signals(signum).name)
    stopped.set()

  previous = {s: signal.signal(s, on_signal)
              for s in (signal.SIGTERM, signal.SIGINT)}
  try:
    while not stopped.wait(3600):
      pass
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)
  server._stop()  # pylint: disable=protected-access
  return received[0]


def main(unused_argv):
  from absl import flags  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.training import data_servers
  f = flags.FLAGS
  if f.port is None or not 0 < f.port < 65536:
    raise ValueError(f"--port={f.port}: give the port this server listens "
                     "on (1-65535)")
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
  say(what)
  name = serve_until_signal(server)
  say(f"{name}: stopped")


def entry_point():
  """`python data_service.py ...`."""
  cli.run(main, tool_catalog.define_data_service_server_flags)
