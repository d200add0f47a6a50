"""`xlnet.pretraining.api.write_records` (docs/python_api.md) writes what
`data_utils.py` writes with the same settings, byte for byte, and its
`Records.data()` is the `PretrainData` of the sizes in corpus_info.json."""
import json
import os

from tests import data_helpers
from tests import shared_artifacts
from tests import train_fixtures as fx
from xlnet.pretraining import api

SETTINGS = dict(seq_len=32, reuse_len=16, bsz_per_host=4,
                num_core_per_host=1, num_predict=6, bi_data=True,
                mask_alpha=6, mask_beta=1)


def test_write_records_writes_what_data_utils_writes(tmp_path):
  corpus = data_helpers.corpus_slice(200)
  spm = data_helpers.train_tiny_spm()
  records = api.write_records(corpus, spm, str(tmp_path / "api"),
                              num_workers=1, **SETTINGS)
  proc = fx.run_program(
      "data_utils.py", f"--input_glob={corpus}", f"--sp_path={spm}",
      f"--save_dir={tmp_path / 'cli'}", "--num_workers=1",
      *[f"--{k}={v}" for k, v in SETTINGS.items()])
  assert proc.returncode == 0, proc.stderr[-2000:]
  ours = shared_artifacts.file_bytes(tmp_path / "api")
  theirs = shared_artifacts.file_bytes(tmp_path / "cli")
  assert ours.keys() == theirs.keys()
  assert any(name.endswith(".tfrecords") for name in ours)
  for name in ours:
    assert ours[name] == theirs[name], name

  assert records.record_info_dir == str(tmp_path / "api" / "tfrecords")
  assert os.path.isfile(records.record_info)
  with open(tmp_path / "api" / "corpus_info.json") as f:
    info = json.load(f)
  assert records.corpus_info == info and info["vocab_size"] == 1000
  data = records.data()
  for key in ("seq_len", "reuse_len", "bi_data", "mask_alpha", "mask_beta",
              "num_predict", "uncased"):
    assert getattr(data, key) == SETTINGS.get(key, False), key
  assert data.perm_size == 16 and data.record_info_dir == (
      records.record_info_dir)
  assert records.data(perm_size=8).perm_size == 8
