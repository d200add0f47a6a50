"""Tests of record creation as a whole: output bytes, workers, validation."""
import glob
import hashlib
import json
import os

import pytest

from xlnet import data_utils

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "testdata")

# SHA-256 of the .tfrecords file and num_batch written for GOLDEN_CONFIGS by
# the record writer as it was at commit 266101f (before the writer was split
# into modules and given worker processes), computed with
#   data_utils.create_data(golden_inputs(tmp) glob, GOLDEN_SP, save_dir, **cfg)
# on both TensorFlow environments (identical). GOLDEN_SP
# (tests/testdata/golden-spiece.model, 400 pieces) was trained once with
#   spm.SentencePieceTrainer.train(input="data/demo/botchan.txt",
#       model_prefix=..., vocab_size=400, model_type="unigram",
#       control_symbols=spm_train.CONTROL_SYMBOLS,
#       user_defined_symbols=spm_train.USER_DEFINED_SYMBOLS,
#       normalization_rule_name="identity", num_threads=1)
# and is committed because SentencePiece training is not reproducible.
GOLDEN_SP = os.path.join(TESTDATA, "golden-spiece.model")
GOLDEN_CONFIGS = {
    "bi": (dict(bsz_per_host=8, num_core_per_host=2, seq_len=64, reuse_len=32,
                num_predict=12, bi_data=True, mask_alpha=6, mask_beta=1,
                uncased=False, pass_id=0),
           "dc593d7f8a1b905b60deeeb2c617988a9dfced4cc07a6073225587f91815a364",
           239),
    "uni": (dict(bsz_per_host=4, num_core_per_host=1, seq_len=40,
                 reuse_len=24, num_predict=7, bi_data=False, mask_alpha=4,
                 mask_beta=2, uncased=True, pass_id=1),
            "6c32800c778abc50d648e49f2b5fbb193efed09f074ed36409becf175aa1c81c",
            322),
}


def golden_inputs(demo_corpus, dest):
  """Writes lines [0, 400) and [400, 700) of the demo corpus as two files.

  Returns:
    the glob matching both.
  """
  with open(demo_corpus, encoding="utf-8") as f:
    lines = f.read().split("\n")
  for k, (lo, hi) in enumerate([(0, 400), (400, 700)]):
    with open(os.path.join(dest, f"part{k}.txt"), "w", encoding="utf-8") as f:
      f.write("\n".join(lines[lo:hi]) + "\n")
  return os.path.join(dest, "part*.txt")


def sha256(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize("name", sorted(GOLDEN_CONFIGS))
def test_output_bytes_unchanged(tmp_path, demo_corpus, name):
  cfg, digest, num_batch = GOLDEN_CONFIGS[name]
  input_glob = golden_inputs(demo_corpus, str(tmp_path))
  save_dir = str(tmp_path / "out")
  data_utils.create_data(input_glob, GOLDEN_SP, save_dir, **cfg)
  (record,) = glob.glob(os.path.join(save_dir, "tfrecords", "*.tfrecords"))
  (info,) = glob.glob(os.path.join(save_dir, "tfrecords", "*.json"))
  assert sha256(record) == digest
  with open(info) as f:
    assert json.load(f)["num_batch"] == num_batch
