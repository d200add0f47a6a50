"""Tests of the TPU trainer, run with `--use_tpu=False` on the CPU: the
TPUEstimator path (TensorFlow 2.15) and the engine path (--tpu_engine=strategy,
the only one on TensorFlow >= 2.16)."""
import json
import os
import re
import shutil
import signal

import numpy as np
import pytest
import tensorflow as tf

from xlnet.flags import catalog as flag_catalog
from tests import train_fixtures as fx
from tests import data_helpers
from xlnet.flags import pretraining as pretrain_flags
from xlnet.pretraining import api
from xlnet.pretraining import estimator
from xlnet.training import tpu_estimator

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def _train_on_cpu(record_dir, model_dir, **flags):
  """train_tpu.py's path with --use_tpu=False, dropout 0, no warm-up,
  perm_size 16 and `flags`."""
  FL = flag_catalog.parse_flags(
      ["prog", f"--record_info_dir={record_dir}", f"--model_dir={model_dir}",
       "--use_tpu=False", "--dropout=0", "--dropatt=0", "--perm_size=16",
       "--warmup_steps=0"] + [f"--{k}={v}" for k, v in flags.items()])
  api.pretrain(pretrain_flags.for_train_tpu(FL))


@pytest.mark.tpu_estimator
@pytest.mark.slow
def test_cpu_run_trains_with_memories_across_loops(tmp_path):
  record_dir = data_helpers.shared_records(num_lines=600)
  model_dir = str(tmp_path / "model")
  _train_on_cpu(record_dir, model_dir, n_layer=2, d_model=16, n_head=2,
                d_head=8, d_inner=32, mem_len=32, learning_rate=1e-3,
                train_steps=120, iterations=60, save_steps=60, seed=1)

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


@pytest.mark.tpu_estimator
def test_memories_carry_across_loop_boundaries(tmp_path):
  """With iterations=1 every step is its own loop: step 2 must still see
  step 1's memory (the release reset it to zeros at every loop start)."""
  record_dir = data_helpers.shared_records(num_lines=600)
  model_dir = str(tmp_path / "model")
  _train_on_cpu(record_dir, model_dir, n_layer=1, d_model=8, n_head=1,
                d_head=8, d_inner=8, mem_len=48, learning_rate=0,
                train_steps=2, iterations=1, save_steps=1)
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
  one clear line because the records do not exist (in-process)."""
  argv = [a.replace("$DATA", str(tmp_path / "nowhere"))
          for a in fx.README_COMMAND]
  proc = fx.run_program("train.py", "--use_tpu=False",
                        f"--model_dir={tmp_path}/m", *argv)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr
  line = proc.stderr.strip().splitlines()[-1]
  assert line.startswith("train.py: error: "), line
  assert "does not exist" in line, line


def test_train_py_targets_a_tpu_like_the_release():
  """The release's train.py defaulted to use_tpu=True and 8 cores per host;
  the GPU trainer keeps 1 core and no TPU."""
  tpu = flag_catalog.parse_flags(["prog"], tpu_defaults=True)
  gpu = flag_catalog.parse_flags(["prog"])
  assert (tpu.use_tpu, tpu.num_core_per_host) == (True, 8)
  assert (gpu.use_tpu, gpu.num_core_per_host) == (False, 1)


@pytest.mark.tf_version
def test_without_a_tpu_the_default_says_how_to_name_one(tmp_path,
                                                        tpu_records):
  proc = _run_tpu(tpu_records, tmp_path / "m", "--train_steps=2",
                  use_tpu=None, extra=["--num_core_per_host=2"])
  assert proc.returncode == 2, proc.stderr[-2000:]
  line = proc.stderr.strip().splitlines()[-1]
  assert "--use_tpu=True" in line and "--tpu=NAME" in line, line
  assert "--use_tpu=False" in line and "Traceback" not in proc.stderr


@pytest.mark.tf_version
@pytest.mark.skipif(tpu_estimator.tpu_estimator() is not None,
                    reason="TensorFlow <= 2.15 has "
                    "TPUEstimator; the message is for >= 2.16")
def test_estimator_engine_explains_the_missing_estimator(tmp_path,
                                                         tpu_records):
  proc = _run_tpu(tpu_records, tmp_path / "m", "--train_steps=2",
                  extra=["--tpu_engine=estimator"])
  assert proc.returncode == 2
  assert "Traceback" not in proc.stderr
  line = proc.stderr.strip().splitlines()[-1]
  assert line.startswith("train_tpu.py: error: "), proc.stderr
  assert "removed in TensorFlow 2.16" in line and (
      "--tpu_engine=strategy" in line)


################################################################################
# Memories per core (TPUEstimator), resume, signals, divergence.
################################################################################
def test_a_core_uses_only_memories_it_owns():
  """Owner tags: the core that wrote the memories gets them back, any other
  core (and a fresh start, owner -1) gets zeros."""
  value = np.arange(24, dtype=np.float32).reshape(2, 3, 4) + 1.0
  mem = tf.compat.v1.get_variable("m", initializer=value)
  owner = tf.compat.v1.get_variable("owner", initializer=np.int64(3))
  core = tf.compat.v1.placeholder(tf.int64, [])
  mems = estimator.owned_memories([mem], owner, core)
  with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    np.testing.assert_array_equal(sess.run(mems, {core: 3})[0], value)
    assert not sess.run(mems, {core: 0})[0].any()
    sess.run(owner.assign(-1))
    assert not sess.run(mems, {core: 3})[0].any()


@pytest.fixture(scope="module")
def tpu_records():
  return fx.shared_program_records(2)


def _tpu_command(record_dir, model_dir, *args, use_tpu=False, extra=()):
  cmd = fx.program_command("train_tpu.py", record_dir, model_dir, "--seed=1",
                           *args, *extra)
  if use_tpu is not None:
    cmd.append(f"--use_tpu={use_tpu}")
  return cmd


def _run_tpu(*args, **kwargs):
  """train_tpu.py in this process (`fx.run_program`)."""
  return fx.run_in_process(_tpu_command(*args, **kwargs))


ENGINES = [pytest.param("estimator", marks=pytest.mark.tpu_estimator),
           "strategy"]


def _weights(prefix):
  reader = tf.train.load_checkpoint(prefix)
  return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


@pytest.mark.tpu_estimator
def test_estimator_run_rolled_back_resumes_where_the_data_stopped(
    tmp_path, tpu_records):
  """TPUEstimator: a copy of a run of 8 steps (checkpoints 4 and 8) rolled
  back to checkpoint 4 (`model_utils.py rollback_ckpt --step=4`) and rerun
  ends at step 8 with the weights, optimizer state and memories of the
  run, bit for bit: the data resumed at the right batch, dropout drew the
  same masks. (The engine's resume, --tpu_engine=strategy's too: a killed
  and a rolled-back train_gpu.py, tests/pretraining/test_train_gpu.py.)"""
  args = ["--train_steps=8", "--iterations=2", "--save_steps=4",
          "--tpu_engine=estimator"]
  full = _run_tpu(tpu_records, tmp_path / "full", *args)
  assert full.returncode == 0, full.stderr[-3000:]
  cut = shutil.copytree(tmp_path / "full", tmp_path / "cut")
  fix = fx.run_program("model_utils.py", "rollback_ckpt",
                       f"--model_dir={cut}", "--step=4")
  assert fix.returncode == 0, fix.stderr[-2000:]
  assert not os.path.exists(os.path.join(cut, "model.ckpt-8.index"))
  rest = _run_tpu(tpu_records, cut, *args)
  assert rest.returncode == 0, rest.stderr[-3000:]
  assert "Restoring parameters from " + os.path.join(
      cut, "model.ckpt-4") in rest.stderr
  want = _weights(str(tmp_path / "full" / "model.ckpt-8"))
  got = _weights(os.path.join(cut, "model.ckpt-8"))
  assert set(got) == set(want)
  for name, value in want.items():
    np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.tpu_estimator
def test_sigterm_saves_and_exits_non_zero(tmp_path, tpu_records):
  """TPUEstimator's run in a process of its own, stopped by SIGTERM. (The
  engine's, --tpu_engine=strategy's: train_gpu.py's kill test.)"""
  model_dir = tmp_path / "m"
  code, out = fx.signal_when(
      fx.program_command("train_tpu.py", tpu_records, model_dir, "--seed=1",
                         "--train_steps=100000", "--iterations=2",
                         "--save_steps=100000", "--tpu_engine=estimator",
                         "--use_tpu=False"),
      r"global_step/sec|Saving checkpoints for 0 ", signal.SIGTERM, REPO)
  assert code == 128 + signal.SIGTERM, out[-3000:]
  last = out.strip().splitlines()[-1]
  match = re.fullmatch(r"train_tpu\.py: stopped by SIGTERM after step (\d+);"
                       r" checkpoint model\.ckpt-(\d+) saved in .*", last)
  assert match and match.group(1) == match.group(2), last
  step = int(match.group(1))
  assert step > 0
  assert tf.train.latest_checkpoint(str(model_dir)).endswith(f"-{step}")
  assert "Traceback" not in out


@pytest.mark.eager
@pytest.mark.parametrize("tpu_engine", ENGINES)
def test_divergence_stops_with_finite_checkpoints(tmp_path, tpu_records,
                                                  tpu_engine):
  model_dir = tmp_path / "m"
  proc = _run_tpu(tpu_records, model_dir, "--train_steps=40",
                  "--iterations=2", "--save_steps=2", "--learning_rate=1e30",
                  "--warmup_steps=0", f"--tpu_engine={tpu_engine}")
  assert proc.returncode == 1, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("train_tpu.py: error: non-finite loss"), last
  assert "Traceback" not in proc.stderr
  for prefix in tf.train.get_checkpoint_state(
      str(model_dir)).all_model_checkpoint_paths:
    for name, value in _weights(os.path.join(model_dir, prefix)).items():
      assert np.all(np.isfinite(value)), (prefix, name)


@pytest.mark.tpu_estimator
def test_estimator_ids_beyond_the_vocabulary_are_one_line(tmp_path,
                                                          tpu_records):
  """TPUEstimator on records whose ids were changed after their record
  info was written (1500: beyond the corpus info's 1000 pieces, within the
  tiny model's 2000): one line naming the file, the largest id and the
  vocabulary, no traceback (it was TensorFlow's error, or nothing). (The
  engine's: train_gpu.py's test.)"""
  data = shutil.copytree(os.path.dirname(tpu_records), tmp_path / "data")
  bad = fx.change_an_id(os.path.join(data, "tfrecords"), "input", 1500)
  proc = _run_tpu(os.path.join(data, "tfrecords"), tmp_path / "m",
                  "--train_steps=2", "--tpu_engine=estimator")
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, (
      proc.stderr[-3000:])
  assert proc.stderr.strip().splitlines()[-1] == (
      "train_tpu.py: error: a corrupted input record stopped training: 1 of "
      f"1 record files are corrupt ({bad}: holds token id 1500, beyond the "
      "1000 pieces of the corpus info's SentencePiece model (written with "
      "another model?)); rewrite them with data_utils.py (same flags, --task "
      "and --pass_id) or move their record_info-*.json away")
