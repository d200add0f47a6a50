"""The training gradients are summed in an order fixed by the graph.

TensorFlow's CPU AddN, given three or more inputs, accumulates into the
first input whose buffer it may reuse (no other pending op still reads it)
and moves that input to the front of its sum. When an input is also read by
an op that may still be pending when the AddN runs, which input that is
depends on thread timing, and so does the rounding of the sum: the same
command then gave weights differing in their last bits (it was the three
gradients of the attention queries, whose bias gradients read the same
tensors). The reference here is that rule, checked on the graph of every
training loss: no AddN of three or more gradients may have an input that
an op outside the AddN's ancestors also reads.
"""
import numpy as np
import pytest
import tensorflow as tf

from xlnet import model as model_lib
from xlnet import pretraining_loss
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.race import head as race_head
from xlnet.finetuning.squad import head as squad_head

B, L, P, MEM = 2, 8, 3, 4
CONFIG = dict(n_layer=2, d_model=8, n_head=2, d_head=4, d_inner=16,
              ff_activation="gelu", n_token=50)
# Ops whose output shares their input's buffer.
_ALIASES = {"Identity", "Reshape", "ExpandDims", "Squeeze", "Snapshot"}


def _buffer_readers(tensor):
  """The ops reading `tensor`'s buffer: its consumers and those of every
  tensor it is a view of (through reshapes and identities), views
  excluded."""
  while tensor.op.type in _ALIASES:
    tensor = tensor.op.inputs[0]
  readers, views = set(), [tensor]
  while views:
    for op in views.pop().consumers():
      if op.type in _ALIASES:
        views.append(op.outputs[0])
      else:
        readers.add(op)
  return readers


def _ancestor_ops(*ops):
  """Every op that one of `ops` depends on (data and control inputs)."""
  seen, todo = set(), list(ops)
  while todo:
    current = todo.pop()
    for parent in [t.op for t in current.inputs] + list(
        current.control_inputs):
      if parent not in seen:
        seen.add(parent)
        todo.append(parent)
  return seen


def timing_dependent_sums(gradients):
  """{AddN name: [input index, ...]} of the AddNs of >= 3 inputs computing
  `gradients` whose inputs include a buffer that another op computing
  `gradients`, not among the AddN's ancestors, reads. (Ops computing
  nothing fetched, e.g. the gradient of a dropout's zero branch, do not run
  in a tf.function.)"""
  ops = {gradient.op for gradient in gradients}
  live = _ancestor_ops(*ops) | ops
  found = {}
  for op in sorted(live, key=lambda o: o.name):
    if op.type != "AddN" or len(op.inputs) < 3:
      continue
    before = _ancestor_ops(op)
    racy = [i for i, t in enumerate(op.inputs)
            if any(r is not op and r in live and r not in before
                   for r in _buffer_readers(t))]
    if racy:
      found[op.name] = racy
  return found


def _run_config():
  return model_lib.RunConfig(is_training=True, use_tpu=False,
                             use_bfloat16=False, dropout=0.1, dropatt=0.1,
                             mem_len=MEM)


def _config(untie_r):
  return model_lib.XLNetConfig(**dict(CONFIG, untie_r=untie_r))


def _ints(shape, high):
  return tf.constant(np.random.RandomState(0).randint(0, high, shape),
                     tf.int32)


def _finetuning_features(length=L):
  return {"input_ids": _ints([B, length], CONFIG["n_token"]),
          "segment_ids": _ints([B, length], 2),
          "input_mask": tf.zeros([B, length])}


def _pretraining_loss(config):
  features = {
      "input_k": _ints([B, L], CONFIG["n_token"]),
      "input_q": tf.ones([B, L]), "seg_id": _ints([B, L], 2),
      "perm_mask": tf.cast(_ints([B, L, L], 2), tf.float32),
      "target": _ints([B, P], CONFIG["n_token"]), "target_mask": tf.ones([B, P]),
      "target_mapping": tf.one_hot(_ints([B, P], L), L)}
  mems = [tf.zeros([MEM, B, CONFIG["d_model"]])] * CONFIG["n_layer"]
  return pretraining_loss.get_loss(config, _run_config(), features, None,
                                   mems, True)[0]


def _classifier_loss(config):
  features = dict(_finetuning_features(), label_ids=_ints([B], 3))
  return classifier_head.get_classification_loss(
      config, _run_config(), features, 3,
      classifier_head.classification_scope("t"))[0]


def _squad_loss(config):
  features = dict(_finetuning_features(), p_mask=tf.zeros([B, L]),
                  cls_index=tf.fill([B], L - 1), start_positions=_ints([B], L),
                  end_positions=_ints([B], L), is_impossible=_ints([B], 2))
  return squad_head.get_qa_loss(config, _run_config(), features)


def _race_loss(config):
  features = dict(_finetuning_features(4 * L), label_ids=_ints([B], 4))
  return race_head.get_race_loss(config, _run_config(), features)[0]


# The rule is checked on the newest TensorFlow too (its gradient graphs
# may differ) on the pretraining loss: the heads add a few ops to the same
# backbone.
@pytest.mark.parametrize("loss", [
    pytest.param(_pretraining_loss, marks=pytest.mark.tf_version),
    _classifier_loss, _squad_loss, _race_loss])
@pytest.mark.parametrize("untie_r", [True, False])
def test_no_gradient_sum_depends_on_timing(loss, untie_r):
  """The gradient graph as the trainer builds it (a GradientTape over the
  trainable variables) of every loss."""
  with tf.Graph().as_default():
    with tf.GradientTape() as tape:
      value = loss(_config(untie_r=untie_r))
    grads = tape.gradient(value, tf.compat.v1.trainable_variables())
  assert timing_dependent_sums([g for g in grads if g is not None]) == {}


def test_the_rule_finds_a_timing_dependent_sum():
  """Three uses of one tensor whose gradients are also read by reductions
  (the shape of the queries' three biased terms): flagged."""
  with tf.Graph().as_default():
    q = tf.compat.v1.get_variable("q", [4, 3])
    biases = [tf.compat.v1.get_variable(f"b{i}", [3]) for i in range(3)]
    with tf.GradientTape() as tape:
      value = sum(tf.reduce_sum(tf.square((q + b) * 0.5)) for b in biases)
    grads = tape.gradient(value, [q] + biases)
  assert len(timing_dependent_sums(grads)) == 1
