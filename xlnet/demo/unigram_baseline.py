"""The unigram baseline of held-out pretraining evaluation.

A model that ignores the context can do no better on a target than predict
it from piece frequencies. Its loss is the yardstick of the demo: a held-out
loss below it is what the model learned from the context.

Two numbers, both in nats per target, over exactly the targets that one
held-out evaluation pass scores (`heldout_targets`):
  * `cross_entropy`: the targets scored by the training text's piece
    frequencies, add-one smoothed over the vocabulary (what a context-free
    model trained on the same text reaches);
  * `entropy`: the entropy of the targets' own piece frequencies (the best
    any context-free model can reach, even one fit on the held-out targets).
"""
import numpy as np
import tensorflow as tf

from xlnet.data import input_pipeline
from xlnet.data import record_format
from xlnet.data import token_stream
from xlnet.training import config as train_config


def train_piece_counts(text_path, sp_model, uncased=False, use_eod=True):
  """Counts the pieces of a text file as the record writer encodes it.

  Args:
    text_path: a text file in XLNet's input format.
    sp_model: a loaded `sentencepiece.SentencePieceProcessor`.
    uncased: lowercase the text first.
    use_eod: every empty line adds one `<eod>`.

  Returns:
    np.int64 `[vocab_size]`: occurrences of each piece id.
  """
  with tf.io.gfile.GFile(text_path, "rb") as f:
    lines = token_stream.split_lines(f.read(), text_path)
  texts, is_text = token_stream.text_lines(lines)
  encoder = token_stream.LineEncoder(sp_model.serialized_model_proto(),
                                     uncased, from_raw_text=True)
  ids, lengths = encoder(texts, text_path)
  stream, _ = token_stream.file_stream(is_text, ids, lengths, use_eod)
  return np.bincount(stream, minlength=sp_model.get_piece_size()).astype(
      np.int64)


def heldout_targets(record_dir, split="valid"):
  """The target ids that one pass of held-out evaluation scores.

  Reads the records through the pretraining input function with the
  settings of the corpus info next to them, exactly as the evaluation does
  (one device, whole host batches, one pass), and keeps the targets whose
  mask is 1.

  Args:
    record_dir: `{save_dir}/tfrecords` of the held-out records.
    split: their split name.

  Returns:
    np.int32 `[num_targets]`, in reading order.
  """
  info = record_format.load_corpus_info(record_dir)
  if info is None:
    raise ValueError(f"{record_dir}: no corpus_info.json beside it (write "
                     "the records with data_utils.py)")
  input_fn, record_info = input_pipeline.get_input_fn(
      tfrecord_dir=record_dir, split=split,
      bsz_per_host=info["bsz_per_host"], seq_len=info["seq_len"],
      reuse_len=info["reuse_len"], bi_data=info["bi_data"],
      num_core_per_host=1, mask_alpha=info["mask_alpha"],
      mask_beta=info["mask_beta"], uncased=info["uncased"],
      num_predict=info["num_predict"], corpus_info=info,
      # Which targets are scored does not depend on the seed (only the
      # order the files are read in does).
      seed=train_config.DEFAULT_SEED,
      flag_names={"record_info_dir": "--record_info_dir",
                  "split": "--eval_split"})
  dataset = input_fn({"batch_size": info["bsz_per_host"]})
  found = []
  for batch in dataset.take(record_info["num_batch"]):
    target = batch["target"].numpy()
    found.append(target[batch["target_mask"].numpy() > 0])
  return np.concatenate(found).astype(np.int32)


def counts_and_targets(train_text, record_info_dir, split, sp_model, info):
  """The baseline's inputs: the training text's piece counts, encoded as
  the records were (`info`: their corpus_info.json, `sp_model` its
  SentencePiece model), and the held-out targets of `record_info_dir`.

  Returns:
    (np.int64 `[vocab_size]`, np.int32 `[num_targets]`).
  """
  counts = train_piece_counts(train_text, sp_model, info["uncased"],
                              info.get("use_eod", True))
  return counts, heldout_targets(record_info_dir, split)


def cross_entropy(counts, targets, smoothing=1.0):
  """Mean -ln p(target) under add-`smoothing` unigram frequencies.

  p(w) = (counts[w] + smoothing) / (sum(counts) + smoothing * vocab_size),
  so a piece never seen in training still gets a finite cost.

  Args:
    counts: int `[vocab_size]` piece counts of the training text.
    targets: int `[n]` held-out target ids (n > 0).
    smoothing: pseudo-count added to every piece.

  Returns:
    float, nats per target.
  """
  counts = np.asarray(counts, dtype=np.float64)
  log_p = np.log(counts + smoothing) - np.log(counts.sum() +
                                              smoothing * len(counts))
  return float(-log_p[np.asarray(targets)].mean())


def entropy(targets):
  """Entropy (nats) of the empirical distribution of `targets` (int `[n]`,
  n > 0)."""
  _, freq = np.unique(np.asarray(targets), return_counts=True)
  p = freq / freq.sum()
  return float(-(p * np.log(p)).sum())


def describe(counts, targets):
  """One line stating both baselines for the held-out targets."""
  return (f"unigram baseline on the {len(targets)} held-out targets: "
          f"{cross_entropy(counts, targets):.2f} nats per target (piece "
          "frequencies of the training text, add-one smoothed); "
          f"{entropy(targets):.2f} even with the held-out targets' own "
          "frequencies")
