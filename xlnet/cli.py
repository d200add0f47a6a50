"""One convention for the project's command-line programs.

Every program is a thin top-level script calling `cli.run(main,
define_flags)`. Bad input (a `ValueError` or an OS error whose message names
the flag or path) ends with one line `prog: error: message` on stderr and exit
code 2, never a traceback; Ctrl-C outside a trainer's own handling ends with
one line and exit code 130, SIGTERM with one line and exit code 143 (after
the usual cleanup, e.g. `io_utils.atomic_output` removing its temporary
file). A flag the parser refuses (misspelled, on the command line or in a
`--flagfile`, or of the wrong type) is bad input too: exit code 2.

`--help` lists the program's own flags (those its `define_flags` defines,
and any its main module defines), under the titles of their catalog groups
(`xlnet/flags/catalog.py`), with their defaults, and exits as absl's
`--help` does (status 1); `--helpfull` lists absl's and TensorFlow's flags
as well.
"""
import os
import signal
import sys

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


class Terminated(Stop):
  """SIGTERM, turned into an exception so that cleanup code runs."""
  exit_code = 128 + signal.SIGTERM
  is_error = False


_TERMINATED_TEXT = ("stopped by SIGTERM; no temporary file is left; rerun "
                    "the same command to redo the work")
# Set by `_raise_terminated`: SIGTERM arrived (see `raise_if_terminated`).
_sigterm_received = False


def _raise_terminated(signum, frame):
  """SIGTERM handler: a second SIGTERM (e.g. during the cleanup) kills."""
  del frame
  global _sigterm_received
  _sigterm_received = True
  signal.signal(signum, signal.SIG_DFL)
  raise Terminated(_TERMINATED_TEXT)


def raise_if_terminated():
  """Raises `Terminated` when SIGTERM arrived but its exception was lost.

  The handler raises in whatever Python code runs next, and C++ code that
  calls Python may swallow it there: TensorFlow's checkpoint reader runs
  NumPy's version check inside every `get_tensor`. Loops over such calls
  check here after each one.
  """
  if _sigterm_received:
    raise Terminated(_TERMINATED_TEXT)


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
  """Defines the flags, parses argv with absl and runs the guarded `main`.

  SIGTERM raises `Terminated` in the main thread (trainers replace this
  with their own stop-after-the-step handling while they train).
  """
  own_flags = _defined_flags(define_flags)
  logging.set_verbosity(logging.INFO)
  signal.signal(signal.SIGTERM, _raise_terminated)
  app.run(guarded(main),
          flags_parser=lambda argv: parse_flags(argv, own_flags))
