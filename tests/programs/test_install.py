"""`pip install .` into a fresh virtual environment puts every program on
PATH and ships the configs: each installed command's --help prints the
checkout's help, `python -m xlnet.configs` names the installed configs, and
one pretraining step runs through the installed `train_gpu.py` with
`--flagfile=configs/demo.flags` (which names `configs/xlnet_tiny.json`),
from a directory outside the checkout (so the installed package and
configs are the ones read).

The installed commands' --help and `python -m xlnet.configs` run as
tests/programs/test_help.py runs the checkout's programs: each in a process
of its own, forked by the environment's Python after one TensorFlow import
(program_flags.run_in_fresh_processes), a command's folder (the
environment's bin/) first on sys.path, no PYTHONPATH. That a command starts
by its first line (`#!` the environment's Python) the training step shows,
and every command has that line.

The environment is new but sees this test environment's packages (a `.pth`
file naming its site-packages) and installs with `--no-deps
--no-build-isolation`: the test needs no package index."""
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest
import tensorflow as tf

from tests import train_fixtures
from tests.programs import program_flags

REPO = program_flags.REPO
# Every installed command: setup.py's PROGRAMS, among them every program
# the README names.
COMMANDS = program_flags.SETUP_PROGRAMS
README_PROGRAMS = ["data_utils.py", "spm_train.py", "train_gpu.py",
                   "train_tpu.py", "train.py", "eval_pretrain.py",
                   "model_utils.py", "convert_checkpoint.py",
                   "run_classifier.py", "run_squad.py", "run_race.py",
                   "reproduce.py"]


def _env():
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  return dict(env, TF_CPP_MIN_LOG_LEVEL="3")


def _run(cmd, cwd):
  return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                        timeout=300, env=_env())


def _fresh_install(tmp_path):
  """A new venv with `pip install .` of a copy of the checkout; returns its
  bin directory."""
  src = tmp_path / "src"
  listed = subprocess.run(["git", "ls-files", "--cached", "--others",
                           "--exclude-standard"], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout.split()
  for name in listed:
    if os.path.isfile(os.path.join(REPO, name)):
      os.makedirs(src / os.path.dirname(name), exist_ok=True)
      shutil.copy2(os.path.join(REPO, name), src / name)
  venv = tmp_path / "venv"
  subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
  site = subprocess.run(
      [str(venv / "bin" / "python"), "-c",
       "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
      check=True, capture_output=True, text=True).stdout.strip()
  with open(os.path.join(site, "test_env.pth"), "w") as f:
    f.write(sysconfig.get_paths()["purelib"] + "\n")
  proc = _run([str(venv / "bin" / "python"), "-m", "pip", "install",
               "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
               str(src)], cwd=str(tmp_path))
  assert proc.returncode == 0, proc.stderr[-3000:]
  return venv / "bin"


@pytest.mark.slow
def test_pip_install_puts_every_program_on_path(tmp_path):
  assert set(README_PROGRAMS) <= set(COMMANDS)
  bin_dir = _fresh_install(tmp_path)
  work = tmp_path / "work"
  work.mkdir()
  python = str(bin_dir / "python")
  *helps, where = program_flags.run_in_fresh_processes(
      [[str(bin_dir / c), "--help"] for c in COMMANDS]
      + [["-m", "xlnet.configs"]], python=python, cwd=str(work), env=_env())
  for command, installed in zip(COMMANDS, helps):
    with open(bin_dir / command, encoding="utf-8") as f:
      assert f.readline() == f"#!{python}\n", command
    assert os.access(bin_dir / command, os.X_OK), command
    assert installed.returncode == 1, (command, installed.stderr[-2000:])
    assert "Traceback" not in installed.stderr, (command,
                                                 installed.stderr[-2000:])
    assert installed.stdout == program_flags.help_in_process(command).stdout

  # The configs, installed beside the library: the checkout's files.
  installed = where.stdout.strip()
  assert installed.startswith(str(tmp_path / "venv")), where.stderr[-2000:]
  shipped = sorted(n for n in os.listdir(os.path.join(REPO, "xlnet",
                                                      "configs"))
                   if n.endswith((".json", ".flags")))
  assert shipped and sorted(n for n in os.listdir(installed)
                            if n.endswith((".json", ".flags"))) == shipped

  records = train_fixtures.program_records(tmp_path / "data",
                                           num_core_per_host=1, num_lines=200)
  assert not os.path.exists(work / "configs")
  proc = _run([str(bin_dir / "train_gpu.py"), "--flagfile=configs/demo.flags",
               f"--record_info_dir={records}",
               f"--model_dir={tmp_path / 'model'}", "--perm_size=8",
               "--iterations=1", "--eval_steps=0", "--train_steps=1",
               "--num_core_per_host=1"], cwd=str(work))
  assert proc.returncode == 0, proc.stderr[-3000:]
  # The demo's model, configs/xlnet_tiny.json: 2,000 pieces of width 64.
  ckpt = tf.train.load_checkpoint(str(tmp_path / "model" / "model.ckpt-1"))
  assert ckpt.get_variable_to_shape_map()[
      "model/transformer/word_embedding/lookup_table"] == [2000, 64]
