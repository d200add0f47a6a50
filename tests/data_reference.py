"""Slow, obviously correct re-derivations of the data semantics for tests.

Written line by line from the description of the data format (docs/data.md),
independently of the code under test.
"""
import graphlib

import numpy as np

from xlnet.data import prepro_utils

SEP, CLS, EOD = 4, 3, 7


def ref_file_stream(path, sp, use_eod=True, uncased=False):
  """Token ids and sentence ids of one file, line by line."""
  ids, sids, sid = [], [], True
  with open(path, encoding="utf-8", newline="\n") as f:
    for line in f:  # lines end at "\n" only
      if not line.strip():
        if not use_eod:
          continue
        sid = not sid
        toks = [EOD]
      else:
        toks = prepro_utils.encode_ids(
            sp, prepro_utils.preprocess_text(line.strip(), lower=uncased))
      ids += toks
      sids += [sid] * len(toks)
      sid = not sid
  return ids, sids


def ref_stream(paths, sp):
  """Concatenation of files, flipping sentence ids to alternate at joins."""
  ids, sids = [], []
  for path in paths:
    i, s = ref_file_stream(path, sp)
    if sids and s and s[0] == sids[-1]:
      s = [not x for x in s]
    ids += i
    sids += s
  return ids, sids


def ref_rows(ids, sids, bsz, ncore, bi_data):
  """Rows (ids, sentence ids) cut from a stream, per core fwd then bwd."""
  nf = bsz // 2 if bi_data else bsz
  n = len(ids) // nf
  fwd = [(ids[k * n:(k + 1) * n], sids[k * n:(k + 1) * n]) for k in range(nf)]
  if not bi_data:
    return fwd
  rows, half = [], bsz // ncore // 2
  for c in range(ncore):
    chunk = fwd[c * half:(c + 1) * half]
    rows += chunk + [(r[::-1], s[::-1]) for r, s in chunk]
  return rows


def runs_of(mask):
  """(start, length) of the maximal runs of True in a 1-D mask."""
  padded = np.concatenate([[0], np.asarray(mask).astype(int), [0]])
  d = np.diff(padded)
  starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
  return list(zip(starts, ends - starts))


class RecordingRng:
  """np.random.RandomState wrapper that logs every draw, in order."""

  def __init__(self, seed):
    self.rng, self.draws = np.random.RandomState(seed), []

  def random_sample(self, *shape):
    value = self.rng.random_sample(*shape)
    self.draws.append(np.copy(value))
    return value

  def randint(self, high):
    value = self.rng.randint(high)
    self.draws.append((value, high))
    return value


# ----------------------------------------------------------------------------
# Input function features.
# ----------------------------------------------------------------------------
def derive_order(pm, inputs, masked, perm_size):
  """Recovers a blockwise order of one part from its perm_mask block.

  Ranks of masked/functional positions come from how many of them each can
  see; the block structure must hold and the per-block column order must be
  one shuffle pi shared by all blocks. Returns order [part_len].
  """
  n = len(inputs)
  func = (inputs == SEP) | (inputs == CLS)
  mof = masked | func
  m = np.flatnonzero(mof)
  ranks = {}
  for i in m:
    ranks[i] = int(np.sum(pm[i, m] == 0)) - (0 if not func[i] else 1)
  assert sorted(ranks.values()) == list(range(len(m)))
  by_rank = sorted(m, key=lambda i: ranks[i])
  blocks = [i // perm_size for i in by_rank]
  assert blocks == sorted(blocks), "blocks must be visited in order"
  graph = {c: set() for c in range(perm_size)}
  for b in set(blocks):
    cols = [i % perm_size for i in by_rank if i // perm_size == b]
    for before, after in zip(cols, cols[1:]):
      graph[after].add(before)
  pi_order = list(graphlib.TopologicalSorter(graph).static_order())
  pi = np.empty(perm_size, dtype=int)
  pi[pi_order] = np.arange(perm_size)
  return np.array([(p // perm_size) * perm_size + pi[p % perm_size]
                   for p in range(n)])


def ref_part(inputs, raw_target, masked, order):
  """perm_mask, new targets and targets of one part, with explicit loops."""
  n = len(inputs)
  func = (inputs == SEP) | (inputs == CLS)
  is_tgt = masked & ~func
  mof = masked | func
  idx = np.where(mof, order, -1)
  pm = np.zeros((n, n))
  for i in range(n):
    own = idx[i] if is_tgt[i] else idx[i] + 1
    for j in range(n):
      pm[i, j] = float(mof[j] and own <= idx[j])
  new_target = np.array([inputs[0]] + list(raw_target[:-1]))
  return pm, new_target, is_tgt


def check_features(feat, raw, seq_len, reuse_len, perm_size, num_predict):
  """Compares one parsed example with the reference; returns its orders.

  Args:
    feat: dict of one example's features from the input function.
    raw: the example's record (dict of int64 arrays).
    seq_len, reuse_len, perm_size, num_predict: the settings.

  Returns:
    [order of the reuse part, order of the rest].
  """
  inputs, masked = raw["input"], raw["is_masked"].astype(bool)
  pm_ref = np.zeros((seq_len, seq_len))
  new_target = np.zeros(seq_len, dtype=int)
  is_tgt = np.zeros(seq_len, dtype=bool)
  orders = []
  for lo, hi in [(0, reuse_len), (reuse_len, seq_len)]:
    part = slice(lo, hi)
    order = derive_order(feat["perm_mask"][part, part], inputs[part],
                         masked[part], perm_size)
    orders.append(order)
    pm, nt, tg = ref_part(inputs[part], raw["target"][part], masked[part],
                          order)
    pm_ref[part, part] = pm
    new_target[part], is_tgt[part] = nt, tg
  pm_ref[:reuse_len, reuse_len:] = 1  # memory never sees the rest
  np.testing.assert_array_equal(feat["perm_mask"], pm_ref)
  np.testing.assert_array_equal(feat["input_k"], inputs)
  np.testing.assert_array_equal(feat["input_q"], is_tgt.astype(float))
  np.testing.assert_array_equal(feat["seg_id"], raw["seg_id"])
  assert feat["label"] == raw["label"][0]
  pos = np.flatnonzero(is_tgt)
  k = len(pos)
  assert 0 < k <= num_predict
  mapping = np.zeros((num_predict, seq_len))
  mapping[np.arange(k), pos] = 1
  np.testing.assert_array_equal(feat["target_mapping"], mapping)
  np.testing.assert_array_equal(feat["target"][:k], new_target[pos])
  np.testing.assert_array_equal(feat["target"][:k], inputs[pos])  # itself
  assert not feat["target"][k:].any()
  np.testing.assert_array_equal(feat["target_mask"],
                                np.arange(num_predict) < k)
  # Direct statements: a target sees neither itself nor later targets; the
  # reuse part never sees the rest; non-targets see themselves.
  pmk = feat["perm_mask"]
  assert all(pmk[i, i] == 1 for i in pos)
  assert np.all(pmk[:reuse_len, reuse_len:] == 1)
  assert np.all(pmk[reuse_len:, :reuse_len] == 0)
  assert all(pmk[i, i] == 0 for i in np.flatnonzero(~is_tgt))
  return orders
