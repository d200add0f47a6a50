"""Masked-word prediction with a pretrained checkpoint (the demo's showcase).

Words of a held-out sentence are hidden and the two-stream model predicts
them as in pretraining: the query stream of a hidden position attends to the
content of the visible positions only.

The attention pattern (`masked_features`): every hidden position is put last
in the factorization order and all hidden positions are predicted at once,
so `perm_mask[i, j] = 1` (i may not see j) for every i and every hidden j,
the hidden position itself included. No content stream can see a hidden
piece either, so nothing a query reads depends on the hidden ids; they are
also replaced by `<mask>` in the input, to make that plain. This is the
pretraining pattern for a target that comes first in its factorization order
among the targets.

Layout of one input: `text <sep> <cls>`, segment ids 0 for the text and its
`<sep>`, 2 for `<cls>` (the tail every pretraining example ends with); no
memory.
"""
import numpy as np
import tensorflow as tf

from xlnet.training import checkpoint_io
from xlnet import model as model_lib
from xlnet.data.prepro_utils import CLS_ID, MASK_ID, SEP_ID

CLS_SEG_ID = 2


def word_spans(ids, is_start):
  """Groups pieces into words: a word is a word-start piece and the
  non-start pieces after it.

  Args:
    ids: int `[n]` piece ids.
    is_start: bool `[vocab_size]`, the pieces that start a word
      (`pretrain_examples.word_start_table`, as span masking uses).

  Returns:
    list of (begin, end) piece ranges covering `ids` in order (pieces before
    the first word start form a word of their own).
  """
  starts = [k for k in range(len(ids)) if k == 0 or is_start[ids[k]]]
  return list(zip(starts, starts[1:] + [len(ids)]))


def choose_hidden_words(pieces, spans, fraction, rng):
  """Picks the words to hide: about `fraction` of the words that are one
  piece holding a letter (at least one word), at random.

  Only one-piece words are hidden so that every blank is one prediction (a
  word of several pieces would be scored piece by piece).

  Args:
    pieces: list of str, the pieces of the sentence.
    spans: its `word_spans`.
    fraction: float in (0, 1].
    rng: np.random.RandomState.

  Returns:
    sorted list of the positions of the chosen words (empty when no word
    qualifies).
  """
  single = [begin for begin, end in spans
            if end - begin == 1 and any(c.isalpha() for c in pieces[begin])]
  if not single:
    return []
  num = max(1, int(round(fraction * len(spans))))
  chosen = rng.choice(len(single), size=min(num, len(single)), replace=False)
  return sorted(single[k] for k in chosen)


def masked_features(ids, hidden):
  """Model inputs of one sequence whose `hidden` positions are predicted.

  Args:
    ids: int `[n]` piece ids of the text.
    hidden: sorted positions (in `ids`) to predict, at least one.

  Returns:
    dict of numpy arrays for the sequence `ids <sep> <cls>` (L = n + 2,
    P = len(hidden)):
      input_k int32 `[L]`: the ids, `<mask>` at hidden positions;
      seg_id int32 `[L]`: 0, and 2 for `<cls>`;
      input_q float32 `[L]`: 1 at hidden positions;
      perm_mask float32 `[L, L]`: 1 where i may not see j (j hidden);
      target_mapping float32 `[P, L]`: one-hot row k at hidden[k].
  """
  seq_len = len(ids) + 2
  hidden = np.asarray(hidden, dtype=np.int64)
  input_k = np.concatenate([ids, [SEP_ID, CLS_ID]]).astype(np.int32)
  input_k[hidden] = MASK_ID
  seg_id = np.zeros(seq_len, dtype=np.int32)
  seg_id[-1] = CLS_SEG_ID
  input_q = np.zeros(seq_len, dtype=np.float32)
  input_q[hidden] = 1.0
  perm_mask = np.zeros([seq_len, seq_len], dtype=np.float32)
  perm_mask[:, hidden] = 1.0
  target_mapping = np.zeros([len(hidden), seq_len], dtype=np.float32)
  target_mapping[np.arange(len(hidden)), hidden] = 1.0
  return {"input_k": input_k, "seg_id": seg_id, "input_q": input_q,
          "perm_mask": perm_mask, "target_mapping": target_mapping}


def masked_probabilities(xlnet_config, features):
  """The model's distribution over pieces at each predicted position.

  Args:
    xlnet_config: the checkpoint's `XLNetConfig`.
    features: dict of time-major tensors (batch B): input_k, seg_id int32
      `[L, B]`, input_q float32 `[L, B]`, perm_mask float32 `[L, L, B]`,
      target_mapping float32 `[P, L, B]`.

  Returns:
    float32 `[P, B, n_token]` probabilities (dropout off, no memory).
  """
  run_config = model_lib.RunConfig(is_training=False, use_tpu=False,
                                   use_bfloat16=False, dropout=0.0,
                                   dropatt=0.0)
  xlnet_model = model_lib.XLNetModel(
      xlnet_config, run_config, input_ids=features["input_k"],
      seg_ids=features["seg_id"], input_mask=None,
      perm_mask=features["perm_mask"],
      target_mapping=features["target_mapping"], inp_q=features["input_q"])
  logits = xlnet_model.get_lm_logits()
  return tf.nn.softmax(logits)


class MaskedPredictor:
  """A graph and session predicting hidden pieces, weights from a checkpoint
  read by name.

  Args:
    xlnet_config: the checkpoint's `XLNetConfig`.
    prefix: checkpoint prefix (`.../model.ckpt-N`), or None to keep the
      random initial weights (tests).
    seed: graph-level random seed of those initial weights.
  """

  def __init__(self, xlnet_config, prefix=None, seed=None):
    self.graph = tf.Graph()
    with self.graph.as_default():
      if seed is not None:
        tf.compat.v1.set_random_seed(seed)
      placeholder = tf.compat.v1.placeholder
      self.inputs = {
          "input_k": placeholder(tf.int32, [None, 1]),
          "seg_id": placeholder(tf.int32, [None, 1]),
          "input_q": placeholder(tf.float32, [None, 1]),
          "perm_mask": placeholder(tf.float32, [None, None, 1]),
          "target_mapping": placeholder(tf.float32, [None, None, 1])}
      self.probs = masked_probabilities(xlnet_config, self.inputs)
      init = checkpoint_io.init_ops(tf.compat.v1.global_variables(),
                                    prefix)
    self.session = tf.compat.v1.Session(graph=self.graph)
    self.session.run(init)

  def predict(self, features):
    """Probabilities at the hidden positions of one sequence.

    Args:
      features: one sequence's `masked_features` (no batch axis).

    Returns:
      float32 `[P, n_token]`.
    """
    feed = {self.inputs[k]: v[..., None] for k, v in features.items()}
    return self.session.run(self.probs, feed)[:, 0]

  def close(self):
    self.session.close()


def top_k(probs, k):
  """Indices and probabilities of the k largest entries of each row.

  Args:
    probs: float `[P, V]`.

  Returns:
    (int `[P, k]`, float `[P, k]`), highest first.
  """
  order = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
  return order, np.take_along_axis(probs, order, -1)

