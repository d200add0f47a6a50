"""Gradient accumulation's sums (`trainer._accumulated`): the float32
rounding of g0 + g1 + ... then / k, in that order, bit for bit on each of
two replicas (NumPy's float32 arithmetic is the reference): the rounding the
maintainers compare side by side.

Inside a tf.function TensorFlow's graph optimizer turns a division by the
constant k into a multiplication by the float32 1/k (one rounding apart
from a division in a third of the entries for k = 3): the step divides
so."""
import numpy as np
import pytest
import tensorflow as tf

from xlnet.training import trainer as trainer_lib

pytestmark = pytest.mark.eager

K = 3  # micro-batches: not a power of two, so g/k per term would round apart
SHAPES = ([2, 5], [7])


def _micro_gradients(rng):
  """[replica][micro][variable] float32 gradients whose sum depends on its
  order and on the first term being assigned: 2^24 + 1 - 2^24 is 0 in this
  order and 1 in another, -0.0 + -0.0 stays -0.0 (0.0 + -0.0 would not),
  and the rest spans ten decades."""
  out = []
  for _ in range(2):
    micro = [[(rng.standard_normal(s) * 10.0 ** rng.integers(-5, 5, s))
              .astype(np.float32) for s in SHAPES] for _ in range(K)]
    for m, value in enumerate((2.0 ** 24, 1.0, -2.0 ** 24)):
      micro[m][0][0, 0] = value
      micro[m][0][0, 1] = -0.0
    out.append(micro)
  return out


def _replica_results(strategy, grads, losses):
  """Runs `_accumulated` on each replica, whose micro-batch m's gradients
  and loss are grads[replica][m] and losses[replica][m]."""
  with strategy.scope():
    variables = [tf.Variable(tf.zeros(s)) for s in SHAPES]

  def forward_backward(features, mems, step, micro):
    del step, micro
    return features["loss"], [features["g0"], features["g1"]], mems

  def features(context):
    r = context.replica_id_in_sync_group
    return {"loss": tf.constant(losses[r]),
            **{f"g{v}": tf.constant(np.stack([g[v] for g in grads[r]]))
               for v in range(len(SHAPES))}}

  @tf.function(autograph=False)
  def run(per_replica):
    return strategy.run(
        lambda f: trainer_lib._accumulated(  # pylint: disable=protected-access
            forward_backward, f, None, tf.constant(0, tf.int64), K,
            variables),
        args=(per_replica,))

  loss, mean, mems = run(
      strategy.experimental_distribute_values_from_function(features))
  assert mems is None
  local = strategy.experimental_local_results
  return [(l.numpy(), [g.numpy() for g in gs])
          for l, gs in zip(local(loss), zip(*[local(g) for g in mean]))]


def _bits(x):
  return np.asarray(x, np.float32).view(np.uint32)


@pytest.mark.quick
def test_sums_round_as_a_sum_of_tensors_on_each_replica():
  rng = np.random.default_rng(0)
  grads = _micro_gradients(rng)
  losses = rng.standard_normal([2, K]).astype(np.float32)
  strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
  for replica, (loss, mean) in enumerate(_replica_results(strategy, grads,
                                                          losses)):
    want_loss = np.float32(0)
    for value in losses[replica]:
      want_loss = np.float32(want_loss + value)
    assert _bits(loss) == _bits(want_loss * np.float32(1 / K))
    for v, got in enumerate(mean):
      want = grads[replica][0][v].copy()
      for m in range(1, K):
        want = want + grads[replica][m][v]  # float32 + float32
      want = want * np.float32(1 / K)
      np.testing.assert_array_equal(_bits(got), _bits(want))
    assert mean[0][0, 0] == 0.0 and _bits(mean[0][0, 1]) == _bits(-0.0)
