"""Messages that used to mislead: evaluating a model_dir without a
checkpoint, evaluating one whose `checkpoint` state file is damaged or
stale, and a pipe given as --input_glob."""
import hashlib
import glob
import os
import threading

import numpy as np
import pytest

from tests import classifier_fixtures
from tests import data_helpers
from xlnet.training import checkpoint_io
from xlnet.training import checkpoint_resume
from xlnet.data import record_writer
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning import finetune
from xlnet.training import config as train_config


@pytest.mark.parametrize("make_dir", [False, True])
def test_predicting_before_training_says_train_first(tmp_path, make_dir):
  """run_squad.py / run_race.py --do_predict/--do_eval with a fresh
  --model_dir (finetune.predict_records) said only "not a checkpoint (no
  DIR.index)"."""
  model_dir = tmp_path / "model"
  if make_dir:
    model_dir.mkdir()
  run = finetune_config.EngineConfig(
      checkpoint=train_config.CheckpointConfig(model_dir=str(model_dir)))
  with pytest.raises(ValueError) as info:
    finetune.predict_records(run, None, None, 8)
  assert str(info.value) == (
      f"checkpoint={model_dir}: directory {model_dir} holds no checkpoint; "
      "train first, or give a checkpoint prefix" if make_dir else
      f"checkpoint={model_dir}: not a checkpoint (no {model_dir}.index) and "
      "no such directory: nothing was saved there; train first, or give a "
      "checkpoint prefix, a directory or DIR/latest")


@pytest.mark.parametrize("state", [
    b"\x00\x01 not a checkpoint state {{",  # damaged
    b'model_checkpoint_path: "model.ckpt-1"\n'  # stale: names an older one
    b'all_model_checkpoint_paths: "model.ckpt-1"\n',
], ids=["damaged", "stale"])
def test_evaluation_finds_the_checkpoint_training_resumes_from(tmp_path,
                                                               state):
  """eval_pretrain.py (and every --model_dir reader) takes the newest
  intact model.ckpt-N, as train_gpu.py resumes from it, whatever the state
  file says (it said no checkpoint exists); nothing is written."""
  values = {"w": np.arange(3, dtype=np.float32)}
  for step in (1, 2):
    classifier_fixtures.write_checkpoint(str(tmp_path / f"model.ckpt-{step}"),
                                         values)
  (tmp_path / "checkpoint").write_bytes(state)
  before = sorted(os.listdir(tmp_path))
  newest = str(tmp_path / "model.ckpt-2")
  assert checkpoint_io.resolve_checkpoint(str(tmp_path),
                                          "--eval_ckpt") == newest
  assert checkpoint_resume.find_resume_checkpoint(str(tmp_path)) == newest
  assert sorted(os.listdir(tmp_path)) == before
  assert (tmp_path / "checkpoint").read_bytes() == state


def _feed_fifo(path, data):
  """Writes `data` into the FIFO `path` from a thread (as `<(cat f)` does)."""

  def feed():
    with open(path, "wb") as f:
      f.write(data)

  thread = threading.Thread(target=feed, daemon=True)
  thread.start()
  return thread


def test_a_pipe_as_input_is_read_as_a_stream(tmp_path, tiny_spm):
  """--input_glob=<(cat corpus.txt) (a /dev/fd pipe) was read as empty;
  it now gives the same records as the file itself."""
  corpus = data_helpers.corpus_slice(300)
  fifo = str(tmp_path / "fifo")
  os.mkfifo(fifo)
  with open(corpus, "rb") as f:
    thread = _feed_fifo(fifo, f.read())
  outputs = []
  for name, source in (("pipe", fifo), ("file", corpus)):
    record_writer.create_data(source, tiny_spm, str(tmp_path / name),
                           num_workers=1, **data_helpers.TINY_CONFIG)
    (record,) = glob.glob(str(tmp_path / name / "tfrecords" / "*.tfrecords"))
    with open(record, "rb") as f:
      outputs.append(hashlib.sha256(f.read()).hexdigest())
  thread.join(timeout=10)
  assert outputs[0] == outputs[1]
