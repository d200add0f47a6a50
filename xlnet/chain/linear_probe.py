"""A linear probe of frozen features: what a model's representations say
about a labelled set before any fine-tuning.

For a checkpoint (or the random initialization fine-tuning starts from),
the backbone runs over each example as `run_classifier.py` builds it
(text, <sep>, <cls>, left padding), without dropout; three features per
example:

  embeddings   the mean of its pieces' word embeddings (a bag of words)
  mean         the mean of the last layer's outputs over its pieces
  cls          the last layer's output at <cls> (what the "last" summary
               of the classification head reads)

A softmax regression (NumPy, L2 penalty chosen on a fifth of the training
examples) is fitted on the training examples' features and scored on dev.
"""
import csv

import numpy as np
import tensorflow as tf

from xlnet import model as model_lib
from xlnet.data import prepro_utils
from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.classifier import processors
from xlnet.training import checkpoint_io

KINDS = ("embeddings", "mean", "cls")
PENALTIES = (1e-4, 1e-3, 1e-2, 1e-1)


def encode(examples, labels, sp_path, max_seq_length):
  """run_classifier.py's features of `examples` (InputExample): dict of
  batch-major NumPy arrays input_ids, segment_ids, input_mask (1 = pad),
  label_ids."""
  tokenize = classifier_features.make_tokenize_fn(
      prepro_utils.load_sp_model(sp_path, "spiece.model"), False)
  rows = [classifier_features.convert_single_example(
      i, e, labels, max_seq_length, tokenize) for i, e in enumerate(examples)]
  return {"input_ids": np.array([r.input_ids for r in rows], np.int32),
          "segment_ids": np.array([r.segment_ids for r in rows], np.int32),
          "input_mask": np.array([r.input_mask for r in rows], np.float32),
          "label_ids": np.array([r.label_id for r in rows], np.int64)}


def frozen_features(xlnet_config, prefix, feats, seed=1, batch_size=64):
  """The three features of every example.

  Args:
    xlnet_config: the model's `XLNetConfig`.
    prefix: a checkpoint prefix, or None for the random initialization of
      graph seed `seed`.
    feats: `encode`'s arrays.

  Returns:
    {kind: float32 [n, d_model]}.
  """
  graph = tf.Graph()
  with graph.as_default():
    tf.compat.v1.set_random_seed(seed)
    ph = tf.compat.v1.placeholder
    ids, seg = ph(tf.int32, [None, None]), ph(tf.int32, [None, None])
    pad = ph(tf.float32, [None, None])
    run_config = model_lib.RunConfig(is_training=False, use_tpu=False,
                                     use_bfloat16=False, dropout=0.0,
                                     dropatt=0.0)
    xlnet = model_lib.XLNetModel(
        xlnet_config, run_config, input_ids=tf.transpose(ids),
        seg_ids=tf.transpose(seg), input_mask=tf.transpose(pad))
    output = tf.transpose(xlnet.get_sequence_output(), [1, 0, 2])  # [B,L,d]
    real = (1.0 - pad)[:, :, None]
    count = tf.reduce_sum(real, 1)
    embedded = tf.nn.embedding_lookup(xlnet.get_embedding_table(), ids)
    fetches = {"embeddings": tf.reduce_sum(embedded * real, 1) / count,
               "mean": tf.reduce_sum(output * real, 1) / count,
               "cls": output[:, -1]}
    init = checkpoint_io.init_ops(tf.compat.v1.global_variables(), prefix)
  out = {k: [] for k in KINDS}
  with tf.compat.v1.Session(graph=graph) as session:
    session.run(init)
    for i in range(0, len(feats["input_ids"]), batch_size):
      part = session.run(fetches, {
          ids: feats["input_ids"][i:i + batch_size],
          seg: feats["segment_ids"][i:i + batch_size],
          pad: feats["input_mask"][i:i + batch_size]})
      for k in KINDS:
        out[k].append(part[k])
  return {k: np.concatenate(v) for k, v in out.items()}


def fit_softmax(x, y, n_class, penalty, steps=500, lr=0.5):
  """Weights [d + 1, n_class] of an L2-penalized softmax regression fitted
  by full-batch gradient descent on standardized `x` (a bias column
  added)."""
  x = np.hstack([x, np.ones((len(x), 1))])
  w = np.zeros((x.shape[1], n_class))
  onehot = np.eye(n_class)[y]
  for _ in range(steps):
    z = x @ w
    z -= z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    w -= lr * (x.T @ (p - onehot) / len(x) + penalty * w)
  return w


def accuracy(w, x, y):
  x = np.hstack([x, np.ones((len(x), 1))])
  return float(np.mean((x @ w).argmax(1) == y))


def probe(train_x, train_y, dev_x, dev_y, n_class):
  """Dev accuracy of the softmax regression whose penalty scored best on
  the last fifth of the training examples (then refitted on all)."""
  mean, std = train_x.mean(0), train_x.std(0) + 1e-6
  train_x, dev_x = (train_x - mean) / std, (dev_x - mean) / std
  cut = len(train_x) * 4 // 5
  best = max(PENALTIES, key=lambda c: accuracy(
      fit_softmax(train_x[:cut], train_y[:cut], n_class, c),
      train_x[cut:], train_y[cut:]))
  return accuracy(fit_softmax(train_x, train_y, n_class, best), dev_x,
                  dev_y), best


def read_table(path):
  """The examples of a chain set's csv table (label, text_a[, text_b])."""
  with open(path, newline="", encoding="utf-8") as f:
    return [processors.InputExample(str(i), row["text_a"],
                                    row.get("text_b") or None, row["label"])
            for i, row in enumerate(csv.DictReader(f))]


def run(config_path, prefix, set_dir, labels, sp_path, max_seq_length,
        seed=1):
  """{kind: (dev accuracy, penalty)} of one model (prefix None: random
  initialization) on one chain set."""
  config = model_lib.XLNetConfig(json_path=config_path)
  data = {}
  for split in ("train", "dev"):
    feats = encode(read_table(f"{set_dir}/{split}.csv"), labels, sp_path,
                   max_seq_length)
    data[split] = (frozen_features(config, prefix, feats, seed),
                   feats["label_ids"])
  return {k: probe(data["train"][0][k], data["train"][1], data["dev"][0][k],
                   data["dev"][1], len(labels)) for k in KINDS}
