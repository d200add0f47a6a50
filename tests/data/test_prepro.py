"""Tests of xlnet.data.prepro_utils and SentencePiece training (hand-worked)."""
import pytest
import sentencepiece as spm

from xlnet.data import prepro_utils
from xlnet.data import spm_train


class FakeSp:
  """A SentencePiece stand-in with a fixed table of encodings."""

  def __init__(self, table):
    self.table = table
    self.vocab = {}

  def encode_as_pieces(self, text):
    return list(self.table[text])

  def sample_encode_as_pieces(self, text, nbest, alpha):
    assert (nbest, alpha) == (64, 0.1)
    return list(self.table["sampled:" + text])

  def piece_to_id(self, piece):
    return self.vocab.setdefault(piece, len(self.vocab))


@pytest.mark.parametrize("text,kwargs,expected", [
    ("  Hello \t\n  world  ", {}, "Hello world"),
    ("  a  b ", {"remove_space": False}, "  a  b "),
    ("``Quoted''", {}, '"Quoted"'),
    ("Café naïve Ångström", {}, "Cafe naive Angstrom"),
    ("Café", {"keep_accents": True}, "Café"),
    ("MiXeD Ünï", {"lower": True}, "mixed uni"),
    ("ﬁ ①", {}, "fi 1"),  # NFKD compatibility decomposition
    ("Bytes é".encode("utf-8"), {}, "Bytes e"),
])
def test_preprocess_text(text, kwargs, expected):
  assert prepro_utils.preprocess_text(text, **kwargs) == expected


def test_encode_pieces_digit_comma_rule():
  u = prepro_utils.SPIECE_UNDERLINE
  sp = FakeSp({
      "In 1999, ab12, 7, x,": [u + "In", u + "1999,", "ab12,", "7,",
                               u + "x,", ","],
      "1999": [u + "1999"],
      "ab12": [u + "ab", "12"],
      "7": [u, "7"],
      "sampled:s 5,": [u + "s", u + "5,"],
      "5": [u + "5"],
  })
  pieces = prepro_utils.encode_pieces(sp, "In 1999, ab12, 7, x,")
  # '▁1999,' keeps its '▁'; 'ab12,' had none, so '▁ab' loses it; for '7,'
  # the lone '▁' disappears; '▁x,' (no digit) and ',' are untouched.
  assert pieces == [u + "In", u + "1999", ",", "ab", "12", ",", "7", ",",
                    u + "x,", ","]
  assert prepro_utils.encode_pieces(sp, "s 5,", sample=True) == [
      u + "s", u + "5", ","]
  ids = prepro_utils.encode_ids(sp, "In 1999, ab12, 7, x,")
  assert ids == [sp.vocab[p] for p in pieces]


def test_encode_ids_real_model_round_trip(tiny_spm):
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  text = prepro_utils.preprocess_text("In 1999, Botchan paid 2,000 yen.")
  ids = prepro_utils.encode_ids(sp, text)
  assert sp.decode(ids) == text
  assert not any(p[-1] == "," and len(p) > 1 and p[-2].isdigit()
                 for p in prepro_utils.encode_pieces(sp, text))


def test_trained_model_has_xlnet_special_ids(tiny_spm):
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  assert sp.get_piece_size() == 1000
  assert [sp.id_to_piece(i) for i in range(9)] == [
      "<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>",
      "<eop>"]
  for symbol in [".", "(", ")", '"', "-", "\u2013", "\u00a3", "\u20ac"]:
    assert sp.piece_to_id(symbol) != 0, symbol  # user-defined symbols
  assert sp.encode_as_pieces("a<eop>")[-1] == "<eop>"


def test_model_without_special_symbols_is_rejected(tmp_path, demo_corpus):
  prefix = str(tmp_path / "plain")
  spm.SentencePieceTrainer.train(input=demo_corpus, model_prefix=prefix,
                                 vocab_size=300, minloglevel=2)
  with pytest.raises(ValueError, match=r"--sp_path=.*plain.model is not an "
                     r"XLNet SentencePiece model: id 3 is .*expected '<cls>'"):
    prepro_utils.load_sp_model(prefix + ".model")
  with pytest.raises(ValueError, match=r"--sp_path=.*missing.model: "
                     "SentencePiece model not found"):
    prepro_utils.load_sp_model(str(tmp_path / "missing.model"))


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
  with pytest.raises(ValueError, match="SentencePiece training failed"):
    spm_train.train_spm(demo_corpus, str(tmp_path / "out" / "sp"),
                        vocab_size=200000)

  def reject(sp_model, path):
    raise ValueError(f"{path}: id 3 is not <cls>")

  monkeypatch.setattr(prepro_utils, "check_special_symbols", reject)
  with pytest.raises(ValueError, match="id 3 is not <cls>"):
    spm_train.train_spm(demo_corpus, str(tmp_path / "out" / "sp"),
                        vocab_size=300)
  assert not list((tmp_path / "out").iterdir())
