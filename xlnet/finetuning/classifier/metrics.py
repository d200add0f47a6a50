"""Evaluation metrics of the classification and regression tasks (NumPy).

Labels and predictions are 1-D arrays over the real examples only;
`evaluation_metrics` drops the fake padding examples before anything is
computed.
"""
import numpy as np


def accuracy(labels, predictions):
  """Fraction of predictions equal to the labels (float)."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  return float(np.mean(labels == predictions))


def f1_score(labels, predictions, positive=1):
  """F1 of the class `positive`: 2 TP / (2 TP + FP + FN); 0 when undefined
  (no positive label and no positive prediction)."""
  labels = np.asarray(labels) == positive
  predictions = np.asarray(predictions) == positive
  tp = np.sum(labels & predictions)
  fp = np.sum(~labels & predictions)
  fn = np.sum(labels & ~predictions)
  denominator = 2 * tp + fp + fn
  return float(2 * tp / denominator) if denominator else 0.0


def matthews_corrcoef(labels, predictions):
  """Matthews correlation coefficient (multi-class form; binary MCC for two
  classes). 0 when undefined (all labels or all predictions one class).

  With the confusion matrix C (rows: labels, columns: predictions), t_k /
  p_k its row / column sums, c its trace and s its total:
    MCC = (c s - sum_k p_k t_k) / sqrt((s^2 - sum_k p_k^2)(s^2 - sum_k t_k^2))
  """
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  classes, index = np.unique(np.concatenate([labels, predictions]),
                             return_inverse=True)
  n = len(labels)
  confusion = np.zeros([len(classes)] * 2, dtype=np.float64)
  np.add.at(confusion, (index[:n], index[n:]), 1.0)
  t, p = confusion.sum(1), confusion.sum(0)
  c, s = np.trace(confusion), confusion.sum()
  denominator = np.sqrt((s * s - p @ p) * (s * s - t @ t))
  return float((c * s - p @ t) / denominator) if denominator else 0.0


def pearsonr(x, y):
  """Pearson correlation of two equally long 1-D arrays (float64); nan when
  either is constant."""
  x = np.asarray(x, dtype=np.float64)
  y = np.asarray(y, dtype=np.float64)
  dx, dy = x - x.mean(), y - y.mean()
  denominator = np.sqrt((dx @ dx) * (dy @ dy))
  return float(dx @ dy / denominator) if denominator else float("nan")


def rankdata(x):
  """1-based ranks of `x`; tied values share the mean of their ranks."""
  x = np.asarray(x, dtype=np.float64)
  order = np.argsort(x, kind="stable")
  sorted_x = x[order]
  # Runs of equal values: [start, end) in sorted order.
  boundaries = np.flatnonzero(np.diff(sorted_x)) + 1
  starts = np.concatenate([[0], boundaries])
  ends = np.concatenate([boundaries, [len(x)]])
  ranks = np.empty(len(x), dtype=np.float64)
  for start, end in zip(starts, ends):
    ranks[order[start:end]] = (start + end + 1) / 2.0
  return ranks


def spearmanr(x, y):
  """Spearman rank correlation: Pearson of the tie-averaged ranks."""
  return pearsonr(rankdata(x), rankdata(y))


METRIC_FNS = {
    "accuracy": accuracy,
    "f1": f1_score,
    "mcc": matthews_corrcoef,
    "pearsonr": pearsonr,
    "spearmanr": spearmanr,
}


def predictions_from_logits(logits, is_regression):
  """Class indices (argmax) or, for regression, the scores themselves.

  Args:
    logits: float array `[n, n_class]`, or `[n]` / `[n, 1]` for regression.
    is_regression: bool.

  Returns:
    1-D array of n predictions.
  """
  logits = np.asarray(logits)
  if is_regression:
    return logits.reshape(len(logits))
  return np.argmax(logits, axis=-1)


def evaluation_metrics(metric_names, logits, label_ids, is_real_example,
                       per_example_loss, is_regression):
  """The `eval_*` numbers of one evaluation pass, fake examples excluded.

  Args:
    metric_names: names of METRIC_FNS to compute.
    logits: `[n, n_class]` (classification) or `[n]` (regression), over
      every example the input function produced, fakes included.
    label_ids: `[n]` int class indices or float targets.
    is_real_example: `[n]`, 0 marks a fake padding example.
    per_example_loss: `[n]` losses.
    is_regression: bool.

  Returns:
    dict `eval_{name}` -> float for each metric, plus `eval_loss` (mean loss
    over the real examples) and `num_examples` (number of real examples).
  """
  real = np.asarray(is_real_example).reshape(-1) != 0
  logits = np.asarray(logits)[real]
  labels = np.asarray(label_ids).reshape(-1)[real]
  predictions = predictions_from_logits(logits, is_regression)
  results = {f"eval_{name}": METRIC_FNS[name](labels, predictions)
             for name in metric_names}
  results["eval_loss"] = float(np.mean(
      np.asarray(per_example_loss).reshape(-1)[real]))
  results["num_examples"] = int(real.sum())
  return results
