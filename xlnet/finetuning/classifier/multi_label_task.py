"""A multi-label run's records of its task and of its thresholds, and its
predictions as label sets (the NumPy parts: `classifier/multi_label.py`).

A threshold chosen on the dev split (`--multi_label_threshold=dev`) is the
chosen checkpoint's: evaluation and prediction choose it for each
checkpoint they use and record it beside the checkpoint, in
`THRESHOLDS_FILE` (`{"model.ckpt-1000": 0.37, ...}`), where a loaded model
(`loaded_model.load`) finds the threshold of the checkpoint it loads.
"""
import os

from absl import logging
import numpy as np

from xlnet.finetuning.classifier import multi_label as multi_label_lib
from xlnet.training import train_state

THRESHOLDS_FILE = "multi_label_thresholds.json"


def task_record(task):
  """What a multi-label model_dir's task record (`task.task_record`) holds
  besides a classifier's: the flag, the delimiter of its label sets and
  its threshold (a number, or "dev")."""
  return {"multi_label": True, "label_delimiter": task.label_delimiter,
          "multi_label_threshold": task.multi_label_threshold}


def record_threshold(checkpoint, threshold):
  """Records `threshold` as `checkpoint`'s in the THRESHOLDS_FILE beside
  it (atomically, the other checkpoints' kept)."""
  path = os.path.join(os.path.dirname(checkpoint), THRESHOLDS_FILE)
  thresholds = train_state.read_run_record(path) or {}
  thresholds[os.path.basename(checkpoint)] = threshold
  train_state.write_run_record(path, thresholds)


def recorded_threshold(checkpoint):
  """The threshold chosen on the dev split for `checkpoint` (a prefix), or
  None when none was chosen for it."""
  path = os.path.join(os.path.dirname(checkpoint), THRESHOLDS_FILE)
  return (train_state.read_run_record(path) or {}).get(
      os.path.basename(checkpoint))


def choose_on_dev(checkpoint, outputs):
  """The threshold with the best micro F1 on the dev split's `outputs`
  (the engine's, fake examples included: left out here), recorded as
  `checkpoint`'s (`record_threshold`).

  Returns:
    the threshold, a float in (0, 1).
  """
  real = np.asarray(outputs["is_real_example"]).reshape(-1) != 0
  threshold, micro_f1 = multi_label_lib.choose_threshold(
      np.asarray(outputs["logits"])[real],
      np.asarray(outputs["label_ids"])[real])
  logging.info("%s: threshold %.6f chosen on the dev split (micro F1 "
               "%.6f there)", checkpoint, threshold, micro_f1)
  record_threshold(checkpoint, threshold)
  return threshold


def predictions(logits, labels, delimiter, threshold):
  """The label sets of `logits` `[n, n_labels]` at `threshold`, as the
  predictions file writes them (`delimiter` between the labels)."""
  return multi_label_lib.format_sets(multi_label_lib.label_sets(
      multi_label_lib.predict(logits, threshold), labels), delimiter)
