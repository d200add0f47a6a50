"""A program's command line run inside the test process.

Starting `python PROGRAM.py` costs a TensorFlow import (about 4.5 CPU
seconds here) before the program reads its first flag. Tests of what a
program says about its flags and inputs run it in-process instead:

  result = run_program("reproduce.py", "--table=glue", "--dry_run")
  assert result.returncode == 2 and "error:" in result.stderr

The program runs as `python PROGRAM.py ARGS` would run it (its file as
`__main__`, `sys.argv`, absl's flag parsing, `cli.run`'s one-line errors
and exit codes), with its Python output captured. What a subprocess test
alone can check stays in subprocess tests, one per program: signals, kills,
TensorFlow's own start-up, a fresh interpreter's imports.
"""
import contextlib
import dataclasses
import io
import os
import resource
import runpy
import signal
import sys
import traceback

from absl import flags
from absl import logging

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass
class Result:
  returncode: int
  stdout: str
  stderr: str


@contextlib.contextmanager
def _environment(env, cwd):
  """Temporarily replaces os.environ (with `env`) and the directory."""
  saved_env, saved_cwd = dict(os.environ), os.getcwd()
  if env is not None:
    os.environ.clear()
    os.environ.update(env)
  if cwd is not None:
    os.chdir(cwd)
  try:
    yield
  finally:
    os.chdir(saved_cwd)
    os.environ.clear()
    os.environ.update(saved_env)


@contextlib.contextmanager
def _fresh_flags():
  """absl's flags as a new process has them: the flags the program defines
  are removed afterwards and the others unparsed."""
  before = set(flags.FLAGS)
  try:
    yield
  finally:
    for name in set(flags.FLAGS) - before:
      delattr(flags.FLAGS, name)
    flags.FLAGS.unparse_flags()


@contextlib.contextmanager
def _captured(out, err):
  """Python's stdout and stderr, absl's log handler included, into
  `out` and `err`."""
  handler = logging.get_absl_handler().python_handler
  saved = handler.stream
  handler.stream = err
  try:
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
      yield
  finally:
    handler.stream = saved


def _exit_code(code):
  """The process exit status SystemExit(code) gives."""
  if code is None:
    return 0
  if isinstance(code, int):
    return code
  print(code, file=sys.stderr)
  return 1


def run_program(program, *args, env=None, cwd=None):
  """Runs `python PROGRAM ARGS` in this process.

  Args:
    program: path of the program, relative to the repository (e.g.
      "train_gpu.py", "scripts/x.py") or absolute.
    *args: its command-line arguments (str).
    env: the environment it sees (default: this process's).
    cwd: its working directory (default: this process's).

  Returns:
    Result(returncode, stdout, stderr): an uncaught exception gives 1 and
    its traceback, as the interpreter would.
  """
  path = os.path.join(REPO, program)
  out, err = io.StringIO(), io.StringIO()
  saved_argv = sys.argv
  sys.argv = [path, *args]
  try:
    with _environment(env, cwd), _fresh_flags(), _captured(out, err):
      try:
        runpy.run_path(path, run_name="__main__")
        code = 0
      except SystemExit as e:
        code = _exit_code(e.code)
      except KeyboardInterrupt:
        raise
      except BaseException:  # pylint: disable=broad-except
        traceback.print_exc()
        code = 1
  finally:
    sys.argv = saved_argv
  return Result(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def file_size_limit(limit):
  """Files this process writes may not grow beyond `limit` bytes during the
  block (`ulimit -f`, the soft limit, put back afterwards); with SIGXFSZ
  ignored a write beyond it fails with EFBIG ("File too large"), as a full
  disk fails a write with ENOSPC. For a program run in-process
  (`run_program`)."""
  previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
  previous = resource.getrlimit(resource.RLIMIT_FSIZE)
  resource.setrlimit(resource.RLIMIT_FSIZE, (limit, previous[1]))
  try:
    yield
  finally:
    resource.setrlimit(resource.RLIMIT_FSIZE, previous)
    signal.signal(signal.SIGXFSZ, previous_handler)


def assert_ended(result, code, line):
  """A program's run (`run_program`'s Result or a CompletedProcess) ended
  with exit code `code` and `line` as the last line of its stderr."""
  assert result.returncode == code, result.stderr[-3000:]
  assert result.stderr.strip().splitlines()[-1] == line
