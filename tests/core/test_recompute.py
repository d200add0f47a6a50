"""Activation recomputation (`RunConfig.recompute`) in graph mode: every
fine-tuning head gives, with dropout on, the gradients it gives without it
(the same masks: both are built in a `stateless_dropout_seed` block, as
the trainers build them); outside such a block (dropout from the stateful
random ops, as `XLNetModel` used directly and TPUEstimator's fine-tuning)
the gradient is that of the loss it computes, against finite differences
of that loss.

Each pair is built in one graph on the same variables and run in one
session. Two-stream pretraining (bi_data, memories) on the engine's step
(replicas, accumulation, loss scaling): tests/training/test_recompute.py.
"""

import numpy as np
import pytest
import tensorflow as tf

from xlnet import model as model_lib
from xlnet import modeling
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.race import head as race_head
from xlnet.finetuning.squad import head as squad_head

# One layer: the heads' backbone is the engine test's, whose two layers
# check the dropout counts carried from one recomputed layer to the next.
_CONFIG = model_lib.XLNetConfig(n_layer=1, d_model=16, n_head=2, d_head=8,
                                d_inner=32, ff_activation="gelu",
                                untie_r=True, n_token=40)


def _run_config(recompute, dropout=0.1):
  return model_lib.RunConfig(is_training=True, use_tpu=False,
                             use_bfloat16=False, dropout=dropout,
                             dropatt=dropout, recompute=recompute)


def _features(rng, rows, length, options=1):
  """Token ids, two segments and two padding pieces in each sequence of
  `length` (`options` sequences side by side in a row)."""
  position = np.tile(np.arange(length), options)[None].repeat(rows, 0)
  return dict(
      input_ids=rng.randint(9, 40, position.shape).astype(np.int32),
      segment_ids=(position >= length // 2).astype(np.int32),
      input_mask=(position < 2).astype(np.float32))


def _head_losses(rng):
  """{head: loss_of(run_config)} of every fine-tuning head, each on a
  batch of its features."""
  classifier = dict(_features(rng, 3, 8), label_ids=np.array([0, 2, 1],
                                                              np.int32))
  squad = dict(_features(rng, 3, 8), p_mask=np.zeros((3, 8), np.float32),
               cls_index=np.full(3, 7, np.int32),
               start_positions=np.array([2, 3, 4], np.int32),
               end_positions=np.array([4, 3, 6], np.int32),
               is_impossible=np.array([0, 0, 1], np.float32))
  race = dict(_features(rng, 2, 6, options=4),  # 4 options side by side
              label_ids=np.array([1, 3], np.int32))
  return {
      "classifier": lambda run: classifier_head.get_classification_loss(
          _CONFIG, run, classifier, 3, "classification_sst-2")[0],
      "squad": lambda run: squad_head.get_qa_loss(_CONFIG, run, squad)[0],
      "race": lambda run: race_head.get_race_loss(_CONFIG, run, race,
                                                  "last", True)[0]}


def _values(fetches):
  """`fetches` run once in a session of the default graph after its
  variables are initialized (graph seed 1)."""
  with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    return sess.run(fetches)


def _reusing():
  """The default graph's root variable scope with AUTO_REUSE: a second
  model reads the first one's variables."""
  return tf.compat.v1.variable_scope(tf.compat.v1.get_variable_scope(),
                                     reuse=tf.compat.v1.AUTO_REUSE)


def test_every_head_gives_the_gradients_it_gives_without_recomputation():
  """Classification, SQuAD and RACE: the loss and every variable's
  gradient, dropout 0.1, with and without recomputation (float32
  rounding)."""
  tf.compat.v1.set_random_seed(1)
  losses = {}
  with _reusing():
    for head, loss_of in _head_losses(np.random.RandomState(0)).items():
      for recompute in (False, True):
        with modeling.stateless_dropout_seed(tf.constant([5, 6])):
          losses[head, recompute] = loss_of(_run_config(recompute))
  every = tf.compat.v1.trainable_variables()
  gradients = {key: tf.gradients(loss, every) for key, loss in losses.items()}
  # Each head's variables: the backbone's and its own.
  variables = {head: [v for v, g in zip(every, gradients[head, False])
                      if g is not None] for head, _ in losses}
  values = _values({key: (loss, [tf.convert_to_tensor(g)
                                 for g in gradients[key] if g is not None])
                    for key, loss in losses.items()})
  for head, head_variables in variables.items():
    (plain, want), (again, got) = values[head, False], values[head, True]
    assert plain == again, head
    assert len(head_variables) > 10, head
    for var, w, g in zip(head_variables, want, got):
      assert np.abs(w).max() > 0, (head, var.name)
      np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6 * np.abs(w).max(),
                                 err_msg=f"{head}: {var.name}")


@pytest.mark.tf_version
def test_stateful_dropout_gradient_matches_finite_differences():
  """Outside a stateless block each recomputed layer draws one seed from
  the stateful ops and its masks from it, so its second run draws the
  first run's: the gradient of the loss along a random direction equals
  the loss's central difference there (a fresh session draws the same
  stateful numbers). Dropout 0.5: a mask of the backward pass drawn anew
  would be off by far more than the tolerance."""
  tf.compat.v1.set_random_seed(3)
  loss = _head_losses(np.random.RandomState(1))["classifier"](
      _run_config(True, dropout=0.5))
  variables = tf.compat.v1.trainable_variables()
  rng = np.random.RandomState(3)
  # Steps of 1e-4 per weight (initialized with stddev 0.02): the loss is
  # close to linear there.
  direction = [0.01 * rng.normal(size=v.shape.as_list()).astype(np.float32)
               for v in variables]
  grads = [tf.convert_to_tensor(g) for g in tf.gradients(loss, variables)]
  step = tf.compat.v1.placeholder(tf.float32, [])
  moves = [v.assign_add(step * d) for v, d in zip(variables, direction)]

  def loss_at(eps):
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      sess.run(moves, {step: eps})
      return sess.run(loss)

  value, grad_values = _values((loss, grads))
  assert loss_at(0.0) == value  # the same masks in a fresh session
  eps = 1e-2
  slope = sum(float(np.sum(g * d)) for g, d in zip(grad_values, direction))
  differences = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
  assert abs(slope) > 1e-3
  np.testing.assert_allclose(slope, differences, rtol=1e-2)
