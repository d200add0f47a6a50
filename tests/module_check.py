"""Which library modules a test run exercised.

The newest TensorFlow runs only the tests marked `tf_version`
(docs/testing.md); this check makes sure that part still imports and
exercises every module of `xlnet/` there: a module counts when a function
or method defined in it ran, or, for a module that defines none (constants,
re-exports), when it was imported.

A trace function (sys.settrace, coverage.py) would do it, but on Python
3.11 any trace function puts the whole interpreter on its slow path: the
newest TensorFlow's part of the suite took 45% longer. The interpreter
records what is needed anyway:
- Python 3.11 counts a function's first calls in its code object
  (`co_warmup`: -8 until the first call, then up to 0, where it stays once
  the code is specialized); `start()` finds that field and checks it on a
  function of its own before the run, and the check fails if it cannot;
- Python 3.12 and newer: sys.monitoring's PY_START event, disabled for a
  code object once it has started (no cost after the first call).
At the end, `save` looks at every function object of the library that the
process holds (and the code of the functions nested in them). Each pytest
process saves what it saw; the process that started the run reads them all
in `not_exercised`.
"""
import ast
import ctypes
import gc
import json
import os
import sys
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY = os.path.join(REPO, "xlnet")
_STATE = {}
_WARMUP_START = -8  # CPython 3.11's QUICKENING_INITIAL_WARMUP_VALUE


def _short_at(code, offset):
  return ctypes.c_short.from_address(id(code) + offset).value


def _find_warmup_offset():
  """The byte offset of `co_warmup` in a 3.11 code object: the short that
  is -8 in two fresh functions' code and -7 in one of them after a call."""
  def called(x):
    return x

  def not_called(x):
    return x

  candidates = [o for o in range(16, 128, 2)
                if _short_at(called.__code__, o) == _WARMUP_START
                and _short_at(not_called.__code__, o) == _WARMUP_START]
  called(0)
  found = [o for o in candidates
           if _short_at(called.__code__, o) == _WARMUP_START + 1
           and _short_at(not_called.__code__, o) == _WARMUP_START]
  return found[0] if len(found) == 1 else None


def start():
  """Prepares the check (call before the library is imported)."""
  if sys.version_info >= (3, 12):
    monitoring = sys.monitoring
    tool = monitoring.COVERAGE_ID
    seen = _STATE["started_codes"] = set()

    def on_start(code, offset):
      seen.add(code)
      return monitoring.DISABLE

    monitoring.use_tool_id(tool, "xlnet module check")
    monitoring.register_callback(tool, monitoring.events.PY_START, on_start)
    monitoring.set_events(tool, monitoring.events.PY_START)
  elif sys.version_info >= (3, 11):
    _STATE["warmup_offset"] = _find_warmup_offset()
  _STATE["started"] = True


def started():
  return bool(_STATE.get("started"))


def _codes(code):
  """`code` and the code objects nested in it (inner functions, lambdas,
  comprehensions)."""
  yield code
  for const in code.co_consts:
    if isinstance(const, types.CodeType):
      yield from _codes(const)


def _has_run(code):
  if "started_codes" in _STATE:
    return code in _STATE["started_codes"]
  return _short_at(code, _STATE["warmup_offset"]) != _WARMUP_START


def save(run_dir):
  """Writes what this process saw into `run_dir` (one file per process).

  Raises:
    RuntimeError: on an interpreter where the check cannot see calls.
  """
  if not _STATE.get("started_codes") and _STATE.get("warmup_offset") is None:
    raise RuntimeError(
        f"the module check cannot see function calls on Python "
        f"{sys.version.split()[0]} (it reads CPython 3.11's co_warmup or "
        f"3.12's sys.monitoring)")
  called = set()
  for obj in gc.get_objects():
    if (isinstance(obj, types.FunctionType)
        and obj.__code__.co_filename.startswith(LIBRARY)
        and obj.__code__.co_filename not in called):
      if any(_has_run(code) for code in _codes(obj.__code__)):
        called.add(obj.__code__.co_filename)
  imported = [m.__file__ for m in list(sys.modules.values())
              if (getattr(m, "__file__", None) or "").startswith(LIBRARY)]
  with open(os.path.join(run_dir, f"exercised-{os.getpid()}.json"),
            "w") as f:
    json.dump({"called": sorted(called), "imported": sorted(imported)}, f)


def _defines_functions(path):
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
             for node in ast.walk(tree))


def library_files():
  """Every module of the library (absolute paths)."""
  return sorted(os.path.join(folder, name)
                for folder, _, names in os.walk(LIBRARY)
                for name in names if name.endswith(".py"))


# Modules the `latest` part need not exercise, and why (paths relative to
# the repository; a folder ends with "/").
EXEMPT = {
    "xlnet/interop/": "tests/interop runs them on the newest TensorFlow, in "
                      "the interop environment",
    "xlnet/programs/convert_checkpoint.py": "tests/interop runs it on the "
                                            "newest TensorFlow, in the "
                                            "interop environment",
    "xlnet/pretraining/estimator.py": "TPUEstimator's trainer: TensorFlow "
                                      "2.16 and later have no TPUEstimator",
}


def _exempt(relative):
  return any(relative == path or (path.endswith("/") and
                                  relative.startswith(path))
             for path in EXEMPT)


def not_exercised(run_dir):
  """The library modules (paths relative to the repository) that no
  process of the run exercised, but for those `EXEMPT` names."""
  called, imported = set(), set()
  for name in os.listdir(run_dir):
    if name.startswith("exercised-") and name.endswith(".json"):
      with open(os.path.join(run_dir, name)) as f:
        seen = json.load(f)
      called.update(seen["called"])
      imported.update(seen["imported"])
  return [os.path.relpath(path, REPO) for path in library_files()
          if not (path in called or (path in imported and
                                     not _defines_functions(path))
                  or _exempt(os.path.relpath(path, REPO)))]
