"""A multi-worker cluster that forms within a bound, or stops with one line.

TensorFlow's cluster start-up (`MultiWorkerMirroredStrategy()`) waits for
every task in C++ with no end and holds the interpreter meanwhile: no
Python signal handler, no other Python thread runs, and it replaces the
SIGTERM handler with its own, which only records the signal. A chief whose
worker never comes would wait for ever and ignore SIGTERM and Ctrl-C.

So the tasks meet first in Python: each listens on its own cluster port
and connects to every other task's port until all have answered (its
listener, or its TensorFlow server once that task is past this wait). That
wait is bounded (`--cluster_timeout`) and says what it waits for; SIGTERM
and SIGINT end it at once, as anywhere else in a program. Only then does
TensorFlow start the cluster, among tasks that are all running; that start
is bounded too, by a timer outside the interpreter (`faulthandler`), which
exits with code 1 if it has not ended (a task that died in between), after
a line that said so in advance. Afterwards the Python signal handlers are
installed again in place of TensorFlow's.
"""
import signal
import socket
import time

from absl import logging

from xlnet import errors
from xlnet.training import waits

FLAG = "--cluster_timeout"
# Seconds between two rounds of connections to the tasks not yet seen.
_POLL = 0.25
# Seconds one connection attempt may take (an address that drops packets).
_CONNECT = 1.0
# Seconds between two "still waiting" lines.
_REPORT = 30.0


def split_address(address):
  """(host, port) of a task's address "HOST:PORT" (or "[IPv6]:PORT").

  Raises:
    ValueError: one line naming the address when it is malformed.
  """
  host, _, port = address.rpartition(":")
  if not host or not port.isdigit() or not 0 < int(port) < 65536:
    raise ValueError(f"cluster address {address!r} (--worker_hosts or "
                     "TF_CONFIG): expected HOST:PORT")
  return host.strip("[]"), int(port)


def tasks(tf_config):
  """The training tasks of a TF_CONFIG dict, the chief first.

  Returns:
    list of (name, address): name as "chief 0" or "worker 1" (the TF_CONFIG
    task type and index), address "HOST:PORT".
  """
  cluster = tf_config.get("cluster", {})
  return [(f"{kind} {i}", address) for kind in ("chief", "worker")
          for i, address in enumerate(cluster.get(kind, []))]


def own_task(tf_config):
  """This process's name in `tasks` (its TF_CONFIG task)."""
  task = tf_config.get("task", {})
  return f"{task.get('type', 'worker')} {int(task.get('index') or 0)}"


def listing(missing):
  """'worker 1 at h:p, worker 2 at h:p' for [(name, address)]."""
  return ", ".join(f"{name} at {address}" for name, address in missing)


def timeout_message(missing, timeout):
  """The one line of a cluster that did not form within `timeout` seconds,
  `missing` the [(name, address)] of the tasks that never answered."""
  return (f"the cluster did not form within {FLAG}={timeout:g} s: "
          f"{listing(missing)} never answered; start every host with the "
          "same --worker_hosts (or TF_CONFIG cluster) and its own "
          f"--task_index, or raise {FLAG}")


def _listen(name, address):
  """A socket listening on this task's port (all interfaces, as
  TensorFlow's server will), so that the others see this task waiting.

  Raises:
    ValueError: one line when another process holds the port.
  """
  _, port = split_address(address)
  dual = socket.has_dualstack_ipv6()
  try:
    sock = socket.create_server(
        ("", port), family=socket.AF_INET6 if dual else socket.AF_INET,
        backlog=64, dualstack_ipv6=dual)
  except OSError as e:
    raise ValueError(f"this task ({name}) cannot listen on its cluster "
                     f"address {address} (--worker_hosts or TF_CONFIG): "
                     f"{waits.reason(e)}; another process holds port "
                     f"{port} (a worker of an earlier run still running?)"
                     ) from None
  sock.setblocking(False)
  return sock


def _drain(sock):
  """Accepts and closes the connections queued on `sock`: only the
  handshake tells a peer this task is up."""
  while True:
    try:
      conn, _ = sock.accept()
    except (BlockingIOError, InterruptedError):
      return
    conn.close()


def wait_for_peers(tf_config, timeout, clock=time.monotonic):
  """Returns once every other task of `tf_config` answered on its address.

  Args:
    tf_config: the TF_CONFIG dict of this process.
    timeout: seconds to wait at most (`--cluster_timeout`).
    clock: seconds, monotonic.

  Raises:
    errors.Stop: one line naming the tasks that never answered.
    errors.Terminated: SIGTERM, one line naming those not seen yet.
  """
  own = own_task(tf_config)
  peers = [(n, a) for n, a in tasks(tf_config) if n != own]
  address = dict(tasks(tf_config)).get(own)
  if address is None:
    raise ValueError(f"TF_CONFIG task {own} is not in its cluster "
                     f"({listing(tasks(tf_config))})")
  try:
    logging.info("Waiting up to %g s (%s) for the cluster: %s", timeout,
                 FLAG, listing(peers))
    with _listen(own, address) as sock:
      missing = _await(sock, peers, clock() + timeout, clock)
  except errors.Terminated:
    raise errors.Terminated(
        f"stopped by SIGTERM while waiting for the cluster ({listing(peers)}"
        " not seen yet); nothing was trained; rerun the same command") from None
  if missing:
    raise errors.Stop(timeout_message(missing, timeout))


def _await(sock, peers, deadline, clock):
  """Connects to the tasks `peers` ([(name, address)], emptied as each
  answers once) until all answered or `deadline` (of `clock`).

  Returns:
    the tasks that never answered.
  """
  reported = clock()
  while peers:
    _drain(sock)
    peers[:] = [(n, a) for n, a in peers
                if not waits.answers(a, max(0.01, min(_CONNECT,
                                                 deadline - clock())))]
    now = clock()
    if not peers or now >= deadline:
      break
    if now - reported >= _REPORT:
      logging.info("Still waiting for %s (%.0f s left)", listing(peers),
                   deadline - now)
      reported = now
    time.sleep(min(_POLL, deadline - now))
  return peers


def restore_signal_handlers():
  """Installs the Python handlers of SIGTERM and SIGINT again, in place of
  those TensorFlow's cluster runtime installed in C++ (which only record
  the signal)."""
  for signum in (signal.SIGTERM, signal.SIGINT):
    handler = signal.getsignal(signum)
    if handler is not None:
      signal.signal(signum, handler)


def start(create, tf_config, timeout):
  """`create()` (TensorFlow's cluster start-up) once every task answers,
  bounded by `timeout` seconds for each of the two waits.

  Returns:
    what `create` returns.
  """
  wait_for_peers(tf_config, timeout)
  logging.info("Every task of the cluster answers; TensorFlow starts the "
               "cluster (this process exits with code 1 if that takes "
               "over %g s, %s)", timeout, FLAG)
  try:
    with waits.exit_after(timeout):
      return create()
  finally:
    restore_signal_handlers()
