"""PretrainData.from_corpus_info: the records' sizes read from the
corpus_info.json data_utils.py wrote beside them (one place that fills
PretrainData from it: the programs and Python alike)."""
import json
import os

import pytest

from tests import train_fixtures as fx
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import pretraining as pretrain_flags
from xlnet.pretraining.config import PretrainData


def test_the_sizes_are_the_corpus_infos(tmp_path):
  record_dir = fx.fake_data_dir(tmp_path)  # seq_len 8, reuse_len 4, ...
  info_path = os.path.join(tmp_path, "corpus_info.json")
  with open(info_path) as f:
    info = json.load(f)
  # The tfrecords directory, the file and its dict name the same data.
  for source in (record_dir, str(tmp_path), info_path, info):
    data = PretrainData.from_corpus_info(source, record_dir, perm_size=2,
                                         num_passes=3)
    assert data == PretrainData(
        record_info_dir=record_dir, seq_len=8, reuse_len=4, perm_size=2,
        bi_data=True, mask_alpha=6, mask_beta=1, num_predict=3,
        uncased=False, num_passes=3, corpus_info=info), source
  default = PretrainData.from_corpus_info(info, record_dir)
  assert (default.perm_size, default.num_passes) == (None, None)


def test_the_programs_fill_it_alike(tmp_path):
  record_dir = fx.fake_data_dir(tmp_path)
  FL = flag_catalog.parse_flags(["prog", f"--record_info_dir={record_dir}",
                                 "--perm_size=2", "--seq_len=8"])
  assert pretrain_flags.resolve(FL).data == PretrainData.from_corpus_info(
      record_dir, record_dir, perm_size=2, num_passes=FL.num_passes)


def test_a_missing_or_short_corpus_info_is_named(tmp_path):
  with pytest.raises(ValueError, match=f"^{tmp_path}: no corpus_info.json "
                     "there"):
    PretrainData.from_corpus_info(str(tmp_path), str(tmp_path))
  info = dict(seq_len=8, reuse_len=4, uncased=False, bi_data=True,
              mask_alpha=6, mask_beta=1)
  with pytest.raises(ValueError, match="^the corpus info lacks num_predict "):
    PretrainData.from_corpus_info(info, str(tmp_path))


@pytest.mark.quick
@pytest.mark.parametrize("change, message", [
    (dict(mask_alpha=0), r"--mask_alpha=0 must be >= --mask_beta=1 > 0 "),
    (dict(mask_beta=0), r"--mask_alpha=6 must be >= --mask_beta=0 > 0 "),
    (dict(num_predict=0), r"--num_predict=0 must be >= 1 \(no target"),
    # 9 targets: 5 in the reuse part of 4 tokens.
    (dict(num_predict=9), r"--num_predict=9 needs 5 masked tokens in the "
                          r"reuse part \(--reuse_len=4\) and 4 in the rest"),
])
def test_span_masks_that_cannot_fit_are_refused_when_built(change, message):
  """Refused when the config is built, naming the flags as the programs
  do, not when its input function first runs (token records draw their
  span masks with these values)."""
  sizes = dict(record_info_dir="r", seq_len=8, reuse_len=4, perm_size=2,
               bi_data=True, mask_alpha=6, mask_beta=1, num_predict=3)
  PretrainData(**dict(sizes, num_predict=8))  # 4 targets in each part
  with pytest.raises(ValueError, match="^" + message):
    PretrainData(**dict(sizes, **change))
