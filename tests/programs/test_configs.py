"""The shipped configs (`xlnet/configs/`) and their documented name
`configs/NAME`: a program's `--flagfile` and `--model_config_path` find them
from any directory, and a file of the user's at ./configs/NAME wins.

(`tests/programs/test_install.py` checks the same after `pip install`.)"""
import importlib
import json
import os
import runpy
import subprocess

import pytest

from tests import in_process
from xlnet import configs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

# A program's flag parsing (train_gpu.py's flags), printing what it read.
PARSE = """
import sys
from absl import flags
from xlnet.flags import catalog
catalog.define_flags()
catalog.parse_command_line(["prog"] + sys.argv[1:])
print(flags.FLAGS.model_config_path)
print(flags.FLAGS.learning_rate)
"""


def _parse(cwd, *args):
  """(model_config_path, learning_rate) as train_gpu.py's flags parse
  `args` in the directory `cwd` (the parsing run in this process, as
  `python -c PARSE ARGS` would run it there)."""
  script = os.path.join(cwd, "parse_flags.py")
  with open(script, "w") as f:
    f.write(PARSE)
  proc = in_process.run_program(script, *args, cwd=cwd)
  os.remove(script)
  assert proc.returncode == 0, proc.stderr[-2000:]
  path, rate = proc.stdout.split("\n")[-3:-1]
  return path, float(rate)


def test_the_shipped_configs_are_the_repositorys_files():
  tracked = subprocess.run(["git", "ls-files", "xlnet/configs"], cwd=REPO,
                           capture_output=True, text=True,
                           check=True).stdout.split()
  want = sorted(os.path.basename(p) for p in tracked
                if p.endswith((".json", ".flags")))
  assert want and configs.names() == want
  assert configs.path("xlnet_tiny.json") == os.path.join(
      REPO, "xlnet", "configs", "xlnet_tiny.json")
  with open(configs.path("xlnet_tiny.json")) as f:
    assert json.load(f)["d_model"] == 64
  with pytest.raises(ValueError, match="no shipped config 'tiny.json'; the "
                     "shipped ones are demo.flags, pretrain_base.flags"):
    configs.path("tiny.json")


def test_resolve_from_an_empty_directory(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  assert configs.resolve("configs/demo.flags") == os.path.join(
      REPO, "xlnet", "configs", "demo.flags")
  # Anything else is left as given, so errors name the user's path.
  for value in ("configs/missing.json", "demo.flags", "my/configs/demo.flags",
                "/abs/configs/demo.flags", "", None):
    assert configs.resolve(value) == value


def test_a_users_file_wins(tmp_path, monkeypatch):
  (tmp_path / "configs").mkdir()
  (tmp_path / "configs" / "demo.flags").write_text("--learning_rate=0.5\n")
  monkeypatch.chdir(tmp_path)
  assert configs.resolve("configs/demo.flags") == "configs/demo.flags"
  assert configs.resolve("configs/xlnet_tiny.json") == configs.path(
      "xlnet_tiny.json")


@pytest.mark.parametrize("form", ["--flagfile=configs/demo.flags",
                                  "--flagfile configs/demo.flags"])
def test_a_program_reads_the_shipped_flag_file_and_its_model(tmp_path, form):
  # demo.flags sets --learning_rate=3e-3 and names configs/xlnet_tiny.json.
  path, rate = _parse(str(tmp_path), *form.split(" "))
  assert (path, rate) == (configs.path("xlnet_tiny.json"), 3e-3)
  path, _ = _parse(str(tmp_path), "--model_config_path=configs/xlnet_base.json")
  assert path == configs.path("xlnet_base.json")


def test_a_program_reads_the_users_copies(tmp_path):
  (tmp_path / "configs").mkdir()
  (tmp_path / "configs" / "demo.flags").write_text(
      "--model_config_path=configs/xlnet_tiny.json\n--learning_rate=0.5\n")
  (tmp_path / "configs" / "xlnet_tiny.json").write_text("{}")
  path, rate = _parse(str(tmp_path), "--flagfile=configs/demo.flags")
  assert (path, rate) == ("configs/xlnet_tiny.json", 0.5)


@pytest.mark.tf_version
def test_python_m_xlnet_configs_prints_the_shipped_directory(capsys):
  """`python -m xlnet.configs` (run as the interpreter runs it, then
  imported) prints the directory of the shipped files."""
  runpy.run_module("xlnet.configs", run_name="__main__")
  assert capsys.readouterr().out == os.path.join(REPO, "xlnet",
                                                 "configs") + "\n"
  importlib.import_module("xlnet.configs.__main__")
