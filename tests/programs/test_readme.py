"""The README and docs/ tell the truth: their Python examples run, their links
and paths exist, every program and flag their commands use is defined, and
nothing points outside the repository."""
import contextlib
import io
import os
import re
import subprocess

import pytest

from tests import in_process
from xlnet import configs

# Quick: the whole file takes about a second, and an edit of the docs is as
# likely to break it as an edit of a program's flags.
pytestmark = pytest.mark.quick

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = sorted(os.path.join("docs", n) for n in os.listdir(
    os.path.join(REPO, "docs")) if n.endswith(".md"))
PAGES = ["README.md"] + DOCS


def _read(path):
  with open(os.path.join(REPO, path), encoding="utf-8") as f:
    return f.read()


def _fenced(text, language):
  return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def _commands(text):
  """Shell commands of a page (fenced bash blocks and 4-space indented
  blocks), continuation lines joined."""
  blocks = _fenced(text, "bash") + _fenced(text, "sh")
  blocks += ["\n".join(line[4:] for line in block.split("\n"))
             for block in re.findall(r"^    \S.*\n(?:^    .*\n)*", text,
                                     re.M)]
  commands = []
  for block in blocks:
    for command in block.replace("\\\n", " ").split("\n"):
      command = command.split(" #")[0].strip()
      if command:
        commands.append(command)
  return commands


@pytest.mark.eager  # as a fresh `python` runs it; the example makes its graph
def test_readme_python_examples_run():
  """Each example runs, and prints what its `print(...)  # comment` lines
  say (when each of its prints has one). It runs in this process, where
  the library is loaded already: so that it cannot lean on that, it takes
  the library's names with `from xlnet... import`, which loads what it
  names wherever it runs (after a plain `import xlnet` it would find here
  submodules a fresh `python` lacks)."""
  blocks = _fenced(_read("README.md"), "python")
  assert blocks
  for block in blocks:
    assert not re.search(r"^\s*import\s+xlnet", block, re.M), block
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
      exec(compile(block, "README.md", "exec"), {})  # pylint: disable=exec-used
    prints = re.findall(r"^\s*print\(.*$", block, re.M)
    said = [re.search(r"\)\s+# (.*)$", p) for p in prints]
    if all(said):  # every print says what it prints
      assert out.getvalue().split("\n")[:-1] == [m.group(1) for m in said], (
          block, out.getvalue())


def test_readme_stays_a_front_door():
  """Read in a minute: what it is, the two commands, one example per use,
  links; the details live in docs/."""
  assert len(_read("README.md").split("\n")) <= 160


@pytest.mark.parametrize("page", PAGES)
def test_links_and_paths_exist(page):
  text = _read(page)
  base = os.path.dirname(page)
  for target in re.findall(r"\]\(([^)#\s]+)\)", text):
    if "://" not in target:
      assert os.path.exists(os.path.join(REPO, base, target)), (page, target)
  for path in re.findall(r"`((?:xlnet|scripts|configs|bench|docs|tests|"
                         r"requirements)/[\w./-]+)`", text):
    if re.fullmatch(r"[A-Z_]+", os.path.basename(path)):
      continue  # a placeholder: configs/NAME
    if path.startswith(configs.PREFIX):  # a shipped config's name
      assert path[len(configs.PREFIX):] in configs.names(), (page, path)
    elif "*" not in path and "{" not in path:
      assert os.path.exists(os.path.join(REPO, path)), (page, path)


def _layout_entries(layout):
  """(directory, name) of every file or folder named in the layout block:
  names at indent 2 are in xlnet/, deeper ones in the folder named above
  them at a smaller indent (`finetuning/` at 2, `squad/` at 4, its files at
  6), unindented ones at the top."""
  entries, folders = [], []  # folders: (indent, directory) above the line
  for line in layout.split("\n"):
    indent = len(line) - len(line.lstrip(" "))
    names = re.findall(r"(?<!\S)([\w*]+\.py|\w+/)(?!\S)", line)
    while folders and folders[-1][0] >= indent:
      folders.pop()
    where = "" if indent == 0 else folders[-1][1] if folders else "xlnet"
    new = [n for n in names if n.endswith("/")]
    if indent and new:
      folders.append((indent, os.path.join(where, new[0].rstrip("/"))))
    entries += [(where, name) for name in names]
  return entries


def test_layout_section_matches_the_tree():
  layout = re.search(r"## Layout\n\n```\n(.*?)```", _read("docs/layout.md"),
                     re.S).group(1)
  entries = _layout_entries(layout)
  for where, name in entries:
    if "*" in name:
      assert [n for n in os.listdir(os.path.join(REPO, where))
              if re.fullmatch(name.replace("*", r"\w*"), n)], (where, name)
    else:
      assert os.path.exists(os.path.join(REPO, where, name)), (where, name)
  # Every module of the library, in every package, is listed.
  for root, _, files in os.walk(os.path.join(REPO, "xlnet")):
    where = os.path.relpath(root, REPO)
    if "__pycache__" in where:
      continue
    patterns = [re.escape(n).replace(r"\*", r"\w*") for w, n in entries
                if w == where and n.endswith(".py")]
    for name in files:
      if name.endswith(".py") and name != "__init__.py":
        assert any(re.fullmatch(p, name) for p in patterns), (where, name)


def _defined_flags(program):
  """Flag names a program accepts: those its --help lists (run in this
  process; a script parsing its arguments with argparse lists its options
  the same way) and absl's help flags."""
  proc = in_process.run_program(program, "--help")
  names = set(re.findall(r"^\s+--(?:\[no\])?(\w+)", proc.stdout, re.M))
  assert names, (program, proc.stderr[-2000:])
  return names | {"flagfile", "helpfull", "help", "helpshort"}


@pytest.mark.only_env("reference", why="the docs against the programs' flags, the same on every TensorFlow")
def test_commands_name_existing_programs_and_flags():
  uses = {}
  for page in PAGES:
    for command in _commands(_read(page)):
      for program, args in re.findall(
          r"(?:python\S*|\$PYTHON)\s+((?:scripts/)?\w+\.py)"
          r"((?:\s+--?[\w\[\]]+(?:=\S*)?|"
          r"\s+(?:clean_ckpt|avg_checkpoints|rollback_ckpt))*)", command):
        assert os.path.exists(os.path.join(REPO, program)), (page, command)
        uses.setdefault(program, []).append(
            (page, re.findall(r"--(\w+)", args)))
      for script in re.findall(r"(scripts/[\w.-]+\.(?:sh|py))", command):
        assert os.path.exists(os.path.join(REPO, script)), (page, command)
  assert {"data_utils.py", "train_gpu.py", "run_classifier.py",
          "scripts/demo_report.py"} <= set(uses)
  for program, pages in uses.items():
    defined = _defined_flags(program)
    for page, names in pages:
      unknown = set(names) - defined
      assert not unknown, (page, program, unknown)


def test_nothing_refers_to_files_outside_the_repository():
  tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split()
  pattern = re.compile(r"\.\./shared|SPEC\.md|SPEC §|SPEC section|"
                       r"the specification")
  offenders = []
  for path in tracked:
    if path.endswith((".py", ".md", ".sh", ".flags", ".json", ".txt",
                      ".ini", ".cfg")) and path != "tests/programs/test_readme.py":
      for number, line in enumerate(_read(path).split("\n"), 1):
        if pattern.search(line):
          offenders.append(f"{path}:{number}: {line.strip()}")
  assert not offenders, "\n".join(offenders)
