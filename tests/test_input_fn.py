"""Tests of get_input_fn against a NumPy re-derivation of SPEC.md §5."""
import glob
import graphlib
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests.data_fixtures import (TINY_CONFIG, make_records, read_records,
                                 tiny_data)  # noqa: F401
from xlnet import data_utils

SEP, CLS = 4, 3


def take(input_fn, batch_size, n):
  """The first n per-core batches of input_fn."""
  with tf.Graph().as_default():
    ds = input_fn({"batch_size": batch_size})
    nxt = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
    with tf.compat.v1.Session() as sess:
      return [sess.run(nxt) for _ in range(n)]


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
  """SPEC §5 for one part, with explicit loops."""
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


def check_example(feat, raw, cfg, perm_size, num_predict):
  """Compares one parsed example with the NumPy reference."""
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
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


@pytest.mark.parametrize("perm_size", [8, 32])
def test_features_match_numpy_reference(tiny_data, perm_size):
  cfg = tiny_data.config
  input_fn, info = data_utils.get_input_fn(
      tiny_data.record_dir, "train", cfg["bsz_per_host"], cfg["seq_len"],
      cfg["reuse_len"], cfg["bi_data"], num_core_per_host=1,
      perm_size=perm_size, num_predict=cfg["num_predict"])
  raw = read_records(tiny_data.record_dir)
  assert info["num_batch"] == len(raw) // cfg["bsz_per_host"]
  batches = take(input_fn, cfg["bsz_per_host"], 6)
  assert batches[0]["perm_mask"].dtype == np.float32
  assert batches[0]["input_k"].dtype == np.int32
  assert batches[0]["label"].shape == (cfg["bsz_per_host"],)
  pis = set()
  for b, batch in enumerate(batches):
    for r in range(cfg["bsz_per_host"]):
      feat = {k: v[r] for k, v in batch.items()}
      orders = check_example(feat, raw[b * cfg["bsz_per_host"] + r], cfg,
                             perm_size, cfg["num_predict"])
      pis.add(tuple(orders[0][:perm_size]))
  assert len(pis) > 10  # orders are sampled per example


def test_uneven_parts_bf16_and_num_passes(tmp_path):
  cfg = dict(TINY_CONFIG, seq_len=48, reuse_len=16, num_predict=9,
             bsz_per_host=4, num_core_per_host=2)
  d = str(tmp_path / "data")
  record_dir = make_records(d, num_lines=500, **cfg)
  raw = read_records(record_dir)
  make_records(d, num_lines=500, pass_id=1, **cfg)
  args = (record_dir, "train", 4, 48, 16, True)
  kw = dict(num_core_per_host=2, perm_size=16, num_predict=9)
  fn, info = data_utils.get_input_fn(*args, num_passes=1, **kw)
  assert len(info["filenames"]) == 1 and "-0-0." in info["filenames"][0]
  batches = take(fn, 2, 4)
  for b, batch in enumerate(batches):
    for r in range(2):
      check_example({k: v[r] for k, v in batch.items()}, raw[b * 2 + r], cfg,
                    16, 9)
  _, info2 = data_utils.get_input_fn(*args, num_passes=2, **kw)
  _, info_all = data_utils.get_input_fn(*args, **kw)
  assert len(info2["filenames"]) == len(info_all["filenames"]) == 2
  assert info2["num_batch"] > info["num_batch"]
  fn16, _ = data_utils.get_input_fn(*args, num_passes=1, use_bfloat16=True,
                                    **kw)
  with tf.Graph().as_default():
    feats = tf.compat.v1.data.make_one_shot_iterator(
        fn16({"batch_size": 2})).get_next()
    assert feats["perm_mask"].dtype == tf.bfloat16
    assert feats["target_mapping"].dtype == tf.bfloat16
    assert feats["target"].dtype == tf.int32


@pytest.mark.parametrize("reader_cores", [1, 2, 4])
def test_core_layout_regrouping(tmp_path, reader_cores):
  cfg = dict(TINY_CONFIG, seq_len=32, reuse_len=16, num_predict=6,
             bsz_per_host=8, num_core_per_host=2)
  record_dir = make_records(str(tmp_path), num_lines=400, **cfg)
  raw = read_records(record_dir)
  bsz, data_half = 8, 2
  by_key = {}
  for n, ex in enumerate(raw):
    step, idx = divmod(n, bsz)
    core, w = divmod(idx, 2 * data_half)
    by_key[(step, w >= data_half, core * data_half + w % data_half)] = ex
  fn, _ = data_utils.get_input_fn(record_dir, "train", 8, 32, 16, True,
                                  num_core_per_host=reader_cores,
                                  perm_size=16, num_predict=6)
  per_core = bsz // reader_cores
  half = per_core // 2
  batches = take(fn, per_core, 2 * reader_cores)
  for n, batch in enumerate(batches):
    step, core = divmod(n, reader_cores)
    for k in range(per_core):
      want = by_key[(step, k >= half, core * half + k % half)]
      np.testing.assert_array_equal(batch["input_k"][k], want["input"])


def test_input_fn_errors(tiny_data, tmp_path):
  c = tiny_data.config
  base = (tiny_data.record_dir, "train", c["bsz_per_host"], c["seq_len"],
          c["reuse_len"], True)

  def err(match, args=base, **kw):
    with pytest.raises(ValueError, match=match) as e:
      data_utils.get_input_fn(*args, **kw)
    assert "\n" not in str(e.value)

  err(r"--perm_size=64 must be <= and divide both --reuse_len=32",
      perm_size=64)
  err(r"--perm_size=12 must be <= and divide", perm_size=12)
  err(r"--bsz_per_host=4 must be a multiple of --num_core_per_host=3",
      num_core_per_host=3)
  err(r"--bi_data needs an even per-core batch", num_core_per_host=4)
  err(r"No record info matches.*record_info-train-0-0\..*differs in "
      r"--num_predict=13 \(data: 12\)", num_predict=13)
  err(r"differs in --bsz_per_host=8 \(data: 4\), --uncased=True",
      args=(tiny_data.record_dir, "train", 8, 64, 32, True), uncased=True)
  err(r"matches but its pass_id is >= --num_passes", num_passes=0)
  # A truncated file is named.
  copy = tmp_path / "copy" / "tfrecords"
  shutil.copytree(tiny_data.record_dir, copy)
  shutil.copy(os.path.join(os.path.dirname(tiny_data.record_dir),
                           "corpus_info.json"), tmp_path / "copy")
  (path,) = glob.glob(str(copy / "*.tfrecords"))
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) - 100)
  err(r"train-0-0\.bsz-4.*\.tfrecords is truncated or corrupt",
      args=(str(copy),) + base[1:])


def test_per_core_batch_size_must_match(tiny_data):
  # Rows must reach the same core at every step (memory, bi_data halves):
  # a per-core batch other than bsz_per_host / num_core_per_host is refused.
  c = tiny_data.config
  fn, _ = data_utils.get_input_fn(
      tiny_data.record_dir, "train", c["bsz_per_host"], c["seq_len"],
      c["reuse_len"], True, num_core_per_host=1, perm_size=32)
  with tf.Graph().as_default():
    for batch_size in (2, 8):
      with pytest.raises(ValueError, match=(
          rf"params\['batch_size'\]={batch_size} must be --bsz_per_host / "
          r"--num_core_per_host = 4")):
        fn({"batch_size": batch_size})
    fn({"batch_size": 4})
    fn({})


def test_file_order_is_the_same_in_every_run(tmp_path):
  # A resumed run skips the batches already consumed, so the (shuffled) file
  # order must not change from run to run: a fresh graph without a graph
  # seed must read the files in the same order.
  cfg = dict(TINY_CONFIG, seq_len=32, reuse_len=16, num_predict=6)
  d = str(tmp_path / "data")
  for pass_id in range(4):
    record_dir = make_records(d, num_lines=120, pass_id=pass_id, **cfg)
  fn, info = data_utils.get_input_fn(record_dir, "train", 4, 32, 16, True,
                                     perm_size=16, num_predict=6)
  assert len(info["filenames"]) == 4
  first = set()
  for _ in range(5):  # 4 files: an unseeded order repeats with p = 1/256
    with tf.Graph().as_default():
      nxt = tf.compat.v1.data.make_one_shot_iterator(
          fn({"batch_size": 4})).get_next()
      with tf.compat.v1.Session() as sess:
        first.add(sess.run(nxt["input_k"]).tobytes())
  assert len(first) == 1


def test_comma_separated_dirs_and_host_sharding(tmp_path):
  cfg = dict(TINY_CONFIG, seq_len=32, reuse_len=16, num_predict=6)
  dirs = [make_records(str(tmp_path / name), num_lines=120, pass_id=p, **cfg)
          for name, p in (("a", 0), ("b", 1))]
  raws = [read_records(d) for d in dirs]
  fn, info = data_utils.get_input_fn(",".join(dirs) + ",", "train", 4, 32, 16,
                                     True, num_hosts=2, perm_size=16,
                                     num_predict=6)
  assert [os.path.dirname(p) for p in info["filenames"]] == dirs
  assert info["num_batch"] == sum(len(r) for r in raws) // 4

  class Context:  # what TPUEstimator passes in params["context"]
    def __init__(self, host):
      self.current_host = host

  for host in range(2):  # each host reads its own file, rows in order
    with tf.Graph().as_default():
      nxt = tf.compat.v1.data.make_one_shot_iterator(fn(
          {"batch_size": 4, "context": Context(host)})).get_next()
      with tf.compat.v1.Session() as sess:
        for step in range(2):
          got = sess.run(nxt["input_k"])
          want = [raws[host][step * 4 + r]["input"] for r in range(4)]
          np.testing.assert_array_equal(got, want)
