"""Every `--name` a program can print names one of its own flags.

A message that names a flag the program does not have (train_gpu.py said
"differs in --split=valid", data_utils.py's flag, for its --eval_split)
sends the user looking for a flag that is not there. Checked statically,
per program, over the code it can reach:

* reach: from the program's script, every function, class and module-level
  statement its code refers to, through the repository's imports (a class
  referred to brings all its methods); this over-approximates what runs.
* literal names: every string of that code (docstrings aside) naming
  `--name` must name a flag of the program, or of a program the same string
  names ("data_utils.py --split");
* computed names: `f"--{x}"` where `x` is a loop variable over literal
  names (a tuple, a dict's keys, a module constant, what a function or
  method returns) or a parameter given such names at the calls the program
  reaches, also through a nested function's closure (a callback's free
  variable is its enclosing function's); the names must be flags of the
  program. A site that cannot be
  resolved is an error;
* code that names another program's flags (a command it runs) is listed
  in OTHER_PROGRAMS, and code the reach counts but whose run-time guard
  keeps a program away from it in GUARDED, each with its reason;
* help texts: the help of each flag a program defines names only flags of
  that program (or of a program it names).

The flag catalog (`xlnet/flags/groups.py`, `catalog.py`, `task_catalog.py`)
holds the help texts of every program side by side; its strings are
checked as help texts, per program, not as messages.
"""
import ast
import functools
import os
import re

import pytest

from tests.programs import program_flags
from tests.programs import test_help

REPO = program_flags.REPO
PROGRAMS = program_flags.PROGRAMS
FLAG_MODULES = ("xlnet.flags.groups", "xlnet.flags.catalog",
                "xlnet.flags.task_catalog")
# `--name` (flags have no hyphen: `--no-deps`, a pip option, is not one).
NAME = re.compile(r"(?<![\w-])--([a-z][a-z0-9_]*)(?![\w-])")
PROGRAM_NAME = re.compile(r"(?<![\w/.-])((?:scripts/|bench/)?\w+\.py)\b")
ABSL = test_help.ABSL_FLAGS

FINETUNING = ("run_classifier.py", "run_squad.py", "run_race.py")

# Code that names the flags of the programs it tells the user to run:
# (module, function) -> those programs (their flags are checked instead).
OTHER_PROGRAMS = {
    # The command line of each task's program, and of the SQuAD
    # preprocessing shards.
    ("xlnet.reproduce.plan", "task_command"): FINETUNING,
    ("xlnet.reproduce.plan", "_argv"): FINETUNING,
    ("xlnet.reproduce.plan", "prepro_commands"): ("run_squad.py",),
    # The flags a fine-tuning program loading the converted head needs.
    ("xlnet.interop.hf_import", "import_hf"): ("run_classifier.py",
                                               "run_race.py"),
    # The flags to give reproduce.py (and the fine-tuning programs) for
    # what download.py fetched.
    ("xlnet.downloads.installer", "flags_to_pass"): ("reproduce.py",),
    # The comparison's steps: token records, then each run's training and
    # held-out evaluation.
    # The chain's stages: each program's command line, and the HF check's.
    ("xlnet.chain.plan", "_spm_command"): ("spm_train.py",),
    ("xlnet.chain.plan", "_records_commands"): ("data_utils.py",),
    ("xlnet.chain.plan", "pretrain_command"): ("train_gpu.py",),
    ("xlnet.chain.plan", "probe_command"): ("scripts/demo_report.py",),
    ("xlnet.chain.plan", "finetune_command"): ("run_classifier.py",),
    ("xlnet.chain.plan", "hf_exports"): ("convert_checkpoint.py",),
    ("xlnet.chain.plan", "hf_check_command"): ("bench/chain_hf_check.py",),
    ("bench/online_vs_offline.py", "write_token_records"): ("data_utils.py",),
    ("bench/online_vs_offline.py", "train_and_eval"): ("train_gpu.py",
                                                       "eval_pretrain.py"),
    # A pretrained start against a random one: each run's command line.
    ("bench/tagging_result.py", "run_ner"): ("run_ner.py",),
    # The long-document bench's runs: each mode's flags and the command.
    ("bench/long_documents.py", "mode_flags"): ("run_classifier.py",),
    ("bench/long_documents.py", "run_command"): ("run_classifier.py",),
}

# Code the static reach counts for a program but that its runs never reach
# with names it lacks: (module, function) -> (the programs, or None for
# all; why). Kept short: each entry is a claim the scan cannot check.
# bench/chain_hf_check.py loads a fine-tuned classifier to predict in memory:
# a default DeviceConfig, so no TPU or multi-host path runs.
ONE_DEVICE = (("bench/chain_hf_check.py", "extract_features.py"),
              "load_classifier and extract_features predict on one device "
              "(a default DeviceConfig: no TPU, one host)")
GUARDED = {
    ("xlnet.validation", "check_value"): (
        None, "check_all checks only the names the flags (hasattr) or a "
        "config (its fields, named after the flags of the programs that "
        "build it) hold; record_writer.py passes data_utils.py's "
        "--bsz_per_host and --num_core_per_host"),
    ("xlnet.validation", "number_or_word"): (
        None, "names a setting of NUMBER_OR_WORD (run_classifier.py's "
        "--multi_label_threshold), from check_value's names or that "
        "flag's parser"),
    ("xlnet.validation", "check_timeout"): (
        None, "called by check_value alone, for a name of TIMEOUTS (its "
        "guard holds)"),
    ("xlnet.chain.api", "_as_flag"): (
        ("bench/chain.py",), "names a setting of chain.json: a ChainConfig "
        "field, each one of bench/chain.py's flags but summary_type, which "
        "only the Python API changes from its default"),
    ("xlnet.validation", "check_choice"): (
        None, "names a flag of check_value's or the eval_split of "
        "finetuning/config.py's task rules (run_classifier.py's and "
        "run_race.py's --eval_split)"),
    ("xlnet.validation", "check_precision"): (
        ("convert_checkpoint.py", "scripts/demo_report.py", "bench/chain.py",
         "bench/chain_hf_check.py", "extract_features.py"), "their RunConfig "
        "(saved_model.py, demo_predict.py, chain/linear_probe.py, "
        "vectors/extractor.py) keeps use_fp16=False"),
    ("xlnet.programs.cli", "_flag_entry"): (
        None, "prints --help entries of the program's own flags (checked "
        "by test_help.py)"),
    ("xlnet.training.config", "BatchLayout.__post_init__"): (
        FINETUNING, "fine-tuning layouts keep mem_len=0 (no --mem_len)"),
    ("xlnet.data.token_stream", "LineEncoder._parse_ids"): (
        ("scripts/demo_report.py", "bench/chain_hf_check.py"), "the demo "
        "and the chain's HF check read raw text (from_raw_text=True)"),
    ("xlnet.training.strategies", "create_strategy"): ONE_DEVICE,
    ("xlnet.training.strategies", "one_host_strategy"): ONE_DEVICE,
    ("xlnet.training.strategies", "tpu_cluster_resolver"): ONE_DEVICE,
    ("xlnet.training.strategies", "worker_tf_config"): ONE_DEVICE,
    ("xlnet.training.cluster_wait", None): ONE_DEVICE,
    ("xlnet.training.cluster_wait", "split_address"): ONE_DEVICE,
    ("xlnet.training.cluster_wait", "timeout_message"): ONE_DEVICE,
    ("xlnet.training.cluster_wait", "_listen"): ONE_DEVICE,
    ("xlnet.finetuning.classifier.datasets",
     "UserTableProcessor._columns_for"): (
        None, "the column spec's keys are text_a, text_b and label: "
        "--text_a_column, --text_b_column, --label_column"),
    ("xlnet.finetuning.classifier.processors", "parse_column"): (
        None, "names the column flag its callers pass: run_classifier.py's "
        "--label_column, --text_a_column, --text_b_column (datasets.py) and "
        "extract_features.py's --text_a_column, --text_b_column "
        "(vectors/inputs.py)"),
    ("bench/model_step.py", None): (
        ("bench/model_step.py",), "--tf_xla_cpu_global_jit is "
        "TensorFlow's, set in TF_XLA_FLAGS"),
}


class _Module:
  """A parsed module: its imports, top-level definitions, docstrings."""

  def __init__(self, name, path, known):
    with open(path, encoding="utf-8") as f:
      self.tree = ast.parse(f.read())
    self.name = name
    self.imports = {}  # local name -> (module,) or (module, attribute)
    for node in ast.walk(self.tree):
      if isinstance(node, ast.Import):
        for alias in node.names:
          local = alias.asname or alias.name.split(".")[0]
          self.imports[local] = (alias.name if alias.asname
                                 else alias.name.split(".")[0],)
      elif isinstance(node, ast.ImportFrom) and node.module:
        for alias in node.names:
          full = f"{node.module}.{alias.name}"
          self.imports[alias.asname or alias.name] = (
              (full,) if full in known else (node.module, alias.name))
    self.defs = {n.name: n for n in self.tree.body if isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    self.constants = {}  # module-level NAME = value
    for node in self.tree.body:
      if isinstance(node, ast.Assign) and len(node.targets) == 1 and (
          isinstance(node.targets[0], ast.Name)):
        self.constants[node.targets[0].id] = node.value
    self.parents = {id(child): node for node in ast.walk(self.tree)
                    for child in ast.iter_child_nodes(node)}
    self.docstrings = set()
    for node in ast.walk(self.tree):
      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef,
                           ast.AsyncFunctionDef)) and node.body:
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value,
                                                      ast.Constant):
          self.docstrings.add(id(first.value))

  def top_level(self):
    """Module-level statements other than definitions."""
    return [n for n in self.tree.body if not isinstance(
        n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


@functools.lru_cache(maxsize=None)
def _modules():
  """{module name: _Module} of the library (`xlnet.data.input_pipeline`)
  and of the programs (their paths, `train_gpu.py`)."""
  paths = {}
  for root, _, names in os.walk(os.path.join(REPO, "xlnet")):
    for n in names:
      if n.endswith(".py"):
        rel = os.path.relpath(os.path.join(root, n), REPO)[:-3]
        paths[rel.replace("/", ".").removesuffix(".__init__")] = rel + ".py"
  paths.update({p: p for p in PROGRAMS})
  return {name: _Module(name, os.path.join(REPO, path), paths)
          for name, path in paths.items()}


def _target(module, node):
  """The (module, definition) a Name or `module.attr` node refers to."""
  mods = _modules()
  if isinstance(node, ast.Name):
    if node.id in module.defs:
      return module.name, node.id
    ref = module.imports.get(node.id, ())
    if len(ref) == 2 and ref[0] in mods and ref[1] in mods[ref[0]].defs:
      return ref
  elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
    ref = module.imports.get(node.value.id, ())
    if len(ref) == 1 and ref[0] in mods and node.attr in mods[ref[0]].defs:
      return ref[0], node.attr
  return None


def _body(key):
  """The AST nodes of a reach node: a definition, or (module, None) for a
  module's top-level statements."""
  module = _modules()[key[0]]
  return module.top_level() if key[1] is None else [module.defs[key[1]]]


def _refers_to(key):
  """The reach nodes `key`'s code refers to."""
  module, mods, out = _modules()[key[0]], _modules(), set()
  for top in _body(key):
    for node in ast.walk(top):
      target = _target(module, node)
      if target:
        out.add(target)
      ref = (module.imports.get(node.id, ())
             if isinstance(node, ast.Name) else ())
      if len(ref) == 1 and ref[0] in mods:
        out.add((ref[0], None))
      elif len(ref) == 2 and ref[0] in mods:
        out.add((ref[0], None))
  return out


@functools.lru_cache(maxsize=None)
def _reach(program):
  """Every reach node of the program: (module, definition or None)."""
  seen, todo = set(), [(program, None)]
  while todo:
    key = todo.pop()
    if key in seen:
      continue
    seen.add(key)
    todo.append((key[0], None))  # a module's definitions need its imports
    todo.extend(_refers_to(key) - seen)
  return frozenset(seen)


def _qualname(module, function):
  """`Class.method` or `function` (None: module level)."""
  if function is None:
    return None
  parent = module.parents.get(id(function))
  while parent is not None and not isinstance(parent, ast.ClassDef):
    parent = module.parents.get(id(parent))
  return f"{parent.name}.{function.name}" if parent else function.name


def _enclosing_function(module, node):
  """The innermost function around `node`, or None at module level."""
  node = module.parents.get(id(node))
  while node is not None and not isinstance(node, (ast.FunctionDef,
                                                   ast.AsyncFunctionDef)):
    node = module.parents.get(id(node))
  return node


def _bindings(function, name):
  """The loops (For, comprehension) and assignments in `function` that bind
  `name`."""
  found = []
  for node in ast.walk(function):
    if isinstance(node, (ast.For, ast.comprehension)) and (
        _first_name(node.target) == name):
      found.append(node)
    elif isinstance(node, ast.Assign) and [getattr(t, "id", None)
                                          for t in node.targets] == [name]:
      found.append(node)
  return found


def _first_name(target):
  """The variable a loop target binds first (`name` of `name, (a, b)`)."""
  if isinstance(target, ast.Tuple) and target.elts:
    return _first_name(target.elts[0])
  return target.id if isinstance(target, ast.Name) else None


def _constant(module, node):
  """(module, value) of a module constant that `node` names, or None."""
  mods = _modules()
  if isinstance(node, ast.Name) and node.id in module.constants:
    return module, module.constants[node.id]
  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
    ref = module.imports.get(node.value.id, ())
    if len(ref) == 1 and ref[0] in mods and (
        node.attr in mods[ref[0]].constants):
      return mods[ref[0]], mods[ref[0]].constants[node.attr]
  return None


def _union(parts):
  return None if None in parts else set().union(*parts)


def _names(ctx, node, depth=0):
  """The strings `node` can hold, where `ctx` = (program, module, function
  around it or None): literals, tuples/lists/dicts (keys) of them, module
  constants, loop variables, local variables, parameters (the values of
  the program's calls); None when it cannot tell."""
  program, module, function = ctx
  if depth > 12:
    return None
  if isinstance(node, ast.Constant) and isinstance(node.value, str):
    return {node.value}
  if isinstance(node, ast.Constant) and node.value is None:
    return set()
  if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
    return _union([_names(ctx, e, depth + 1) for e in node.elts])
  if isinstance(node, ast.Dict):
    return _union([_names(ctx, k, depth + 1) for k in node.keys])
  if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
    return _union([_names(ctx, node.left, depth + 1),
                   _names(ctx, node.right, depth + 1)])
  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
      node.func.attr in ("items", "keys")):
    return _names(ctx, node.func.value, depth + 1)
  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
      node.func.id in ("tuple", "list", "set", "sorted")) and node.args:
    return _names(ctx, node.args[0], depth + 1)
  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
      node.func.id == "dict"):  # dict(mapping, key=value): the keys
    return _union([_names(ctx, a, depth + 1) for a in node.args] +
                  [{k.arg} for k in node.keywords if k.arg])
  target = isinstance(node, ast.Call) and _target(module, node.func)
  if target and isinstance(_modules()[target[0]].defs[target[1]],
                           ast.FunctionDef):
    function = _modules()[target[0]].defs[target[1]]
    callee = (program, _modules()[target[0]], function)
    return _union([_names(callee, r.value, depth + 1)
                   for r in ast.walk(function)
                   if isinstance(r, ast.Return) and r.value is not None])
  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
    return _method_return_names(program, node.func.attr, depth)
  comprehension_of = {ast.ListComp: "elt", ast.SetComp: "elt",
                      ast.GeneratorExp: "elt", ast.DictComp: "key"}
  element = getattr(node, comprehension_of.get(type(node), ""), None)
  if isinstance(element, ast.Name):  # (a dict's: its keys)
    loops = [g for g in node.generators if _first_name(g.target) ==
             element.id]
    return _loop_names(ctx, loops[0], depth) if loops else None
  # A name a nested function does not bind is its enclosing function's
  # (a closure: the `prepare` callback a caller hands to `trainer.fit`).
  scope = function
  while isinstance(node, ast.Name) and scope is not None:
    ctx = (program, module, scope)
    bound = _bindings(scope, node.id)
    if bound:
      return _union([_loop_names(ctx, b, depth) if not isinstance(
          b, ast.Assign) else _names(ctx, b.value, depth + 1) for b in bound])
    if _is_parameter(scope, node.id):
      return _parameter_names(program, module, scope, node.id, depth)
    scope = _enclosing_function(module, scope)
  constant = _constant(module, node)
  if constant:
    return _names((program, constant[0], None), constant[1], depth + 1)
  return None


def _method_return_names(program, method, depth):
  """What the methods named `method` of the program's classes return."""
  found = []
  for key in _reach(program):
    module = _modules()[key[0]]
    for top in _body(key):
      if not isinstance(top, ast.ClassDef):
        continue
      for function in top.body:
        if getattr(function, "name", None) != method:
          continue
        ctx = (program, module, function)
        found += [_names(ctx, r.value, depth + 1) for r in ast.walk(function)
                  if isinstance(r, ast.Return) and r.value is not None]
  return _union(found) if found else None


def _loop_names(ctx, loop, depth):
  """The first variable's values of a loop (`for name, why in PAIRS`)."""
  if isinstance(loop.target, ast.Name):
    return _names(ctx, loop.iter, depth + 1)
  items = loop.iter
  constant = _constant(ctx[1], items)
  if constant:
    ctx, items = (ctx[0], constant[0], None), constant[1]
  if isinstance(items, ast.Call) and isinstance(items.func, ast.Attribute) and (
      items.func.attr == "items"):
    return _names(ctx, items.func.value, depth + 1)  # a dict's keys
  if isinstance(items, (ast.Tuple, ast.List)) and all(
      isinstance(e, ast.Tuple) and e.elts for e in items.elts):
    return _union([_names(ctx, e.elts[0], depth + 1) for e in items.elts])
  return None


def _is_parameter(function, name):
  args = function.args
  return name in [a.arg for a in args.posonlyargs + args.args +
                  args.kwonlyargs + [args.vararg, args.kwarg] if a]


def _parameter_names(program, module, function, parameter, depth):
  """The strings the program's calls of `function` pass as `parameter` (a
  `**kwargs` parameter: the keywords' names); None if unknown."""
  args = function.args
  positional = [a.arg for a in args.posonlyargs + args.args]
  named = positional + [a.arg for a in args.kwonlyargs]
  defaults = dict(zip(positional[::-1], args.defaults[::-1]))
  calls = _calls(program).get((module.name, function.name), [])
  found = set()
  for caller, call in calls:
    if args.kwarg and parameter == args.kwarg.arg:
      found |= {k.arg for k in call.keywords if k.arg not in named}
      continue
    given = [k.value for k in call.keywords if k.arg == parameter]
    if parameter in positional:
      # A method called as `obj.method(...)` has no `self` argument.
      i = positional.index(parameter) - (positional[:1] == ["self"])
      given += call.args[i:i + 1]
      if not given and parameter in defaults:
        given = [defaults[parameter]]
    elif args.vararg and parameter == args.vararg.arg:
      given += call.args[len(positional):]
    ctx = (program, caller, _enclosing_function(caller, call))
    names = _union([_names(ctx, v, depth + 1) for v in given])
    if names is None:
      return None
    found |= names
  return found if calls else None


@functools.lru_cache(maxsize=None)
def _calls(program):
  """{(module, definition): [(calling _Module, ast.Call)]}: every call the
  program's reach makes to a function of the repository (read once per
  program; `_parameter_names` looks its calls up here)."""
  out = {}
  for key in _reach(program):
    caller = _modules()[key[0]]
    for top in _body(key):
      for call in ast.walk(top):
        target = isinstance(call, ast.Call) and _target(caller, call.func)
        if target:
          out.setdefault(target, []).append((caller, call))
  return out


def _messages(program):
  """(where, text, computed names or None) of every string the program can
  reach outside the flag catalog: each literal (its computed names empty)
  and each `--{x}` (its text empty); `where` is (module, `Class.function`
  or None, line)."""
  out = []
  for key in sorted(_reach(program), key=str):
    if key[0] in FLAG_MODULES:
      continue
    module = _modules()[key[0]]
    for top in _body(key):
      for node in ast.walk(top):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
            id(node) not in module.docstrings):
          function = _enclosing_function(module, node)
          where = (key[0], _qualname(module, function), node.lineno)
          out.append((where, node.value, set()))
        if not isinstance(node, ast.JoinedStr):
          continue
        for before, value in zip(node.values, node.values[1:]):
          if isinstance(before, ast.Constant) and str(
              before.value).endswith("--") and isinstance(
                  value, ast.FormattedValue):
            function = _enclosing_function(module, node)
            names = _names((program, module, function), value.value)
            where = (key[0], _qualname(module, function), node.lineno)
            out.append((where, "", names))
  return out


def _allowed(program, text, flags_of, others=()):
  """The names a string may use: the program's flags, absl's, and those of
  the programs it names (and of `others`)."""
  allowed = set(flags_of[program]) | ABSL
  for other in PROGRAM_NAME.findall(text) + list(others):
    allowed |= set(flags_of.get(other, ()))
  return allowed


@pytest.fixture(scope="module")
def defined():
  """{program: {flag: [type, default, help, enum values, module]}}."""
  return {p: program_flags.defined(p) for p in PROGRAMS}


@pytest.fixture(scope="module")
def flags_of(defined):  # pylint: disable=redefined-outer-name
  """{program: its flag names}."""
  return {p: set(f) for p, f in defined.items()}


@pytest.mark.parametrize("program", PROGRAMS)
def test_messages_name_only_the_programs_flags(flags_of, program):
  wrong = []
  for (module, function, line), text, computed in _messages(program):
    programs, _ = GUARDED.get((module, function), ((), None))
    if programs is None or program in programs:
      continue
    if computed is None:
      wrong.append(f"{module}:{line} ({function}): --{{...}} not resolved")
      continue
    names = set(NAME.findall(text)) | computed
    others = OTHER_PROGRAMS.get((module, function), ())
    unknown = names - _allowed(program, text, flags_of, others)
    if unknown:
      wrong.append(f"{module}:{line} ({function}): {sorted(unknown)}")
  assert not wrong, f"{program} can print flags it does not have:\n" + (
      "\n".join(wrong))


@pytest.mark.parametrize("program", PROGRAMS)
def test_help_texts_name_only_the_programs_flags(defined, flags_of,
                                                 program):
  wrong = {}
  for name, (_, _, text, *_) in defined[program].items():
    unknown = set(NAME.findall(text)) - _allowed(program, text, flags_of)
    if unknown:
      wrong[name] = sorted(unknown)
  assert not wrong, (program, wrong)


def test_the_scan_reaches_the_code_and_resolves_computed_names():
  """What the checks above stand on: the reach follows the imports and
  calls (and no further), and computed names come out of loops, constants,
  parameters, dicts built by functions and methods, and **kwargs."""
  reach = _reach("train_gpu.py")
  assert ("xlnet.data.input_pipeline", "find_record_files") in reach
  assert ("xlnet.pretraining.inputs", "check_split") in reach
  assert not {m for m, _ in reach} & {"xlnet.finetuning.squad.task",
                                       "xlnet.interop.hf_import"}
  computed = {}
  for program in ("train_gpu.py", "run_squad.py", "model_utils.py"):
    for (module, function, _), _, names in _messages(program):
      computed.setdefault((program, module, function), set()).update(
          names or ())
  assert computed["train_gpu.py", "xlnet.flags.pretraining",
                  "resolve_flags"] == {"seq_len", "reuse_len", "uncased",
                                       "bi_data", "mask_alpha", "mask_beta",
                                       "num_predict"}
  assert computed["run_squad.py", "xlnet.finetuning.squad.features",
                  "load_squad_json"] == {"train_file", "predict_file"}
  assert computed["run_squad.py", "xlnet.training.train_state",
                  "compare_run_record"] == {"train_batch_size", "num_hosts",
                                            "num_core_per_host",
                                            "accum_steps"}
  assert computed["model_utils.py", "model_utils.py", "_require"] == {
      "clean_input_ckpt", "clean_output_model_dir", "avg_model_dir",
      "avg_output_model_dir", "model_dir"}
