"""SIGTERM as an exception (`errors.Terminated`), and blocks that signals
do not cut in two.

The programs' convention (`cli.run`) turns SIGTERM into `Terminated` for a
whole run (`sigterm_raises`); the library's long operations check for one
that was lost (`raise_if_terminated`) and hold signals back while files
change together (`deferred_signals`). Like `xlnet/errors.py`, it imports
nothing above itself.
"""
import contextlib
import signal
import sys
import threading

from xlnet import errors

_STOPPED = ("stopped by SIGTERM; no temporary file is left; rerun the same "
            "command to redo the work")
# Set by the SIGTERM handler (see `raise_if_terminated`).
_TERMINATED = threading.Event()
# The hook `_drop_terminated` hands every other dropped exception to.
_UNRAISABLE_HOOK = []


@contextlib.contextmanager
def sigterm_raises():
  """SIGTERM raises `Terminated` in the main thread during the block (a
  program's whole run, see `cli.run`); the previous handler afterwards."""
  _TERMINATED.clear()
  previous = signal.signal(signal.SIGTERM, _raise_terminated)
  if sys.unraisablehook is not _drop_terminated:
    _UNRAISABLE_HOOK.append(sys.unraisablehook)
    sys.unraisablehook = _drop_terminated
  try:
    yield
  finally:
    signal.signal(signal.SIGTERM, previous)
    _TERMINATED.clear()


def raise_if_terminated():
  """Raises `Terminated` again if SIGTERM arrived.

  The handler raises it wherever the main thread is, and there it can be
  lost: Python drops an exception raised while a destructor runs (e.g.
  TensorFlow's, as a function is freed), and C code calling back into
  Python may discard one (e.g. TensorFlow building an error it then
  catches). Long operations call this between their steps and before they
  publish a file (`io_utils.atomic_output`); `cli.guarded` calls it when
  `main` returns, so a lost signal still ends the program with exit code
  143.
  """
  if _TERMINATED.is_set():
    raise errors.Terminated(_STOPPED)


def _drop_terminated(unraisable):
  """sys.unraisablehook: Python drops an exception raised in a destructor
  and prints it with a traceback; SIGTERM's `Terminated` is dropped quietly
  (`raise_if_terminated` raises it again)."""
  if not isinstance(unraisable.exc_value, errors.Terminated):
    _UNRAISABLE_HOOK[-1](unraisable)


@contextlib.contextmanager
def deferred_signals():
  """Holds SIGTERM and SIGINT back during the block (file operations that
  must happen all or not at all, e.g. a checkpoint moved to quarantine with
  the state file rewritten): one that arrives meanwhile takes effect as
  the block ends. Outside the main thread it does nothing (signals reach
  only the main thread)."""
  caught, previous = [], {}
  try:
    for signum in (signal.SIGTERM, signal.SIGINT):
      previous[signum] = signal.signal(
          signum, lambda received, frame: caught.append(received))
  except ValueError:  # not the main thread
    pass
  try:
    yield
  finally:
    for signum, handler in previous.items():
      signal.signal(signum, handler)
    if caught:
      signal.raise_signal(caught[0])


def _raise_terminated(signum, frame):
  """SIGTERM handler: a second SIGTERM (e.g. during the cleanup) kills."""
  del frame
  signal.signal(signum, signal.SIG_DFL)
  _TERMINATED.set()
  raise errors.Terminated(_STOPPED)
