"""Tests of the TPUEstimator trainer, run with `--use_tpu=False` on the CPU."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import HAS_TPU_ESTIMATOR, requires_tpu_estimator
from tests.data_helpers import make_records
from tests.test_train_gpu import README_COMMAND
from xlnet import flags as flags_lib
from xlnet import train_tpu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _summaries(model_dir):
  """{tag: {step: value}} of every scalar summary under `model_dir`."""
  out = {}
  for path in tf.io.gfile.glob(os.path.join(model_dir, "events.out.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        number = (value.simple_value if value.HasField("simple_value") else
                  float(tf.make_ndarray(value.tensor)))
        out.setdefault(value.tag, {})[event.step] = number
  return out


@requires_tpu_estimator
@pytest.mark.slow
def test_cpu_run_trains_with_memories_across_loops(tmp_path):
  record_dir = make_records(str(tmp_path / "data"), num_lines=600)
  model_dir = str(tmp_path / "model")
  FL = flags_lib.parse_flags([
      "prog", f"--record_info_dir={record_dir}", f"--model_dir={model_dir}",
      "--use_tpu=False", "--n_layer=2", "--d_model=16", "--n_head=2",
      "--d_head=8", "--d_inner=32", "--dropout=0", "--dropatt=0",
      "--mem_len=32", "--perm_size=16", "--learning_rate=1e-3",
      "--warmup_steps=0", "--train_steps=120", "--iterations=60",
      "--save_steps=60", "--seed=1"])
  train_tpu.run(FL)

  reader = tf.train.load_checkpoint(model_dir)
  assert reader.get_tensor("global_step") == 120
  steps = sorted(int(p.rsplit("-", 1)[1].split(".")[0]) for p in
                 tf.io.gfile.glob(os.path.join(model_dir, "model.ckpt-*.index")))
  assert steps == [0, 60, 120]
  # The memories are checkpointed and move: after step 200 every row holds
  # hidden states (no zero row left), different from step 60's.
  mem_120 = reader.get_tensor("mems/layer_1")
  mem_60 = tf.train.load_checkpoint(
      os.path.join(model_dir, "model.ckpt-60")).get_tensor("mems/layer_1")
  assert mem_120.shape == (32, 4, 16)
  assert np.abs(mem_120).max(axis=-1).min() > 0.0
  assert np.abs(mem_120 - mem_60).max() > 1e-3

  # Written every 100 steps, tagged with the step's index (the global step
  # before its update): the first step and the 101st.
  summaries = _summaries(model_dir)
  for tag in ("train/total_loss", "train/lr", "train/gnorm"):
    assert sorted(summaries[tag]) == [0, 100], (tag, summaries.get(tag))
  # poly decay to 0 over 120 steps, no warmup
  np.testing.assert_allclose(summaries["train/lr"][0], 1e-3, rtol=1e-5)
  np.testing.assert_allclose(summaries["train/lr"][100], 1e-3 * 20 / 120,
                             rtol=1e-5)
  assert summaries["train/gnorm"][0] > 0.0
  loss = summaries["train/total_loss"]
  assert 6.0 < loss[0] < 7.5 and loss[100] < loss[0] - 0.5, loss


@requires_tpu_estimator
def test_memories_carry_across_loop_boundaries(tmp_path):
  """With iterations=1 every step is its own loop: step 2 must still see
  step 1's memory (the release reset it to zeros at every loop start)."""
  record_dir = make_records(str(tmp_path / "data"), num_lines=600)
  model_dir = str(tmp_path / "model")
  FL = flags_lib.parse_flags([
      "prog", f"--record_info_dir={record_dir}", f"--model_dir={model_dir}",
      "--use_tpu=False", "--n_layer=1", "--d_model=8", "--n_head=1",
      "--d_head=8", "--d_inner=8", "--dropout=0", "--dropatt=0",
      "--mem_len=48", "--perm_size=16", "--learning_rate=0",
      "--warmup_steps=0", "--train_steps=2", "--iterations=1",
      "--save_steps=1"])
  train_tpu.run(FL)
  mem_1 = tf.train.load_checkpoint(
      os.path.join(model_dir, "model.ckpt-1")).get_tensor("mems/layer_0")
  mem_2 = tf.train.load_checkpoint(
      os.path.join(model_dir, "model.ckpt-2")).get_tensor("mems/layer_0")
  # mem_len 48 > reuse_len 32: after step 2 the memory is the last 16 rows of
  # step 1's reuse part followed by step 2's 32 rows. A reset to zeros at the
  # loop boundary would leave those 16 rows zero.
  np.testing.assert_allclose(mem_2[:16], mem_1[-16:], rtol=1e-6)
  assert np.abs(mem_2[:16]).min(axis=-1).min() > 0.0
  assert np.abs(mem_1[:16]).max() == 0.0  # step 1 started from zeros
  # The model's XLNetConfig is written next to the checkpoints.
  with open(os.path.join(model_dir, "config.json")) as f:
    assert json.load(f) == dict(n_layer=1, d_model=8, n_head=1, d_head=8,
                                d_inner=8, ff_activation="gelu", untie_r=True,
                                n_token=1000)


def test_original_readme_command_runs_train_py(tmp_path):
  """The released README's command starts `python train.py` (the release's
  TPU trainer) with --corpus_info_path: both are accepted; here it stops with
  one clear line because the records do not exist (or, on TensorFlow >= 2.16,
  because TPUEstimator does not)."""
  argv = [a.replace("$DATA", str(tmp_path / "nowhere"))
          for a in README_COMMAND]
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO, "train.py"), "--use_tpu=False",
       f"--model_dir={tmp_path}/m"] + argv,
      capture_output=True, text=True, cwd=REPO, timeout=120,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr
  line = proc.stderr.strip().splitlines()[-1]
  assert line.startswith("train.py: error: "), line
  assert ("does not exist" in line if HAS_TPU_ESTIMATOR else
          "removed in TensorFlow 2.16" in line), line


@pytest.mark.skipif(HAS_TPU_ESTIMATOR, reason="TensorFlow <= 2.15 has "
                    "TPUEstimator; the message is for >= 2.16")
def test_clear_message_without_tpu_estimator():
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO, "train_tpu.py"), "--use_tpu=False"],
      capture_output=True, text=True, cwd=REPO, timeout=120,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 2
  # TensorFlow's own start-up chatter may precede it; ours is one line.
  assert "Traceback" not in proc.stderr
  line = proc.stderr.strip().splitlines()[-1]
  assert line.startswith("train_tpu.py: error: "), proc.stderr
  assert "removed in TensorFlow 2.16" in line
  assert "bash scripts/setup_env.sh reference" in line
  assert ".venvs/reference/bin/python train_tpu.py" in line
