"""Every program's `--help` lists exactly its own flags, grouped, with their
defaults, and every flag the docs give it; it exits as absl's `--help`.

The programs are setup.py's PROGRAMS (the installed commands, so a new one
is covered) and the scripts under scripts/ and bench/ that run through
`cli.run`. The flags a program defines come from running its definitions
with absl's `app.run` replaced (test_flag_catalog's dump), independently of
the help text; each `--help` runs in its own interpreter, as a user runs
it."""
import ast
from concurrent import futures
import json
import os
import re
import subprocess
import sys

import pytest

from tests.programs import test_flag_catalog
from tests.programs import test_readme

REPO = test_flag_catalog.REPO
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
# absl's flags that a --help may name in its prose and the docs may use.
ABSL_FLAGS = {"flagfile", "help", "helpfull", "helpshort"}


def _setup_programs():
  """setup.py's PROGRAMS (read, not imported: importing runs setup())."""
  tree = ast.parse(test_readme._read("setup.py"))
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
      if name.endswith(".py") and "cli.run(" in test_readme._read(path):
        found.append(path)
  return found


PROGRAMS = _setup_programs() + _cli_scripts()


def _run_help(program):
  return subprocess.run([sys.executable, program, "--help"], cwd=REPO,
                        capture_output=True, text=True, timeout=300, env=ENV)


@pytest.fixture(scope="module")
def helps():
  """{program: CompletedProcess of `python program --help`}."""
  with futures.ThreadPoolExecutor(3) as pool:
    return dict(zip(PROGRAMS, pool.map(_run_help, PROGRAMS)))


@pytest.fixture(scope="module")
def defined():
  """{program: {flag: [type, default, help, enum values, module]}}."""
  proc = subprocess.run([sys.executable, "-c", test_flag_catalog._DUMP]
                        + PROGRAMS, cwd=REPO, capture_output=True, text=True,
                        timeout=300, env=ENV)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return json.loads(proc.stdout.strip().split("\n")[-1])


@pytest.fixture(scope="module")
def absl_help_status():
  """The exit status of absl's own --help (a program defining no flag)."""
  proc = subprocess.run(
      [sys.executable, "-c", "from absl import app; app.run(lambda a: None)",
       "--help"], capture_output=True, text=True, timeout=300, env=ENV)
  assert "Try --helpfull" in proc.stdout, proc.stdout
  return proc.returncode


def _sections(text):
  """{section title: {flag name: its entry, one line}} of a --help text:
  a section is a line `Title:` followed by entries `  --name: ...`."""
  sections, title, name = {}, None, None
  for line in text.split("\n"):
    entry = re.match(r"  --(?:\[no\])?(\w+): ", line)
    if re.fullmatch(r"\S.*:", line):
      title = line[:-1]
      assert title not in sections, f"section {title!r} listed twice"
      sections[title] = {}
    elif entry and title is not None:
      name = entry.group(1)
      sections[title][name] = line.strip()
    elif line.startswith("      ") and name and title is not None:
      sections[title][name] += " " + line.strip()
    elif not line.strip():
      title = name = None
  return sections


def _default_text(kind, value):
  """How absl writes a default: booleans true/false, lists joined by
  commas, other values as str()."""
  if kind == "bool":
    return str(value).lower()
  if isinstance(value, list):
    return ",".join(value)
  return str(value)


@pytest.mark.parametrize("program", PROGRAMS)
def test_help_lists_exactly_the_programs_flags_with_defaults(
    helps, defined, absl_help_status, program):
  proc = helps[program]
  assert proc.returncode == absl_help_status, (program, proc.stderr[-2000:])
  assert "Traceback" not in proc.stderr, (program, proc.stderr[-2000:])
  sections = _sections(proc.stdout)
  listed = {name: entry for entries in sections.values()
            for name, entry in entries.items()}
  own = defined[program]
  # Its own flags, and no absl or TensorFlow flag (--logtostderr, --v, ...).
  assert sorted(listed) == sorted(own), program
  assert sum(len(e) for e in sections.values()) == len(own), program
  for name, (kind, default, *_) in own.items():
    if default is not None:
      assert f"default: '{_default_text(kind, default)}'" in listed[name], (
          program, name, listed[name])
  # The library's flags sit under their catalog groups' titles, not under
  # the program's name (what a flag defined outside the catalog gets).
  fallback = sections.get(os.path.basename(program), {})
  catalog = {n for n, (*_, module) in own.items()
             if module.startswith("xlnet.")}
  assert not catalog & set(fallback), (program, catalog & set(fallback))
  assert "Try --helpfull" in proc.stdout


def _doc_mentions():
  """{program: [(page, flag names)]}: the flags the README and docs/ give
  a program, in commands (fenced or indented blocks) and inline code."""
  names = {os.path.basename(p): p for p in PROGRAMS}
  names.update({p: p for p in PROGRAMS})
  mention = re.compile(r"(?<![\w/.-])((?:scripts/|bench/)?\w+\.py)\b")
  found = {}
  for page in test_readme.PAGES:
    text = test_readme._read(page)
    chunks = test_readme._commands(text) + re.findall(r"`([^`\n]+)`", text)
    for chunk in chunks:
      parts = mention.split(chunk)  # [text, program, args, program, ...]
      for program, args in zip(parts[1::2], parts[2::2]):
        if program in names:
          flags = re.findall(r"(?<!\S)--(\w+)", args)
          found.setdefault(names[program], []).append((page, flags))
  return found


def test_help_lists_every_flag_the_docs_give_a_program(helps):
  mentions = _doc_mentions()
  assert {"train_gpu.py", "data_utils.py", "run_classifier.py",
          "convert_checkpoint.py"} <= set(mentions)
  for program, uses in mentions.items():
    listed = {n for e in _sections(helps[program].stdout).values()
              for n in e}
    for page, flags in uses:
      unknown = set(flags) - listed - ABSL_FLAGS
      assert not unknown, (page, program, unknown)
