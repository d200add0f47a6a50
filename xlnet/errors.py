"""The exceptions that end a run with one line, for every layer.

The library raises them and the programs' convention (`xlnet/programs/cli.py`)
prints them: `Stop` for an expected end (exit code 1, or a subclass's),
`Terminated` for SIGTERM (exit code 143, raised by `xlnet/signals.py`).
`error_text` is the one line an exception's message makes (`op_error_cause`
that of a TensorFlow error without its graph trace), `program_name` the
script a message names. This module sits
below everything else (it imports neither the flags nor the programs), so a
low module (atomic files, checkpoints, locks) needs nothing above itself to
stop a program cleanly.
"""
import os
import signal
import sys


def tf_errors(*names):
  """TensorFlow's error classes `names` (e.g. "NotFoundError"), or () before
  TensorFlow is imported: none can be raised then. Naming them imports no
  TensorFlow, so that `--help`, spm_train.py and download.py start fast."""
  tf = sys.modules.get("tensorflow")
  return tuple(getattr(tf.errors, name) for name in names) if tf else ()


def error_text(err):
  """One line describing `err` (tf.errors carry their message separately)."""
  is_tf_error = isinstance(err, tf_errors("OpError"))
  text = err.message if is_tf_error else str(err)
  return " ".join(text.split()) or type(err).__name__


# What the input pipeline's check of its records' token ids says when one
# is outside the vocabulary (`xlnet/data/record_format.py`, `checked_ids`):
# the TensorFlow error that holds it means bad data, as a DataLossError
# (a corrupted record) does.
BAD_TOKEN_ID = "a record holds a token id outside the vocabulary"


def is_bad_data(err):
  """Whether the TensorFlow error `err` says an input record is bad: it is
  corrupted (a DataLossError), or holds a token id the vocabulary has not
  (an InvalidArgumentError of `BAD_TOKEN_ID`)."""
  return isinstance(err, tf_errors("DataLossError")) or (
      isinstance(err, tf_errors("InvalidArgumentError")) and
      BAD_TOKEN_ID in err.message)


def program_name():
  """The running script's file name (e.g. `train_gpu.py`), for messages."""
  return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "xlnet"


def op_error_cause(err):
  """The cause of a tf.errors.OpError in one line, without the graph's
  trace: a graph-mode message wraps its cause ("corrupted record at 2900")
  in the Python stack where the op was built and the node's name, all on
  lines of their own, the stack's and the node's indented."""
  own = [line for line in err.message.splitlines()
         if line.strip() and not line[0].isspace()]
  return " ".join(own[-1].split()) if own else error_text(err)


class Stop(Exception):
  """Ends a program with one line `prog: message` and `exit_code`.

  Subclasses say why (e.g. a trainer interrupted by a signal after saving);
  `is_error` puts "error: " in front of the message.
  """
  exit_code = 1
  is_error = True


class Terminated(BaseException):
  """SIGTERM, turned into an exception so that cleanup code runs.

  Like KeyboardInterrupt (Ctrl-C), it is no `Exception`: the handlers that
  take any `Exception` for bad data (ours around a checkpoint read, the
  libraries', e.g. TensorFlow's, which re-raises one while tracing a
  function as a TypeError) let it pass, so a signal is never reported, or
  acted upon, as damaged data. `cli.guarded` ends the program with its one
  line, as for a `Stop`.
  """
  exit_code = 128 + signal.SIGTERM
  is_error = False
