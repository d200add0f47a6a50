"""Expensive test artifacts, built once per test run and shared read-only.

A SentencePiece model, a record set, a trained tiny model directory: many
tests need the same one, and building it per test (or per pytest worker)
was most of the suite's time. `build_once(name, build, **recipe)` builds
`build(directory, **recipe)` the first time any worker of this pytest run
asks for that name and recipe, and returns the same finished directory to
every later caller:

  record_dir = build_once("program-records", _write_records, seq_len=32)

- The key is the name and the recipe (its JSON): another recipe is another
  artifact. Within one run the code under test does not change, so the
  recipe says everything that decides the content.
- One builder at a time: the workers (pytest-xdist processes) take a file
  lock per key; the others wait and then reuse the result.
- Nothing half-built is ever returned: the build goes to a temporary
  directory renamed into place when `build` returns; a failed build leaves
  nothing, and the next caller builds again.
- Read-only: a test that needs to change an artifact works on
  `copy_of(path, tmp_path)`. Every artifact's file digests are recorded when
  it is built, and `check_unchanged()` (called by conftest at the end of the
  run) fails the run naming any artifact a test modified.

The artifacts live under the run's pytest temp root (shared by the workers
of one run, a new one per run), so they cost no disk across runs.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import shutil

_ROOT = {}


def set_root(directory):
  """Sets the run's artifact directory (conftest calls this once per
  process, with a directory all workers of the run share)."""
  os.makedirs(directory, exist_ok=True)
  _ROOT["dir"] = str(directory)


def has_root():
  """Whether this process is a pytest process of a run (set_root called)."""
  return "dir" in _ROOT


def _root():
  if "dir" not in _ROOT:
    raise RuntimeError("shared_artifacts.set_root was not called (conftest "
                       "does it: run the tests with pytest)")
  return _ROOT["dir"]


@contextlib.contextmanager
def _locked(path):
  with open(path, "a") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    try:
      yield
    finally:
      fcntl.flock(f, fcntl.LOCK_UN)


def file_bytes(directory):
  """{relative path: bytes} of every file under `directory`."""
  out = {}
  for folder, _, files in os.walk(directory):
    for name in files:
      path = os.path.join(folder, name)
      with open(path, "rb") as f:
        out[os.path.relpath(path, directory)] = f.read()
  return out


def _digests(directory):
  """{relative path: sha256} of every file under `directory`."""
  return {path: hashlib.sha256(data).hexdigest()
          for path, data in file_bytes(directory).items()}


def build_once(name, build, **recipe):
  """The directory `build(directory, **recipe)` filled, built once per run.

  Args:
    name: what the artifact is (a file-name-safe word).
    build: function(directory, **recipe) that writes the artifact into the
      (existing, empty) `directory`; its return value is ignored.
    **recipe: JSON-serializable arguments of `build`; part of the key.

  Returns:
    path of the finished directory (shared: do not modify it).
  """
  text = json.dumps(recipe, sort_keys=True, default=str)
  key = f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
  final = os.path.join(_root(), key)
  with _locked(final + ".lock"):
    if not os.path.isdir(final):
      scratch = f"{final}.building-{os.getpid()}"
      shutil.rmtree(scratch, ignore_errors=True)
      os.makedirs(scratch)
      try:
        build(scratch, **recipe)
      except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
      with open(final + ".digests.json", "w") as f:
        json.dump(_digests(scratch), f)
      os.rename(scratch, final)
  return final


def copy_of(path, destination):
  """A private, writable copy of the shared artifact (file or directory)
  `path` at `destination` (returned)."""
  destination = str(destination)
  if os.path.isdir(path):
    shutil.copytree(path, destination)
  else:
    shutil.copyfile(path, destination)
  return destination


def check_unchanged():
  """Names of the artifacts whose files differ from when they were built
  (an empty list when every artifact is intact)."""
  root = _ROOT.get("dir")
  if not root or not os.path.isdir(root):
    return []
  changed = []
  for entry in sorted(os.listdir(root)):
    if not entry.endswith(".digests.json"):
      continue
    directory = os.path.join(root, entry[:-len(".digests.json")])
    if not os.path.isdir(directory):
      continue
    with open(os.path.join(root, entry)) as f:
      if json.load(f) != _digests(directory):
        changed.append(os.path.basename(directory))
  return changed
