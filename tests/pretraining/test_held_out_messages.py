"""Held-out evaluation without held-out records names the pretraining
programs' own flags: `train_gpu.py --eval_steps=N` reading the training
records (no --eval_record_info_dir) said "differs in --split=valid", a flag
of data_utils.py only."""
import os

import pytest

from tests import train_fixtures as fx


@pytest.fixture(scope="module")
def train_records():
  return fx.shared_program_records(1, num_lines=200)


def _train_gpu(tmp_path, records, *flags):
  """train_gpu.py in this process (`fx.run_program`)."""
  return fx.run_in_process(fx.program_command(
      "train_gpu.py", records, tmp_path / "model", "--num_core_per_host=1",
      "--train_steps=1", "--eval_steps=1", *flags))


@pytest.mark.parametrize("given", [False, True])
def test_no_held_out_split_names_eval_split_and_the_directory_flag(
    tmp_path, train_records, given):
  flags = [f"--eval_record_info_dir={train_records}"] if given else []
  proc = _train_gpu(tmp_path, train_records, *flags)
  assert proc.returncode == 2, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  where = (f"--eval_record_info_dir={train_records}" if given else
           f"--record_info_dir={train_records} (the training records: "
           "--eval_record_info_dir is unset)")
  assert last == (
      f"train_gpu.py: error: --eval_split=valid: {where} holds no records of "
      "split valid (only train); give --eval_record_info_dir the tfrecords "
      "directory of the held-out records (data_utils.py --split=valid), or "
      "train without held-out evaluation: --eval_steps=0")
  assert not os.path.exists(tmp_path / "model" / "model.ckpt-1.index")


@pytest.mark.tf_version
def test_eval_pretrain_on_a_directory_without_a_checkpoint_is_one_line(
    tmp_path, train_records):
  """eval_pretrain.py's command line (in this process) on a model
  directory that holds no checkpoint: one line naming the flag and the
  directory, exit code 2, nothing evaluated."""
  (tmp_path / "model").mkdir()
  proc = fx.run_program(
      "eval_pretrain.py", f"--record_info_dir={train_records}",
      f"--eval_record_info_dir={train_records}", "--eval_split=train",
      f"--model_dir={tmp_path / 'model'}", *fx.PROGRAM_RUN)
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert proc.stderr.strip().splitlines()[-1].endswith(
      f"directory {tmp_path / 'model'} holds no checkpoint; train first, "
      "or give a checkpoint prefix")
