"""Waits on peers that end: sockets that say whether a peer is up, and
what stops a process held in C++ code, where no Python signal handler or
other Python thread runs (a timer outside the interpreter, the signals'
default action).
"""
import contextlib
import faulthandler
import os
import signal
import socket


def reason(err):
  """An OSError's reason alone ("Address already in use")."""
  return os.strerror(err.errno) if err.errno else str(err)


def answers(address, timeout):
  """Whether a server accepts a TCP connection at `address`."""
  host, _, port = address.rpartition(":")
  try:
    socket.create_connection((host.strip("[]"), int(port)), timeout).close()
    return True
  except OSError:
    return False


@contextlib.contextmanager
def exit_after(seconds):
  """Ends the process with code 1 if the block has not ended after
  `seconds`, even while C++ code holds the interpreter (faulthandler's
  timer runs outside it; its traceback goes to the null device)."""
  with open(os.devnull, "w") as null:
    faulthandler.dump_traceback_later(seconds, exit=True, file=null)
    try:
      yield
    finally:
      faulthandler.cancel_dump_traceback_later()


@contextlib.contextmanager
def default_signals():
  """SIGTERM and SIGINT end the process at once during the block (C++ code
  that holds the interpreter, where no Python handler would run); the
  Python handlers again afterwards."""
  previous = {signum: signal.signal(signum, signal.SIG_DFL)
              for signum in (signal.SIGTERM, signal.SIGINT)}
  try:
    yield
  finally:
    for signum, handler in previous.items():
      signal.signal(signum, handler)
