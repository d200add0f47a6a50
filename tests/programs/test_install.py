"""`pip install .` into a fresh virtual environment puts every program on
PATH and ships the configs: each command's --help runs, `python -m
xlnet.configs` names the installed configs, and one pretraining step runs
through the installed `train_gpu.py` with `--flagfile=configs/demo.flags`
(which names `configs/xlnet_tiny.json`), from a directory outside the
checkout (so the installed package and configs are the ones read).

The environment is new but sees this test environment's packages (a `.pth`
file naming its site-packages) and installs with `--no-deps
--no-build-isolation`: the test needs no package index."""
from concurrent import futures
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest
import tensorflow as tf

from tests import train_fixtures

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
# Every program the README names, as an installed command.
COMMANDS = ["data_utils.py", "spm_train.py", "train_gpu.py", "train_tpu.py",
            "train.py", "eval_pretrain.py", "model_utils.py",
            "convert_checkpoint.py", "run_classifier.py", "run_squad.py",
            "run_race.py", "reproduce.py"]


def _run(cmd, cwd):
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                        timeout=300, env=dict(env, TF_CPP_MIN_LOG_LEVEL="3"))


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
  bin_dir = _fresh_install(tmp_path)
  work = tmp_path / "work"
  work.mkdir()
  where = _run([str(bin_dir / "python"), "-c",
                "import xlnet; print(xlnet.__file__)"], cwd=str(work))
  assert where.stdout.startswith(str(tmp_path / "venv")), where.stdout
  with futures.ThreadPoolExecutor(4) as pool:  # each start imports TF
    helps = pool.map(lambda c: _run([str(bin_dir / c), "--help"],
                                    cwd=str(work)), COMMANDS)
  for command, proc in zip(COMMANDS, helps):
    # absl prints the usage and exits with 1 after --help.
    assert "Traceback" not in proc.stderr, (command, proc.stderr[-2000:])
    assert "--helpfull" in proc.stdout, (command, proc.stdout[-2000:])

  # The configs, installed beside the library: the checkout's files.
  where = _run([str(bin_dir / "python"), "-m", "xlnet.configs"],
               cwd=str(work))
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
