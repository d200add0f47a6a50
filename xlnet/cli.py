"""One convention for the project's command-line programs.

Every program is a thin top-level script calling `cli.run(main,
define_flags)`. Bad input (a `ValueError` or an OS error whose message names
the flag or path) ends with one line `prog: error: message` on stderr and exit
code 2, never a traceback; Ctrl-C outside a trainer's own handling ends with
one line and exit code 130.
"""
import os
import sys

from absl import app
from absl import logging
import tensorflow as tf

EXIT_USAGE = 2

# Errors that describe bad input; their message is meant for the user.
USER_ERRORS = (ValueError, OSError, app.UsageError, tf.errors.NotFoundError,
               tf.errors.PermissionDeniedError)


def program_name():
  """The running script's file name (e.g. `train_gpu.py`), for messages."""
  return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "xlnet"


def fail(message, code=EXIT_USAGE):
  """Prints `prog: error: message` to stderr and exits with `code`."""
  print(f"{program_name()}: error: {message}", file=sys.stderr, flush=True)
  sys.exit(code)


def error_text(err):
  """One line describing `err` (tf.errors carry their message separately)."""
  text = err.message if isinstance(err, tf.errors.OpError) else str(err)
  return " ".join(text.split()) or type(err).__name__


class Stop(Exception):
  """Ends a program with one line `prog: message` and `exit_code`.

  Subclasses say why (e.g. a trainer interrupted by a signal after saving);
  `is_error` puts "error: " in front of the message.
  """
  exit_code = 1
  is_error = True


def guarded(main):
  """Wraps `main(argv)` so user errors and Ctrl-C end with one line."""

  def wrapper(argv):
    try:
      return main(argv)
    except Stop as e:
      text = error_text(e)
      print(f"{program_name()}: {'error: ' if e.is_error else ''}{text}",
            file=sys.stderr, flush=True)
      sys.exit(e.exit_code)
    except USER_ERRORS as e:
      fail(error_text(e))
    except KeyboardInterrupt:
      fail("interrupted (Ctrl-C)", 130)

  return wrapper


def run(main, define_flags=None):
  """Defines the flags, parses argv with absl and runs the guarded `main`."""
  if define_flags is not None:
    define_flags()
  logging.set_verbosity(logging.INFO)
  app.run(guarded(main))
