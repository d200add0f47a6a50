"""SQuAD prediction: n-best spans from the beam, mapped back to the text."""
import numpy as np
import pytest
import sentencepiece as spm

from tests import qa_fixtures
from tests.data_helpers import train_tiny_spm
from xlnet.finetuning.squad import alignment as squad_alignment
from xlnet.finetuning.squad import features as squad_features
from xlnet.finetuning.squad import official_eval
from xlnet.finetuning.squad import predictions as squad_predictions


def _result(uid, cls, starts, start_lps, ends, end_lps):
  return dict(unique_ids=np.int32(uid), cls_logits=np.float32(cls),
              start_top_index=np.array(starts),
              start_top_log_probs=np.array(start_lps, np.float32),
              end_top_index=np.array(ends),
              end_top_log_probs=np.array(end_lps, np.float32))


def _first_paragraphs_beams():
  """The beams of `_hand_made_converter`'s windows 0 and 1 (the first
  paragraph), the same under both rules' tests."""
  return [_result(0, 2.0, [0, 5, 2], [-0.1, -0.2, -0.02],
                  [1, 2, 0, 1, 3, 2], [-0.3, -0.05, -1, -1, -0.01, -0.5]),
          _result(1, 1.0, [0, 1, 2], [-0.01, -0.05, -3.0],
                  [0, 1, 2, 1, 2, 0],
                  [-0.01, -0.01, -0.05, -0.6, -0.1, -0.1])]


def _hand_made_converter():
  """Three questions over hand-tokenized paragraphs (one piece per word;
  in "x x" a lone '▁' piece covers no character)."""
  texts = ["alpha beta gamma delta epsilon", "x x", "nothing"]
  converter = squad_features.FeatureConverter(None, texts, 0, 0, 0, False,
                                              is_training=False)
  converter.tokenized = {
      0: squad_alignment.TokenizedParagraph(np.arange(5), np.array(
          [0, 6, 11, 17, 23]), np.array([5, 10, 16, 22, 30])),
      1: squad_alignment.TokenizedParagraph(np.arange(3), np.array([0, 2, 2]),
                                        np.array([1, 2, 3])),
      2: squad_alignment.TokenizedParagraph(np.arange(1), np.array([0]),
                                        np.array([7]))}
  W = squad_features.Window  # noqa: N806
  converter.windows = [
      W(0, 0, 0, 3, np.array([True, True, True])),
      W(1, 0, 2, 3, np.array([False, True, True])),
      W(2, 1, 0, 3, np.array([True, True, True])),
      W(3, 2, 0, 1, np.array([True]))]
  examples = [squad_features.SquadExample(f"q{i}", "?", i, None, None, False)
              for i in range(3)]
  return texts, examples, converter


def test_nbest_hand_worked_with_our_earlier_rules():
  texts, examples, converter = _hand_made_converter()
  results = [
      # Window 0 (pieces 0-2): (0, 2) is 3 pieces long; start 5 is outside
      # the paragraph; (2, 3) ends outside it. Window 1 (pieces 2-4): its
      # start 0 (piece 2) has more context in window 0; (2, 0) ends before
      # it starts.
      *_first_paragraphs_beams(),
      # "x x": (0, 0) and (2, 2) both read "x": the second is dropped;
      # (0, 1) ends on the empty piece: "x ", trimmed to "x" too.
      _result(2, 0.5, [0, 2], [-0.1, -0.2], [1, 0, 2, 0],
              [-0.05, -0.1, -0.1, -0.9]),
      # Only an impossible span: no answer.
      _result(3, -4.0, [0], [-0.1], [5], [-0.1]),
  ]
  # Our earlier rules (--answer_on_last_piece --skip_empty_answers).
  preds, nbest, null = squad_predictions.get_predictions(
      examples, texts, converter, reversed(results), n_best_size=3,
      max_answer_length=2, answer_on_last_piece=True,
      skip_empty_answers=True)
  assert preds == {"q0": "delta epsilon", "q1": "x", "q2": ""}
  assert null == {"q0": 1.0, "q1": 0.5, "q2": -4.0}
  # q0 candidates by score: (3,4) -0.1, (0,1) -0.4, (2,2) -0.52,
  # (3,3) -0.65, (4,4) -3.1; three are kept.
  assert [e["text"] for e in nbest["q0"]] == ["delta epsilon", "alpha beta",
                                              "gamma"]
  scores = np.array([-0.1, -0.4, -0.52])
  want = np.exp(scores) / np.exp(scores).sum()
  np.testing.assert_allclose([e["probability"] for e in nbest["q0"]], want,
                             rtol=1e-5)
  first = nbest["q0"][0]
  assert (first["start_char"], first["end_char"]) == (17, 30)
  assert first["start_log_prob"] == pytest.approx(-0.05)
  assert first["end_log_prob"] == pytest.approx(-0.05)
  assert nbest["q1"][0]["text"] == "x"
  assert (nbest["q1"][0]["start_char"], nbest["q1"][0]["end_char"]) == (0, 1)
  assert [e["text"] for e in nbest["q1"]] == ["x"]
  assert nbest["q2"] == [dict(text="", start_log_prob=-1e6,
                              end_log_prob=-1e6, start_char=-1, end_char=-1,
                              probability=1.0)]
  with pytest.raises(ValueError, match="no result for 1 of 4 features"):
    squad_predictions.get_predictions(examples, texts, converter,
                                      results[:3], 3, 2)


@pytest.mark.parametrize("last_piece", [False, True])
def test_oracle_beam_gives_back_the_original_answers(tmp_path, last_piece):
  """With the beam putting the gold span first in a window where it has
  its best context (and, as in the release, off the window's last
  paragraph piece unless --answer_on_last_piece), every prediction is the
  answer's original text."""
  sp_model = spm.SentencePieceProcessor(model_file=train_tiny_spm())
  data = qa_fixtures.synthetic_squad(np.random.default_rng(3), 10, 5)
  path = qa_fixtures.write_json(tmp_path / "dev.json", {"data": data})
  paragraphs, train_examples, _ = squad_features.read_squad_examples(path, True)
  gold = {e.qas_id: e for e in train_examples}
  paragraphs, examples, _ = squad_features.read_squad_examples(path, False)
  converter = squad_features.FeatureConverter(sp_model, paragraphs, 64, 8, 16,
                                              False, is_training=False)
  for _ in converter.iter_features(examples):
    pass
  results, reachable = [], set()
  for window in converter.windows:
    example = gold[examples[window.example_index].qas_id]
    span = None
    if not example.is_impossible:
      span = squad_alignment.char_span_to_pieces(
          converter.paragraph(example.paragraph_index), example.start_char,
          example.end_char)
    s, e = (-1, -1) if span is None else (span[0] - window.doc_start,
                                          span[1] - window.doc_start)
    doc_end = window.doc_len if last_piece else window.doc_len - 1
    if 0 <= s <= e < doc_end and window.max_context[s]:
      reachable.add(example.qas_id)
      starts, start_lps, ends = [s, 0], [0.0, -9.0], [e, s, 0, 0]
    else:  # some other span, with a low score
      starts, start_lps, ends = [0, 0], [-9.0, -9.0], [0, 0, 0, 0]
    results.append(_result(window.unique_id,
                           3.0 if example.is_impossible else -3.0, starts,
                           start_lps, ends, [0.0, -9.0, -9.0, -9.0]))
  preds, _, null_odds = squad_predictions.get_predictions(
      examples, paragraphs, converter, results, n_best_size=2,
      max_answer_length=30, answer_on_last_piece=last_piece)
  answerable = [q for q, e in gold.items() if not e.is_impossible]
  assert len(reachable) >= 0.8 * len(answerable), len(reachable)
  for qid in reachable:
    example = gold[qid]
    assert preds[qid] == paragraphs[example.paragraph_index][
        example.start_char:example.end_char]
  metrics = official_eval.evaluate(
      data, {q: p for q, p in preds.items()}, null_odds)
  # Unreachable answers aside, the best threshold answers everything right.
  assert metrics["best_exact"] >= 100.0 * (
      1 - (len(answerable) - len(reachable)) / len(gold))
  assert metrics["NoAns_total"] == len(gold) - len(answerable)


def _release_rule_results():
  """Beams over `_hand_made_converter`'s windows for the release's rules."""
  return [
      # Window 0 (pieces 0-2, doc_len 3): piece 2 is its last paragraph
      # piece, so (0, 2) and every span starting at 2 are out. Window 1
      # (pieces 2-4): window positions 2 (piece 4) is its last paragraph
      # piece: (3, 4) "delta epsilon" is out, (3, 3) stays.
      *_first_paragraphs_beams(),
      # "x x": (1, 1) is the lone '▁' piece: text "" (score -0.2); then
      # (0, 0) "x" (-0.6); (0, 1) "x " -> "x" again (-0.8).
      _result(2, 0.5, [1, 0], [-0.1, -0.5], [1, 0, 0, 1],
              [-0.1, -0.2, -0.1, -0.3]),
      # One-piece window: its only piece is its last: no answer.
      _result(3, -4.0, [0], [-0.1], [0], [-0.1]),
  ]


@pytest.mark.parametrize("last_piece,skip_empty,want", [
    (False, False, {"q0": ["alpha beta", "delta"], "q1": ["", "x"],
                    "q2": [""]}),
    (True, False, {"q0": ["delta epsilon", "alpha beta", "gamma"],
                   "q1": ["", "x"], "q2": ["nothing"]}),
    (False, True, {"q0": ["alpha beta", "delta"], "q1": ["x"], "q2": [""]}),
])
@pytest.mark.quick
def test_nbest_hand_worked_with_the_releases_rules(last_piece, skip_empty,
                                                   want):
  texts, examples, converter = _hand_made_converter()
  preds, nbest, _ = squad_predictions.get_predictions(
      examples, texts, converter, _release_rule_results(), n_best_size=3,
      max_answer_length=2, answer_on_last_piece=last_piece,
      skip_empty_answers=skip_empty)
  assert {q: [e["text"] for e in nbest[q]] for q in want} == want
  assert preds == {q: kept[0] for q, kept in want.items()}
  if not skip_empty:
    # The empty answer is a real candidate: scores -0.2 and -0.6.
    probs = [e["probability"] for e in nbest["q1"]]
    np.testing.assert_allclose(probs, [1 / (1 + np.exp(-0.4)),
                                       1 / (1 + np.exp(0.4))], rtol=1e-5)
    assert (nbest["q1"][0]["start_char"], nbest["q1"][0]["end_char"]) == (
        2, 2)


@pytest.mark.parametrize("keep", [False, True])
def test_questions_of_an_unaligned_paragraph_get_the_releases_answer(keep):
  """The release drops a paragraph its alignment fails on ("ﬁ" alone
  normalizes to two characters, so fewer than 80% of them match) at
  prediction time too: its questions get no window, the answer "" with
  log-probs -1e6 and the null score 1e6. --keep_unaligned predicts them."""
  sp_model = spm.SentencePieceProcessor(model_file=train_tiny_spm())
  texts = ["ﬁﬁﬁﬁ ﬁﬁﬁ ﬁﬁ ok", "the river said over"]
  examples = [squad_features.SquadExample(qid, "which?", p, None, None, False)
              for qid, p in (("q0", 0), ("q1", 0), ("q2", 1))]
  converter = squad_features.FeatureConverter(
      sp_model, texts, 32, 8, 8, False, is_training=False,
      keep_unaligned=keep)
  for _ in converter.iter_features(examples):
    pass
  assert converter.unaligned == ([] if keep else ["q0", "q1"])
  # Every window: pieces 1..4, "ﬁﬁﬁﬁ" (▁ f if if if) and "river" (▁ r ive r).
  results = [_result(w.unique_id, 2.5, [1, 0], [-1.0, -2.0], [4] * 4,
                     [-1.0] * 4) for w in converter.windows]
  preds, nbest, null_odds = squad_predictions.get_predictions(
      examples, texts, converter, results, n_best_size=3,
      max_answer_length=5)
  answer = {"q0": "ﬁﬁﬁﬁ", "q1": "ﬁﬁﬁﬁ", "q2": "river"}
  for qid in ("q0", "q1", "q2"):
    if qid == "q2" or keep:
      assert preds[qid] == answer[qid]
      assert null_odds[qid] == 2.5
      assert nbest[qid][0]["start_log_prob"] == -1.0
    else:
      assert preds[qid] == "" and null_odds[qid] == 1e6
      assert nbest[qid] == [dict(text="", start_log_prob=-1e6,
                                 end_log_prob=-1e6, start_char=-1,
                                 end_char=-1, probability=1.0)]
