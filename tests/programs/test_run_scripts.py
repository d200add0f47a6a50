"""The run scripts under scripts/ that source scripts/common.sh: without
their environment each stops in one line naming the first variable it
lacks; with it and DRY_RUN=1 each prints the commands it would run (a
program of this repository and its flags) and runs nothing. Their flags
and values are checked per program (test_run_squad, test_run_race,
test_run_classifier)."""
import glob
import os
import re
import shlex
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
SCRIPTS = sorted(
    os.path.basename(path)
    for path in glob.glob(os.path.join(REPO, "scripts", "*.sh"))
    if "/common.sh\"" in open(path, encoding="utf-8").read())
# Every variable any of them needs; values only have to look like paths.
ENV = dict(TPU_NAME="tpu", SQUAD_DIR="sq", INIT_CKPT_DIR="gs://b/ck",
           LOCAL_INIT_CKPT_DIR="ck", PROC_DATA_DIR="gs://b/proc",
           MODEL_DIR="gs://b/model", RACE_DIR="RACE", DATA="gs://b/data",
           GLUE_DIR="/glue", LARGE_DIR="large", IMDB_DIR="/imdb",
           GS_ROOT="gs://b", XLNET_DIR="/base", WORKER_HOSTS="a:1,b:2",
           TASK_INDEX="0", NUM_PROC="2", NUM_GPUS="2")


def _script(name, env):
  base = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
  return subprocess.run(["bash", os.path.join(REPO, "scripts", name)],
                        cwd="/", env=dict(base, **env), capture_output=True,
                        text=True, timeout=60)


def test_the_run_scripts_are_found():
  assert {"train_gpu.sh", "tpu_squad_large.sh", "finetune_glue.sh",
          "prepro_squad.sh"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_missing_variable_is_one_line(name):
  proc = _script(name, {})
  assert proc.returncode == 2 and proc.stdout == ""
  assert re.fullmatch(rf"{re.escape(name)}: set [A-Z_]+ to \S.*\n",
                      proc.stderr), proc.stderr


@pytest.mark.parametrize("name", SCRIPTS)
def test_dry_run_prints_the_commands(name):
  proc = _script(name, dict(ENV, DRY_RUN="1"))
  assert proc.returncode == 0 and proc.stderr == "", proc.stderr
  commands = [shlex.split(line) for line in proc.stdout.splitlines()]
  assert commands
  for command in commands:
    assert command[0] == "python", command
    assert os.path.isfile(os.path.join(REPO, command[1])), command
    assert all(arg.startswith("--") for arg in command[2:]), command
