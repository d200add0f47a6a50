"""The same command gives the same bits (the default --seed), and one
trainer per --model_dir: pretraining (train_gpu.py) and fine-tuning
(run_classifier.py, run_squad.py, run_race.py through xlnet/finetuning/finetune.py).

The reference of a run is another, independent run of the same command
(for train_gpu.py the run train_fixtures.shared_train_gpu_run made once
for the whole test run): every variable of the final checkpoints must be
equal bit for bit; another --seed must change them. A fine-tuning run
resumed in a new process ends with the bits of the uninterrupted run.
What a run's refusal says (the lock, another batch size) is checked on the
command run in this process (tests/in_process.py).
"""
import os
import re
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.finetuning import test_run_classifier as rc
from tests.finetuning.test_run_race import race  # noqa: F401 (fixture)
from tests.finetuning.test_run_squad import squad  # noqa: F401 (fixture)
from tests import in_process
from tests import train_fixtures as fx
from xlnet.training import run_lock
from xlnet.finetuning import api

pytestmark = [pytest.mark.eager, pytest.mark.slow]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
# No --seed: the default one. Two replicas (MirroredStrategy on the two
# logical CPUs), as train_fixtures.shared_train_gpu_run runs it.
PRETRAIN = ["--train_steps=4"]
CORES = 2


def _checkpoint(model_dir):
  """{name: array} of the newest checkpoint of `model_dir`."""
  prefix = tf.train.latest_checkpoint(str(model_dir))
  reader = tf.train.load_checkpoint(prefix)
  return {n: reader.get_tensor(n) for n, _ in tf.train.list_variables(prefix)}


def _assert_same_bits(got, want):
  assert sorted(got) == sorted(want)
  for name, value in want.items():
    np.testing.assert_array_equal(got[name], value, err_msg=name)


def _logged(text):
  """The step lines of a run's log, without their timing part."""
  return [m.group(0) for m in re.finditer(r"\[\d+\] \|[^|\n]*\|[^|\n]*\|"
                                          r"[^|\n]*", text)]


def _files(model_dir):
  """The names in `model_dir`, event files (named by time and pid) as
  "events"."""
  return sorted("events" if n.startswith("events.") else n
                for n in os.listdir(model_dir))


def _run(cmd):
  return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                        timeout=300, env=ENV)


def _pretrain(records, model_dir, *extra):
  """The command shared_train_gpu_run(*PRETRAIN) ran, into `model_dir`."""
  return fx.program_command("train_gpu.py", records, model_dir,
                            f"--num_core_per_host={CORES}", *PRETRAIN,
                            *extra)


def test_pretraining_twice_gives_the_same_bits_and_one_trainer_per_dir(
    tmp_path):
  """Run A is paused (SIGSTOP) after its first step, holding the lock: a
  second trainer on A's directory exits with code 1 naming the directory
  and A; A then finishes (every step logged) with the checkpoint of an
  undisturbed run C of the same command (every variable, bit for bit) and
  the same files; --seed=2 gives other weights. (That the same command
  logs the same losses, tests/pretraining/test_train_gpu.py's resumed runs
  check against their references.)"""
  records, reference = fx.shared_train_gpu_run(*PRETRAIN,
                                               num_core_per_host=CORES)
  first = subprocess.Popen(_pretrain(records, tmp_path / "a"),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, cwd=REPO, env=ENV)
  out = []
  for line in first.stdout:
    out.append(line)
    if re.search(r"\[1\] \|", line):
      first.send_signal(signal.SIGSTOP)
      break
  second = in_process.run_program(*_pretrain(records, tmp_path / "a")[1:])
  first.send_signal(signal.SIGCONT)
  out.append(first.stdout.read())
  assert first.wait(timeout=300) == 0, "".join(out)[-3000:]
  assert second.returncode == 1, second.stderr[-3000:]
  last = second.stderr.strip().splitlines()[-1]
  assert last.startswith(f"train_gpu.py: error: --model_dir={tmp_path}/a is "
                         f"in use by another trainer (pid {first.pid} ")
  assert not (tmp_path / "a" / run_lock.LOCK_NAME).exists()  # released

  steps = [int(re.match(r"\[(\d+)\]", line).group(1))
           for line in _logged("".join(out))]
  assert steps == [1, 2, 3, 4]
  _assert_same_bits(_checkpoint(tmp_path / "a"), _checkpoint(reference))
  assert _files(tmp_path / "a") == _files(reference)  # none from B

  other = _run(_pretrain(records, tmp_path / "s2", "--seed=2"))
  assert other.returncode == 0, other.stderr[-3000:]
  kernel = "model/transformer/layer_0/ff/layer_1/kernel"
  assert not np.array_equal(_checkpoint(tmp_path / "s2")[kernel],
                            _checkpoint(reference)[kernel])


################################################################################
# Fine-tuning: run_classifier.py on the engine.
################################################################################
@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
  root = str(tmp_path_factory.mktemp("classifier"))
  return dict(root=root, large=rc.released_model_dir(root),
              glue=rc.stsb_dir(root, n=12))


def _classify(setup, model_dir, *extra):
  args = rc.base_args(setup, model_dir=model_dir, train_steps=4,
                      save_steps=2, iterations=1, train_batch_size=2,
                      max_seq_length=16, warmup_steps=1,
                      learning_rate=1e-3)
  return [sys.executable, os.path.join(REPO, "run_classifier.py"), *args,
          *extra]


def test_classifier_resumed_after_sigkill_gives_the_same_bits(tmp_path,
                                                              classifier):
  """run_classifier.py killed (SIGKILL) after checkpoint 2 and rerun takes
  over the dead trainer's lock and ends with exactly the checkpoint of an
  uninterrupted run of the same command (same shuffled examples, dropout,
  head initialization, optimizer state); its resumed steps log the same
  lines. Resumed with another --train_batch_size, it stops with one line
  naming the flag and both values (the data position counts batches)."""
  full = _run(_classify(classifier, tmp_path / "full"))
  assert full.returncode == 0, full.stderr[-3000:]

  code, _ = fx.signal_when(_classify(classifier, tmp_path / "cut"),
                           r"Saved checkpoint .*model\.ckpt-2$",
                           signal.SIGKILL, REPO)
  assert code == -signal.SIGKILL
  assert (tmp_path / "cut" / run_lock.LOCK_NAME).exists()  # left by the kill
  rest = _run(_classify(classifier, tmp_path / "cut"))
  assert rest.returncode == 0, rest.stderr[-3000:]
  assert "Taking over the stale lock" in rest.stderr
  resumed = _logged(rest.stderr)
  assert len(resumed) == 2 and resumed == _logged(full.stderr)[2:]
  _assert_same_bits(_checkpoint(tmp_path / "cut"),
                    _checkpoint(tmp_path / "full"))

  other = in_process.run_program(*_classify(
      classifier, tmp_path / "full", "--train_batch_size=4",
      "--train_steps=6")[1:])
  assert other.returncode == 2, other.stderr[-3000:]
  last = other.stderr.strip().splitlines()[-1]
  assert last.startswith("run_classifier.py: error: --train_batch_size=4 "
                         f"but {tmp_path}/full was trained with "
                         "--train_batch_size=2 "), last
  assert "Traceback" not in other.stderr


################################################################################
# SQuAD and RACE: resume from a checkpoint as a kill leaves it.
################################################################################
def _as_killed_after(source, target, step):
  """`target` as a run of `source`'s command killed right after saving
  `step` leaves it: that checkpoint, the state file, the batch layout."""
  os.makedirs(target)
  for name in os.listdir(source):
    if name.startswith(f"model.ckpt-{step}.") or name in (
        "checkpoint", "batch_layout.json"):
      shutil.copy(os.path.join(source, name), target)
  with open(os.path.join(target, "checkpoint"), "w") as f:
    f.write(f'model_checkpoint_path: "model.ckpt-{step}"\n')


# RACE's run stands for the engine's reproducibility on every TensorFlow
# (dropout, the seeded shuffle, a resumed run in a new process).
@pytest.mark.parametrize("task", [
    "squad", pytest.param("race", marks=pytest.mark.tf_version)])
def test_qa_same_command_twice_and_resumed_gives_the_same_bits(
    tmp_path, task, request):
  """run_squad.py / run_race.py with dropout and the default shuffle buffer,
  4 steps: twice with the same flags (A, B: every variable of model.ckpt-4
  equal bit for bit; another --seed gives other weights), and the command
  resumed in a new process from A's model.ckpt-2 alone (as a kill leaves
  it) ends with A's model.ckpt-4: the heads' initial weights, the data
  position and dropout are functions of the seed and the step, and so is
  the input's shuffle (seeded by --seed). A, B and the other seed run the
  program's flags through the API in this process."""
  fixture = request.getfixturevalue(task)
  argv, make_flags = ((fixture["argv"], fixture["flags"]) if task == "squad"
                      else (fixture.argv, fixture))
  run = api.run_squad if task == "squad" else api.run_race
  common = ["--do_train", "--train_steps=4", "--save_steps=2",
            "--dropout=0.1", "--dropatt=0.1", "--warmup_steps=1",
            "--learning_rate=1e-3"]
  for name, extra in (("a", []), ("b", []), ("other", ["--seed=11"])):
    run(**make_flags(*common, *extra, f"--model_dir={tmp_path / name}"))
  first = _checkpoint(tmp_path / "a")
  _assert_same_bits(_checkpoint(tmp_path / "b"), first)
  other = _checkpoint(tmp_path / "other")
  assert any(not np.array_equal(other[n], first[n]) for n in first
             if n != "global_step")

  _as_killed_after(tmp_path / "a", tmp_path / "cut", 2)
  cut = _run([sys.executable, os.path.join(REPO, argv[0]), *argv[1:],
              *common, f"--model_dir={tmp_path / 'cut'}"])
  assert cut.returncode == 0, cut.stderr[-3000:]
  assert tf.train.latest_checkpoint(str(tmp_path / "cut")).endswith("-4")
  _assert_same_bits(_checkpoint(tmp_path / "cut"), first)
