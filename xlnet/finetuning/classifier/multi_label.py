"""Multi-label classification (`run_classifier.py --multi_label`): a set of
labels per text, in NumPy (no TensorFlow).

  label sets   a table cell such as `sport|politics` (`--label_delimiter`,
               default "|"); an empty cell is the empty set
  targets      multi-hot int vectors over the task's labels, in its
               label list's order
  outputs      one logit per label; probability sigmoid(logit); a label is
               predicted when its probability exceeds the threshold
  metrics      micro F1 (the counts of every label pooled), macro F1 (the
               mean of the labels' F1), exact match (the predicted set is
               the gold set); an F1 whose denominator is 0 (no gold and no
               predicted label) counts 0
  threshold    a fixed number in (0, 1) (`--multi_label_threshold`,
               default 0.5), or chosen on the dev split (`=dev`): the one
               global threshold with the best micro F1 there; of several
               as good, the one nearest 0.5, then the lower

The head (sigmoid cross-entropy over the labels) is
`classifier/head.py`'s `get_multi_label_loss`; the runs' use of these
(evaluation, prediction, the chosen threshold recorded) is
`classifier/multi_label_task.py`.
"""
import numpy as np

# The predictions' and the label sets' separator unless --label_delimiter.
DEFAULT_DELIMITER = "|"
# The fixed threshold unless --multi_label_threshold.
DEFAULT_THRESHOLD = 0.5
# --multi_label_threshold's word for a threshold chosen on the dev split.
ON_DEV = "dev"


################################################################################
# Label sets.
################################################################################
def parse_label_set(cell, delimiter, labels, where):
  """The label set one table cell holds.

  Args:
    cell: str, e.g. "sport|politics" ("" or blanks: the empty set).
    delimiter: the separator of the labels (`--label_delimiter`).
    labels: the task's label list, or None while it is being read from
      the train file (then the names are only checked for form).
    where: the cell's place for messages, e.g. "x/train.tsv line 3".

  Returns:
    tuple of the label names: in the order of `labels` when given, else
    in the cell's order.

  Raises:
    ValueError: one line naming `where`: an empty name (two delimiters in
      a row, or one at either end), a name given twice, a name outside
      `labels`.
  """
  text = cell.strip()
  if not text:
    return ()
  names = [name.strip() for name in text.split(delimiter)]
  if "" in names:
    raise ValueError(f"{where}: label set {cell!r} holds an empty label "
                     f"(a delimiter {delimiter!r} at an end or two in a "
                     "row)")
  twice = sorted({name for name in names if names.count(name) > 1})
  if twice:
    raise ValueError(f"{where}: label set {cell!r} names {twice[0]!r} "
                     "twice")
  if labels is None:
    return tuple(names)
  unknown = [name for name in names if name not in labels]
  if unknown:
    raise ValueError(f"{where}: label {unknown[0]!r} is not one of the "
                     f"labels {list(labels)}")
  return tuple(label for label in labels if label in names)


def multi_hot(label_set, labels):
  """The int target of a label set: 1 at each of its labels' positions in
  `labels`, else 0; all 0 for None (an unlabelled split)."""
  chosen = () if label_set is None else label_set
  return [int(label in chosen) for label in labels]


def check_labels(labels, delimiter, source):
  """Raises a one-line ValueError when a label of the list `labels` (from
  `source`, e.g. "--label_list") contains the delimiter or is empty: it
  could not be written in a label set."""
  for label in labels:
    if not label.strip() or delimiter in label:
      raise ValueError(f"{source}: label {label!r} is empty or contains the "
                       f"--label_delimiter {delimiter!r}")


################################################################################
# Predictions.
################################################################################
def probabilities(logits):
  """sigmoid(logits) in float64, without overflow for large |logits|."""
  x = np.asarray(logits, np.float64)
  return np.exp(-np.logaddexp(0.0, -x))


def predict(logits, threshold):
  """The predicted labels: bool `[n, n_labels]`, True where the
  probability exceeds `threshold`."""
  return probabilities(logits) > threshold


def label_sets(predicted, labels):
  """Each row of bool `predicted` `[n, n_labels]` as the tuple of its
  labels (in the order of `labels`)."""
  return [tuple(label for label, on in zip(labels, row) if on)
          for row in np.asarray(predicted, bool)]


def format_sets(sets, delimiter):
  """Each label set as the text a table cell holds ("" for the empty
  set)."""
  return [delimiter.join(label_set) for label_set in sets]


################################################################################
# Metrics.
################################################################################
def _f1(tp, n_predicted, n_gold):
  """2 TP / (2 TP + FP + FN) = 2 TP / (predicted + gold), elementwise; 0
  where both are 0."""
  tp, denominator = np.asarray(tp), np.asarray(n_predicted + n_gold)
  return np.where(denominator > 0, 2.0 * tp / np.maximum(denominator, 1),
                  0.0)


def micro_f1(gold, predicted):
  """F1 of the counts of every label pooled (bool/int `[n, n_labels]`)."""
  gold, predicted = np.asarray(gold, bool), np.asarray(predicted, bool)
  return float(_f1((gold & predicted).sum(), predicted.sum(), gold.sum()))


def macro_f1(gold, predicted):
  """The mean over the labels of each label's F1."""
  gold, predicted = np.asarray(gold, bool), np.asarray(predicted, bool)
  return float(np.mean(_f1((gold & predicted).sum(0), predicted.sum(0),
                           gold.sum(0))))


def exact_match(gold, predicted):
  """The fraction of examples whose predicted set is their gold set."""
  gold, predicted = np.asarray(gold, bool), np.asarray(predicted, bool)
  return float(np.mean(np.all(gold == predicted, axis=1)))


def choose_threshold(logits, gold):
  """The one threshold with the best micro F1 on (`logits`, `gold`), both
  `[n, n_labels]`.

  Every distinct set of predictions `probability > t` is tried once, with t
  halfway between two neighbouring distinct probabilities (or halfway to 0
  below the least, to 1 above the greatest). Of several thresholds as
  good, the one nearest 0.5 is taken, then the lower.

  Returns:
    (threshold float, its micro F1).
  """
  p = probabilities(logits).reshape(-1)
  g = np.asarray(gold, bool).reshape(-1)
  order = np.argsort(p, kind="stable")
  p, g = p[order], g[order]
  values = np.unique(p)
  candidates = np.concatenate([[values[0] / 2],
                               (values[:-1] + values[1:]) / 2,
                               [(values[-1] + 1) / 2]])
  # Examples at or below each candidate, and the gold labels among them.
  at_or_below = np.searchsorted(p, candidates, side="right")
  gold_below = np.concatenate([[0], np.cumsum(g)])[at_or_below]
  n_gold = int(g.sum())
  tp = n_gold - gold_below
  f1 = _f1(tp, len(p) - at_or_below, n_gold)
  best = np.flatnonzero(f1 == f1.max())
  pick = best[np.lexsort((candidates[best],
                          np.abs(candidates[best] - 0.5)))[0]]
  return float(candidates[pick]), float(f1[pick])


def evaluation_metrics(logits, label_ids, is_real_example, per_example_loss,
                       threshold):
  """The `eval_*` numbers of one multi-label evaluation pass, fake
  examples excluded.

  Args:
    logits: `[n, n_labels]` over every example the input produced.
    label_ids: `[n, n_labels]` multi-hot targets.
    is_real_example: `[n]`, 0 marks a fake padding example.
    per_example_loss: `[n]` losses (the mean over the labels).
    threshold: the decision threshold (a probability).

  Returns:
    dict: `eval_micro_f1`, `eval_macro_f1`, `eval_exact_match`,
    `eval_threshold`, `eval_loss` (mean over the real examples) and
    `num_examples`.
  """
  real = np.asarray(is_real_example).reshape(-1) != 0
  gold = np.asarray(label_ids)[real] != 0
  predicted = predict(np.asarray(logits)[real], threshold)
  return {"eval_micro_f1": micro_f1(gold, predicted),
          "eval_macro_f1": macro_f1(gold, predicted),
          "eval_exact_match": exact_match(gold, predicted),
          "eval_threshold": float(threshold),
          "eval_loss": float(np.mean(
              np.asarray(per_example_loss).reshape(-1)[real])),
          "num_examples": int(real.sum())}
