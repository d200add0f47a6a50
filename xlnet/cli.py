"""One convention for the project's command-line programs.

Every program is a thin top-level script calling `cli.run(main,
define_flags)`. Bad input (a `ValueError` or an OS error whose message names
the flag or path) ends with one line `prog: error: message` on stderr and exit
code 2, never a traceback; Ctrl-C outside a trainer's own handling ends with
one line and exit code 130, SIGTERM with one line and exit code 143 (after
the usual cleanup, e.g. `io_utils.atomic_output` removing its temporary
file). SIGTERM's exception, `Terminated`, is no `Exception` (as Ctrl-C's
is not), so no handler takes it for bad data, and one that Python or C
code dropped is raised again (`raise_if_terminated`). A flag the parser
refuses (misspelled, on the command line or in a `--flagfile`, or of the
wrong type) is bad input too: exit code 2.

`--help` lists the program's own flags (those its `define_flags` defines,
and any its main module defines), under the titles of their catalog groups
(`xlnet/flags/catalog.py`), with their defaults, and exits as absl's
`--help` does (status 1); `--helpfull` lists absl's and TensorFlow's flags
as well.
"""
import contextlib
import os
import signal
import sys
import threading

from absl import app
from absl import flags
from absl import logging
import tensorflow as tf

from xlnet.flags import catalog as flag_catalog

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


class Terminated(BaseException):
  """SIGTERM, turned into an exception so that cleanup code runs.

  Like KeyboardInterrupt (Ctrl-C), it is no `Exception`: the handlers that
  take any `Exception` for bad data (ours around a checkpoint read, the
  libraries', e.g. TensorFlow's, which re-raises one while tracing a
  function as a TypeError) let it pass, so a signal is never reported, or
  acted upon, as damaged data. `guarded` ends the program with its one
  line, as for a `Stop`.
  """
  exit_code = 128 + signal.SIGTERM
  is_error = False


_STOPPED = ("stopped by SIGTERM; no temporary file is left; rerun the same "
            "command to redo the work")
# Set by the SIGTERM handler (see `raise_if_terminated`).
_TERMINATED = threading.Event()
# The hook `_drop_terminated` hands every other dropped exception to.
_UNRAISABLE_HOOK = []


@contextlib.contextmanager
def sigterm_raises():
  """SIGTERM raises `Terminated` in the main thread during the block (a
  program's whole run, see `run`); the previous handler afterwards."""
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
  publish a file (`io_utils.atomic_output`); `guarded` calls it when `main`
  returns, so a lost signal still ends the program with exit code 143.
  """
  if _TERMINATED.is_set():
    raise Terminated(_STOPPED)


def _drop_terminated(unraisable):
  """sys.unraisablehook: Python drops an exception raised in a destructor
  and prints it with a traceback; SIGTERM's `Terminated` is dropped quietly
  (`raise_if_terminated` raises it again)."""
  if not isinstance(unraisable.exc_value, Terminated):
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
  raise Terminated(_STOPPED)


class _HelpFlag(app.HelpFlag):
  """absl's --help (-?), listing `own_flags` by group instead of the flags
  the main module defines (ours are defined in `xlnet/flags/`)."""

  own_flags = ()

  def parse(self, arg):
    if self._parse(arg):
      print(program_help(self.own_flags))
      print()
      print("--flagfile=FILE reads more flags from FILE, one a line.")
      print("Try --helpfull to get a list of all flags.")
      sys.exit(1)  # as absl's --help


class _HelpshortFlag(_HelpFlag):
  """absl's --helpshort, an alias of --help."""
  NAME = "helpshort"
  SHORT_NAME = None


def _flag_entry(flag):
  """The help of one flag: `--name: help` and `(default: ...; type)`."""
  prefix = "[no]" if flag.boolean else ""
  lines = [flags.text_wrap(f"--{prefix}{flag.name}: {flag.help}",
                           indent="      ", firstline_indent="  ")]
  notes = [f"default: {flag.default_as_str}"] if flag.default_as_str else []
  notes += [flag.parser.syntactic_help] if flag.parser.syntactic_help else []
  if notes:
    lines.append(flags.text_wrap(f"({'; '.join(notes)})", indent="      "))
  return "\n".join(lines)


def program_help(own_flags):
  """The main module's docstring, then `own_flags` (absl Flags, in their
  definition order) under their catalog groups' titles."""
  groups = {}
  for flag in own_flags:
    title = flag_catalog.group_title(flag) or program_name()
    groups.setdefault(title, []).append(_flag_entry(flag))
  doc = (sys.modules["__main__"].__doc__ or "").strip()
  sections = [f"{title}:\n" + "\n".join(entries)
              for title, entries in groups.items()]
  return "\n\n".join([doc or f"USAGE: {program_name()} [flags]"] + sections)


def _use_program_help(own_flags):
  """Replaces absl's --help, -? and --helpshort (app.run has defined them)
  with ones listing `own_flags`."""
  for help_flag in (_HelpFlag(), _HelpshortFlag()):
    for name in (help_flag.name, help_flag.short_name):
      if name and name in flags.FLAGS:
        delattr(flags.FLAGS, name)
    help_flag.own_flags = own_flags
    flags.DEFINE_flag(help_flag, module_name=app.__name__)


def _defined_flags(define_flags):
  """Runs `define_flags` and returns the program's own flags: those it
  defined and those the main module defined, in definition order."""
  before = set(flags.FLAGS)
  if define_flags is not None:
    define_flags()
  main = set(flags.FLAGS.get_key_flags_for_module(sys.argv[0]))
  own = {}
  for name in flags.FLAGS:
    flag = flags.FLAGS[name]
    if name not in before or flag in main:
      own[flag.name] = flag
  return list(own.values())


def parse_flags(argv, own_flags=()):
  """absl's flag parser, with its errors as `prog: error: ...`, exit 2, and
  a `--help` listing `own_flags`.

  Args:
    argv: list of str, the command line (flagfiles are read here).
    own_flags: the program's absl Flags, for --help.

  Returns:
    the arguments left after the flags.
  """
  _use_program_help(own_flags)
  try:
    return flag_catalog.parse_command_line(argv)
  except flags.Error as e:
    fail(f"{_flag_error_text(e, argv)} (see --help)")


def _flag_error_text(err, argv):
  """The parser's message, saying which --flagfile held an unknown flag."""
  text = error_text(err).removeprefix("ERROR:: ")
  name = getattr(err, "flagname", None)
  files = [a for a in argv[1:] if a.lstrip("-").startswith("flagfile=")]
  if isinstance(err, flags.UnrecognizedFlagError) and files and not any(
      a.lstrip("-").split("=")[0] in (name, "no" + name) for a in argv[1:]):
    text = text.replace(f"'{name}'", f"'{name}' (in {', '.join(files)})",
                        1)
  return text


def end(stop):
  """Ends the program with the one line of a `Stop` or `Terminated`,
  `prog: [error: ]message`, and its exit code."""
  print(f"{program_name()}: {'error: ' if stop.is_error else ''}"
        f"{error_text(stop)}", file=sys.stderr, flush=True)
  sys.exit(stop.exit_code)


def guarded(main):
  """Wraps `main(argv)` so user errors and Ctrl-C end with one line."""

  def wrapper(argv):
    try:
      result = main(argv)
      raise_if_terminated()
      return result
    except (Stop, Terminated) as e:
      end(e)
    except USER_ERRORS as e:
      fail(error_text(e))
    except KeyboardInterrupt:
      fail("interrupted (Ctrl-C)", 130)

  return wrapper


def run(main, define_flags=None):
  """Defines the flags, parses argv with absl and runs the guarded `main`.

  SIGTERM raises `Terminated` in the main thread (trainers replace this
  with their own stop-after-the-step handling while they train); one that
  arrives outside `main` (while absl parses the flags or exits) ends the
  program with the same line.
  """
  own_flags = _defined_flags(define_flags)
  logging.set_verbosity(logging.INFO)
  with sigterm_raises():
    try:
      app.run(guarded(main),
              flags_parser=lambda argv: parse_flags(argv, own_flags))
    except Terminated as e:
      end(e)
