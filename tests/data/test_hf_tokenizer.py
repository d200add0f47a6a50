"""The tokenizer.json the HF export writes (xlnet/interop/hf_tokenizer.py),
read without the `tokenizers` library: its vocabulary against
SentencePiece's, its normalizer settings against sentencepiece's own
protobuf reading of the model. (tests/interop/test_hf_parity.py runs the
file through HF's tokenizers.)"""
import os

import pytest
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from xlnet.data import prepro_utils
from xlnet.interop import hf_tokenizer

SPIECE = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "testdata", "golden-spiece.model")


@pytest.mark.tf_version  # every module is exercised on the newest TF
def test_tokenizer_json_holds_our_pieces_scores_and_specials():
  sp = spm.SentencePieceProcessor()
  sp.Load(SPIECE)
  proto = sentencepiece_model_pb2.ModelProto()
  with open(SPIECE, "rb") as f:
    data = f.read()
  proto.ParseFromString(data)
  spec = proto.normalizer_spec
  assert hf_tokenizer.normalizer_spec(data) == (spec.precompiled_charsmap,
                                                spec.add_dummy_prefix)
  config = hf_tokenizer.tokenizer_json(SPIECE, uncased=True)
  model = config["model"]
  assert model["type"] == "Unigram" and model["unk_id"] == 0
  assert model["vocab"] == [[p.piece, p.score] for p in proto.pieces]
  assert [t["content"] for t in config["added_tokens"]] == list(
      prepro_utils.SPECIAL_SYMBOLS)
  steps = [n["type"] for n in config["normalizer"]["normalizers"]]
  assert steps == ["Replace", "Replace", "NFKD", "StripAccents",
                   "Lowercase"]  # the golden model maps no characters
  specials = config["post_processor"]["special_tokens"]
  assert (specials["<sep>"]["ids"], specials["<cls>"]["ids"]) == (
      [prepro_utils.SEP_ID], [prepro_utils.CLS_ID])
  assert config["padding"]["direction"] == "Left"
  assert config["padding"]["pad_id"] == sp.PieceToId("<pad>")
