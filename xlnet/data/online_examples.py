"""Online pretraining examples: `pretrain_examples.make_batch` in TF ops.

From the token rows of one host and a row offset, `make_batch` draws what
the offline writer (`pretrain_examples.make_batch`) draws for that offset:
the A/B split with the release's next-sentence rule and trimming, span masks
with the alpha/beta span walk topped up to exactly `num_predict` targets
(num_predict - num_predict//2 in the reuse part, num_predict//2 in the
rest), walked backwards in bi_data's backward rows. It returns the feature
dict the offline records hold, so the permutation stage
(`perm_features.make_parser`) runs unchanged after it.

Everything is plain TensorFlow graph ops (no py_function): it runs inside
tf.data, on tf.data service workers too. The draws are stateless functions
of one int64 [2] key per host batch, so the same key always gives the same
examples. The draws follow the same distributions as the offline writer's
`np.random.RandomState`, not its bit stream. See docs/data.md.
"""
import tensorflow as tf

from xlnet.data import pretrain_examples
from xlnet.data import record_format
from xlnet.data.prepro_utils import CLS_ID, SEP_ID

_fold = tf.random.experimental.stateless_fold_in


def padded_bounds(sent_rows):
  """Sentence boundaries of every row, padded with row_len.

  Args:
    sent_rows: bool [bsz, row_len] sentence ids.

  Returns:
    int32 [bsz, max_bounds + 1]: per row, the sorted positions k > 0 where
    the sentence id changes, then row_len (at least one) as padding, so that
    looking a position up past the last boundary yields the row's end.
  """
  sent_rows = tf.convert_to_tensor(sent_rows)
  row_len = tf.shape(sent_rows)[1]
  change = tf.not_equal(sent_rows[:, 1:], sent_rows[:, :-1])
  pos = tf.where(change, tf.range(1, row_len)[None, :], row_len)
  # Sorting moves the row_len fillers behind the boundaries.
  pos = tf.sort(tf.concat([pos, tf.fill([tf.shape(pos)[0], 1], row_len)], 1),
                axis=1)
  width = tf.reduce_max(tf.reduce_sum(tf.cast(change, tf.int32), 1)) + 1
  return pos[:, :width]


def _search(bounds, values, side):
  """bisect of one value per row: int32 [bsz, k], int32 [bsz] -> [bsz]."""
  return tf.searchsorted(bounds, values[:, None], side=side,
                         out_type=tf.int32)[:, 0]


def _lookup(table, index):
  """table[r, index[r]] per row, index clipped to the table (past the end
  only where the offline writer finds no example anyway)."""
  index = tf.clip_by_value(index, 0, tf.shape(table)[1] - 1)
  return tf.gather(table, index[:, None], batch_dims=1)[:, 0]


def _randint(u, n):
  """floor(u * n): a uniform int in [0, n) from u uniform in [0, 1)."""
  return tf.cast(tf.floor(u * tf.cast(n, tf.float64)), tf.int32)


def trim_lengths(a_len, b_len, tot_len):
  """`pretrain_examples.trim_lengths` elementwise (int32 tensors)."""
  excess = tf.maximum(a_len + b_len - tot_len, 0)
  gap = tf.minimum(excess, tf.abs(a_len - b_len))
  a_longer = a_len > b_len
  a_len = tf.where(a_longer, a_len - gap, a_len)
  b_len = tf.where(a_longer, b_len, b_len - gap)
  excess -= gap
  return a_len - excess // 2, b_len - (excess + 1) // 2


def split_a_and_b(row_len, bounds, begin, tot_len, key):
  """`pretrain_examples.split_a_and_b` for every row at once.

  Args:
    row_len: int32 scalar.
    bounds: int32 [bsz, k] from `padded_bounds`.
    begin: int32 scalar, first position of A.
    tot_len: python int, len(A) + len(B) after trimming.
    key: int64 [2] stateless key.

  Returns:
    (a_end, b_begin, b_end, label), int32 [bsz] each, and valid, bool [bsz]:
    False where the offline writer finds no example (its batch is dropped).
  """
  bsz = tf.shape(bounds)[0]
  u = tf.random.stateless_uniform([bsz, 3], key, dtype=tf.float64)
  begin = tf.fill([bsz], begin)
  lo = _search(bounds, begin, "right")
  hi = _search(bounds, begin + tot_len, "left")
  stop = _lookup(bounds, hi)  # row_len past the last boundary (padding)
  num_cuts = hi - lo
  label = tf.cast((num_cuts > 0) & (u[:, 0] >= 0.5), tf.int32)
  a_end = tf.where(num_cuts > 0,
                   _lookup(bounds, lo + _randint(u[:, 1], num_cuts)), stop)
  # Label 0: a random span of the row, widened to sentence boundaries.
  b_len = tf.maximum(1, tot_len - (a_end - begin))
  rand_begin = _randint(u[:, 2], row_len - b_len)
  j = _search(bounds, rand_begin, "right")
  rand_begin_w = tf.where(j > 0, _lookup(bounds, tf.maximum(j - 1, 0)), 0)
  rand_end = tf.minimum(
      _lookup(bounds, _search(bounds, rand_begin + b_len, "left")),
      row_len - 1)
  b_begin = tf.where(tf.equal(label, 1), a_end, rand_begin_w)
  b_end = tf.where(tf.equal(label, 1), stop, rand_end)
  a_len, b_len = trim_lengths(a_end - begin, b_end - b_begin, tot_len)
  a_end, b_end = begin + a_len, b_begin + b_len
  valid = (begin + tot_len < row_len) & (a_end < row_len) & (b_end < row_len)
  return a_end, b_begin, b_end, label, valid


def _assemble(rows, offset, a_end, b_begin, seq_len):
  """input, target, seg_id int32 [bsz, seq_len] of the chosen A/B split
  (`pretrain_examples.make_batch`'s layout; B runs to seq_len - 2)."""
  row_len = tf.shape(rows)[1]
  pos = tf.range(seq_len)[None, :]
  sep = (a_end - offset)[:, None]  # the first <sep>: reuse part + A
  in_a = pos < sep
  b_begin = b_begin[:, None]
  src_in = tf.where(in_a, offset + pos, b_begin + pos - sep - 1)
  src_tg = tf.where(in_a, offset + pos + 1, b_begin + pos - sep)
  # Clipping changes nothing in a valid batch (gathers must stay in range).
  clip = lambda x: tf.clip_by_value(x, 0, row_len - 1)  # noqa: E731
  inputs = tf.gather(rows, clip(src_in), batch_dims=1)
  targets = tf.gather(rows, clip(src_tg), batch_dims=1)
  tail = pos >= seq_len - 2
  # (tf.equal, not ==: in a tf.compat.v1 graph == compares identities.)
  last = tf.equal(pos, seq_len - 1)
  inputs = tf.where(tf.equal(pos, sep), SEP_ID, inputs)
  inputs = tf.where(tail, tf.where(last, CLS_ID, SEP_ID), inputs)
  targets = tf.where(tail, CLS_ID, targets)
  seg_id = tf.where(pos > sep, 1, 0) + tf.cast(last, tf.int32)
  return inputs, targets, seg_id


def _next_start(is_start):
  """next_start[r, x]: the first word start >= x in row r (part_len when
  none), for x in 0..part_len: bool [rows, L] -> int32 [rows, L + 1]."""
  part_len = tf.shape(is_start)[1]
  pos = tf.where(is_start, tf.range(part_len)[None, :], part_len)
  starts = tf.sort(tf.pad(pos, [[0, 0], [0, 1]], constant_values=part_len),
                   axis=1)
  before = tf.cumsum(tf.cast(tf.pad(is_start, [[0, 0], [0, 1]]), tf.int32),
                     axis=1, exclusive=True)
  return tf.gather(starts, before, batch_dims=1)


def sample_masks(segs, is_start, goal, mask_alpha, mask_beta, key,
                 reverse):
  """`pretrain_examples.sample_masks` in TF ops, all rows at once.

  Args:
    segs: int32 [rows, part_len] piece ids.
    is_start: bool [vocab] word-start table (all True: token spans).
    goal: python int, positions to mask per row (None: walk to the end,
      no top-up).
    mask_alpha, mask_beta: python ints, context size factors.
    key: int64 [2] stateless key.
    reverse: bool [rows]: walk these rows reversed and flip back.

  Returns:
    bool [rows, part_len].
  """
  rows, part_len = tf.shape(segs)[0], tf.shape(segs)[1]
  flip = lambda x: tf.where(reverse[:, None], tf.reverse(x, [1]), x)  # noqa
  next_start = _next_start(tf.gather(is_start, flip(segs)))
  cdf = tf.constant(pretrain_examples._GRAM_CDF, tf.float64)  # pylint: disable=protected-access
  pos = tf.range(part_len)[None, :]
  left = tf.fill([rows], part_len if goal is None else goal)

  def step(i, cur, left, active, mask):
    u = tf.random.stateless_uniform([rows, 2], _fold(key, i), dtype=tf.float64)
    n = 1 + tf.reduce_sum(tf.cast(cdf[None, :] <= u[:, :1], tf.int32), 1)
    n = tf.minimum(n, left)
    # (mask_alpha, mask_beta may be floats, as offline: floor(n * a / b).)
    ctx = tf.cast(tf.math.floordiv(tf.cast(n, tf.float64) * mask_alpha,
                                   float(mask_beta)), tf.int32)
    l_ctx = tf.cast(u[:, 1] * tf.cast(ctx, tf.float64), tf.int32)
    beg = _lookup(next_start, tf.minimum(cur + l_ctx, part_len))
    end = beg + n
    active &= end < part_len  # (also covers "no word start left")
    n *= tf.cast(active, tf.int32)
    mask |= (pos >= beg[:, None]) & (pos < (beg + n)[:, None])
    left -= n
    cur = tf.where(active, end + ctx - l_ctx, cur)
    active &= (cur < part_len) & (left > 0)
    return i + 1, cur, left, active, mask

  _, _, left, _, mask = tf.while_loop(
      lambda i, cur, left, active, mask: tf.reduce_any(active), step,
      (tf.constant(1), tf.zeros([rows], tf.int32), left, left > 0,
       tf.zeros([rows, part_len], tf.bool)))
  if goal is not None:
    mask = _top_up(mask, left, _fold(key, 0))
  return flip(mask)


def _top_up(mask, need, key):
  """Masks, per row, the `need` unmasked positions with the smallest keys
  (one uniform key per position; masked positions never win).

  Args:
    mask: bool [rows, part_len].
    need: int32 [rows], at most the row's unmasked count.
    key: int64 [2] stateless key.

  Returns:
    bool [rows, part_len].
  """
  keys = tf.random.stateless_uniform(tf.shape(mask), key, dtype=tf.float64)
  keys = tf.where(mask, tf.constant(2.0, tf.float64), keys)
  rank = tf.argsort(tf.argsort(keys, axis=1, stable=True), axis=1)
  return mask | (rank < need[:, None])


def make_batch(rows, bounds, offset, cfg, is_start, key):
  """The examples of all rows at one row offset (TF ops).

  Args:
    rows: int32 [bsz_per_host, row_len].
    bounds: int32 [bsz_per_host, k] from `padded_bounds(sent_rows)`.
    offset: int32 scalar, start of the reuse part.
    cfg: dict with seq_len, reuse_len, num_predict, mask_alpha, mask_beta,
      bi_data, num_core_per_host (python values), as the offline writer's.
    is_start: bool [vocab] word-start table (`word_start_table`; all True
      for token spans).
    key: int64 [2] stateless key of this host batch.

  Returns:
    (features, valid): features dict input/target/seg_id int32 [bsz,
    seq_len], is_masked bool [bsz, seq_len], label int32 [bsz, 1], as
    `pretrain_examples.make_batch`; valid, bool scalar, False where the
    offline writer returns None (some row has no example at this offset).
  """
  rows = tf.convert_to_tensor(rows, tf.int32)
  bsz = rows.shape[0]
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  offset = tf.cast(offset, tf.int32)
  a_end, b_begin, _, label, valid = split_a_and_b(
      tf.shape(rows)[1], bounds, offset + reuse_len, seq_len - reuse_len - 3,
      _fold(key, 0))
  inputs, targets, seg_id = _assemble(rows, offset, a_end, b_begin, seq_len)
  num_predict = cfg["num_predict"]
  goal_1 = None if num_predict is None else num_predict // 2
  goal_0 = None if num_predict is None else num_predict - goal_1
  reverse = tf.constant(pretrain_examples.backward_rows(
      bsz, cfg["num_core_per_host"], cfg["bi_data"]))
  is_start = tf.convert_to_tensor(is_start, tf.bool)
  parts = [sample_masks(part, is_start, goal, cfg["mask_alpha"],
                        cfg["mask_beta"], _fold(key, k), reverse)
           for k, part, goal in ((1, inputs[:, :reuse_len], goal_0),
                                 (2, inputs[:, reuse_len:], goal_1))]
  return {"input": inputs, "is_masked": tf.concat(parts, axis=1),
          "target": targets, "seg_id": seg_id,
          "label": label[:, None]}, tf.reduce_all(valid)


# ----------------------------------------------------------------------------
# A host's stream of online examples (the input function's, for token
# records).
# ----------------------------------------------------------------------------
# A tag folded into the host key for the online sampler's draws, so that
# they never share a key with the factorization orders.
_SAMPLER_TAG = 0x4F4E4C  # "ONL"

# A batch size that makes a whole token file one element (tf.data's batch
# reserves at most 2**16 slots when it keeps the remainder, whatever the
# size asked).
_ALL_RECORDS = 1 << 62


def host_examples(files, start_batch, host_key, file_batches, bsz_per_host,
                  regroup_perm, sampler_cfg, is_start):
  """One host's enumerated examples, sampled online from its token records
  after `start_batch` host batches (`input_pipeline.get_input_fn`): host batch
  b (counted across epochs) is drawn from a key folded from b, so every
  epoch draws anew and a resumed stream draws what an uninterrupted one
  would.

  Args:
    files: the host's token record files, in reading order.
    start_batch: host batches already consumed.
    host_key: int64 [2], the host's key (seed, host).
    file_batches: dict path -> host batches of that file.
    bsz_per_host: rows per host batch.
    regroup_perm: row permutation into the reader's core layout, or None.
    sampler_cfg: the settings of `make_batch`.
    is_start: np.bool_ [vocab], where a span may start.

  Returns:
    tf.data.Dataset of (example index, features).
  """
  epoch = sum(file_batches[f] for f in files)
  batches = _token_batches(files, file_batches, bsz_per_host,
                           sampler_cfg["reuse_len"], regroup_perm,
                           len(is_start)).repeat()
  batches = batches.skip(start_batch % epoch).enumerate(start=start_batch)
  examples = _sample_online(batches, sampler_cfg, is_start, host_key)
  return examples.enumerate(start=start_batch * bsz_per_host)


def _token_batches(files, file_batches, bsz_per_host, reuse_len,
                   regroup_perm, vocab_size):
  """Dataset of one host's token rows at each offset, file after file.

  Args:
    files: the host's token record files, in reading order.
    file_batches: dict path -> host batches of that file.
    regroup_perm: row permutation into the reader's core layout, or None.
    vocab_size: the ids' vocabulary (`record_format.checked_ids`, once a
      file is read: before the sampler looks its ids up).

  Returns:
    tf.data.Dataset of (rows int32 [bsz_per_host, row_len], bounds int32
    [bsz_per_host, k] (`padded_bounds`), offset int32).
  """
  # Ragged: a row's last record may be shorter than its others.
  spec = {name: tf.io.RaggedFeature(tf.int64) for name in ("tokens",
                                                            "sent_id")}

  def joined(values):
    """The records' values joined in file order, as rows: [bsz, row_len]."""
    return tf.reshape(values.flat_values, [bsz_per_host, -1])

  @tf.autograph.experimental.do_not_convert
  def rows_of(path, num_batch):
    # The rows, each in one or more records (`write_token_records`).
    records = tf.data.TFRecordDataset(path).batch(
        _ALL_RECORDS).get_single_element()
    rows = tf.io.parse_example(records, spec)
    tokens, = record_format.checked_ids(
        [tf.cast(joined(rows["tokens"]), tf.int32)], vocab_size)
    sent = tf.not_equal(joined(rows["sent_id"]), 0)
    if regroup_perm is not None:
      tokens, sent = tf.gather(tokens, regroup_perm), tf.gather(sent,
                                                                regroup_perm)
    bounds = padded_bounds(sent)
    offsets = tf.data.Dataset.range(tf.cast(num_batch, tf.int64)).map(
        lambda i: tf.cast(i, tf.int32) * reuse_len)
    return offsets.map(lambda offset: (tokens, bounds, offset))

  return tf.data.Dataset.from_tensor_slices(
      (files, [file_batches[f] for f in files])).flat_map(rows_of)


def _sample_online(batches, cfg, is_start, host_key):
  """Maps enumerated (index, (rows, bounds, offset)) host batches to their
  online examples (`make_batch`, keyed by the host batch
  index), one example per element."""
  sampler_key = tf.random.experimental.stateless_fold_in(host_key,
                                                         _SAMPLER_TAG)
  is_start = tf.constant(is_start)

  @tf.autograph.experimental.do_not_convert
  def sample(index, batch):
    rows, bounds, offset = batch
    rows.set_shape([cfg["bsz_per_host"], None])
    features, _ = make_batch(
        rows, bounds, offset, cfg, is_start,
        tf.random.experimental.stateless_fold_in(sampler_key, index))
    return features

  return batches.map(sample, num_parallel_calls=tf.data.AUTOTUNE).unbatch()
