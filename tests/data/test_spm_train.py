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


def test_digit_comma_pieces_are_named_with_the_remedy(tmp_path, demo_corpus,
                                                      caplog):
  """Text with many numbers before commas: the vocabulary gets pieces that
  end in a digit and ',' (the release's encoder splits the comma off, HF's
  tokenizer does not), and the run says so with --split_digits, which then
  trains a vocabulary without them."""
  with open(demo_corpus, encoding="utf-8") as f:
    lines = f.read().split("\n")
  text = tmp_path / "numbers.txt"
  text.write_text("\n".join(
      line + (f" In {1900 + i % 120}, it was {i % 97}, again."
              if line.strip() and i % 2 == 0 else "")
      for i, line in enumerate(lines)), encoding="utf-8")
  with caplog.at_level("WARNING", logger="absl"):
    path = spm_train.train_spm(str(text), str(tmp_path / "sp"), 1000)
  sp = spm.SentencePieceProcessor(model_file=path)
  # Independently of the code under test: a piece ending in a digit and ','.
  found = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
           if re.fullmatch(r".*[0-9],", sp.id_to_piece(i))]
  assert found and spm_train.digit_comma_pieces(sp) == found
  assert [m for m in caplog.messages if "ending in a digit" in m] == [
      f"{path} holds {len(found)} piece(s) ending in a digit and ',' (e.g. "
      f"{' '.join(found[:3])}): the release's encoder splits the comma off, "
      "so the model never sees them, and HF's tokenizer of an export keeps "
      "them whole (its ids differ on text such as '2000,'); to train a "
      "vocabulary without them, rerun spm_train.py with --split_digits "
      "(docs/interop.md, \"Digit + comma\")"]
  caplog.clear()
  with caplog.at_level("WARNING", logger="absl"):
    path = spm_train.train_spm(str(text), str(tmp_path / "split"), 1000,
                               split_digits=True)
  sp = spm.SentencePieceProcessor(model_file=path)
  assert not [i for i in range(sp.get_piece_size())
              if re.fullmatch(r".*[0-9],", sp.id_to_piece(i))]
  assert not [m for m in caplog.messages if "ending in a digit" in m]
