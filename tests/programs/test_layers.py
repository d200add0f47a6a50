"""The package's imports point down only: programs above the library.

The import graph of `xlnet/` is read from the sources (every `import` and
`from ... import`, at module level and inside functions), so it sees an
import that runs only on some path. Each module belongs to one layer of
LAYERS; a module may import its own layer and those below it, never one
above (docs/layout.md, "Layers"). In particular no library module imports
`xlnet.flags` or `xlnet.programs` (`cli` is `xlnet.programs.cli`), and importing the Python
API defines no absl flag (checked in a fresh interpreter).
"""
import ast
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PACKAGE = os.path.join(REPO, "xlnet")

# The layers, lowest first: (name, the modules and packages in it).
LAYERS = (
    ("errors", ("xlnet.errors",)),
    ("signals", ("xlnet.signals",)),
    ("files, configs, rules", ("xlnet.io_utils", "xlnet.gfile_io",
                               "xlnet.settings_files",
                               "xlnet.configs", "xlnet.model_config",
                               "xlnet.validation",
                               "xlnet.program_defaults",
                               "xlnet.task_kinds")),
    ("data, model", ("xlnet.data", "xlnet.modeling", "xlnet.model",
                     "xlnet.pretraining_loss", "xlnet.finetune_backbone",
                     "xlnet")),  # the package: `from xlnet import XLNetModel`
    ("training", ("xlnet.training",)),
    # Programs driven as children, their work dir and ETA: the base of
    # reproduce and chain; uses training's lock and durations.
    ("runs", ("xlnet.runs",)),
    # Fetching and unpacking: uses training's locks and progress lines.
    ("downloads", ("xlnet.downloads",)),
    ("pretraining, finetuning", ("xlnet.pretraining", "xlnet.finetuning",
                                 "xlnet.demo")),
    ("interop", ("xlnet.interop",)),  # reads finetuning's configs
    # The paper's tables through the fine-tuning programs; the chain in
    # miniature through pretraining's and fine-tuning's: side by side on
    # runs, neither importing the other (checked below).
    ("reproduce, chain", ("xlnet.reproduce", "xlnet.chain")),
    ("flags", ("xlnet.flags",)),
    ("cli", ("xlnet.programs.cli",)),
    ("programs", ("xlnet.programs",)),
)
# What only the programs (xlnet/programs/, the top-level scripts) import.
ABOVE_THE_LIBRARY = ("xlnet.flags", "xlnet.programs")

# Arrows that still point up, each with the work that removes it.
# Arrows allowed to run up for now (none: the record writer's flag rules
# moved into xlnet/validation.py).
KNOWN_UPWARD = set()


def _modules():
  """{module name: path} of every module of the package."""
  found = {}
  for root, _, names in os.walk(PACKAGE):
    for name in names:
      if name.endswith(".py"):
        path = os.path.join(root, name)
        parts = os.path.relpath(path, REPO)[:-3].split(os.sep)
        if parts[-1] == "__init__":
          parts = parts[:-1]
        found[".".join(parts)] = path
  return found


MODULES = _modules()


def _imported(name, path):
  """The package's modules that module `name` (at `path`) imports."""
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
  targets = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      targets.update(alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:  # relative: from its package, `level - 1` up
        up = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(up + ([base] if base else []))
      for alias in node.names:
        full = f"{base}.{alias.name}"
        targets.add(full if full in MODULES else base)
  return {t for t in targets if t == "xlnet" or t.startswith("xlnet.")}


GRAPH = {name: _imported(name, path) for name, path in MODULES.items()}


def _layer(module):
  """The index in LAYERS of `module`'s layer (its own entry, else its
  closest package's; the package `xlnet` names only its __init__)."""
  owners = {m: i for i, (_, members) in enumerate(LAYERS) for m in members}
  name = module
  while name:
    if name in owners and (name != "xlnet" or module == "xlnet"):
      return owners[name]
    name = name.rpartition(".")[0]
  raise AssertionError(f"{module} is in no layer of LAYERS: add it")


@pytest.mark.quick
def test_every_module_has_a_layer():
  for module in MODULES:
    _layer(module)


@pytest.mark.quick
def test_no_module_imports_a_layer_above_its_own():
  upward = {(src, dst) for src, targets in GRAPH.items() for dst in targets
            if _layer(dst) > _layer(src)}
  unexpected = sorted(upward - KNOWN_UPWARD)
  assert not unexpected, "\n".join(
      f"{src} ({LAYERS[_layer(src)][0]}) imports {dst} "
      f"({LAYERS[_layer(dst)][0]})" for src, dst in unexpected)
  gone = KNOWN_UPWARD - upward
  assert not gone, f"no longer imported, remove from KNOWN_UPWARD: {gone}"


def _folder(module):
  """The folder right under `xlnet/` that holds `module` (`xlnet` for the
  root's modules: a task's folder is part of `finetuning`)."""
  parts = module.split(".")
  is_folder = MODULES[module].endswith("__init__.py")
  return ".".join(parts[:2]) if len(parts) > 2 or is_folder else "xlnet"


@pytest.mark.quick
def test_no_two_folders_import_each_other():
  """Folders of modules, not only layers, point one way: the programs'
  convention (`cli`) left the root, which `flags/` imports."""
  arrows = {(_folder(src), _folder(dst)) for src, targets in GRAPH.items()
            for dst in targets if _folder(src) != _folder(dst)}
  both = sorted((a, b) for a, b in arrows if a < b and (b, a) in arrows)
  assert not both, both


@pytest.mark.quick
def test_reproduce_and_chain_import_nothing_from_each_other():
  """They share a layer: what both need is in `runs/`, below them."""
  wrong = sorted((src, dst) for src, targets in GRAPH.items()
                 for dst in targets
                 for a, b in (("xlnet.reproduce", "xlnet.chain"),
                              ("xlnet.chain", "xlnet.reproduce"))
                 if src.startswith(a) and dst.startswith(b))
  assert not wrong, wrong


def test_the_task_heads_need_only_the_model():
  """Each task's head (`xlnet/finetuning/<task>/head.py`) imports nothing
  above the model, so the SavedModel export (`xlnet/interop/`) takes a head
  without its task's data, records or engine."""
  heads = sorted(m for m in MODULES
                 if m.startswith("xlnet.finetuning.") and m.endswith(".head"))
  assert len(heads) == 4, heads
  model_layer = [name for name, _ in LAYERS].index("data, model")
  wrong = sorted((head, dst) for head in heads for dst in GRAPH[head]
                 if _layer(dst) > model_layer)
  assert not wrong, wrong


@pytest.mark.quick
def test_the_library_imports_neither_flags_nor_cli_nor_programs():
  """Named outright: the arrows the layers exist to forbid."""
  library = [m for m in GRAPH if not m.startswith(ABOVE_THE_LIBRARY)]
  assert library
  wrong = sorted((src, dst) for src in library for dst in GRAPH[src]
                 if dst.startswith(ABOVE_THE_LIBRARY)
                 and (src, dst) not in KNOWN_UPWARD)
  assert not wrong, wrong


def test_only_the_scripts_import_the_programs():
  """The entry modules are imported by the programs' scripts (top-level,
  scripts/, bench/), never by the package's other modules."""
  importers = sorted(src for src, targets in GRAPH.items()
                     if not src.startswith("xlnet.programs")
                     and any(t.startswith("xlnet.programs") for t in targets))
  assert not importers, importers


def test_the_import_graph_sees_every_kind_of_import(tmp_path):
  """Module-level, function-level, `import a.b`, relative imports and a
  module named by `from package import module` all count."""
  path = tmp_path / "fake.py"
  path.write_text(
      "from xlnet import io_utils\n"
      "import xlnet.data.token_stream\n"
      "from . import config\n"
      "from ..flags import catalog\n"
      "def main():\n"
      "  from xlnet.programs import cli\n"
      "  from xlnet.pretraining.api import pretrain\n")
  assert _imported("xlnet.training.fake", str(path)) == {
      "xlnet.io_utils", "xlnet.data.token_stream", "xlnet.training.config",
      "xlnet.flags.catalog", "xlnet.programs.cli",
      "xlnet.pretraining.api"}
  # And the package's own: train_gpu.py imports the programs' convention
  # at module level, the flags' resolution and the library's API in `main`.
  assert {"xlnet.programs.cli", "xlnet.flags.pretraining",
          "xlnet.pretraining.api"} <= GRAPH["xlnet.programs.train_gpu"]


# Imported in a fresh interpreter after TensorFlow (which loads absl's
# flags and defines its own): the set of defined flags must not change, and
# no module above the library may be loaded.
_PROBE = """
import json, sys
import tensorflow as tf
from absl import flags
before = set(flags.FLAGS)
import xlnet.pretraining.api, xlnet.finetuning.api, xlnet.model
import xlnet.modeling, xlnet.interop.saved_model, xlnet.interop.hf_export
import xlnet.interop.hf_import
print(json.dumps({
    "new_flags": sorted(set(flags.FLAGS) - before),
    "above": sorted(m for m in sys.modules
                    if m.startswith(("xlnet.flags", "xlnet.programs"))),
    "loaded": "xlnet.pretraining.api" in sys.modules}))
"""


@pytest.fixture(scope="module")
def probe():
  proc = subprocess.run(
      [sys.executable, "-c", _PROBE], cwd=REPO, capture_output=True,
      text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO))
  assert proc.returncode == 0, proc.stderr[-3000:]
  return json.loads(proc.stdout.strip().split("\n")[-1])


def test_importing_the_python_api_defines_no_flag(probe):
  assert probe["loaded"]
  assert probe["new_flags"] == []


def test_importing_the_python_api_loads_nothing_above_the_library(probe):
  assert probe["above"] == []


# The house's size limits: a module a reader can hold (modeling.py, the
# model in one file, excepted), a class of one role, a thin program.
MODULE_LINES, CLASS_LINES, FUNCTION_LINES, PROGRAM_LINES = 600, 280, 120, 200


def _sizes():
  """(module, class, function lines) of the package: lists of (lines,
  where)."""
  modules, classes, functions = [], [], []
  for name, path in MODULES.items():
    with open(path, encoding="utf-8") as f:
      text = f.read()
    modules.append((text.count("\n"), name))
    for node in ast.walk(ast.parse(text)):
      if isinstance(node, ast.ClassDef):
        found = classes
      elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        found = functions
      else:
        continue
      found.append((node.end_lineno - node.lineno + 1, f"{name}.{node.name}"))
  return modules, classes, functions


@pytest.mark.quick
def test_modules_classes_and_programs_stay_within_the_size_limits():
  modules, classes, functions = _sizes()
  # The walk saw the package.
  assert len(modules) > 100 and len(classes) > 50 and len(functions) > 1000
  big = [(n, m) for n, m in modules if n > MODULE_LINES
         and m != "xlnet.modeling"]
  assert not big, f"modules over {MODULE_LINES} lines: {big}"
  big = [(n, c) for n, c in classes if n > CLASS_LINES]
  assert not big, f"classes over {CLASS_LINES} lines: {big}"
  big = [(n, f) for n, f in functions if n > FUNCTION_LINES]
  assert not big, f"functions over {FUNCTION_LINES} lines: {big}"
  big = [(n, m) for n, m in modules if m.startswith("xlnet.programs.")
         and m != "xlnet.programs.cli" and n > PROGRAM_LINES]
  assert not big, f"program modules over {PROGRAM_LINES} lines: {big}"
