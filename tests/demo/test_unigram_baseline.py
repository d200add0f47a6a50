"""The unigram baseline of held-out evaluation (xlnet/demo/unigram_baseline.py)."""
import math

import numpy as np
import pytest
import sentencepiece as spm

from tests import data_helpers
from xlnet.demo import unigram_baseline
from xlnet.data.prepro_utils import CLS_ID, EOD_ID, SEP_ID


@pytest.mark.tf_version
def test_cross_entropy_hand_worked():
  # Counts 3, 1, 0, 0 (4 pieces seen) + 1 each -> p = 4/8, 2/8, 1/8, 1/8.
  # Targets 0, 1, 2 cost ln 2, ln 4, ln 8: mean 2 ln 2.
  got = unigram_baseline.cross_entropy([3, 1, 0, 0], [0, 1, 2])
  assert got == pytest.approx(2 * math.log(2), abs=1e-12)


def test_cross_entropy_smoothing_keeps_unseen_pieces_finite():
  # Without smoothing an unseen target costs infinity; with 0.5 its
  # probability is 0.5 / (2 + 0.5 * 2).
  assert unigram_baseline.cross_entropy([2, 0], [1], smoothing=0.5) == \
      pytest.approx(math.log(6), abs=1e-12)


def test_entropy_hand_worked():
  # Frequencies 1/2, 1/4, 1/4: 1.5 bits = 1.5 ln 2 nats.
  assert unigram_baseline.entropy([5, 5, 7, 9]) == pytest.approx(
      1.5 * math.log(2), abs=1e-12)
  assert unigram_baseline.entropy([3, 3, 3]) == 0.0


def test_describe_states_both_numbers():
  line = unigram_baseline.describe([3, 1, 0, 0], [0, 1, 2])
  assert "3 held-out targets" in line
  assert f"{2 * math.log(2):.2f} nats per target" in line
  assert f"{unigram_baseline.entropy([0, 1, 2]):.2f} even with" in line


def test_train_piece_counts_match_a_line_by_line_encoding(tmp_path, tiny_spm):
  text = ("It was a fine day.\nThe cat sat.\n\nA new document began."
          "\n\n\nLast line\n")
  path = tmp_path / "t.txt"
  path.write_text(text, encoding="utf-8")
  sp = spm.SentencePieceProcessor()
  sp.Load(tiny_spm)
  # Reference: every non-blank line through SentencePiece, one <eod> per
  # blank line.
  want = np.zeros(sp.GetPieceSize(), np.int64)
  for line in text.split("\n")[:-1]:
    if line.strip():
      np.add.at(want, sp.EncodeAsIds(line), 1)
    else:
      want[EOD_ID] += 1
  got = unigram_baseline.train_piece_counts(str(path), sp)
  assert got[EOD_ID] == 3
  np.testing.assert_array_equal(got, want)
  no_eod = unigram_baseline.train_piece_counts(str(path), sp, use_eod=False)
  assert no_eod[EOD_ID] == 0 and no_eod.sum() == want.sum() - 3


@pytest.mark.eager
def test_heldout_targets_are_the_masked_non_functional_record_tokens(
    tiny_data):
  # Reference: straight from the raw records, in file order.
  want = []
  for ex in data_helpers.read_records(tiny_data.record_dir):
    keep = (ex["is_masked"] == 1) & (ex["input"] != SEP_ID) & (
        ex["input"] != CLS_ID)
    want.extend(ex["input"][keep])
  got = unigram_baseline.heldout_targets(tiny_data.record_dir, split="train")
  assert len(got) > 0
  np.testing.assert_array_equal(got, want)


def test_heldout_targets_needs_a_corpus_info(tmp_path):
  with pytest.raises(ValueError, match="no corpus_info.json"):
    unigram_baseline.heldout_targets(str(tmp_path / "tfrecords"))
