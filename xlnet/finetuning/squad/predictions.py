"""SQuAD predictions: the model's beam over each window -> n-best answer
texts cut from the original paragraph, and each question's null score
(the layout of a feature: `squad/features.py`)."""
import collections

import numpy as np

from xlnet.finetuning.squad import alignment as squad_alignment

# ----------------------------------------------------------------------------
# Predictions.
# ----------------------------------------------------------------------------
# The release's null score of a question without windows: "large and
# positive", so that the best threshold takes it as unanswerable.
NULL_SCORE_WITHOUT_WINDOWS = 1e6


def _window_candidates(window, result, answer_on_last_piece):
  """(score, start log-prob, end log-prob, first, last) of a window's beam.

  Keeps spans inside the paragraph, start <= end, starting at a piece whose
  best context is this window; positions are made paragraph-relative. As in
  the release, the window's last paragraph piece is neither a start nor an
  end, unless `answer_on_last_piece`.
  """
  doc_end = window.doc_len if answer_on_last_piece else window.doc_len - 1
  start_index = np.asarray(result["start_top_index"])
  start_log = np.asarray(result["start_top_log_probs"])
  end_index = np.asarray(result["end_top_index"]).reshape(len(start_index),
                                                          -1)
  end_log = np.asarray(result["end_top_log_probs"]).reshape(end_index.shape)
  out = []
  for i, start in enumerate(start_index.tolist()):
    if start >= doc_end or not window.max_context[start]:
      continue
    for end, end_lp in zip(end_index[i].tolist(), end_log[i].tolist()):
      if start <= end < doc_end:
        out.append((float(start_log[i]) + end_lp, float(start_log[i]),
                    end_lp, window.doc_start + start, window.doc_start + end))
  return out


def get_predictions(examples, paragraphs, converter, results, n_best_size,
                    max_answer_length, answer_on_last_piece=False,
                    skip_empty_answers=False):
  """n-best answers, best answer and null score of every question.

  Args:
    examples: list of SquadExample (prediction set).
    paragraphs: list of original paragraph texts.
    converter: the FeatureConverter that made the prediction features (its
      `windows` and tokenized paragraphs).
    results: iterable of dicts of NumPy values, one per feature:
      `unique_ids`, `start_top_log_probs [K]`, `start_top_index [K]`,
      `end_top_log_probs [K*E]`, `end_top_index [K*E]`, `cls_logits`.
    n_best_size: answers kept per question.
    max_answer_length: longest answer, in pieces.
    answer_on_last_piece: let a window's last paragraph piece start or end
      an answer (the release never does).
    skip_empty_answers: skip spans whose text is empty (e.g. a lone '▁'
      piece); the release keeps them, so its best answer can be "".

  Returns:
    predictions: qas_id -> the best answer's text ("" if none).
    nbest: qas_id -> list of dicts (text, probability, start_log_prob,
      end_log_prob, start_char, end_char), best first.
    null_odds: qas_id -> the lowest `cls_logits` over the question's
      windows; `NULL_SCORE_WITHOUT_WINDOWS` for a question without any (its
      paragraph dropped by the alignment test), whose answer is then "".

  Raises:
    ValueError: if a feature has no result.
  """
  by_id = {int(np.asarray(r["unique_ids"]).reshape(())): r for r in results}
  missing = [w.unique_id for w in converter.windows if w.unique_id not in by_id]
  if missing:
    raise ValueError(f"the model returned no result for {len(missing)} of "
                     f"{len(converter.windows)} features (first unique id "
                     f"{missing[0]})")
  windows_of = collections.defaultdict(list)
  for window in converter.windows:
    windows_of[window.example_index].append(window)

  predictions, nbest, null_odds = {}, {}, {}
  for index, example in enumerate(examples):
    text = paragraphs[example.paragraph_index]
    paragraph = converter.paragraph(example.paragraph_index)
    candidates = []
    null_score = NULL_SCORE_WITHOUT_WINDOWS
    for window in windows_of[index]:
      result = by_id[window.unique_id]
      null_score = min(null_score,
                       float(np.asarray(result["cls_logits"]).reshape(())))
      candidates.extend(_window_candidates(window, result,
                                           answer_on_last_piece))
    candidates.sort(key=lambda c: -c[0])
    entries, seen = [], set()
    for score, start_lp, end_lp, first, last in candidates:
      if len(entries) >= n_best_size:
        break
      if last - first + 1 > max_answer_length:
        continue
      answer, start, end = squad_alignment.piece_span_text(
          text, paragraph, first, last)
      if (skip_empty_answers and not answer) or answer in seen:
        continue
      seen.add(answer)
      entries.append(dict(text=answer, score=score, start_log_prob=start_lp,
                          end_log_prob=end_lp, start_char=start,
                          end_char=end))
    if not entries:
      entries.append(dict(text="", score=-1e6, start_log_prob=-1e6,
                          end_log_prob=-1e6, start_char=-1, end_char=-1))
    scores = np.array([e.pop("score") for e in entries])
    probs = np.exp(scores - scores.max())
    probs /= probs.sum()
    for entry, prob in zip(entries, probs.tolist()):
      entry["probability"] = prob
    predictions[example.qas_id] = entries[0]["text"]
    nbest[example.qas_id] = entries
    null_odds[example.qas_id] = null_score
  return predictions, nbest, null_odds
