"""Masked-word prediction of the demo (xlnet/demo/demo_predict.py) and the
report's helpers (xlnet/demo/demo_report.py)."""
import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from xlnet.demo import demo_predict
from xlnet.demo import demo_report
from xlnet import model as model_lib
from xlnet.data import token_stream
from xlnet.data.prepro_utils import CLS_ID, MASK_ID, SEP_ID

TINY = dict(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32,
            ff_activation="gelu", untie_r=True, n_token=40)


def tiny_config(tmp_path):
  config = model_lib.XLNetConfig(**TINY)
  path = str(tmp_path / "config.json")
  config.to_json(path)
  return model_lib.XLNetConfig(json_path=path)


def test_masked_features_hand_worked():
  feats = demo_predict.masked_features(np.array([10, 11, 12, 13]), [1, 3])
  # Sequence: 10 11 12 13 <sep> <cls>; positions 1 and 3 hidden.
  np.testing.assert_array_equal(
      feats["input_k"], [10, MASK_ID, 12, MASK_ID, SEP_ID, CLS_ID])
  np.testing.assert_array_equal(feats["seg_id"], [0, 0, 0, 0, 0, 2])
  np.testing.assert_array_equal(feats["input_q"], [0, 1, 0, 1, 0, 0])
  want_perm = np.zeros([6, 6])
  want_perm[:, 1] = want_perm[:, 3] = 1  # nobody sees a hidden position
  np.testing.assert_array_equal(feats["perm_mask"], want_perm)
  np.testing.assert_array_equal(feats["target_mapping"],
                                [[0, 1, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0]])
  assert feats["input_k"].dtype == np.int32
  assert feats["perm_mask"].dtype == np.float32


def test_word_spans_group_continuation_pieces():
  is_start = np.zeros(20, bool)
  is_start[[1, 2, 5]] = True
  # ids:        7   1   2   9   9   5   3
  # word starts:    ^   ^           ^      (7 leads: a word of its own)
  spans = demo_predict.word_spans(np.array([7, 1, 2, 9, 9, 5, 3]), is_start)
  assert spans == [(0, 1), (1, 2), (2, 5), (5, 7)]


def test_choose_hidden_words_takes_one_piece_words_with_letters():
  pieces = ["\u2581The", "\u2581cat", "s", "\u2581sat", "\u2581,",
            "\u2581down", "."]
  spans = [(0, 1), (1, 3), (3, 4), (4, 5), (5, 6), (6, 7)]
  rng = np.random.RandomState(0)
  for _ in range(20):
    chosen = demo_predict.choose_hidden_words(pieces, spans, 0.5, rng)
    # 6 words * 0.5 = 3 of the one-piece words with a letter: 0, 3, 5.
    assert chosen == [0, 3, 5]
  one = demo_predict.choose_hidden_words(pieces, spans, 0.01, rng)
  assert len(one) == 1 and one[0] in (0, 3, 5)
  assert demo_predict.choose_hidden_words([",", "."], [(0, 1), (1, 2)], 0.5,
                                          rng) == []


def test_top_k():
  idx, p = demo_predict.top_k(np.array([[0.1, 0.5, 0.2, 0.2],
                                        [0.7, 0.1, 0.05, 0.15]]), 2)
  np.testing.assert_array_equal(idx, [[1, 2], [0, 3]])
  np.testing.assert_allclose(p, [[0.5, 0.2], [0.7, 0.15]])


@pytest.mark.tf_version
def test_predictions_never_see_the_hidden_pieces(tmp_path):
  predictor = demo_predict.MaskedPredictor(tiny_config(tmp_path), seed=3)
  feats = demo_predict.masked_features(np.arange(10, 30), [4, 5, 11])
  probs = predictor.predict(feats)
  assert probs.shape == (3, TINY["n_token"])
  np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)
  # Any ids at the hidden positions: exactly the same predictions (masked
  # attention weights are exactly 0).
  leaked = dict(feats, input_k=feats["input_k"].copy())
  leaked["input_k"][[4, 5, 11]] = [31, 32, 33]
  np.testing.assert_array_equal(predictor.predict(leaked), probs)
  # A freshly initialized model is nearly uniform, so effects are small but
  # far above float noise: a visible piece changes the predictions (the
  # check above is not vacuous) ...
  moved = dict(feats, input_k=feats["input_k"].copy())
  moved["input_k"][6] = 37
  assert np.abs(predictor.predict(moved) - probs).max() > 1e-7
  # ... and so does a hidden piece once the mask no longer hides it.
  open_feats = dict(leaked, perm_mask=np.zeros_like(feats["perm_mask"]))
  assert np.abs(predictor.predict(open_feats) - probs).max() > 1e-7
  predictor.close()


@pytest.mark.tf_version
def test_predictor_loads_a_checkpoint_by_name(tmp_path):
  config = tiny_config(tmp_path)
  source = demo_predict.MaskedPredictor(config, seed=5)
  with source.graph.as_default():
    names = {v.op.name: v for v in tf.compat.v1.global_variables()}
    prefix = tf.compat.v1.train.Saver(names).save(
        source.session, str(tmp_path / "model.ckpt-7"), write_meta_graph=False)
  assert "model/lm_loss/bias" in names
  assert "model/transformer/mask_emb/mask_emb" in names
  feats = demo_predict.masked_features(np.arange(10, 25), [2, 9])
  loaded = demo_predict.MaskedPredictor(config, prefix)
  other = demo_predict.MaskedPredictor(config, seed=6)
  np.testing.assert_allclose(loaded.predict(feats), source.predict(feats),
                             atol=1e-6)
  assert np.abs(other.predict(feats) - source.predict(feats)).max() > 1e-7
  for predictor in (source, loaded, other):
    predictor.close()


def test_predictor_names_a_missing_checkpoint(tmp_path):
  with pytest.raises(ValueError, match="model.ckpt-9.index is missing"):
    demo_predict.MaskedPredictor(tiny_config(tmp_path),
                                 str(tmp_path / "model.ckpt-9"))


@pytest.mark.tf_version
def test_render_shows_hidden_pieces_as_numbers():
  pieces = ["\u2581The", "\u2581cat", "s", "\u2581sat", "."]
  assert demo_report.render(pieces, {1: 1, 4: 2}) == "The [1]s sat[2]"
  assert demo_report.render(pieces, {}) == "The cats sat."


def test_pick_sentences_spreads_over_the_text_and_keeps_context():
  short = "One two."
  text = "\n\n".join("\n".join(
      [f"Doc {d} opens with a line of eight words here."] +
      [f"Doc {d} line {i} has exactly nine words in it." for i in (1, 2)] +
      [short]) for d in range(3)) + "\n"
  picked = demo_report.pick_sentences(text, 3)
  # Candidates: lines 1 and 2 of each document (not first, not short).
  assert [s for _, s in picked] == [
      "Doc 0 line 1 has exactly nine words in it.",
      "Doc 1 line 1 has exactly nine words in it.",
      "Doc 2 line 2 has exactly nine words in it."]
  assert picked[0][0] == ["Doc 0 opens with a line of eight words here."]
  assert len(picked[2][0]) == 2
  assert demo_report.pick_sentences(short, 3) == []


class FixedGuesses:
  """A stand-in predictor: every hidden piece gets 0.5 on `first`, 0.3 on
  `second`; it keeps the features it was given."""

  def __init__(self, n_token, first, second):
    self.probs = np.full(n_token, 0.2 / (n_token - 2))
    self.probs[first], self.probs[second] = 0.5, 0.3
    self.seen = []

  def predict(self, features):
    self.seen.append(features)
    return np.tile(self.probs, (features["target_mapping"].shape[0], 1))


def test_report_lines_and_inputs(tiny_spm):
  sp = spm.SentencePieceProcessor()
  sp.Load(tiny_spm)
  encoder = token_stream.LineEncoder(sp.serialized_model_proto(), False, True)
  the, on = sp.PieceToId("\u2581the"), sp.PieceToId("\u2581on")
  predictor = FixedGuesses(sp.GetPieceSize(), the, on)
  report = demo_report.Report(predictor, encoder, max_len=12, top_k=3)
  sentence = "I sat on the bed."
  ids = encoder([sentence], "t")[0]
  lines = report.show(["A first line of context here.", "And a second."],
                      sentence, 1.0, np.random.RandomState(0))
  pieces = [sp.IdToPiece(int(i)) for i in ids]
  # "bed" is two pieces in this vocabulary: not hidden.
  assert pieces == ["\u2581I", "\u2581sat", "\u2581on", "\u2581the",
                    "\u2581be", "d", "."]
  words = [0, 1, 2, 3]
  # The input: the last context pieces that fit, then the sentence.
  (feats,) = predictor.seen
  context = encoder(["A first line of context here.", "And a second."],
                    "t")[0][-(12 - len(ids)):]
  assert len(context) == 5  # the context is cut to fit
  np.testing.assert_array_equal(feats["input_k"][:len(context)], context)
  hidden = [len(context) + k for k in words]
  np.testing.assert_array_equal(feats["target_mapping"].argmax(1), hidden)
  assert (feats["input_k"][hidden] == MASK_ID).all()
  assert len(feats["input_k"]) == 12 + 2
  # The text: every hidden word numbered, one guess line each.
  assert lines[0] == (f"  \"[1] [2] [3] [4] bed.\"  ({len(context)} pieces "
                      "of context before it)")
  assert lines[3].startswith("    [3] \u2581on") and \
      lines[3].endswith("(in top 3)")
  # Third guess: the first of the equal small probabilities, id 0.
  assert lines[4] == ("    [4] \u2581the         -> \u2581the 0.50  "
                      "\u2581on 0.30  <unk> 0.00   (right)")
  assert not lines[1].endswith(")")
  assert len(lines) == 5
  assert report.summary() == ("  top-1 right for 1 of 4 hidden words, in "
                              "the top 3 for 2")
  # A sentence longer than the input is skipped.
  assert report.show([], "word " * 20, 1.0, np.random.RandomState(0)) == []
