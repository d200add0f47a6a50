"""Tests of the permutation features (perm_mask, targets, target_mapping)
against a loop re-derivation, and of the factorization orders' law."""
import numpy as np
import pytest
import tensorflow as tf

from tests import data_helpers
from tests.data_reference import check_features
from xlnet.data import input_pipeline
from xlnet.data import perm_features

pytestmark = pytest.mark.tf_version

# The input pipeline's seed (every random draw of the features).
SEED = data_helpers.INPUT_SEED


@pytest.mark.parametrize("perm_size", [8, 32])
@pytest.mark.quick
def test_features_match_reference(tiny_data, perm_size):
  cfg = tiny_data.config
  input_fn, info = input_pipeline.get_input_fn(
      tiny_data.record_dir, "train", cfg["bsz_per_host"], cfg["seq_len"],
      cfg["reuse_len"], cfg["bi_data"], num_core_per_host=1,
      perm_size=perm_size, num_predict=cfg["num_predict"], seed=SEED)
  raw = data_helpers.read_records(tiny_data.record_dir)
  assert info["num_batch"] == len(raw) // cfg["bsz_per_host"]
  batches = data_helpers.take_batches(input_fn, 6,
                                      batch_size=cfg["bsz_per_host"])
  assert batches[0]["perm_mask"].dtype == np.float32
  assert batches[0]["input_k"].dtype == np.int32
  assert batches[0]["label"].shape == (cfg["bsz_per_host"],)
  pis = set()
  for b, batch in enumerate(batches):
    for r in range(cfg["bsz_per_host"]):
      feat = {k: v[r] for k, v in batch.items()}
      orders = check_features(feat, raw[b * cfg["bsz_per_host"] + r],
                              cfg["seq_len"], cfg["reuse_len"], perm_size,
                              cfg["num_predict"])
      pis.add(tuple(orders[0][:perm_size]))
  assert len(pis) > 10  # orders are sampled per example


def test_uneven_parts_and_bfloat16(tmp_path):
  cfg = dict(data_helpers.TINY_CONFIG, seq_len=48, reuse_len=16,
             num_predict=9, bsz_per_host=4, num_core_per_host=2)
  record_dir = data_helpers.make_records(str(tmp_path), num_lines=500, **cfg)
  raw = data_helpers.read_records(record_dir)
  args = (record_dir, "train", 4, 48, 16, True)
  kw = dict(num_core_per_host=2, perm_size=16, num_predict=9, seed=SEED)
  fn, _ = input_pipeline.get_input_fn(*args, **kw)
  for b, batch in enumerate(data_helpers.take_batches(fn, 4, batch_size=2)):
    for r in range(2):
      check_features({k: v[r] for k, v in batch.items()}, raw[b * 2 + r],
                     48, 16, 16, 9)
  fn16, _ = input_pipeline.get_input_fn(*args, use_bfloat16=True, **kw)
  with tf.Graph().as_default():
    feats = tf.compat.v1.data.make_one_shot_iterator(
        fn16({"batch_size": 2})).get_next()
    assert feats["perm_mask"].dtype == tf.bfloat16
    assert feats["target_mapping"].dtype == tf.bfloat16
    assert feats["input_q"].dtype == tf.bfloat16
    assert feats["target"].dtype == tf.int32


def test_orders_are_uniform_and_keyed():
  # Every position of a block is first in the order equally often; the
  # order is a function of the key alone.
  perm_size, n = 8, 4000
  inputs = np.arange(16) + 10

  def first_position(i):
    key = tf.stack([tf.constant(7, tf.int64), i])
    pm = perm_features.local_permutation(
        tf.constant(inputs), tf.constant(inputs), tf.ones([16], tf.bool),
        perm_size, 16, key)[0]
    # The first target in the order is the one that sees no target.
    return tf.argmin(tf.reduce_sum(1 - pm[:perm_size, :perm_size], axis=1))

  with tf.Graph().as_default():
    keys = tf.range(n, dtype=tf.int64)
    firsts = tf.map_fn(first_position, keys, fn_output_signature=tf.int64)
    again = first_position(tf.constant(123, tf.int64))
    with tf.compat.v1.Session() as sess:
      got, got_again = sess.run([firsts, again])
  counts = np.bincount(got, minlength=perm_size)
  expected = n / perm_size
  assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected)), counts
  assert got_again == got[123]
