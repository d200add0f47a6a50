"""Feature records of the reading-comprehension tasks (SQuAD and RACE).

Both tasks store fixed-length features in TFRecord files in the release's
format (masks and `is_impossible` as float32, everything else int64; built
with `example_proto.serialize_examples`, no per-value protobuf calls), write
them atomically (`io_utils.atomic_output`) and read them back with one input
function that casts each feature to the dtype the model wants.

The reader takes the stored type of every feature from the first record of
each file, so records written by the release and by earlier versions of
this project (which stored every feature as int64) read the same.
"""
import time

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet.data import example_proto
from xlnet import io_utils

# Examples serialized per `serialize_examples` call: large enough to amortize
# the NumPy work, small enough to keep memory flat.
_CHUNK = 256


def order_seed(seed):
  """The seed of the training examples' order (--seed), checked."""
  if seed is None:
    raise ValueError("the order of the training examples needs the run's "
                     "seed (TrainConfig.seed, --seed)")
  if seed < 0:
    raise ValueError(f"--seed={seed}: the order of the training examples "
                     "needs a seed >= 0")
  return seed


def shuffled(examples, seed, *stream):
  """`examples` in the order of the permutation
  `np.random.default_rng([seed, *stream]).permutation(len(examples))`.

  Args:
    examples: list.
    seed: int >= 0 (`order_seed`).
    *stream: ints >= 0 that make independent orders from one seed (e.g. the
      shard of a sharded preprocessing).

  Returns:
    a new list.
  """
  order = np.random.default_rng([seed, *stream]).permutation(len(examples))
  return [examples[i] for i in order]


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
    feature_batches: iterable of dicts name -> array `[n, width]`: int
      (values >= 0, stored as int64) or float (stored as float32); every
      dict has the same names, widths and dtypes.

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


def _first_record(path):
  """The bytes of a TFRecord file's first record, or None if it is empty.

  A record is framed as: uint64 length, uint32 CRC, data, uint32 CRC (the
  CRCs are checked when the records are read for real).
  """
  with tf.io.gfile.GFile(path, "rb") as f:
    header = f.read(12)
    if len(header) < 12:
      return None
    return f.read(int(np.frombuffer(header[:8], "<u8")[0]))


def _first_record_kinds(path):
  """name -> tf.int64 / tf.float32 of the features of a file's first record
  ({} for an empty file)."""
  raw = _first_record(path)
  if raw is None:
    return {}
  features = tf.train.Example.FromString(raw).features.feature
  return {name: (tf.float32 if feature.WhichOneof("kind") == "float_list"
                 else tf.int64) for name, feature in features.items()}


def stored_dtypes(paths, feature_spec):
  """How each feature of `feature_spec` is stored in the records.

  A feature the model wants as float is float32 in the release's records
  and int64 in those of earlier versions of this project; the first record
  of every file says which. Empty files say nothing (the release's format
  is assumed).

  Returns:
    dict name -> tf.int64 or tf.float32.

  Raises:
    ValueError: if the files store a feature differently (naming them).
  """
  stored = {name: tf.float32 if dtype == tf.float32 else tf.int64
            for name, (_, dtype) in feature_spec.items()}
  seen = {}
  for path in paths:
    kinds = _first_record_kinds(path)
    for name in feature_spec:
      if name not in kinds:
        continue
      first = seen.setdefault(name, (kinds[name], path))
      if first[0] != kinds[name]:
        raise ValueError(
            f"{path}: '{name}' is stored as {kinds[name].name} but as "
            f"{first[0].name} in {first[1]}; rewrite the records of one "
            "of them")
      stored[name] = kinds[name]
  return stored


def make_input_fn(paths, feature_spec, is_training, drop_remainder,
                  shuffle_buffer=2048, seed=None):
  """An input function over feature records.

  Args:
    paths: list of TFRecord paths.
    feature_spec: dict name -> (width, dtype): each record holds `width`
      values of `name` (stored as `stored_dtypes` finds), handed to the
      model as `dtype` (tf.int32 or tf.float32) with shape `[batch, width]`,
      or `[batch]` when width is 1. Other features of the records are
      ignored.
    is_training: shuffle the files and the records, repeat forever.
    drop_remainder: drop a last partial batch (static batch for TPUs).
    shuffle_buffer: records in the shuffle buffer (training).
    seed: op seed of the shuffles (None: random).

  Returns:
    `input_fn(params)` -> `tf.data.Dataset` of batch-major feature dicts;
    `params["batch_size"]` is the batch of one replica (every worker of a
    multi-host run reads the same stream and keeps its share:
    `strategies.worker_share`).
  """
  stored = stored_dtypes(paths, feature_spec)
  parse_spec = {name: tf.io.FixedLenFeature([width], stored[name])
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
