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
(`xlnet/flags/groups.py`), with their defaults, and exits as absl's
`--help` does (status 1); `--helpfull` lists absl's and TensorFlow's flags
as well.
"""
import os
import re
import sys

from absl import app
from absl import flags
from absl import logging

from xlnet import errors
from xlnet import io_utils
from xlnet import signals
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import groups as flag_groups
from xlnet.training import run_lock

# The exceptions and signal handling live below the library
# (`xlnet/errors.py`, `xlnet/signals.py`); the programs name them here too.
Stop = errors.Stop
Terminated = errors.Terminated
error_text = errors.error_text
program_name = errors.program_name
sigterm_raises = signals.sigterm_raises
raise_if_terminated = signals.raise_if_terminated
deferred_signals = signals.deferred_signals

EXIT_USAGE = 2



def quiet_tensorflow():
  """Hides TensorFlow's C++ start-up lines (the CUDA stubs, the cuDNN,
  cuFFT and cuBLAS "factory" errors on a CPU machine, the CPU-feature
  note) unless the user set TF_CPP_MIN_LOG_LEVEL. TensorFlow reads the
  variable once, when it is imported; errors a program must act on still
  arrive as Python exceptions."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


quiet_tensorflow()


def user_errors():
  """The errors that describe bad input (their message is meant for the
  user)."""
  return (ValueError, OSError, app.UsageError) + errors.tf_errors(
      "NotFoundError", "PermissionDeniedError")


def exhausted_text(err):
  """One line for a TensorFlow ResourceExhaustedError that reached the
  program's top (the trainers name the step, the plan and a safer command
  themselves): a full disk or quota as such, else out of device memory
  while the model was built, restored or evaluated."""
  cause = errors.op_error_cause(err)
  if io_utils.resource_cause(err):
    return f"{cause}; make room and rerun the same command"
  return (f"out of device memory ({cause[:300]}): a smaller batch, shorter "
          "sequences or more accumulation steps per update fit (see the "
          "program's --help); a training run resumes from its newest "
          "checkpoint")


# TensorFlow's errors of a remote file system (gs://, s3://, ...): a name
# that does not resolve, no credentials, a service that does not answer.
_REMOTE_ERRORS = ("FailedPreconditionError", "UnauthenticatedError",
                  "UnavailableError", "DeadlineExceededError")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")


def remote_file_text(err):
  """One line for a TensorFlow error reading or writing a URL, or None
  when `err` is another error (a failed precondition of the program's own
  making keeps its traceback)."""
  text = errors.error_text(err)
  if not (isinstance(err, errors.tf_errors(*_REMOTE_ERRORS))
          and _URL.search(text)):
    return None
  return (f"{text[:400]}; check that the path is reachable from this "
          "machine (the network, the bucket's name, the credentials) and "
          "rerun the same command")


def fail(message, code=EXIT_USAGE):
  """Prints `prog: error: message` to stderr and exits with `code`."""
  print(f"{program_name()}: error: {message}", file=sys.stderr, flush=True)
  sys.exit(code)


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
    title = flag_groups.group_title(flag) or program_name()
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
    callers_locks = run_lock.held_paths()
    try:
      try:
        result = main(argv)
      except Exception:  # pylint: disable=broad-except
        # C code that SIGTERM's Terminated crossed may have replaced it
        # (pybind11's RuntimeError "MISMATCH of original and normalized
        # active exception types", a TypeError of tracing): after a
        # SIGTERM, the signal ends the program as itself.
        raise_if_terminated()
        raise
      raise_if_terminated()
      return result
    except (Stop, Terminated) as e:
      end(e)
    except user_errors() as e:
      fail(error_text(e))
    except errors.tf_errors("ResourceExhaustedError") as e:
      fail(exhausted_text(e), 1)
    except errors.tf_errors(*_REMOTE_ERRORS) as e:
      text = remote_file_text(e)
      if text is None:
        raise
      fail(text, 1)
    except KeyboardInterrupt:
      fail("interrupted (Ctrl-C)", 130)
    finally:
      # One a signal stopped at a `with`'s edge (never the caller's own).
      run_lock.release_held(kept=callers_locks)

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


def finetuning_program(task, sentinel, define_task_flags, main):
  """The functions of the fine-tuning program `run_{task}.py` around its
  `main`: the common fine-tuning flags and `define_task_flags`'s.

  Args:
    task: "classifier", "squad", "race" or "ner".
    sentinel: a flag `define_task_flags` defines (its presence: defined).
    define_task_flags: callable taking an `absl.flags.FlagValues`.
    main: absl's main of the program (it resolves the flags once and calls
      `api.run_{task}`; written in the program, so the reach of its
      messages is seen where it runs).

  Returns:
    (define_flags(flag_values=FLAGS), parse_flags(argv) -> a fresh parsed
    FlagValues, entry_point()).
  """
  program = f"run_{task}"

  def define_flags(flag_values=flags.FLAGS):
    flag_catalog.define_common_flags(flag_values, program)
    if sentinel not in flag_values:
      define_task_flags(flag_values)

  def parse_flags(argv):
    return flag_catalog.parse_fresh(define_flags, argv)

  def entry_point():
    run(main, define_flags)

  define_flags.__doc__ = f"Defines every flag of {program}.py."
  parse_flags.__doc__ = f"A fresh, parsed FlagValues of {program}.py."
  entry_point.__doc__ = f"The `{program}.py` command."
  return define_flags, parse_flags, entry_point
