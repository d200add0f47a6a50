"""The programs whose flags and `--help` the tests check, and what each
defines and prints.

PROGRAMS are setup.py's PROGRAMS (the installed commands, so a new one is
covered) and the scripts under scripts/ and bench/ that run through
`cli.run`. For each:

* `defined(program)`: the flags it defines when it starts, found by
  running it with absl's `app.run` replaced (nothing but its flag
  definitions runs), in this process (tests/in_process.py: flags reset
  afterwards), independently of the help text;
* `help_in_process(program)`: `python PROGRAM --help` run in this process
  (milliseconds: the quick tier checks every program's help this way);
* `helps_in_fresh_processes(programs)`: each program's `--help` in a
  process of its own that has imported nothing of the repository, for what
  only a fresh process shows (its own imports suffice, its exit status,
  output on the real file descriptors, no traceback). A `python PROGRAM`
  spends ~4.5 of its ~5 CPU seconds importing TensorFlow before it reads a
  flag; here one interpreter imports TensorFlow and absl (what every
  program imports first) and forks one child per program, which runs the
  program as `python PROGRAM --help` would (its file as `__main__`, its
  folder first on sys.path), from its first line. What the fork leaves out
  is the interpreter's own start-up and TensorFlow's import, the same for
  every program and done by every subprocess test of the suite.
"""
import ast
import functools
import json
import os
import subprocess
import sys
from unittest import mock

from absl import app
from absl import flags

from tests import in_process

REPO = in_process.REPO
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)


def read(path):
  """The text of `path` (relative to the repository)."""
  with open(os.path.join(REPO, path), encoding="utf-8") as f:
    return f.read()


def _setup_programs():
  """setup.py's PROGRAMS (read, not imported: importing runs setup())."""
  tree = ast.parse(read("setup.py"))
  for node in tree.body:
    if isinstance(node, ast.Assign) and [t.id for t in node.targets] == [
        "PROGRAMS"]:
      return ast.literal_eval(node.value)
  raise AssertionError("setup.py has no PROGRAMS list")


def _cli_scripts():
  """scripts/*.py and bench/*.py that run through `cli.run`."""
  found = []
  for folder in ("scripts", "bench"):
    for name in sorted(os.listdir(os.path.join(REPO, folder))):
      path = f"{folder}/{name}"
      if name.endswith(".py") and "cli.run(" in read(path):
        found.append(path)
  return found


SETUP_PROGRAMS = _setup_programs()
PROGRAMS = SETUP_PROGRAMS + _cli_scripts()


def _relative(module):
  """A module name, or the path of a program that defined flags itself
  (its `__main__`) relative to the repository, as `python PROGRAM` names
  it."""
  if os.path.isabs(module) and module.startswith(REPO + os.sep):
    return os.path.relpath(module, REPO)
  return module


@functools.lru_cache(maxsize=None)
def defined(program):
  """{flag: [type, default, help, enum values, defining module]} of the
  flags `program` defines before `app.run` (absl's and TensorFlow's own
  left out).

  The program runs in this process up to `app.run` (which records the new
  flags and stops it); its flags are removed afterwards, as for any
  in-process run."""
  before = set(flags.FLAGS)
  found, started_once = {}, []

  def started(*args, **kwargs):
    del args, kwargs
    FL = flags.FLAGS
    for name in set(FL) - before:
      module = FL.find_module_defining_flag(name)
      if not module.startswith(("absl.", "tensorflow.")):
        found[name] = [FL[name].flag_type(), FL[name].default, FL[name].help,
                       getattr(FL[name].parser, "enum_values", None),
                       _relative(module)]
    started_once.append(True)
    raise SystemExit(0)

  with mock.patch.object(app, "run", started):
    result = in_process.run_program(program)
  assert started_once, (program, result.stderr[-3000:])
  # What a JSON round trip gives (as the flags' dump across a process did):
  # lists for tuples.
  return json.loads(json.dumps(found))


@functools.lru_cache(maxsize=None)
def help_in_process(program):
  """in_process.Result of `python PROGRAM --help` run in this process."""
  return in_process.run_program(program, "--help")


# Forks one child per command (argv[1:], each a JSON list: a program and
# its arguments, or "-m" and a module) from an interpreter that imported
# only TensorFlow and absl; each child runs the command as its own process
# would (`python PROGRAM ARGS`, `python -m MODULE`), with its output on
# files; prints [[exit status, stdout, stderr], ...].
_FORKED = r"""
import json, os, runpy, sys, tempfile, traceback
import tensorflow
from absl import app

def child(command, out, err):
  os.dup2(out.fileno(), 1)
  os.dup2(err.fileno(), 2)
  code = 0
  try:
    if command[0] == "-m":
      sys.argv = [command[1]] + command[2:]
      runpy.run_module(command[1], run_name="__main__", alter_sys=True)
    else:
      sys.argv = list(command)
      sys.path[0] = os.path.dirname(os.path.abspath(command[0]))
      runpy.run_path(command[0], run_name="__main__")
  except SystemExit as e:
    code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    if code == 1 and not isinstance(e.code, int):
      print(e.code, file=sys.stderr)
  except BaseException:
    traceback.print_exc()
    code = 1
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code)

results = []
for command in map(json.loads, sys.argv[1:]):
  with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
      child(command, out, err)
    _, status = os.waitpid(pid, 0)
    texts = []
    for f in (out, err):
      f.seek(0)
      texts.append(f.read().decode())
    results.append([os.waitstatus_to_exitcode(status)] + texts)
print(json.dumps(results))
"""


def run_in_fresh_processes(commands, python=sys.executable, cwd=REPO,
                           env=None):
  """[in_process.Result] of each command (a list: `[PROGRAM, *ARGS]`, or
  `["-m", MODULE]`) run in a process of its own, forked after TensorFlow's
  import (see the module's docstring), by `python` in `cwd` with the
  environment `env` (default: this one, with the repository on
  PYTHONPATH)."""
  proc = subprocess.run(
      [python, "-c", _FORKED, *map(json.dumps, commands)], cwd=cwd,
      capture_output=True, text=True, timeout=600,
      env=ENV if env is None else env)
  assert proc.returncode == 0, proc.stderr[-3000:]
  found = json.loads(proc.stdout.strip().split("\n")[-1])
  return [in_process.Result(*result) for result in found]


def helps_in_fresh_processes(programs, **kwargs):
  """{program: in_process.Result} of `PROGRAM --help`, each in a process of
  its own (`run_in_fresh_processes`, with its keyword arguments)."""
  results = run_in_fresh_processes([[p, "--help"] for p in programs],
                                   **kwargs)
  return dict(zip(programs, results))
