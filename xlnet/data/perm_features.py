"""The features of permutation language modelling of one example: a
blockwise factorization order sampled per part (`local_permutation`), the
attention mask `perm_mask` it implies, and the one-hot `target_mapping` of
the positions to predict (`make_parser` for a serialized example record,
`make_features` for one parsed or sampled online). The input function
(`input_pipeline.py`) maps them over its stream, each example with its own
stateless key.
"""
import tensorflow as tf

from xlnet.data.prepro_utils import CLS_ID, SEP_ID


def local_permutation(inputs, targets, is_masked, perm_size, seq_len, key):
  """Samples a blockwise factorization order of one part and its masks.

  The part is cut into blocks of perm_size positions; one random
  permutation pi of 0..perm_size-1 gives position r*perm_size + c the order
  r*perm_size + pi(c). Masked positions that are not <sep>/<cls> become
  targets. Plain positions (neither masked nor functional) get order -1:
  all see them and they see no masked or functional position. Otherwise i
  may not see j (perm_mask 1) when j is masked or functional and comes no
  earlier in the order than i, where a non-target i counts one step later
  (so it sees itself, a target does not).

  Args:
    inputs: int64 [seq_len] token ids of the part.
    targets: int64 [seq_len] next-token targets of the part.
    is_masked: bool [seq_len].
    perm_size: block size; divides seq_len.
    seq_len: length of the part.
    key: int64 [2] stateless random key of this part.

  Returns:
    perm_mask float32 [seq_len, seq_len] (1 = i may not see j), new_targets
    int64 [seq_len], target_mask float32 [seq_len], input_k int64
    [seq_len], input_q float32 [seq_len].
  """
  pi = tf.random.experimental.stateless_shuffle(
      tf.range(perm_size, dtype=tf.int64), seed=key)
  blocks = tf.range(0, seq_len, perm_size, dtype=tf.int64)
  index = tf.reshape(blocks[:, None] + pi[None, :], [seq_len])

  functional = tf.logical_or(tf.equal(inputs, SEP_ID), tf.equal(inputs, CLS_ID))
  non_mask = tf.logical_and(tf.logical_not(is_masked),
                            tf.logical_not(functional))
  masked_or_func = tf.logical_not(non_mask)
  rev_index = tf.where(non_mask, -tf.ones_like(index), index)
  target_tokens = tf.logical_and(masked_or_func, tf.logical_not(functional))
  target_mask = tf.cast(target_tokens, tf.float32)
  self_rev_index = tf.where(target_tokens, rev_index, rev_index + 1)
  perm_mask = tf.logical_and(self_rev_index[:, None] <= rev_index[None, :],
                             masked_or_func[None, :])
  perm_mask = tf.cast(perm_mask, tf.float32)
  new_targets = tf.concat([inputs[:1], targets[:-1]], axis=0)
  return perm_mask, new_targets, target_mask, inputs, target_mask


def make_parser(seq_len, reuse_len, perm_size, num_predict=None,
                use_bfloat16=False):
  """Returns a function: (serialized example, key) -> model features.

  The key (int64 [2]) seeds the factorization orders: the reuse part and the
  rest each get a key folded from it.

  Features: input_k int32 [seq_len], input_q [seq_len], perm_mask [seq_len,
  seq_len], target int32 [num_predict], target_mask [num_predict],
  target_mapping [num_predict, seq_len], seg_id int32 [seq_len], label int32
  [] (masks float32, bfloat16 when use_bfloat16). Without num_predict,
  target/target_mask are [seq_len] and there is no target_mapping.
  """
  spec = {name: tf.io.FixedLenFeature([seq_len], tf.int64)
          for name in ("input", "is_masked", "target", "seg_id")}
  spec["label"] = tf.io.FixedLenFeature([1], tf.int64)
  features = make_features(seq_len, reuse_len, perm_size, num_predict,
                           use_bfloat16)
  return tf.autograph.experimental.do_not_convert(
      lambda record, key: features(tf.io.parse_single_example(record, spec),
                                   key))


def make_features(seq_len, reuse_len, perm_size, num_predict=None,
                  use_bfloat16=False):
  """Returns a function: (example, key) -> model features, as `make_parser`
  for an example already parsed (or sampled online): a dict of input,
  is_masked, target, seg_id [seq_len] and label [1], integer tensors."""
  mask_dtype = tf.bfloat16 if use_bfloat16 else tf.float32
  rest_len = seq_len - reuse_len

  @tf.autograph.experimental.do_not_convert
  def parser(ex, key):
    ex = {name: tf.cast(value, tf.int64) for name, value in ex.items()}
    inputs, target = ex["input"], ex["target"]
    is_masked = tf.cast(ex["is_masked"], tf.bool)
    fold = tf.random.experimental.stateless_fold_in
    part_0 = local_permutation(inputs[:reuse_len], target[:reuse_len],
                               is_masked[:reuse_len], perm_size, reuse_len,
                               fold(key, 0))
    part_1 = local_permutation(inputs[reuse_len:], target[reuse_len:],
                               is_masked[reuse_len:], perm_size, rest_len,
                               fold(key, 1))
    # The reuse part (future memory) never sees the rest; the rest sees it.
    perm_mask = tf.concat([
        tf.concat([part_0[0], tf.ones([reuse_len, rest_len])], axis=1),
        tf.concat([tf.zeros([rest_len, reuse_len]), part_1[0]], axis=1)],
                          axis=0)
    perm_mask.set_shape([seq_len, seq_len])
    new_target, target_mask, input_k, input_q = [
        tf.concat([a, b], axis=0) for a, b in zip(part_0[1:], part_1[1:])]
    features = {"perm_mask": perm_mask, "input_k": input_k,
                "input_q": input_q, "seg_id": ex["seg_id"],
                "label": tf.reshape(ex["label"], [])}
    if num_predict is None:
      features["target"], features["target_mask"] = new_target, target_mask
    else:
      features.update(_gather_targets(new_target, target_mask, seq_len,
                                      num_predict))
    for name, value in features.items():
      features[name] = tf.cast(
          value, tf.int32 if value.dtype == tf.int64 else mask_dtype)
    return features

  return parser


def _gather_targets(new_target, target_mask, seq_len, num_predict):
  """The targets of one example, in position order, padded to num_predict.

  Returns:
    dict target_mapping float32 [num_predict, seq_len] (one-hot rows of the
    target positions, zero rows as padding), target int64 [num_predict],
    target_mask float32 [num_predict].
  """
  is_target = tf.cast(target_mask, tf.bool)
  indices = tf.boolean_mask(tf.range(seq_len, dtype=tf.int64), is_target)
  pad_len = num_predict - tf.shape(indices)[0]
  mapping = tf.one_hot(indices, seq_len, dtype=tf.float32)
  return {
      "target_mapping": tf.reshape(
          tf.concat([mapping, tf.zeros([pad_len, seq_len])], axis=0),
          [num_predict, seq_len]),
      "target": tf.reshape(tf.concat(
          [tf.boolean_mask(new_target, is_target),
           tf.zeros([pad_len], dtype=tf.int64)], axis=0), [num_predict]),
      "target_mask": tf.reshape(tf.concat(
          [tf.ones([num_predict - pad_len]), tf.zeros([pad_len])], axis=0),
                                [num_predict])}
