"""`rel_shift` and `relative_positional_encoding` against their definitions.

Scores against relative positions come in columns r = 0 .. rlen-1 that stand
for the distances klen, klen-1, ..., -qlen+1 (distance d = klen - r).
Query i (0-based, after mlen memory positions) and key j are at distance
(mlen + i) - j, i.e. column r = qlen - i + j: `rel_shift` must move that
column to position j.
"""
import math

import numpy as np
import pytest
import tensorflow as tf

from xlnet import modeling

pytestmark = [pytest.mark.quick, pytest.mark.tf_version]


@pytest.mark.parametrize("qlen,mlen", [(3, 0), (4, 2), (1, 5)])
def test_rel_shift_puts_distance_mlen_plus_i_minus_j_at_column_j(qlen, mlen):
  klen = qlen + mlen
  rlen = klen + qlen
  x = np.random.RandomState(0).randn(2, 3, qlen, rlen).astype(np.float32)
  with tf.compat.v1.Session() as sess:
    got = sess.run(modeling.rel_shift(tf.constant(x), klen=klen))
  want = np.zeros((2, 3, qlen, klen), np.float32)
  for i in range(qlen):
    for j in range(klen):
      want[:, :, i, j] = x[:, :, i, qlen - i + j]
  np.testing.assert_array_equal(got, want)


def _sinusoid(pos, d_model):
  """concat(sin(pos f), cos(pos f)), f_k = 1 / 10000^(2k / d_model)."""
  freqs = [1.0 / 10000 ** (2 * k / d_model) for k in range(d_model // 2)]
  return np.array([math.sin(pos * f) for f in freqs] +
                  [math.cos(pos * f) for f in freqs])


@pytest.mark.parametrize("attn_type,bi_data,clamp_len",
                         [("bi", False, -1), ("bi", True, -1), ("bi", False, 3),
                          ("uni", False, -1)])
def test_relative_positional_encoding(attn_type, bi_data, clamp_len):
  qlen, klen, d_model = 3, 5, 8
  with tf.compat.v1.Session() as sess:
    got = sess.run(modeling.relative_positional_encoding(
        qlen, klen, d_model, clamp_len, attn_type, bi_data))
  last = -qlen + 1 if attn_type == "bi" else 0
  distances = list(range(klen, last - 1, -1))
  if clamp_len > 0:
    distances = [max(-clamp_len, min(clamp_len, d)) for d in distances]
  forward = np.stack([_sinusoid(d, d_model) for d in distances])
  assert got.shape == (len(distances), 2 if bi_data else 1, d_model)
  np.testing.assert_allclose(got[:, 0], forward, atol=1e-6)
  if bi_data:  # the backward half of the batch sees negated distances
    backward = np.stack([_sinusoid(-d, d_model) for d in distances])
    np.testing.assert_allclose(got[:, 1], backward, atol=1e-6)
