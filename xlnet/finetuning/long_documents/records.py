"""A long document's windows as feature records: the layout
`classifier/features.py` writes, caches and reads when a classifier reads
its documents as windows (`prepare_records(..., layout=...)`,
`input_fn_builder(..., layout=...)`).

One record per document (`windows.document_windows`, W = max_windows, L =
max_seq_length): `input_ids`, `segment_ids` int64 [W L] and `input_mask`
float [W L], the windows one after the other; `window_mask` float [W];
`label_ids` and `is_real_example` as the classifier's. Parsed, the windows
come out [W, L]. The fake examples that fill the last evaluation batch have
one all-padding window (`window_mask` 1 0 ... 0), so that every example has
a last window to read.
"""
import numpy as np
import tensorflow as tf

from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.long_documents import windows

_WINDOW_FEATURES = ("input_ids", "input_mask", "segment_ids")


class WindowRecords:
  """The records of documents read as `max_windows` windows (the layout
  `classifier_features.prepare_records` and `input_fn_builder` take).

  Attributes:
    max_windows: W.
    name: its part of the record file's name.
    key: its part of the records' key.
  """

  def __init__(self, max_windows):
    self.max_windows = max_windows
    self.name = f"windows-{max_windows}"
    self.key = {"max_windows": max_windows}

  def example_features(self, example, label_list, max_seq_length,
                       tokenize_fn):
    """One example's record as NumPy values (`windows.document_windows`,
    plus `label_ids` and `is_real_example`).

    Raises:
      ValueError: for a text pair (windows cut single texts).
    """
    if example.text_b:
      raise ValueError(f"example {example.guid} is a text pair; documents "
                       "read as windows are single texts")
    out = windows.document_windows(tokenize_fn(example.text_a),
                                   max_seq_length, self.max_windows)
    out["label_ids"] = classifier_features.label_to_id(example.label,
                                                       label_list)
    out["is_real_example"] = 1
    return out

  def serializer(self, label_list, max_seq_length, tokenize_fn):
    """`serialize(index, example)` -> the bytes of its record."""
    is_regression = label_list is None

    def serialize(index, example):
      del index
      values = self.example_features(example, label_list, max_seq_length,
                                     tokenize_fn)
      feature = {k: _feature(np.ravel(values[k]))
                 for k in _WINDOW_FEATURES + ("window_mask",)}
      feature["label_ids"] = _feature(np.array(
          [values["label_ids"]], np.float32 if is_regression else np.int64))
      feature["is_real_example"] = _feature(np.array([1], np.int64))
      return tf.train.Example(features=tf.train.Features(
          feature=feature)).SerializeToString()
    return serialize

  def parser(self, max_seq_length, is_regression):
    """`parse(serialized)` -> dict of tensors: the windows [W, L] (ints
    int32), `window_mask` float32 [W], the scalars as the classifier's."""
    shape = [self.max_windows, max_seq_length]
    spec = {"input_ids": tf.io.FixedLenFeature(shape, tf.int64),
            "input_mask": tf.io.FixedLenFeature(shape, tf.float32),
            "segment_ids": tf.io.FixedLenFeature(shape, tf.int64),
            "window_mask": tf.io.FixedLenFeature([self.max_windows],
                                                 tf.float32),
            "label_ids": tf.io.FixedLenFeature(
                [], tf.float32 if is_regression else tf.int64),
            "is_real_example": tf.io.FixedLenFeature([], tf.int64)}

    def parse(serialized):
      example = tf.io.parse_single_example(serialized, spec)
      return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
              for name, t in example.items()}
    return parse

  def fake(self, max_seq_length, is_regression):
    """The fake example's tensors (an empty document of one window that is
    all padding, label 0, `is_real_example` 0)."""
    empty = windows.absent_window(max_seq_length)
    rows = [empty] * self.max_windows
    ids, mask, seg = (np.array(column) for column in zip(*rows))
    return {"input_ids": tf.constant(ids, tf.int32),
            "input_mask": tf.constant(mask, tf.float32),
            "segment_ids": tf.constant(seg, tf.int32),
            "window_mask": tf.constant(
                (np.arange(self.max_windows) == 0).astype(np.float32)),
            "label_ids": tf.constant(0, tf.float32 if is_regression
                                     else tf.int32),
            "is_real_example": tf.constant(0, tf.int32)}


def _feature(values):
  """A tf.train.Feature of a flat NumPy array (floats or ints)."""
  if values.dtype.kind == "f":
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))
  return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def layout(settings):
  """The records of a classifier reading documents as `settings` say: a
  `WindowRecords`, or None for `truncate` (one sequence per example)."""
  return WindowRecords(settings.max_windows) if settings.in_windows else None
