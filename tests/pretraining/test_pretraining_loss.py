"""The pretraining loss builder (xlnet/pretraining_loss.py, get_loss) and the
held-out evaluation (xlnet/pretraining/held_out.py) against a NumPy
recomputation of the two-stream loss with the slow reference forward pass
(tests/np_reference.py), memories carried from one batch to the next."""
import numpy as np
import pytest
import tensorflow as tf

from tests import np_reference
from tests import train_fixtures as fx
from xlnet.training import template as template_lib
from xlnet import pretraining_loss
from xlnet.pretraining import held_out

pytestmark = [pytest.mark.eager, pytest.mark.tf_version]


def _numpy_metrics(FL, params, batches):
  """Loss per target, accuracy and count over consecutive batches, with the
  reference forward pass and memories carried (zeros at the start, as in
  training)."""
  bsz = len(batches[0]["input_k"])
  mems = [np.zeros([FL.mem_len, bsz, FL.d_model], np.float32)] * FL.n_layer
  loss_sum, correct, count = 0.0, 0, 0
  for batch in batches:
    tm = {k: np.transpose(v, [1, 2, 0]) if v.ndim == 3 else v.T
          for k, v in batch.items() if k != "label"}
    output, new_mems = np_reference.forward(
        params, FL.n_layer, FL.d_model, FL.n_head, FL.d_head, FL.d_inner,
        FL.ff_activation, FL.untie_r, tm["input_k"], inp_q=tm["input_q"],
        seg_id=tm["seg_id"], perm_mask=tm["perm_mask"],
        target_mapping=tm["target_mapping"], mems=mems, mem_len=FL.mem_len,
        reuse_len=FL.reuse_len)
    table = params["model/transformer/word_embedding/lookup_table"]
    bias = params["model/lm_loss/bias"]
    losses = np_reference.lm_loss(output, tm["target"], table, bias)
    logits = output @ table.T + bias
    mask = tm["target_mask"]
    loss_sum += float((losses * mask).sum())
    correct += int(((logits.argmax(-1) == tm["target"]) * mask).sum())
    count += int(mask.sum())
    mems = new_mems
  return loss_sum / count, correct / count, count


def test_held_out_loss_equals_a_numpy_recomputation():
  FL = fx.tiny_flags(init_std=0.3)
  rng = np.random.RandomState(4)
  batches = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(2)]
  template = tf.compat.v1.make_template(
      template_lib.TEMPLATE_SCOPE, pretraining_loss.pretrain_loss_fn(
          fx.xlnet_config_of(FL), fx.run_config_of(FL)))
  mem_shape = [FL.mem_len, 4, FL.d_model]
  dataset = fx.batches_dataset(batches).take(2)
  template(next(iter(dataset)), [tf.zeros(mem_shape)] * FL.n_layer, False)
  params = {}
  for var in template.variables:
    name = template_lib.checkpoint_name(var, template.variable_scope.name)
    params[name] = rng.normal(0.0, 0.3, var.shape.as_list()).astype(
        np.float32)
    var.assign(params[name])

  results = held_out.Evaluator(template, mem_shape, FL.n_layer).run(
      dataset, 2)
  want_loss, want_acc, want_count = _numpy_metrics(FL, params, batches)
  assert results["num_targets"] == want_count == 2 * 4 * 3
  np.testing.assert_allclose(results["loss"], want_loss, rtol=1e-5)
  np.testing.assert_allclose(results["pplx"], np.exp(want_loss), rtol=1e-4)
  assert results["accuracy"] == pytest.approx(want_acc)
  # The memories matter: batch 2 scored from fresh memories differs.
  first, _, n1 = _numpy_metrics(FL, params, batches[:1])
  second, _, n2 = _numpy_metrics(FL, params, batches[1:])
  assert abs((first * n1 + second * n2) / (n1 + n2) - want_loss) > 1e-3


def test_two_stream_loss_builder_matches_numpy():
  """get_loss: the mean cross-entropy over the target tokens, from the
  query stream at the target rows, with the tied softmax weight."""
  FL = fx.tiny_flags(init_std=0.3, mem_len=4)
  batch = fx.fake_batch(np.random.RandomState(6), 4, 8, 3, 40)
  batch["target_mask"][1, 2] = 0.0  # a padded target does not count
  mems = [np.zeros([FL.mem_len, 4, FL.d_model], np.float32)] * FL.n_layer
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    loss, _, _ = pretraining_loss.get_loss(
        fx.xlnet_config_of(FL), fx.run_config_of(FL),
        {k: tf.constant(v) for k, v in batch.items()}, None,
        [tf.constant(m) for m in mems], True)
    rng = np.random.RandomState(2)
    params = {}
    for var in tf.compat.v1.global_variables():
      name = var.name.split(":")[0]
      params[name] = rng.normal(0.0, 0.3, var.shape.as_list()).astype(
          np.float32)
      sess.run(var.assign(params[name]))
    got = sess.run(loss)
  want, _, count = _numpy_metrics(FL, params, [batch])
  assert count == 4 * 3 - 1
  np.testing.assert_allclose(got, want, rtol=1e-5)
