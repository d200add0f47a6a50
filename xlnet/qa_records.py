"""Feature records of the reading-comprehension tasks (SQuAD and RACE).

Both tasks store fixed-length int64 features in TFRecord files (built with
`example_proto.serialize_examples`, no per-value protobuf calls), write them
atomically (`io_utils.atomic_output`) and read them back with one input
function that casts each feature to the dtype the model wants.
"""
import time

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet import example_proto
from xlnet import io_utils

# Examples serialized per `serialize_examples` call: large enough to amortize
# the NumPy work, small enough to keep memory flat.
_CHUNK = 256


class ProgressLog:
  """Logs `done/total` with a rate and an ETA at most every `every_s`."""

  def __init__(self, what, total, every_s=10.0):
    self.what = what
    self.total = total
    self.every_s = every_s
    self.start = self.last = time.time()

  def update(self, done, extra=""):
    """Logs when `every_s` passed since the last line or when done."""
    now = time.time()
    if now - self.last < self.every_s and done < self.total:
      return
    self.last = now
    rate = done / max(now - self.start, 1e-9)
    eta = (self.total - done) / max(rate, 1e-9)
    logging.info("%s: %d/%d (%.0f/s)%s, ETA %.0fs", self.what, done,
                 self.total, rate, extra, eta)


def write_records(path, feature_batches):
  """Writes feature batches to a TFRecord file that appears only when whole.

  Args:
    path: final path (local or a `tf.io.gfile` URL).
    feature_batches: iterable of dicts name -> int array `[n, width]` (all
      values >= 0; every dict has the same names and widths).

  Returns:
    int, the number of records written.
  """
  io_utils.remove_stale_tmp(path)
  count = 0
  pending, pending_rows = [], 0
  with io_utils.atomic_output(path) as tmp:
    with tf.io.TFRecordWriter(tmp) as writer:

      def flush():
        merged = {k: np.concatenate([b[k] for b in pending])
                  for k in pending[0]}
        for record in example_proto.serialize_examples(merged):
          writer.write(record)
        pending.clear()

      for batch in feature_batches:
        rows = len(next(iter(batch.values())))
        if not rows:
          continue
        pending.append(batch)
        pending_rows += rows
        count += rows
        if pending_rows >= _CHUNK:
          flush()
          pending_rows = 0
      if pending:
        flush()
  return count


def make_input_fn(paths, feature_spec, is_training, drop_remainder,
                  shuffle_buffer=2048, seed=None):
  """An input function over feature records.

  Args:
    paths: list of TFRecord paths.
    feature_spec: dict name -> (width, dtype): each record holds `width`
      int64 values of `name`, handed to the model as `dtype` (tf.int32 or
      tf.float32) with shape `[batch, width]`, or `[batch]` when width is 1.
    is_training: shuffle the files and the records, repeat forever.
    drop_remainder: drop a last partial batch (static batch for TPUs).
    shuffle_buffer: records in the shuffle buffer (training).
    seed: op seed of the shuffles (None: random).

  Returns:
    `input_fn(params)` -> `tf.data.Dataset` of batch-major feature dicts;
    `params["batch_size"]` is the batch of one input pipeline; an optional
    `params["input_context"]` (`tf.distribute.InputContext`) shards the
    files across pipelines.
  """
  parse_spec = {name: tf.io.FixedLenFeature([width], tf.int64)
                for name, (width, _) in feature_spec.items()}

  def parse(serialized):
    raw = tf.io.parse_example(serialized, parse_spec)
    out = {}
    for name, (width, dtype) in feature_spec.items():
      value = tf.cast(raw[name], dtype)
      out[name] = value[:, 0] if width == 1 else value
    return out

  def input_fn(params):
    files = tf.data.Dataset.from_tensor_slices(list(paths))
    context = params.get("input_context")
    if context is not None and context.num_input_pipelines > 1:
      files = files.shard(context.num_input_pipelines,
                          context.input_pipeline_id)
    if is_training:
      files = files.shuffle(len(paths), seed=seed)
      records = files.interleave(
          tf.data.TFRecordDataset, cycle_length=min(len(paths), 8),
          num_parallel_calls=tf.data.AUTOTUNE)
      records = records.shuffle(shuffle_buffer, seed=seed).repeat()
    else:
      records = files.flat_map(tf.data.TFRecordDataset)
    batches = records.batch(params["batch_size"],
                            drop_remainder=drop_remainder)
    return batches.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE)

  return input_fn
