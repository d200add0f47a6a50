"""The SQuAD evaluation against hand-worked cases."""
import pytest

from xlnet.finetuning.squad import official_eval


def _dataset(questions):
  """A SQuAD `data` list: questions = [(id, [gold texts])]."""
  qas = [{"id": qid, "question": "?",
          "answers": [{"text": t, "answer_start": 0} for t in golds]}
         for qid, golds in questions]
  return [{"paragraphs": [{"context": "c", "qas": qas}]}]


@pytest.mark.parametrize("text,expected", [
    ("The  Cat's, a hat!", "cats hat"),
    ("An apple\tand THE pear.", "apple and pear"),
    ("theory of another", "theory of another"),  # articles as words only
    ("  (1999)  ", "1999"),
    ("", ""),
])
def test_normalize_answer(text, expected):
  assert official_eval.normalize_answer(text) == expected


@pytest.mark.quick
def test_exact_and_f1_hand_worked():
  assert official_eval.compute_exact("The Eiffel tower", "eiffel  Tower!") == 1
  assert official_eval.compute_exact("Eiffel tower", "the tower") == 0
  # gold {big, red, dog}, pred {red, dog, runs}: 2 common, P = R = 2/3.
  assert official_eval.compute_f1("the big red dog", "red dog runs") == (
      pytest.approx(2 / 3))
  # Repeated words count once per occurrence: gold {a, b, b}; pred {b, b, b}
  # -> 2 common, P = 2/3, R = 2/3 (normalized "a" is an article: use x).
  assert official_eval.compute_f1("x y y", "y y y") == pytest.approx(2 / 3)
  assert official_eval.compute_f1("", "") == 1.0
  assert official_eval.compute_f1("", "something") == 0.0
  assert official_eval.compute_f1("cat", "dog") == 0.0


@pytest.mark.quick
def test_scores_take_the_best_gold_answer_and_empty_for_impossible():
  data = _dataset([("multi", ["Denver Broncos", "the Broncos", "Broncos"]),
                   ("imp_ok", []), ("imp_bad", []),
                   ("only_articles", ["the", "An!"])])
  preds = {"multi": "Denver", "imp_ok": "", "imp_bad": "Broncos",
           "only_articles": ""}
  golds, has_ans = official_eval.gold_answers(data)
  assert golds["only_articles"] == [""] and has_ans["only_articles"]
  assert not has_ans["imp_ok"]
  exact, f1 = official_eval.raw_scores(golds, preds)
  assert exact == {"multi": 0, "imp_ok": 1, "imp_bad": 0, "only_articles": 1}
  # "Denver" vs "denver broncos": P = 1, R = 1/2 -> 2/3 (beats the others).
  assert f1["multi"] == pytest.approx(2 / 3)
  assert f1["imp_ok"] == 1.0 and f1["imp_bad"] == 0.0


@pytest.mark.quick
def test_threshold_search_hand_worked():
  data = _dataset([("q1", ["right"]), ("q2", ["right"]), ("q3", []),
                   ("q4", [])])
  preds = {"q1": "right", "q2": "wrong", "q3": "x", "q4": "y"}
  na = {"q1": 0.1, "q2": 0.9, "q3": 0.8, "q4": 0.2}
  # All null: q3, q4 right -> 2. Answer in order of na: q1 +1 -> 3 (best,
  # thresh 0.1), q4 -1 -> 2, q3 -1 -> 1, q2 +0 -> 1.
  got = official_eval.evaluate(data, preds, na, na_prob_thresh=0.5)
  assert got["best_exact"] == pytest.approx(75.0)
  assert got["best_exact_thresh"] == 0.1
  assert got["best_f1"] == pytest.approx(75.0)
  assert got["best_f1_thresh"] == 0.1
  # At 0.5: q1 answered (1), q2 null (0), q3 null (1), q4 answered "y" (0).
  assert got["exact"] == pytest.approx(50.0) and got["total"] == 4
  assert got["HasAns_exact"] == pytest.approx(50.0)
  assert got["NoAns_exact"] == pytest.approx(50.0)
  assert got["HasAns_total"] == 2 and got["NoAns_total"] == 2
  # A score equal to the threshold is not above it: q4 stays answered.
  at_q4 = official_eval.evaluate(data, preds, na, na_prob_thresh=0.2)
  assert at_q4["exact"] == pytest.approx(50.0)


def test_threshold_search_charges_answered_impossible_questions():
  data = _dataset([("q1", ["yes"]), ("q2", []), ("q3", ["no"])])
  preds = {"q1": "yes", "q2": "x", "q3": "no"}
  # All null: 1 (q2). q2 (0.1) answered -1 -> 0; q1 (0.5) +1 -> 1 (not
  # better); q3 (0.9) +1 -> 2: best 2 of 3 at 0.9.
  got = official_eval.evaluate(data, preds, {"q1": 0.5, "q2": 0.1, "q3": 0.9})
  assert got["best_exact"] == pytest.approx(200 / 3)
  assert got["best_exact_thresh"] == 0.9


def test_threshold_stays_zero_when_answering_never_helps():
  data = _dataset([("q1", ["a b"]), ("q2", [])])
  preds = {"q1": "wrong", "q2": "also wrong"}
  got = official_eval.evaluate(data, preds, {"q1": -3.0, "q2": 2.0})
  # All null scores 1 (q2); answering q1 adds 0, q2 subtracts 1.
  assert got["best_f1"] == pytest.approx(50.0)
  assert got["best_f1_thresh"] == 0.0
  # At the threshold 1.0, q2 (2.0) counts as null and scores 1; the
  # release's has_ans_* / no_ans_* score the predictions as they are.
  assert got["NoAns_exact"] == pytest.approx(100.0)
  assert got["no_ans_exact"] == got["no_ans_f1"] == 0.0
  assert got["has_ans_exact"] == got["has_ans_f1"] == 0.0


def test_has_ans_scores_ignore_the_null_threshold():
  data = _dataset([("q1", ["big red dog"]), ("q2", ["cat"]), ("q3", [])])
  preds = {"q1": "red dog", "q2": "cat", "q3": ""}
  got = official_eval.evaluate(data, preds, {"q1": 5.0, "q2": 0.0, "q3": 0.0})
  # q1 is null at the threshold 1.0 (HasAns counts 0 for it); raw it has
  # F1 2 * (1 * 2/3) / (1 + 2/3) = 0.8 and exact 0; q2 is exact.
  assert got["HasAns_f1"] == pytest.approx(50.0)
  assert got["has_ans_f1"] == pytest.approx(100 * (0.8 + 1) / 2)
  assert got["has_ans_exact"] == pytest.approx(50.0)
  assert got["no_ans_exact"] == got["no_ans_f1"] == pytest.approx(100.0)


def test_squad11_style_file_has_no_noans_split():
  data = _dataset([("q1", ["Paris"]), ("q2", ["two words"])])
  got = official_eval.evaluate(data, {"q1": "paris.", "q2": "two"})
  assert got["exact"] == pytest.approx(50.0)
  # q2: P = 1, R = 1/2 -> F1 2/3; mean with 1 -> 83.33.
  assert got["f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
  assert "NoAns_exact" not in got and "best_f1" not in got
  assert "no_ans_f1" not in got
  assert got["has_ans_f1"] == pytest.approx(got["f1"])
  assert got["HasAns_total"] == 2


def test_missing_prediction_is_an_error():
  data = _dataset([("q1", ["x"]), ("q2", ["y"])])
  with pytest.raises(ValueError, match=r"no prediction for 1 of 2 questions "
                     r"\(first id q2\)"):
    official_eval.evaluate(data, {"q1": "x"})
