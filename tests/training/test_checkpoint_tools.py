"""Tests for xlnet/training/checkpoint_tools.py and the `model_utils.py`
program: clean_ckpt, avg_checkpoints, rollback_ckpt, their one-line errors."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import checkpoint_fixtures as ckpt_fx
from tests import train_fixtures as fx
from xlnet.training import checkpoint_tools

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.quick
@pytest.mark.tf_version
def test_clean_ckpt_keeps_only_model_variables(tmp_path):
  values = ckpt_fx.random_values(0)
  prefix, = ckpt_fx.save_checkpoints(str(tmp_path / "in"), [values])
  out_dir = str(tmp_path / "out")
  checkpoint_tools.clean_ckpt(prefix, out_dir)
  cleaned = ckpt_fx.read_checkpoint(tf.train.latest_checkpoint(out_dir))
  assert sorted(cleaned) == sorted(ckpt_fx.MODEL_VARS)
  for n in ckpt_fx.MODEL_VARS:
    np.testing.assert_array_equal(cleaned[n], values[n])
  # Loads into a fresh graph holding just the model variables.
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    variables = {n: tf.compat.v1.get_variable(n, shape=s)
                 for n, s in ckpt_fx.MODEL_VARS.items()}
    tf.compat.v1.train.Saver().restore(sess,
                                       tf.train.latest_checkpoint(out_dir))
    restored = sess.run(variables)
  for n in ckpt_fx.MODEL_VARS:
    np.testing.assert_array_equal(restored[n], values[n])


def test_clean_ckpt_errors(tmp_path):
  prefix, = ckpt_fx.save_checkpoints(str(tmp_path / "in"),
                                     [ckpt_fx.random_values(0)])
  with pytest.raises(ValueError, match="clean_input_ckpt=.*nope"):
    checkpoint_tools.clean_ckpt(str(tmp_path / "nope"), str(tmp_path / "out"))
  with pytest.raises(ValueError, match="clean_output_model_dir=.*input"):
    checkpoint_tools.clean_ckpt(prefix, str(tmp_path / "in"))


@pytest.mark.tf_version
def test_avg_checkpoints_averages_the_last_k(tmp_path):
  model_dir, out_dir = str(tmp_path / "train"), str(tmp_path / "avg")
  all_values = [ckpt_fx.random_values(seed) for seed in range(4)]
  ckpt_fx.save_checkpoints(model_dir, all_values)
  checkpoint_tools.avg_checkpoints(model_dir, out_dir, 3)
  averaged = ckpt_fx.read_checkpoint(tf.train.latest_checkpoint(out_dir))
  assert sorted(averaged) == sorted(ckpt_fx.MODEL_VARS)
  for n in ckpt_fx.MODEL_VARS:
    want = np.mean([v[n].astype(np.float64) for v in all_values[1:]], axis=0)
    np.testing.assert_allclose(averaged[n], want, rtol=1e-6, atol=1e-7)
    assert averaged[n].dtype == np.float32


def test_avg_checkpoints_errors(tmp_path):
  model_dir = str(tmp_path / "train")
  ckpt_fx.save_checkpoints(model_dir, [ckpt_fx.random_values(0),
                                       ckpt_fx.random_values(1)])
  with pytest.raises(ValueError, match="lists 2 checkpoints.*avg_num=3"):
    checkpoint_tools.avg_checkpoints(model_dir, str(tmp_path / "avg"), 3)
  with pytest.raises(ValueError, match="avg_model_dir=.*missing.*not a dir"):
    checkpoint_tools.avg_checkpoints(str(tmp_path / "missing"),
                                     str(tmp_path / "a"), 1)


def run_cli(*args):
  """`python model_utils.py args` in this process (`fx.run_program`)."""
  return fx.run_program("model_utils.py", *args)


def run_process(*args):
  """`python model_utils.py args` in a process of its own."""
  return subprocess.run([sys.executable, os.path.join(REPO, "model_utils.py"),
                         *args], capture_output=True, text=True, cwd=REPO,
                        timeout=120)


def test_command_line_clean_and_bad_input(tmp_path):
  """The program in a process of its own once (a fresh interpreter's
  imports, exit code 0); its other command-line checks run in-process."""
  values = ckpt_fx.random_values(3)
  ckpt_fx.save_checkpoints(str(tmp_path / "in"), [values])
  out_dir = str(tmp_path / "out")
  ok = run_process("clean_ckpt",
                   f"--clean_input_ckpt={tmp_path / 'in'}/latest",
                   f"--clean_output_model_dir={out_dir}")
  assert ok.returncode == 0, ok.stderr
  assert sorted(ckpt_fx.read_checkpoint(
      tf.train.latest_checkpoint(out_dir))) == sorted(ckpt_fx.MODEL_VARS)
  bad = run_cli("avg_checkpoints", f"--avg_model_dir={tmp_path / 'in'}",
                f"--avg_output_model_dir={tmp_path / 'avg'}", "--avg_num=4")
  assert bad.returncode == 2
  assert "Traceback" not in bad.stderr
  assert "avg_num=4" in bad.stderr.strip().splitlines()[-1]


@pytest.mark.tf_version
def test_damaged_inputs_and_bad_outputs_are_one_line_errors(tmp_path):
  prefixes = ckpt_fx.save_checkpoints(str(tmp_path / "in"),
                                      [ckpt_fx.random_values(0),
                                       ckpt_fx.random_values(1)])
  (tmp_path / "file").write_text("x")
  cases = [
      (["clean_ckpt", f"--clean_input_ckpt={prefixes[0]}",
        f"--clean_output_model_dir={tmp_path / 'file'}"],
       "clean_output_model_dir=", "exists and is not a directory"),
  ]
  os.symlink(tmp_path / "in", tmp_path / "link")
  cases.append((["avg_checkpoints", f"--avg_model_dir={tmp_path / 'in'}",
                 f"--avg_output_model_dir={tmp_path / 'link'}", "--avg_num=2"],
                "link is the input checkpoint's directory", "resolving links"))
  cases.append((["clean_ckpt", f"--clean_input_ckpt={prefixes[1]}",
                 f"--clean_output_model_dir={tmp_path / 'link'}"],
                "link is the input checkpoint's directory", "resolving links"))
  name = ckpt_fx.truncate_data(prefixes[1])
  cases.append((["clean_ckpt", f"--clean_input_ckpt={prefixes[1]}",
                 f"--clean_output_model_dir={tmp_path / 'out'}"],
                name, "truncated"))
  cases.append((["avg_checkpoints", f"--avg_model_dir={tmp_path / 'in'}",
                 f"--avg_output_model_dir={tmp_path / 'avg'}", "--avg_num=2"],
                name, "truncated"))
  state_before = (tmp_path / "in" / "checkpoint").read_text()
  for argv, *words in cases:
    proc = run_cli(*argv)
    assert proc.returncode == 2, (argv, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, argv
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"model_utils.py: error: "), last
    for word in words:
      assert word in last, (word, last)
  # The symlinked output never rewrote the input directory's state file.
  assert (tmp_path / "in" / "checkpoint").read_text() == state_before
  assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")


@pytest.mark.tf_version
def test_rollback_moves_damaged_newer_checkpoints_to_quarantine(tmp_path):
  model_dir = tmp_path / "train"
  prefixes = ckpt_fx.save_checkpoints(str(model_dir), [ckpt_fx.random_values(s)
                                               for s in range(3)])
  ckpt_fx.truncate_data(prefixes[2])
  damaged = sorted(os.path.basename(p)
                   for p in tf.io.gfile.glob(prefixes[2] + ".*"))
  assert len(damaged) == 3  # index, data, meta
  proc = run_cli("rollback_ckpt", f"--model_dir={model_dir}")
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert tf.train.latest_checkpoint(str(model_dir)) == prefixes[1]
  assert sorted(os.listdir(model_dir / "quarantine")) == damaged
  assert not tf.io.gfile.glob(prefixes[2] + ".*")
  bad = run_cli("rollback_ckpt", f"--model_dir={model_dir}", "--step=7")
  assert bad.returncode == 2 and "no intact model.ckpt-7" in bad.stderr


def test_rollback_in_a_copy_moves_nothing_of_the_original(tmp_path):
  """The release's Saver writes absolute paths into the state file, so a
  copied model_dir's state file names the original's checkpoints: the
  copy's rollback moves the copy's damaged files only (it used to move the
  original's newest checkpoint into the copy's quarantine)."""
  original = tmp_path / "train"
  prefixes = ckpt_fx.save_checkpoints(str(original), [
      ckpt_fx.random_values(s) for s in range(3)])
  ckpt_fx.truncate_data(prefixes[2])
  assert str(original) in (original / "checkpoint").read_text()
  shutil.copytree(original, tmp_path / "copy")
  before = sorted(os.listdir(original))
  assert checkpoint_tools.rollback_ckpt(str(tmp_path / "copy")) == str(
      tmp_path / "copy" / "model.ckpt-2")
  assert sorted(os.listdir(original)) == before
  assert sorted(os.listdir(tmp_path / "copy" / "quarantine")) == [
      "model.ckpt-3.data-00000-of-00001", "model.ckpt-3.index",
      "model.ckpt-3.meta"]


def test_rollback_refuses_a_directory_a_trainer_runs_on(tmp_path):
  """Moving checkpoints and rewriting the state file under a running
  trainer would lose its saves: rollback_ckpt takes the directory's run
  lock first, and leaves everything in place while a trainer holds it."""
  from xlnet.training import run_lock  # pylint: disable=import-outside-toplevel
  model_dir = tmp_path / "train"
  prefixes = ckpt_fx.save_checkpoints(str(model_dir), [ckpt_fx.random_values(s)
                                               for s in range(3)])
  ckpt_fx.truncate_data(prefixes[2])
  before = sorted(os.listdir(model_dir))
  token = run_lock.acquire(str(model_dir))  # this process: a live trainer
  try:
    proc = run_cli("rollback_ckpt", f"--model_dir={model_dir}")
  finally:
    run_lock.release(str(model_dir), token)
  assert proc.returncode == 1, proc.stderr[-2000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith(f"model_utils.py: error: --model_dir={model_dir} is "
                         "in use "
                         "by another trainer"), last
  assert "Traceback" not in proc.stderr
  assert sorted(os.listdir(model_dir)) == before
  # Once the trainer is gone it rolls back, and leaves no lock behind.
  assert checkpoint_tools.rollback_ckpt(str(model_dir)) == prefixes[1]
  assert not os.path.exists(run_lock.lock_path(str(model_dir)))
