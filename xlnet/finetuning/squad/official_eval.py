"""The official SQuAD 2.0 evaluation (it also scores SQuAD 1.1 files).

Written from the evaluation's documented behaviour:
  * Answers are compared after normalization: lower-case, punctuation
    removed, the articles "a", "an", "the" removed, whitespace collapsed.
  * Exact match is 1 when the normalized texts are equal; F1 is the harmonic
    mean of bag-of-tokens precision and recall; a question scores the
    maximum over its gold answers.
  * A question with no (non-empty) gold answer is impossible: its only gold
    answer is "", so it scores 1 exactly when the prediction is empty.
  * With no-answer scores `na_probs` (XLNet passes the null odds), a
    question whose score exceeds the threshold counts as answered with "";
    `best_*` search the threshold that maximizes each metric on the set.
  * Scores are percentages; `HasAns_*` / `NoAns_*` split them by whether a
    question has an answer.
  * As the XLNet release's evaluation, `has_ans_exact` / `has_ans_f1` (and
    `no_ans_*`) score the predictions themselves (no null threshold) on the
    questions with (without) an answer; `has_ans_f1` is how the paper's
    "Model I" was chosen. The release logged them as fractions of 1; here
    they are percentages like every other score.
"""
import collections
import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
  """Lower-cases, drops punctuation and articles, collapses whitespace."""
  text = "".join(c for c in text.lower() if c not in _PUNCTUATION)
  text = _ARTICLES.sub(" ", text)
  return " ".join(text.split())


def get_tokens(text):
  """The normalized answer's words (empty for an empty answer)."""
  return normalize_answer(text).split() if text else []


def compute_exact(gold, pred):
  """1 if the normalized answers are equal, else 0."""
  return int(normalize_answer(gold) == normalize_answer(pred))


def compute_f1(gold, pred):
  """Bag-of-words F1 of the normalized answers.

  When either side has no words, the score is 1 if both have none, else 0.
  """
  gold_toks, pred_toks = get_tokens(gold), get_tokens(pred)
  if not gold_toks or not pred_toks:
    return float(gold_toks == pred_toks)
  common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
  num_same = sum(common.values())
  if not num_same:
    return 0.0
  precision = num_same / len(pred_toks)
  recall = num_same / len(gold_toks)
  return 2 * precision * recall / (precision + recall)


def gold_answers(dataset):
  """Gold answers of every question.

  Args:
    dataset: the SQuAD file's `data` list.

  Returns:
    golds: qas_id -> list of the answer texts that survive normalization,
      or [""] when none does.
    has_ans: qas_id -> whether the question lists any answer.
  """
  golds, has_ans = {}, {}
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        answers = qa.get("answers", [])
        texts = [a["text"] for a in answers if normalize_answer(a["text"])]
        golds[str(qa["id"])] = texts or [""]
        has_ans[str(qa["id"])] = bool(answers)
  return golds, has_ans


def raw_scores(golds, preds):
  """Per-question exact match and F1 (max over gold answers).

  Returns:
    (exact, f1): dicts qas_id -> score.

  Raises:
    ValueError: if a question has no prediction.
  """
  missing = [qid for qid in golds if qid not in preds]
  if missing:
    raise ValueError(f"no prediction for {len(missing)} of {len(golds)} "
                     f"questions (first id {missing[0]})")
  exact = {qid: max(compute_exact(g, preds[qid]) for g in gold)
           for qid, gold in golds.items()}
  f1 = {qid: max(compute_f1(g, preds[qid]) for g in gold)
        for qid, gold in golds.items()}
  return exact, f1


def apply_no_ans_threshold(scores, na_probs, has_ans, threshold):
  """Scores with questions whose no-answer score exceeds `threshold` taken
  as answered with "" (1 for an impossible question, else 0)."""
  return {qid: (float(not has_ans[qid]) if na_probs[qid] > threshold
                else score)
          for qid, score in scores.items()}


def make_eval_dict(exact, f1, qids=None):
  """Percentages `exact`, `f1` and the count `total` over `qids` (all)."""
  qids = list(exact) if qids is None else list(qids)
  total = len(qids)
  return collections.OrderedDict([
      ("exact", 100.0 * sum(exact[q] for q in qids) / total),
      ("f1", 100.0 * sum(f1[q] for q in qids) / total),
      ("total", total)])


def find_best_thresh(preds, scores, na_probs, has_ans):
  """The no-answer threshold that maximizes the total score.

  Starting from "every question answered with an empty string" (impossible
  questions score 1), questions are switched to their prediction in order
  of increasing no-answer score; the best running total wins.

  Returns:
    (best score in percent, threshold).
  """
  current = best = sum(1 for qid in scores if not has_ans[qid])
  best_thresh = 0.0
  for qid in sorted(scores, key=lambda q: na_probs[q]):
    if has_ans[qid]:
      current += scores[qid]
    elif preds[qid]:
      current -= 1
    if current > best:
      best, best_thresh = current, na_probs[qid]
  return 100.0 * best / len(scores), best_thresh


def evaluate(dataset, preds, na_probs=None, na_prob_thresh=1.0):
  """The evaluation's metrics.

  Args:
    dataset: the SQuAD file's `data` list.
    preds: qas_id -> predicted text.
    na_probs: qas_id -> no-answer score (XLNet: the null odds), or None
      (every question then scores its prediction).
    na_prob_thresh: no-answer threshold of `exact` and `f1`.

  Returns:
    OrderedDict with `exact, f1, total`, `HasAns_*` and `has_ans_exact,
    has_ans_f1` (`NoAns_*`, `no_ans_exact, no_ans_f1`) when questions with
    (without) an answer exist, and with `na_probs`: `best_exact,
    best_exact_thresh, best_f1, best_f1_thresh`.
  """
  golds, has_ans = gold_answers(dataset)
  if not golds:
    raise ValueError("the dataset has no questions")
  exact_raw, f1_raw = raw_scores(golds, preds)
  probs = na_probs if na_probs is not None else {q: 0.0 for q in golds}
  exact = apply_no_ans_threshold(exact_raw, probs, has_ans, na_prob_thresh)
  f1 = apply_no_ans_threshold(f1_raw, probs, has_ans, na_prob_thresh)
  out = make_eval_dict(exact, f1)
  for prefix, wanted in (("HasAns", True), ("NoAns", False)):
    qids = [q for q in golds if has_ans[q] == wanted]
    if qids:
      for key, value in make_eval_dict(exact, f1, qids).items():
        out[f"{prefix}_{key}"] = value
  for prefix, wanted in (("has_ans", True), ("no_ans", False)):
    qids = [q for q in golds if has_ans[q] == wanted]
    if qids:
      raw = make_eval_dict(exact_raw, f1_raw, qids)
      out[f"{prefix}_exact"], out[f"{prefix}_f1"] = raw["exact"], raw["f1"]
  if na_probs is not None:
    out["best_exact"], out["best_exact_thresh"] = find_best_thresh(
        preds, exact_raw, na_probs, has_ans)
    out["best_f1"], out["best_f1_thresh"] = find_best_thresh(
        preds, f1_raw, na_probs, has_ans)
  return out
