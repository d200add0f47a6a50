"""Tests of xlnet.data.prepro_utils (hand-worked): text normalization, the
digit-comma rule, loading a model and its special ids."""
import pytest
import sentencepiece as spm

from xlnet.data import prepro_utils


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


def test_model_without_special_symbols_is_rejected(tmp_path, demo_corpus):
  prefix = str(tmp_path / "plain")
  spm.SentencePieceTrainer.train(input=demo_corpus, model_prefix=prefix,
                                 vocab_size=300, minloglevel=2)
  with pytest.raises(ValueError, match=r"--sp_path=.*plain.model is not an "
                     r"XLNet SentencePiece model: id 3 is .*expected '<cls>'"):
    prepro_utils.load_sp_model(prefix + ".model", "--sp_path")
  with pytest.raises(ValueError, match=r"--sp_path=.*missing.model: "
                     "SentencePiece model not found"):
    prepro_utils.load_sp_model(str(tmp_path / "missing.model"),
                               "--sp_path")
  with pytest.raises(ValueError, match=r"^--sp_path is required: the "
                     "SentencePiece model"):
    prepro_utils.load_sp_model("", "--sp_path")
