"""Every program's `--help` lists exactly its own flags, grouped, with their
defaults, and every flag the docs give it; it exits as absl's `--help`.

The programs are program_flags.PROGRAMS: setup.py's PROGRAMS (the installed
commands, so a new one is covered) and the scripts under scripts/ and
bench/ that run through `cli.run`. The flags a program defines come from
running its definitions with absl's `app.run` replaced
(program_flags.defined), independently of the help text. The help is
checked as `--help` prints it in this process (the quick tier: every
program in milliseconds); then each program's `--help` runs in a process
of its own, as a user runs it (program_flags.helps_in_fresh_processes), and
must print the same help and exit as absl's `--help` does there, with no
traceback."""
import contextlib
import io
import os
import re

from absl import app
import pytest

from tests.programs import program_flags
from tests.programs import test_readme

REPO = program_flags.REPO
PROGRAMS = program_flags.PROGRAMS
# absl's flags that a --help may name in its prose and the docs may use.
ABSL_FLAGS = {"flagfile", "help", "helpfull", "helpshort"}
# A program defining no flag, run by absl alone: its --help is the
# reference of the exit status.
ABSL_ONLY = "from absl import app\napp.run(lambda argv: None)\n"


def absl_help_status():
  """The exit status of absl's own --help flag (its handler, run here)."""
  with contextlib.redirect_stdout(io.StringIO()) as out:
    with pytest.raises(SystemExit) as info:
      app.HelpFlag().parse("true")
  assert "Try --helpfull" in out.getvalue(), out.getvalue()
  return info.value.code


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


def _check_help(program, result, status):
  """`result` (of `PROGRAM --help`) exits with `status` and lists exactly
  the program's flags, under their catalog groups, with their defaults."""
  assert result.returncode == status, (program, result.stderr[-2000:])
  assert "Traceback" not in result.stderr, (program, result.stderr[-2000:])
  sections = _sections(result.stdout)
  listed = {name: entry for entries in sections.values()
            for name, entry in entries.items()}
  own = program_flags.defined(program)
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
  assert "Try --helpfull" in result.stdout


@pytest.mark.quick
@pytest.mark.parametrize("program", PROGRAMS)
def test_help_lists_exactly_the_programs_flags_with_defaults(program):
  _check_help(program, program_flags.help_in_process(program),
              absl_help_status())


@pytest.fixture(scope="module")
def fresh_helps(tmp_path_factory):
  """{program: Result of its --help in a process of its own}, and under
  "absl" that of a program run by absl alone."""
  absl_only = tmp_path_factory.mktemp("absl") / "absl_only.py"
  absl_only.write_text(ABSL_ONLY)
  helps = program_flags.helps_in_fresh_processes(PROGRAMS + [str(absl_only)])
  helps["absl"] = helps.pop(str(absl_only))
  return helps


@pytest.mark.parametrize("program", PROGRAMS)
def test_help_in_a_process_of_its_own_is_the_same(fresh_helps, program):
  """The program's own imports suffice to start it; its --help prints, on
  the process's output, the help checked above, and exits as absl's."""
  absl = fresh_helps["absl"]
  assert "Try --helpfull" in absl.stdout, absl.stdout
  fresh = fresh_helps[program]
  _check_help(program, fresh, absl.returncode)
  assert fresh.stdout == program_flags.help_in_process(program).stdout


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


@pytest.mark.quick
def test_help_lists_every_flag_the_docs_give_a_program():
  mentions = _doc_mentions()
  assert {"train_gpu.py", "data_utils.py", "run_classifier.py",
          "convert_checkpoint.py"} <= set(mentions)
  for program, uses in mentions.items():
    help_text = program_flags.help_in_process(program).stdout
    listed = {n for e in _sections(help_text).values() for n in e}
    for page, flags in uses:
      unknown = set(flags) - listed - ABSL_FLAGS
      assert not unknown, (page, program, unknown)
