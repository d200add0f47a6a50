"""Checkpoint files (xlnet/training/checkpoint_io.py): what kills during deletion or
publication leave is removed by the next run; pruning deletes whole
checkpoints. (A save that meets a file size limit: tests/pretraining/test_train_gpu.py.)
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from xlnet.training import checkpoint_io
from xlnet.training import checkpoint_resume
from xlnet import io_utils

pytestmark = [pytest.mark.eager, pytest.mark.tf_version]
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def _values(step):
  return {"model/w": np.full([4, 3], step, np.float32),
          "global_step": np.int64(step)}


def _write(model_dir, step, max_save=None):
  return checkpoint_io.write_checkpoint(
      checkpoint_io.checkpoint_prefix(str(model_dir), step), _values(step),
      max_save=max_save)


@pytest.mark.quick
def test_a_kill_between_the_steps_of_a_deletion_leaves_nothing_behind(
    tmp_path):
  """Pruning deletes the index, then the data. Killed in between, the data
  file of model.ckpt-1 stays without an index; a kill between the renames
  of a publication leaves model.ckpt-4's data without its index. The next
  run's cleanup removes both and keeps every real checkpoint intact."""
  for step in (1, 2, 3):
    _write(tmp_path, step)
  os.remove(tmp_path / "model.ckpt-1.index")  # the kill: data file stays
  orphan = tmp_path / "model.ckpt-1.data-00000-of-00001"
  assert orphan.exists()
  unpublished = tmp_path / "model.ckpt-4.data-00000-of-00001"
  unpublished.write_bytes(b"x" * 100)
  tmp = tmp_path / f"model.ckpt-5{io_utils.TMP_MARK}5-shard0.index"
  tmp.write_bytes(b"x")
  removed = checkpoint_io.clean_model_dir(str(tmp_path))
  assert sorted(os.path.basename(p) for p in removed) == sorted(
      [orphan.name, unpublished.name, tmp.name])
  assert sorted(os.listdir(tmp_path)) == sorted(
      ["checkpoint"] + [f"model.ckpt-{s}.{ext}" for s in (2, 3) for ext in
                        ("index", "data-00000-of-00001")])
  for step in (2, 3):
    values = checkpoint_io.read_tensors(
        checkpoint_io.checkpoint_prefix(str(tmp_path), step))
    np.testing.assert_array_equal(values["model/w"], _values(step)["model/w"])


def test_pruning_keeps_max_save_and_deletes_whole_checkpoints(tmp_path):
  for step in (1, 2, 3, 4):
    _write(tmp_path, step, max_save=2)
  assert sorted(os.listdir(tmp_path)) == sorted(
      ["checkpoint"] + [f"model.ckpt-{s}.{ext}" for s in (3, 4) for ext in
                        ("index", "data-00000-of-00001")])


def _damage(model_dir, how, name="model.ckpt-3"):
  """Damages checkpoint `name` of `model_dir` as a user may find it."""
  prefix = os.path.join(model_dir, name)
  data = f"{prefix}.data-00000-of-00001"
  if how == "index missing":
    os.remove(prefix + ".index")
  elif how == "deleted, still named":
    os.remove(prefix + ".index")
    os.remove(data)
  else:  # "data truncated"
    with open(data, "r+b") as f:
      f.truncate(10)
  return {"index missing": f"{prefix}.index is missing",
          "deleted, still named": f"{prefix}.index is missing",
          "data truncated": f"{data}: cannot read model/w"}[how]


def _files(directory):
  return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.mark.parametrize("how", ["index missing", "deleted, still named",
                                 "data truncated"])
def test_readers_take_the_newest_intact_checkpoint_and_say_why(
    tmp_path, how, caplog):
  """A directory whose newest checkpoint is missing, or named by the state
  file but deleted, or damaged: evaluation, prediction and conversion read
  the newest intact one and say which and why (they said "holds no
  checkpoint", or refused); training still refuses to resume; nothing is
  changed."""
  for step in (1, 2, 3):
    _write(tmp_path, step)
  why = _damage(str(tmp_path), how)
  before = _files(tmp_path)
  assert checkpoint_io.resolve_checkpoint(str(tmp_path), "--eval_ckpt") == (
      str(tmp_path / "model.ckpt-2"))
  assert (f"--eval_ckpt={tmp_path}: reading model.ckpt-2, the newest intact "
          f"checkpoint of {tmp_path} (skipped: {why}") in caplog.text
  assert _files(tmp_path) == before
  with pytest.raises(checkpoint_io.CheckpointError, match="rollback_ckpt"):
    checkpoint_resume.find_resume_checkpoint(str(tmp_path))


def test_readers_take_the_newest_intact_of_other_names(tmp_path, caplog):
  """Checkpoints of other names that only the state file lists (as the
  release's Saver writes it): its latest lacks its index, the one before is
  read (it said "holds no checkpoint")."""
  for step in (1, 2):
    checkpoint_io.write_checkpoint(str(tmp_path / f"xl.ckpt-{step}"),
                                   _values(step))
  (tmp_path / "checkpoint").write_text(
      f'model_checkpoint_path: "{tmp_path}/xl.ckpt-2"\n'
      f'all_model_checkpoint_paths: "{tmp_path}/xl.ckpt-1"\n'
      f'all_model_checkpoint_paths: "{tmp_path}/xl.ckpt-2"\n')
  why = _damage(str(tmp_path), "index missing", "xl.ckpt-2")
  assert checkpoint_io.resolve_checkpoint(
      str(tmp_path / "latest"), "--checkpoint") == str(tmp_path / "xl.ckpt-1")
  assert f"reading xl.ckpt-1, the newest intact checkpoint of {tmp_path} " \
      f"(skipped: {why})" in caplog.text


def test_a_directory_without_an_intact_checkpoint_names_each_problem(
    tmp_path):
  for step in (1, 2):
    _write(tmp_path, step)
  first = _damage(str(tmp_path), "data truncated", "model.ckpt-1")
  second = _damage(str(tmp_path), "index missing", "model.ckpt-2")
  with pytest.raises(checkpoint_io.CheckpointError) as caught:
    checkpoint_io.resolve_checkpoint(str(tmp_path), "--eval_ckpt")
  message = str(caught.value)
  assert message.startswith(f"--eval_ckpt={tmp_path}: {tmp_path} holds no "
                            f"intact checkpoint ({second}; {first}")


_READ_IN_A_SMALL_POOL = """
import sys
import xlnet
import tensorflow as tf
from xlnet import errors
from xlnet.training import checkpoint_io
tf.constant(0.0)  # TensorFlow's devices exist, as in a trainer
try:
  checkpoint_io.read_tensors(sys.argv[1])
except errors.Stop as e:
  sys.exit(str(e))
"""


def test_a_checkpoint_that_does_not_fit_is_one_line_not_a_crash(tmp_path):
  """Three tensors of 512 KiB read in TensorFlow's CPU pool of 1 MiB: the
  reader's C++ does not check its allocations (a segmentation fault, which
  left the run lock behind); the read stops with one line naming the
  checkpoint and the tensor."""
  values = {f"w{i}": np.zeros([2 ** 17], np.float32) for i in range(3)}
  prefix = checkpoint_io.write_checkpoint(
      checkpoint_io.checkpoint_prefix(str(tmp_path), 1), values)
  env = dict(os.environ, TF_CPU_BFC_MEM_LIMIT_IN_MB="1",
             TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=_REPO)
  done = subprocess.run([sys.executable, "-c", _READ_IN_A_SMALL_POOL, prefix],
                        capture_output=True, text=True, env=env, timeout=120)
  assert done.returncode == 1, done.stderr[-2000:]
  # TensorFlow's own start-up lines (absl's before InitializeLog, glog's
  # `I0000 ...`), which newer versions print despite TF_CPP_MIN_LOG_LEVEL.
  said = "".join(line for line in done.stderr.splitlines(keepends=True)
                 if not re.match(r"WARNING: All log messages before absl|"
                                 r"[IWE]\d{4} ", line))
  assert re.fullmatch(
      rf"out of memory reading {re.escape(prefix)}: w\d \(float32 \[131072\]\)"
      r" does not fit in the memory left for tensors; the checkpoint is "
      r"intact: free memory \(or raise TF_CPU_BFC_MEM_LIMIT_IN_MB\) and "
      r"rerun\n", said), done.stderr[-2000:]
