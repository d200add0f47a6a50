"""Tests of xlnet.data.spm_train: the trained model's special ids, the
bytes SentencePiece itself writes for the same options, determinism, and
nothing written on failure."""
import re

import pytest
import sentencepiece as spm

from xlnet.data import prepro_utils
from xlnet.data import spm_train


def test_trained_model_has_xlnet_special_ids(tiny_spm):
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  assert sp.get_piece_size() == 1000
  assert [sp.id_to_piece(i) for i in range(9)] == [
      "<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>",
      "<eop>"]
  for symbol in [".", "(", ")", '"', "-", "\u2013", "\u00a3", "\u20ac"]:
    assert sp.piece_to_id(symbol) != 0, symbol  # user-defined symbols
  assert sp.encode_as_pieces("a<eop>")[-1] == "<eop>"


def test_spm_train_rejects_missing_input(tmp_path):
  with pytest.raises(ValueError, match="--input: no such file"):
    spm_train.train_spm(str(tmp_path / "nope.txt"), str(tmp_path / "m"))


def test_spm_train_is_deterministic_and_writes_sentencepieces_files(
    tmp_path, demo_corpus):
  """Two runs give the same bytes; the pieces, scores and `.vocab` text
  are those SentencePiece writes itself for the same options."""
  ours = [spm_train.train_spm(demo_corpus, str(tmp_path / f"run{i}" / "sp"),
                              vocab_size=300) for i in (1, 2)]
  with open(ours[0], "rb") as a, open(ours[1], "rb") as b:
    assert a.read() == b.read()
  spm.SentencePieceTrainer.train(
      input=demo_corpus, model_prefix=str(tmp_path / "direct"),
      vocab_size=300, model_type="unigram", character_coverage=0.99995,
      control_symbols=spm_train.CONTROL_SYMBOLS,
      user_defined_symbols=spm_train.USER_DEFINED_SYMBOLS,
      shuffle_input_sentence=True, input_sentence_size=10000000,
      minloglevel=2)
  direct = spm.SentencePieceProcessor(model_file=str(tmp_path / "direct.model"))
  mine = spm.SentencePieceProcessor(model_file=ours[0])
  assert [(mine.id_to_piece(i), mine.get_score(i)) for i in range(300)] == [
      (direct.id_to_piece(i), direct.get_score(i)) for i in range(300)]
  assert ((tmp_path / "run1" / "sp.vocab").read_text(encoding="utf-8") ==
          (tmp_path / "direct.vocab").read_text(encoding="utf-8"))


def test_spm_train_failure_writes_nothing(tmp_path, demo_corpus,
                                          monkeypatch):
  """A failed training (too large a vocabulary) or a model that fails the
  special-id check: one error, and no file under the prefix."""
  with pytest.raises(ValueError, match=r"--vocab_size=200000 is more "
                     r"pieces than this text yields \(at most (\d+)\): "
                     r"rerun with --vocab_size=\1 or less") as info:
    spm_train.train_spm(demo_corpus, str(tmp_path / "out" / "sp"),
                        vocab_size=200000)
  assert not list((tmp_path / "out").iterdir())
  # The size it advises is one SentencePiece accepts.
  fits = int(re.search(r"at most (\d+)", str(info.value)).group(1))
  spm_train.train_spm(demo_corpus, str(tmp_path / "fits" / "sp"),
                      vocab_size=fits)

  def reject(sp_model, path):
    raise ValueError(f"{path}: id 3 is not <cls>")

  monkeypatch.setattr(prepro_utils, "check_special_symbols", reject)
  with pytest.raises(ValueError, match="id 3 is not <cls>"):
    spm_train.train_spm(demo_corpus, str(tmp_path / "out" / "sp"),
                        vocab_size=300)
  assert not list((tmp_path / "out").iterdir())
