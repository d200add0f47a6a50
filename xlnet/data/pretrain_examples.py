"""Rows of tokens to pretraining examples: A/B segments and span masks.

At row offset i every row yields one example of exactly seq_len tokens,

    row[i : i+reuse_len]  A  <sep>  B  <sep>  <cls>

where A continues the row after the reuse part and B is either A's true
continuation (label 1) or a random span of the row (label 0), and a
span-masking walk marks `num_predict` positions to predict. All randomness
comes from one `np.random.RandomState`, drawn in a fixed order, so a given
seed always produces the same examples. See docs/data.md.

This module does not import TensorFlow.
"""
import bisect

import numpy as np

from xlnet.data import prepro_utils
from xlnet.data.prepro_utils import CLS_ID, SEP_ID

# ASCII punctuation pieces that start a word (no "'", "<", "=", ">").
_START_PUNCT = frozenset('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
_MAX_GRAM = 5
_GRAM_CDF = np.cumsum(1.0 / np.arange(1, _MAX_GRAM + 1))
_GRAM_CDF /= _GRAM_CDF[-1]
_GRAM_CDF[-1] = 1.0


def check_sampling(mask_alpha, mask_beta, num_predict, seq_len, reuse_len,
                   name):
  """Validates the span-masking settings for examples of seq_len tokens
  whose first reuse_len form the reuse part.

  Args:
    mask_alpha, mask_beta: span context size n * alpha // beta.
    num_predict: targets per example (None: the walk runs to the end).
    seq_len, reuse_len: the example's layout.
    name: how messages name a setting: name("num_predict") is e.g.
      "--num_predict" (the caller's flag) or "num_predict".

  Raises:
    ValueError: one line naming the setting.
  """
  if mask_beta <= 0 or mask_alpha < mask_beta:
    raise ValueError(f"{name('mask_alpha')}={mask_alpha} must be >= "
                     f"{name('mask_beta')}={mask_beta} > 0 (context size "
                     "n * alpha // beta must be >= 1)")
  if num_predict is None:
    return
  if num_predict < 1:
    raise ValueError(f"{name('num_predict')}={num_predict} must be >= 1 "
                     "(no target, no loss)")
  goal_1 = num_predict // 2
  goal_0 = num_predict - goal_1
  if goal_0 > reuse_len or goal_1 > seq_len - reuse_len:
    raise ValueError(
        f"{name('num_predict')}={num_predict} needs {goal_0} masked tokens "
        f"in the reuse part ({name('reuse_len')}={reuse_len}) and {goal_1} "
        f"in the rest ({seq_len - reuse_len} tokens); a part cannot hold "
        "that many")


def word_start_table(sp_model):
  """Per-vocab table of the pieces that start a word.

  A piece starts a word when it begins with '▁' or '<' (so <sep>, <cls>
  too) or is a single ASCII punctuation character from _START_PUNCT.

  Returns:
    np.bool_ array [vocab_size].
  """
  table = np.zeros(sp_model.get_piece_size(), dtype=bool)
  for i in range(len(table)):
    piece = sp_model.id_to_piece(i)
    table[i] = (piece.startswith(prepro_utils.SPIECE_UNDERLINE)
                or piece.startswith("<") or piece in _START_PUNCT)
  return table


def boundaries(sent_row):
  """Sorted list of positions k > 0 where the sentence id changes."""
  return (np.flatnonzero(sent_row[1:] != sent_row[:-1]) + 1).tolist()


def trim_lengths(a_len, b_len, tot_len):
  """Lengths of A and B after trimming them to `tot_len` tokens together.

  The rule drops the last token of the longer part (of B on a tie) while
  a_len + b_len > tot_len; this computes its result in O(1), so that a huge
  A (a row without sentence breaks) costs nothing extra.

  Returns:
    (a_len, b_len).
  """
  excess = a_len + b_len - tot_len
  if excess <= 0:
    return a_len, b_len
  gap = min(excess, abs(a_len - b_len))  # first the longer one shrinks ...
  if a_len > b_len:
    a_len -= gap
  else:
    b_len -= gap
  excess -= gap
  # ... then, at equal lengths, B and A lose a token in turn, B first.
  return a_len - excess // 2, b_len - (excess + 1) // 2


def split_a_and_b(row_len, bounds, begin, tot_len, rng):
  """Chooses segments A and B for one row at one offset.

  Let stop be the first sentence boundary at or beyond begin + tot_len (or
  the row's end) and the cut points the boundaries strictly between begin
  and stop. With probability 1/2, or when there is no cut point, A runs to a
  random cut point (to stop when there is none) and B is a random span of
  max(1, tot_len - len(A)) tokens anywhere in the row, widened to sentence
  boundaries and capped at the row's last token (label 0); otherwise A runs
  to a random cut point and B from there to stop (label 1). Both are then
  trimmed to tot_len tokens together (`trim_lengths`).

  Args:
    row_len: length of the row.
    bounds: sorted list of sentence-start positions k (0 < k < row_len)
      where the sentence id changes.
    begin: first position of A.
    tot_len: len(A) + len(B) after trimming.
    rng: np.random.RandomState.

  Returns:
    (a_end, b_begin, b_end, label) with A = [begin, a_end), B = [b_begin,
    b_end); None when the row cannot yield an example at this offset.
  """
  if begin + tot_len >= row_len:
    return None
  lo = bisect.bisect_right(bounds, begin)
  hi = bisect.bisect_left(bounds, begin + tot_len)
  stop = bounds[hi] if hi < len(bounds) else row_len
  cut_points = bounds[lo:hi]
  if not cut_points or rng.random_sample() < 0.5:
    label = 0
    a_end = cut_points[rng.randint(len(cut_points))] if cut_points else stop
    b_len = max(1, tot_len - (a_end - begin))
    b_begin = rng.randint(row_len - b_len)
    b_end = b_begin + b_len
    j = bisect.bisect_right(bounds, b_begin)
    b_begin = bounds[j - 1] if j > 0 else 0
    j = bisect.bisect_left(bounds, b_end)
    b_end = min(bounds[j] if j < len(bounds) else row_len, row_len - 1)
  else:
    label = 1
    a_end = cut_points[rng.randint(len(cut_points))]
    b_begin, b_end = a_end, stop
  a_len, b_len = trim_lengths(a_end - begin, b_end - b_begin, tot_len)
  a_end, b_end = begin + a_len, b_begin + b_len
  if a_end >= row_len or b_end >= row_len:  # no next-token target
    return None
  return a_end, b_begin, b_end, label


def sample_masks(segs, is_start, goal, mask_alpha, mask_beta, rng,
                 reverse=None):
  """Span masking of equal-length parts, all rows at once.

  Per row, a cursor walks from 0: draw n in 1..5 with p(n) ~ 1/n (capped by
  the count still needed), ctx = n * mask_alpha // mask_beta and a left
  context l uniform in [0, ctx); mask the n pieces from the first word start
  at or after cursor + l; move the cursor to beg + n + ctx - l. A row stops
  when its goal is met, the cursor reaches the end, no word start is left or
  the span would end at or past the end. Then random single unmasked
  positions top the row up to exactly `goal`.

  Args:
    segs: int array [rows, part_len] of piece ids.
    is_start: np.bool_ [vocab] word-start table.
    goal: positions to mask, int or int array [rows] (None: walk to the
      end, no top-up).
    mask_alpha, mask_beta: context size factors.
    rng: np.random.RandomState.
    reverse: optional bool [rows]: walk these rows reversed and flip back.

  Returns:
    np.bool_ [rows, part_len].
  """
  segs = np.asarray(segs)
  num_rows, seg_len = segs.shape
  if reverse is not None:
    reverse = np.asarray(reverse, dtype=bool)
    segs = np.where(reverse[:, None], segs[:, ::-1], segs)
  # next_start[r, x]: first word start >= x in row r (seg_len if none),
  # flattened so that one `take` serves all rows.
  cand = np.where(is_start[segs], np.arange(seg_len), seg_len)
  next_start = np.concatenate(
      [np.minimum.accumulate(cand[:, ::-1], axis=1)[:, ::-1],
       np.full((num_rows, 1), seg_len)], axis=1).ravel()
  row_base = np.arange(num_rows) * (seg_len + 1)
  left = np.array(np.broadcast_to(seg_len if goal is None else goal,
                                  (num_rows,)), dtype=np.int64)
  cur = np.zeros(num_rows, dtype=np.int64)
  active = left > 0
  span_begs, span_lens = [], []  # per step, [rows]; length 0 = no span
  while active.any():
    u = rng.random_sample((num_rows, 2))
    n = np.minimum(_GRAM_CDF.searchsorted(u[:, 0], side="right") + 1, left)
    ctx = n * mask_alpha // mask_beta
    l_ctx = (u[:, 1] * ctx).astype(np.int64)
    beg = next_start.take(row_base + np.minimum(cur + l_ctx, seg_len))
    end = beg + n
    active &= end < seg_len  # (also covers "no word start left")
    n *= active
    span_begs.append(beg)
    span_lens.append(n)
    left -= n
    cur = np.where(active, end + ctx - l_ctx, cur)
    active &= (cur < seg_len) & (left > 0)
  mask = np.zeros((num_rows, seg_len), dtype=bool)
  if span_lens:
    lens = np.stack(span_lens)[..., None]
    offsets = np.arange(_MAX_GRAM)
    in_span = offsets < lens
    rows = np.broadcast_to(np.arange(num_rows)[:, None], in_span.shape[1:])
    mask[np.broadcast_to(rows, in_span.shape)[in_span],
         (np.stack(span_begs)[..., None] + offsets)[in_span]] = True
  if goal is not None and (left > 0).any():
    _top_up(mask, left, rng)
  if reverse is not None:
    mask = np.where(reverse[:, None], mask[:, ::-1], mask)
  return mask


def _top_up(mask, need, rng):
  """Masks, per row, the `need` unmasked positions with the smallest keys.

  One uniform key is drawn per position; masked positions never win.

  Args:
    mask: np.bool_ [rows, part_len], updated in place.
    need: int array [rows], at most the row's unmasked count.
    rng: np.random.RandomState.
  """
  keys = rng.random_sample(mask.shape)
  keys[mask] = 2.0
  most = int(need.max())
  # Only the `most` smallest keys of a row can be chosen: partition, then
  # sort just those (the same choice as sorting whole rows, cheaper).
  smallest = np.argpartition(keys, most - 1, axis=1)[:, :most]
  order = np.argsort(np.take_along_axis(keys, smallest, axis=1), axis=1,
                     kind="stable")
  ranked = np.take_along_axis(smallest, order, axis=1)
  take = np.arange(most)[None, :] < need[:, None]
  mask[np.nonzero(take)[0], ranked[take]] = True


def sample_mask(seg, is_start, goal, mask_alpha, mask_beta, rng,
                reverse=False):
  """`sample_masks` for one part: seg [part_len] -> np.bool_ [part_len]."""
  return sample_masks(np.asarray(seg)[None], is_start, goal, mask_alpha,
                      mask_beta, rng, [reverse])[0]


def backward_rows(bsz_per_host, num_core_per_host, bi_data):
  """bool [bsz_per_host]: the backward rows (second half of each core's
  share with bi_data), as `token_stream.batchify` lays them out."""
  bsz_per_core = bsz_per_host // num_core_per_host
  return bi_data & (np.arange(bsz_per_host) % bsz_per_core
                    >= bsz_per_core // 2)


def make_batch(rows, bounds, offset, cfg, is_start, rng):
  """Builds the examples of all rows at one row offset.

  Args:
    rows: np.int32 [bsz_per_host, row_len].
    bounds: per row, its sentence boundaries (see `split_a_and_b`).
    offset: start of the reuse part.
    cfg: dict with seq_len, reuse_len, num_predict, mask_alpha, mask_beta,
      bi_data, num_core_per_host.
    is_start: word-start table.
    rng: np.random.RandomState.

  Returns:
    dict input/target/seg_id np.int32 [bsz, seq_len], is_masked np.bool_
    [bsz, seq_len], label np.int32 [bsz, 1]; None when some row cannot
    yield an example at this offset.
  """
  bsz, row_len = rows.shape
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  begin = offset + reuse_len
  inputs = np.empty((bsz, seq_len), dtype=np.int32)
  targets = np.empty((bsz, seq_len), dtype=np.int32)
  seg_ids = np.zeros((bsz, seq_len), dtype=np.int32)
  labels = np.empty((bsz, 1), dtype=np.int32)
  for idx in range(bsz):
    split = split_a_and_b(row_len, bounds[idx], begin,
                          seq_len - reuse_len - 3, rng)
    if split is None:
      return None
    a_end, b_begin, b_end, labels[idx, 0] = split
    row = rows[idx]
    sep = reuse_len + a_end - begin  # position of the first <sep>
    inputs[idx, :sep] = row[offset:a_end]
    inputs[idx, sep] = SEP_ID
    inputs[idx, sep + 1:seq_len - 2] = row[b_begin:b_end]
    targets[idx, :sep] = row[offset + 1:a_end + 1]
    targets[idx, sep] = row[b_begin]
    targets[idx, sep + 1:seq_len - 2] = row[b_begin + 1:b_end + 1]
    seg_ids[idx, sep + 1:] = 1
  inputs[:, -2:] = [SEP_ID, CLS_ID]
  targets[:, -2:] = CLS_ID
  seg_ids[:, -1] = 2
  num_predict = cfg["num_predict"]
  goal_1 = None if num_predict is None else num_predict // 2
  goal_0 = None if num_predict is None else num_predict - goal_1
  reverse = backward_rows(bsz, cfg["num_core_per_host"], cfg["bi_data"])
  alpha, beta = cfg["mask_alpha"], cfg["mask_beta"]
  if 2 * reuse_len == seq_len:  # equal parts: one walk over 2 * bsz rows
    both = sample_masks(
        np.concatenate([inputs[:, :reuse_len], inputs[:, reuse_len:]]),
        is_start, None if num_predict is None else np.repeat(
            [goal_0, goal_1], bsz), alpha, beta, rng, np.tile(reverse, 2))
    is_masked = np.concatenate([both[:bsz], both[bsz:]], axis=1)
  else:
    is_masked = np.concatenate([
        sample_masks(inputs[:, :reuse_len], is_start, goal_0, alpha, beta,
                     rng, reverse),
        sample_masks(inputs[:, reuse_len:], is_start, goal_1, alpha, beta,
                     rng, reverse)], axis=1)
  return {"input": inputs, "is_masked": is_masked, "target": targets,
          "seg_id": seg_ids, "label": labels}


def sure_batches(row_len, bounds, cfg):
  """The number of row offsets (from 0, in steps of reuse_len) at which
  every row yields an example whatever the draws.

  A row can fail at offset i (`split_a_and_b` returns None) only when
  begin + tot_len reaches its end, or when no sentence boundary lies at or
  beyond begin + tot_len while a cut point exists (a label-1 B would then
  end at the row's end). Token records (online sampling) use this count,
  which does not depend on the draws; the offline writer stops at the first
  offset whose draws fail, at or after it.

  Args:
    row_len: length of the rows.
    bounds: per row, its sentence boundaries (`boundaries`).
    cfg: dict with seq_len, reuse_len.

  Returns:
    int >= 0.
  """
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  tot_len = seq_len - reuse_len - 3
  num, offset = 0, 0
  while offset + seq_len <= row_len:
    begin = offset + reuse_len
    if begin + tot_len >= row_len:
      break
    for row_bounds in bounds:
      last = row_bounds[-1] if row_bounds else 0
      if last < begin + tot_len and last > begin:  # a cut, no stop
        return num
    num += 1
    offset += reuse_len
  return num
