"""Classification/regression inputs: features, cached records, input function.

Input layout of one example (`max_seq_length` = L):

    A <sep> [B <sep>] <cls>, left-padded to L

  * `input_ids`: the pieces, `<sep>` = 4, `<cls>` = 3, padding id 0 in
    front: `[0] * pad + tokens`.
  * `segment_ids`: A and its `<sep>` 0, B and its `<sep>` 1, `<cls>` 2,
    padding 4.
  * `input_mask` (float): 1 on padding, 0 on real tokens.
  * Truncation: a pair keeps L - 3 pieces by dropping the last piece of the
    longer side (of B when both are equally long); a single text keeps its
    first L - 2 pieces.

Feature records are written once per (task, split, max_seq_length,
vocabulary, casing) under `output_dir` and reused while the contents of the
data files and the settings they were made from are unchanged. Training
records hold the examples in a seeded random order (public sets come sorted
by label, in runs far longer than the input's shuffle buffer). Evaluation
and prediction append fake examples (ids 0, mask 1, segment 0, label 0,
`is_real_example` 0) so that every batch is full; they must be left out of
metrics and predictions.
"""
import dataclasses
import os
import time

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet import io_utils
from xlnet.data import prepro_utils
from xlnet.data.prepro_utils import CLS_ID, SEP_ID
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning import record_cache
from xlnet.finetuning.classifier import multi_label as multi_label_lib

SEG_ID_A = 0
SEG_ID_B = 1
SEG_ID_CLS = 2
SEG_ID_PAD = 4
PAD_ID = 0

# The smallest L that holds one piece plus `<sep>` and `<cls>`.
MIN_SEQ_LENGTH = finetune_config.MIN_SEQ_LENGTH
# Longest sequence of the released models' pretraining: longer inputs give
# relative distances (beyond +-(512 - 1)) the released models never saw.
PRETRAIN_SEQ_LENGTH = finetune_config.PRETRAIN_SEQ_LENGTH

_LOG_EVERY_SECONDS = 10


@dataclasses.dataclass
class InputFeatures:
  """The model inputs of one example (lists of length max_seq_length).

  Attributes:
    input_ids: list of int token ids.
    input_mask: list of float, 1.0 on padding.
    segment_ids: list of int.
    label_id: int class index, float for regression, or a multi-label
      task's multi-hot list of ints.
    is_real_example: bool, False for the fake padding examples.
  """

  input_ids: list
  input_mask: list
  segment_ids: list
  label_id: object
  is_real_example: bool = True


def make_tokenize_fn(sp_model, uncased):
  """text -> list of SentencePiece ids, normalized as in pretraining.

  Args:
    sp_model: a loaded sentencepiece.SentencePieceProcessor.
    uncased: lower-case the text first.
  """
  def tokenize_fn(text):
    return prepro_utils.encode_ids(
        sp_model, prepro_utils.preprocess_text(text, lower=uncased))
  return tokenize_fn


def truncate_seq_pair(tokens_a, tokens_b, max_length):
  """Shortens a pair in place to at most `max_length` pieces in total.

  Repeatedly drops the last piece of the longer list (of `tokens_b` when
  they are equally long).
  """
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


def label_to_id(label, label_list, multi_label=False):
  """The feature label of an example label.

  Args:
    label: str (a multi-label task: a tuple of them), or None in an
      unlabelled (test) split.
    label_list: list of label strings, or None for regression.
    multi_label: the label is a set of labels.

  Returns:
    int index into label_list (0 when unlabelled), float for regression
    (0.0 when unlabelled), or a multi-label task's multi-hot list of
    ints (`multi_label.multi_hot`, all 0 when unlabelled).
  """
  if multi_label:
    return multi_label_lib.multi_hot(label, label_list)
  if label_list is None:
    return 0.0 if label is None else float(label)
  return 0 if label is None else label_list.index(label)


def sequence_layout(tokens_a, tokens_b, max_seq_length):
  """The model inputs of one text or a pair of ids (see the module
  docstring): truncated, then `A <sep> [B <sep>] <cls>`, left-padded.

  Args:
    tokens_a: list of ids (shortened in place when too long).
    tokens_b: list of ids, empty for a single text (shortened in place).
    max_seq_length: L.

  Returns:
    (input_ids list of int, input_mask list of float (1 = padding),
    segment_ids list of int), each of length L.
  """
  if tokens_b:
    truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
  else:
    del tokens_a[max_seq_length - 2:]

  input_ids = tokens_a + [SEP_ID]
  segment_ids = [SEG_ID_A] * len(input_ids)
  if tokens_b:
    input_ids += tokens_b + [SEP_ID]
    segment_ids += [SEG_ID_B] * (len(tokens_b) + 1)
  input_ids.append(CLS_ID)
  segment_ids.append(SEG_ID_CLS)

  pad = max_seq_length - len(input_ids)
  return ([PAD_ID] * pad + input_ids, [1.0] * pad + [0.0] * len(input_ids),
          [SEG_ID_PAD] * pad + segment_ids)


def convert_single_example(ex_index, example, label_list, max_seq_length,
                           tokenize_fn, multi_label=False):
  """Converts one InputExample to InputFeatures (see the module docstring).

  Args:
    ex_index: int, position of the example (the first few are logged).
    example: an InputExample.
    label_list: list of label strings, or None for regression.
    max_seq_length: int >= MIN_SEQ_LENGTH.
    tokenize_fn: text -> list of ids.
    multi_label: the example's label is a set of labels (`label_to_id`).

  Returns:
    InputFeatures.
  """
  tokens_b = tokenize_fn(example.text_b) if example.text_b else []
  input_ids, input_mask, segment_ids = sequence_layout(
      tokenize_fn(example.text_a), tokens_b, max_seq_length)
  features = InputFeatures(
      input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
      label_id=label_to_id(example.label, label_list, multi_label))
  if ex_index < 3:
    logging.info("example %s: ids %s segments %s label %r -> %r",
                 example.guid, features.input_ids, features.segment_ids,
                 example.label, features.label_id)
  return features


def padding_features(max_seq_length, is_regression, n_labels=None):
  """The fake example that fills the last eval/predict batch (`n_labels`:
  a multi-label task's labels, its label all 0)."""
  return InputFeatures(
      input_ids=[PAD_ID] * max_seq_length,
      input_mask=[1.0] * max_seq_length,
      segment_ids=[SEG_ID_A] * max_seq_length,
      label_id=(0.0 if is_regression else
                0 if n_labels is None else [0] * n_labels),
      is_real_example=False)


def num_padding(num_examples, multiple):
  """How many fake examples make `num_examples` a multiple of `multiple`."""
  return -num_examples % multiple


################################################################################
# Feature records.
################################################################################
def _int_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _float_feature(values):
  return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def serialize_features(features, is_regression):
  """InputFeatures -> serialized tf.train.Example (bytes).

  Features: `input_ids`, `segment_ids` int64 [L]; `input_mask` float [L];
  `label_ids` int64 [1] (float [1] for regression, int64 [n_labels] for a
  multi-label task's multi-hot list); `is_real_example` int64 [1].
  """
  label_id = features.label_id
  label = (_float_feature([label_id]) if is_regression else
           _int_feature(label_id if isinstance(label_id, list)
                        else [label_id]))
  example = tf.train.Example(features=tf.train.Features(feature={
      "input_ids": _int_feature(features.input_ids),
      "input_mask": _float_feature(features.input_mask),
      "segment_ids": _int_feature(features.segment_ids),
      "label_ids": label,
      "is_real_example": _int_feature([int(features.is_real_example)]),
  }))
  return example.SerializeToString()


def write_records(examples, label_list, max_seq_length, tokenize_fn, path,
                  serialize=None, multi_label=False):
  """Converts `examples` and writes them to the TFRecord file `path`
  (`multi_label`: their labels are label sets).

  The file appears under `path` only once complete. Logs progress and an
  ETA every few seconds.

  Args:
    examples, label_list, max_seq_length, tokenize_fn: as
      `convert_single_example`.
    path: the record file.
    serialize: `serialize(index, example)` -> bytes of one record, or None:
      this module's (`convert_single_example`, `serialize_features`).

  Returns:
    int, the number of records written (= len(examples)).
  """
  if serialize is None:
    serialize = lambda i, example: serialize_features(  # noqa: E731
        convert_single_example(i, example, label_list, max_seq_length,
                               tokenize_fn, multi_label), label_list is None)
  total = len(examples)
  start = last_log = time.time()
  with io_utils.atomic_output(path) as tmp:
    with tf.io.TFRecordWriter(tmp) as writer:
      for i, example in enumerate(examples):
        writer.write(serialize(i, example))
        if time.time() - last_log > _LOG_EVERY_SECONDS:
          last_log = time.time()
          rate = (i + 1) / (last_log - start)
          logging.info("%s: %d/%d examples (%.0f/s), ETA %.0fs",
                       os.path.basename(path), i + 1, total, rate,
                       (total - i - 1) / rate)
  logging.info("Wrote %d examples to %s in %.1fs", total, path,
               time.time() - start)
  return total


def record_path(output_dir, task, split, max_seq_length, spiece_model_file,
                digest, uncased, shuffled=False, layout_name=None):
  """`{output_dir}/{task}.{split}.len-{L}[.{layout}].{spm name}-{sha1[:8]}
  [.uncased][.shuffled].tf_record`: one file per task, split, length,
  layout (a long document's windows), vocabulary, casing and order
  (shuffled for training, file order for inference)."""
  stem = os.path.splitext(os.path.basename(spiece_model_file))[0]
  casing = ".uncased" if uncased else ""
  order = ".shuffled" if shuffled else ""
  layout = f".{layout_name}" if layout_name else ""
  return os.path.join(
      output_dir, f"{task}.{split}.len-{max_seq_length}{layout}.{stem}-"
                  f"{digest[:8]}{casing}{order}.tf_record")


def shuffle_examples(examples, seed):
  """`examples` in the order of `np.random.RandomState(seed).permutation`.

  The release shuffles the training examples once before writing them
  (unseeded); the seed makes the written order, and so a rerun, the same.

  Args:
    examples: list of n InputExample.
    seed: int.

  Returns:
    a new list of the n examples, `[examples[i] for i in permutation]`.
  """
  order = np.random.RandomState(seed).permutation(len(examples))
  return [examples[i] for i in order]


def prepare_records(processor, data_dir, split, output_dir, max_seq_length,
                    sp_model, spiece_model_file, uncased, overwrite=False,
                    shuffle_seed=None, wait=None, layout=None):
  """Returns the feature records of one split, writing them when needed.

  Next to the records, `{record}.json` holds the number of examples and the
  key they were made with (task, split, max_seq_length, vocabulary digest,
  casing, the processor's options, the digest of the source files' bytes
  and the shuffle seed). The records are reused while that key is
  unchanged, unless `overwrite` (`record_cache.prepare`).

  Args:
    processor: a DataProcessor (resolved, see `resolve`).
    data_dir: str, the task's data directory.
    split: "train", "dev" or "test".
    output_dir: str, where the records live (created if needed).
    max_seq_length: int.
    sp_model: the loaded SentencePiece model.
    spiece_model_file: str, its path.
    uncased: bool.
    overwrite: bool, rewrite even valid records.
    shuffle_seed: None: the examples in file order; an int: in the order of
      `shuffle_examples(examples, shuffle_seed)` (for training), in a file
      of their own.
    wait: None: write them when needed; seconds: wait that long at most
      for the chief of a multi-host run to write them
      (`record_cache.prepare`).
    layout: None: one sequence per example (this module's); or another
      layout of the examples (a long document's windows:
      `long_documents/records.WindowRecords`), with its `name` in the file
      name, its `key` in the records' key and its `serializer`.

  Returns:
    (record path, number of examples).
  """
  digest = record_cache.file_digest(spiece_model_file)
  path = record_path(output_dir, processor.name, split, max_seq_length,
                     spiece_model_file, digest, uncased,
                     shuffled=shuffle_seed is not None,
                     layout_name=layout.name if layout else None)
  key = {"task": processor.name, "split": split,
         "max_seq_length": max_seq_length, "spiece_sha1": digest,
         "uncased": bool(uncased), "options": processor.options(),
         "source": processor.source_signature(data_dir, split),
         "shuffle_seed": shuffle_seed, **(layout.key if layout else {})}

  def write(out):
    examples = processor.get_examples(data_dir, split)
    if not examples:
      raise ValueError(f"--data_dir={data_dir}: the {split} split of task "
                       f"{processor.name} holds no examples")
    if shuffle_seed is not None:
      examples = shuffle_examples(examples, shuffle_seed)
    labels, tokenize_fn = processor.get_labels(), make_tokenize_fn(sp_model,
                                                                   uncased)
    return write_records(examples, labels, max_seq_length, tokenize_fn, out,
                         layout.serializer(labels, max_seq_length, tokenize_fn)
                         if layout else None, processor.multi_label)

  return path, record_cache.prepare(path, key, write, overwrite, wait)


################################################################################
# Input function.
################################################################################
def _features_to_tensors(features, is_regression):
  """InputFeatures -> dict of tensors in the parsed-record dtypes."""
  label_dtype = tf.float32 if is_regression else tf.int32
  return {
      "input_ids": tf.constant(features.input_ids, tf.int32),
      "input_mask": tf.constant(features.input_mask, tf.float32),
      "segment_ids": tf.constant(features.segment_ids, tf.int32),
      "label_ids": tf.constant(features.label_id, label_dtype),
      "is_real_example": tf.constant(int(features.is_real_example), tf.int32),
  }


def make_parser(max_seq_length, is_regression, n_labels=None):
  """Returns `parse(serialized) -> dict of tensors` for one record.

  Ints come out int32 (TPUs have no int64): `input_ids`, `segment_ids`
  [L]; `label_ids`, `is_real_example` scalars; `input_mask` float32 [L];
  a regression `label_ids` is a float32 scalar, a multi-label task's
  (`n_labels` labels) an int32 multi-hot [n_labels].
  """
  label_dtype = tf.float32 if is_regression else tf.int64
  label_shape = [] if n_labels is None else [n_labels]
  spec = {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.float32),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "label_ids": tf.io.FixedLenFeature(label_shape, label_dtype),
      "is_real_example": tf.io.FixedLenFeature([], tf.int64),
  }

  def parse(serialized):
    example = tf.io.parse_single_example(serialized, spec)
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t
            for name, t in example.items()}
  return parse


def input_fn_builder(input_file, max_seq_length, is_training, is_regression,
                     num_examples=None, pad_to_multiple=None,
                     shuffle_buffer=2048, seed=None, n_labels=None,
                     layout=None):
  """Builds the `input_fn(params)` over one feature record file.

  The input function yields batch-major dicts (see `make_parser`) of
  `params["batch_size"]` examples.
    * Training: shuffled (buffer `shuffle_buffer`, op seed `seed`) and
      repeated forever; only full batches.
    * Eval/predict: every record once, in file order, then fake examples up
      to a multiple of `pad_to_multiple` (default: the batch size), so every
      batch is full and no real example is dropped.

  Args:
    input_file: str, a record file of `prepare_records`.
    max_seq_length: int, L of the records.
    is_training: bool.
    is_regression: bool, float labels.
    num_examples: int, records in the file (required unless is_training).
    pad_to_multiple: int, the global batch size when several cores each
      read `params["batch_size"]` examples; must be a multiple of it.
    shuffle_buffer: int.
    seed: int or None.
    n_labels: a multi-label task's labels (multi-hot `label_ids`), else
      None.
    layout: the records' layout (`prepare_records`): its `parser` and its
      `fake` example; None: one sequence per example.

  Returns:
    input_fn(params) -> tf.data.Dataset.
  """
  parse = (layout.parser(max_seq_length, is_regression) if layout else
           make_parser(max_seq_length, is_regression, n_labels))

  def input_fn(params):
    batch_size = params["batch_size"]
    dataset = tf.data.TFRecordDataset(input_file)
    if is_training:
      dataset = dataset.repeat().shuffle(shuffle_buffer, seed=seed)
      dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    else:
      multiple = pad_to_multiple or batch_size
      if multiple % batch_size:
        raise ValueError(f"pad_to_multiple={multiple} is not a multiple of "
                         f"the batch size {batch_size}")
      dataset = dataset.map(parse)
      n_pad = num_padding(num_examples, multiple)
      if n_pad:
        fake = (layout.fake(max_seq_length, is_regression) if layout else
                _features_to_tensors(
                    padding_features(max_seq_length, is_regression, n_labels),
                    is_regression))
        dataset = dataset.concatenate(
            tf.data.Dataset.from_tensors(fake).repeat(n_pad))
    dataset = dataset.batch(batch_size, drop_remainder=True)
    return dataset.prefetch(tf.data.AUTOTUNE)

  return input_fn
