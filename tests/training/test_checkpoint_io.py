"""Checkpoint files (xlnet/training/checkpoint_io.py): what kills during deletion or
publication leave is removed by the next run; pruning deletes whole
checkpoints. (A save that meets a file size limit: tests/pretraining/test_train_gpu.py.)
"""
import os

import numpy as np
import pytest

from xlnet.training import checkpoint_io
from xlnet import io_utils

pytestmark = pytest.mark.eager


def _values(step):
  return {"model/w": np.full([4, 3], step, np.float32),
          "global_step": np.int64(step)}


def _write(model_dir, step, max_save=None):
  return checkpoint_io.write_checkpoint(
      checkpoint_io.checkpoint_prefix(str(model_dir), step), _values(step),
      max_save=max_save)


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
