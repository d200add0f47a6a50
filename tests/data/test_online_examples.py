"""Tests of the online sampler (xlnet/data/online_examples.py) against the
offline writer (xlnet/data/pretrain_examples.py) on the same rows: its
draws replayed through the offline functions, every per-example check the
written records pass, and the statistics of many draws side by side.

The statistical bounds are two-sided normal bounds on differences of
per-example means (examples are independent draws), Bonferroni-split so
that each test raises a false alarm with probability at most 1e-6.
"""
import math

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from tests import data_helpers
from tests.data.test_record_layout import (check_example, check_masks,
                                           check_walk_direction)
from tests.data_reference import RecordingRng, ref_rows, ref_stream, runs_of
from xlnet.data import online_examples
from xlnet.data import pretrain_examples

pytestmark = pytest.mark.eager
FALSE_ALARM = 1e-6
CFG = dict(seq_len=64, reuse_len=32, num_predict=13, mask_alpha=6,
           mask_beta=1, bi_data=True, num_core_per_host=2, bsz_per_host=8)


@pytest.fixture(scope="module")
def text_rows():
  """Rows of 600 lines of the demo corpus (CFG's layout): namespace-like
  dict with rows (np.int32 [8, row_len]), sent (bool), is_start."""
  sp = spm.SentencePieceProcessor(model_file=data_helpers.train_tiny_spm())
  ids, sids = ref_stream([data_helpers.corpus_slice(600)], sp)
  rows = ref_rows(ids, sids, CFG["bsz_per_host"], CFG["num_core_per_host"],
                  CFG["bi_data"])
  return {"rows": np.array([r for r, _ in rows], np.int32),
          "sent": np.array([s for _, s in rows], bool),
          "is_start": pretrain_examples.word_start_table(sp)}


def key(*values):
  return tf.constant(values, tf.int64)


class ReplayRng:
  """Stands in for np.random.RandomState: hands out given draws in order."""

  def __init__(self, samples, ints):
    self.samples, self.ints = list(samples), list(ints)

  def random_sample(self, *shape):
    return self.samples.pop(0)

  def randint(self, high):
    return int(np.floor(self.ints.pop(0) * high))


def test_split_replays_the_offline_rule():
  """The online split equals pretrain_examples.split_a_and_b fed the same
  uniforms (coin u0, cut u1, B's start u2) as its draws."""
  rs = np.random.RandomState(0)
  seen = set()
  for trial in range(60):
    bsz, row_len = 16, rs.randint(8, 60)
    flips = rs.rand(bsz, row_len) < rs.choice([0.03, 0.2, 0.6, 1.0])
    flips[:, 0] = False
    sent = np.cumsum(flips, axis=1) % 2 == 0
    begin, tot_len = rs.randint(0, row_len), rs.randint(1, 20)
    k = key(trial, 7)
    got = online_examples.split_a_and_b(
        tf.constant(row_len), online_examples.padded_bounds(sent),
        tf.constant(begin), tot_len, k)
    got = np.stack([g.numpy().astype(int) for g in got], axis=1)
    u = tf.random.stateless_uniform([bsz, 3], k, dtype=tf.float64).numpy()
    for r in range(bsz):
      bounds = pretrain_examples.boundaries(sent[r])
      has_cut = any(begin < b < begin + tot_len for b in bounds)
      rng = ReplayRng([u[r, 0]], [u[r, 1], u[r, 2]] if has_cut else [u[r, 2]])
      want = pretrain_examples.split_a_and_b(row_len, bounds, begin,
                                             tot_len, rng)
      if want is None:
        assert not got[r, 4], (trial, r)
        seen.add(None)
      else:
        assert got[r, 4] and tuple(got[r, [0, 1, 2, 3]]) == want, (trial, r)
        seen.add(want[3])
  assert seen == {None, 0, 1}


def test_trim_lengths_equals_the_offline_rule():
  a, b, t = np.meshgrid(np.arange(40), np.arange(1, 40), np.arange(1, 30))
  got = online_examples.trim_lengths(*(tf.constant(x.ravel(), tf.int32)
                                       for x in (a, b, t)))
  want = np.array([pretrain_examples.trim_lengths(*x)
                   for x in zip(a.ravel(), b.ravel(), t.ravel())])
  np.testing.assert_array_equal(np.stack([g.numpy() for g in got], 1), want)


@pytest.mark.quick
@pytest.mark.tf_version
def test_masks_replay_the_offline_walk():
  """The online walk and top-up equal pretrain_examples.sample_masks fed
  the same uniforms (step i: fold_in(key, i); top-up: fold_in(key, 0))."""
  rs = np.random.RandomState(5)
  fold = tf.random.experimental.stateless_fold_in
  for trial in range(40):
    rows, seg_len = rs.randint(1, 6), rs.randint(3, 40)
    is_start = rs.rand(20) < rs.choice([0.05, 0.4, 1.0])
    segs = rs.randint(0, 20, size=(rows, seg_len))
    alpha, beta = [(6, 1), (1, 1), (3, 2)][trial % 3]
    goal = None if trial % 4 == 0 else int(rs.randint(0, seg_len + 1))
    reverse = rs.rand(rows) < 0.5
    k = key(trial, 3)
    got = online_examples.sample_masks(
        tf.constant(segs, tf.int32), tf.constant(is_start), goal, alpha, beta,
        k, tf.constant(reverse)).numpy()
    steps = [tf.random.stateless_uniform([rows, 2], fold(k, i),
                                         dtype=tf.float64).numpy()
             for i in range(1, seg_len + 2)]
    top_up = tf.random.stateless_uniform([rows, seg_len], fold(k, 0),
                                         dtype=tf.float64).numpy()
    rng = RecordingRng(0)
    rng.random_sample = lambda *shape: (
        steps.pop(0) if shape == ((rows, 2),) else top_up)
    want = pretrain_examples.sample_masks(segs, is_start, goal, alpha, beta,
                                          rng, reverse)
    np.testing.assert_array_equal(got, want, err_msg=str(trial))


def online_batches(data, cfg, offsets, draws):
  """Online examples of every row at each offset, `draws` times each (the
  rows tiled `draws` times in one call, each copy with its own draws).

  Returns:
    list of (offset, row index, example dict of numpy arrays), valid
    batches only.
  """
  rows = np.tile(data["rows"], (draws, 1))
  bounds = online_examples.padded_bounds(np.tile(data["sent"], (draws, 1)))
  tiled = dict(cfg, num_core_per_host=cfg["num_core_per_host"] * draws)
  fn = tf.function(lambda offset, k: online_examples.make_batch(
      rows, bounds, offset, tiled, data["is_start"], k))
  out, bsz = [], len(data["rows"])
  for n, offset in enumerate(offsets):
    features, valid = fn(tf.constant(offset), key(11, n))
    features = {name: v.numpy() for name, v in features.items()}
    for r in range(len(rows)) if valid.numpy() else ():
      out.append((offset, r % bsz,
                  {name: v[r] for name, v in features.items()}))
  return out


def offline_batches(data, cfg, offsets, draws, seed=0):
  """The offline writer's examples, same layout as `online_batches`."""
  rng = np.random.RandomState(seed)
  bounds = [pretrain_examples.boundaries(s) for s in data["sent"]]
  out = []
  for offset in offsets:
    for _ in range(draws):
      batch = pretrain_examples.make_batch(data["rows"], bounds, offset, cfg,
                                           data["is_start"], rng)
      for r in range(len(data["rows"])) if batch is not None else ():
        out.append((offset, r, {name: v[r] for name, v in batch.items()}))
  return out


@pytest.mark.parametrize("cfg", [
    CFG, dict(CFG, seq_len=48, reuse_len=16, num_predict=8, bi_data=False,
              num_core_per_host=1)])
@pytest.mark.tf_version
def test_every_online_example_passes_the_record_checks(text_rows, cfg):
  data = text_rows
  if not cfg["bi_data"]:
    data = dict(data, rows=data["rows"][:4], sent=data["sent"][:4])
    cfg = dict(cfg, bsz_per_host=4)
  row_len = data["rows"].shape[1]
  offsets = list(range(0, row_len - cfg["seq_len"] + 1,
                       11 * cfg["reuse_len"]))
  examples = online_batches(data, cfg, offsets, draws=4)
  assert len(examples) == len(offsets) * 4 * len(data["rows"]) >= 300
  labels = []
  for offset, r, ex in examples:
    row = data["rows"][r].tolist()
    labels.append(check_example(ex, row, pretrain_examples.boundaries(
        data["sent"][r]), offset, cfg))
    check_masks(ex, cfg)
  assert set(labels) == {0, 1}
  if cfg["bi_data"]:
    check_walk_direction([ex for _, _, ex in examples], cfg,
                         data["is_start"])


def z_bound(tests):
  """Two-sided normal quantile for FALSE_ALARM split over `tests` tests."""
  p = FALSE_ALARM / tests
  lo, hi = 0.0, 40.0
  for _ in range(200):
    mid = (lo + hi) / 2
    lo, hi = (mid, hi) if math.erfc(mid / math.sqrt(2)) > p else (lo, mid)
  return hi


def assert_same_means(a, b, what, tests):
  """Asserts that per-example values a, b [n, k] have equal column means
  within z_bound(tests) standard errors of the difference."""
  a, b = np.asarray(a, float), np.asarray(b, float)
  a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
  se = np.sqrt(a.var(0, ddof=1) / len(a) + b.var(0, ddof=1) / len(b))
  diff = np.abs(a.mean(0) - b.mean(0))
  ok = (diff <= z_bound(tests) * se) | ((se == 0) & (diff == 0))
  assert ok.all(), (what, a.mean(0), b.mean(0), se)


def example_stats(ex, cfg):
  """Per-example statistics: {name: 1-D array}."""
  reuse_len = cfg["reuse_len"]
  masked = ex["is_masked"].astype(bool)
  runs = [n for part in (masked[:reuse_len], masked[reuse_len:])
          for _, n in runs_of(part)]
  a_len = int(np.sum(ex["seg_id"] == 0)) - reuse_len - 1
  span_hist = np.bincount(np.minimum(runs, 8), minlength=9)[1:]
  a_bins = np.bincount([min(a_len * 8 // (cfg["seq_len"] - reuse_len), 7)],
                       minlength=8)
  where = np.flatnonzero(masked)
  pos_bins = np.bincount(where * 8 // cfg["seq_len"], minlength=8)
  return {"label": [ex["label"][0]], "span lengths": span_hist,
          "A length bins": a_bins, "A length": [a_len],
          "target position bins": pos_bins,
          "mean target position": [where.mean()],
          "first target in rest": [where[where >= reuse_len][0]]}


def test_online_statistics_match_the_offline_writer(text_rows):
  """Labels, span-length histogram, A/B lengths and target positions of
  ~5,000 online and ~5,000 offline examples at the same offsets."""
  data, cfg = text_rows, CFG
  row_len = data["rows"].shape[1]
  offsets = list(range(0, row_len - cfg["seq_len"] + 1, 17 * 32))[:6]
  online = online_batches(data, cfg, offsets, draws=100)
  offline = offline_batches(data, cfg, offsets, draws=100)
  assert min(len(online), len(offline)) > 4000
  for ex in (e for _, _, e in online + offline):
    assert ex["is_masked"].sum() == cfg["num_predict"]
  stats = {}
  for side, examples in (("online", online), ("offline", offline)):
    per_ex = [example_stats(ex, cfg) for _, _, ex in examples]
    stats[side] = {name: np.array([s[name] for s in per_ex])
                   for name in per_ex[0]}
  tests = sum(v.shape[1] for v in stats["online"].values())
  for name in stats["online"]:
    assert_same_means(stats["online"][name], stats["offline"][name], name,
                      tests)


@pytest.mark.tf_version
def test_same_key_same_bits_other_key_new_draws(text_rows):
  data, cfg = text_rows, CFG
  bounds = online_examples.padded_bounds(data["sent"])
  fn = tf.function(lambda k: online_examples.make_batch(
      data["rows"], bounds, 320, cfg, data["is_start"], k)[0])
  first = {n: v.numpy() for n, v in fn(key(1, 2)).items()}
  again = {n: v.numpy() for n, v in fn(key(1, 2)).items()}
  other = {n: v.numpy() for n, v in fn(key(1, 3)).items()}
  for name in first:
    np.testing.assert_array_equal(first[name], again[name])
  assert not np.array_equal(first["is_masked"], other["is_masked"])


def test_a_statistics_test_can_fail(text_rows):
  """The statistics test catches a sampler that is slightly off: masks
  drawn with mask_alpha 3 instead of 6 (~5,000 examples each)."""
  data, cfg = text_rows, CFG
  offsets = list(range(0, 6 * 17 * 32, 17 * 32))
  online = online_batches(data, dict(cfg, mask_alpha=3), offsets, draws=100)
  offline = offline_batches(data, cfg, offsets, draws=100)
  hist = [np.array([example_stats(ex, cfg)["span lengths"]
                    for _, _, ex in side]) for side in (online, offline)]
  with pytest.raises(AssertionError):
    assert_same_means(hist[0], hist[1], "span lengths", 8)
