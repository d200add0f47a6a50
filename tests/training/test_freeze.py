"""Frozen lower layers (`OptimizerConfig.freeze_layers`, --freeze_layers):
which variables freeze, the layer-wise decay beside them, the limit, the
graph-mode optimizer (TPUEstimator's) and the engine across a resume.

The expectations are written out by hand: the names a rule freezes, the
decay factors rate^(n_layer-1-l), a gradient norm of known gradients, the
initial weights' bits.
"""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import train_fixtures as fx
from xlnet import model as model_lib
from xlnet.finetuning import config as finetune_config
from xlnet.pretraining import pretrain
from xlnet.training import config
from xlnet.training import optimizer
from xlnet.training import tpu_estimator
from xlnet.training import trainer as trainer_lib

T = "model/transformer/"
# Every kind of variable of a 3-layer model with segments and a head.
NAMES = [T + "word_embedding/lookup_table", T + "mask_emb/mask_emb",
         T + "r_w_bias", T + "r_r_bias", T + "r_s_bias", T + "seg_embed",
         T + "layer_0/rel_attn/q/kernel", T + "layer_0/ff/LayerNorm/gamma",
         T + "layer_1/rel_attn/o/kernel", T + "layer_2/ff/layer_1/bias",
         "model/lm_loss/bias", "model/sequnece_summary/summary/kernel",
         "model/classification_sst-2/logit/kernel"]


@pytest.mark.quick
def test_which_variables_a_number_of_layers_freezes():
  frozen = {n: [name for name in NAMES if optimizer.is_frozen(name, n)]
            for n in (0, 1, 3)}
  assert frozen[0] == []
  assert frozen[1] == NAMES[:8]  # the embeddings, biases, layer 0
  assert frozen[3] == NAMES[:10]  # the whole backbone
  assert optimizer.trained(NAMES, 2) == [False] * 9 + [True] * 4


@pytest.mark.quick
def test_layer_decay_counts_from_the_top_over_all_layers():
  """Layer l's factor stays rate^(n_layer-1-l) whatever is frozen below
  it; the depth is read from the variables when not given."""
  trained = [n for n, t in zip(NAMES, optimizer.trained(NAMES, 1)) if t]
  assert trained == NAMES[8:]
  for n_layer in (3, None):
    assert optimizer.layer_decay_scales(trained, n_layer, 0.5) == [
        0.5, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.quick
def test_more_layers_than_the_model_has_are_refused():
  message = "--freeze_layers=4 must be <= n_layer=3 (the model's layers)"
  with pytest.raises(ValueError) as e:
    config.OptimizerConfig(learning_rate=1e-3, train_steps=5, n_layer=3,
                           freeze_layers=4)
  assert str(e.value) == message
  with pytest.raises(ValueError) as e:
    optimizer.trained(NAMES, 4)
  assert str(e.value) == message
  engine = finetune_config.EngineConfig(
      checkpoint=config.CheckpointConfig(model_dir="m"),
      optimizer=config.OptimizerConfig(learning_rate=1e-3, train_steps=5,
                                       freeze_layers=4))
  model = finetune_config.ModelConfig(xlnet_config=model_lib.XLNetConfig(
      n_layer=3, d_model=8, n_head=1, d_head=8, d_inner=8,
      ff_activation="gelu", untie_r=True, n_token=32))
  with pytest.raises(ValueError) as e:
    finetune_config.check_together(model, engine)
  assert str(e.value) == message


def test_graph_mode_optimizer_trains_only_the_layers_above():
  """TPUEstimator's `get_train_op` on a linear loss (gradient = its
  coefficients): the norm of the trained variables' gradients only, no
  slot for a frozen variable, which keeps its bits over two steps."""
  rng = np.random.RandomState(0)
  shapes = [(4, 3)] * len(NAMES)
  variables = [tf.compat.v1.get_variable(
      n, initializer=rng.randn(*s).astype(np.float32))
               for n, s in zip(NAMES, shapes)]
  coefs = [rng.randn(*s).astype(np.float32) for s in shapes]
  loss = tf.add_n([tf.reduce_sum(c * v) for c, v in zip(coefs, variables)])
  train_op, _, gnorm = tpu_estimator.get_train_op(
      config.OptimizerConfig(learning_rate=0.1, train_steps=10,
                             warmup_steps=0, weight_decay=0.01, clip=1e9,
                             n_layer=3, freeze_layers=2), loss)
  slots = {v.name.split(":")[0] for v in tf.compat.v1.global_variables()
           if v not in variables}
  assert slots == {f"{n}/adam_{s}" for n in NAMES[9:] for s in "mv"} | {
      "global_step"}
  with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    before = sess.run(variables)
    norms = [sess.run([train_op, gnorm])[1] for _ in range(2)]
    after = sess.run(variables)
  np.testing.assert_allclose(norms, np.sqrt(sum(
      (c ** 2).sum() for c in coefs[9:])), rtol=1e-6)
  for name, b, a in zip(NAMES, before, after):
    if name in NAMES[:9]:
      np.testing.assert_array_equal(a, b, err_msg=name)
    else:
      assert np.abs(a - b).min() > 1e-3, name


def _trainer(model_dir, freeze_layers, train_steps):
  """The engine's trainer of the tiny pretraining model (no memories, lr
  1e-2)."""
  return fx.make_trainer(fx.tiny_flags(
      mem_len=0, learning_rate=1e-2, freeze_layers=freeze_layers,
      train_steps=train_steps), 1, model_dir)


def _fit(model_dir, freeze_layers, train_steps, trainer=None):
  """`trainer_lib.fit` of `_trainer` (or `trainer`) in `model_dir` to
  `train_steps`, on the same batches."""
  trainer = trainer or _trainer(model_dir, freeze_layers, train_steps)
  rng = np.random.RandomState(1)
  batches = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(3)]
  return trainer_lib.fit(
      trainer, lambda start: lambda _: fx.batches_dataset(batches).skip(
          start), trainer.optimizer, config.CheckpointConfig(
              model_dir=str(model_dir)), 1, 32, "tokens", pretrain.log_line)


def _frozen(values):
  return {n: v for n, v in values.items() if optimizer.is_frozen(n, 1)}


@pytest.mark.eager
def test_engine_keeps_frozen_weights_and_their_resume(tmp_path):
  """--freeze_layers=1 on the 2-layer model: after two steps, and after a
  resumed third, the embeddings, biases and layer 0 hold their initial
  bits and have no slots; the others moved. Resuming with another value,
  or a run that froze nothing with 1, is refused in one line."""
  model_dir = tmp_path / "m"
  trainer = _trainer(model_dir, 1, 2)
  trainer.build(fx.batches_dataset([fx.fake_batch(
      np.random.RandomState(0), 4, 8, 3, 40)]).element_spec)
  initial = trainer.state.values()
  # The word embedding, mask_emb, the 3 biases, seg_embed; layer 0's 5
  # attention kernels, 4 feed-forward kernels and biases, 2 LayerNorms.
  assert len(_frozen(initial)) == 6 + 5 + 4 + 4
  _fit(model_dir, 1, 2, trainer)
  _fit(model_dir, 1, 3)
  for step in (2, 3):
    saved = fx.checkpoint_values(model_dir / f"model.ckpt-{step}")
    for name, value in _frozen(initial).items():
      np.testing.assert_array_equal(saved[name], value, err_msg=name)
      assert not [n for n in saved if n.startswith(name + "/")], name
    trained = [n for n in initial if n not in _frozen(initial) and
               not optimizer.is_optimizer_variable(n)]
    assert len(trained) == 13 + 1 and all(  # layer 1, lm_loss/bias
        f"{n}/Adam" in saved and np.abs(saved[n] - initial[n]).max() > 1e-4
        for n in trained)
  assert json.loads((model_dir / "frozen_layers.json").read_text()) == {
      "freeze_layers": 1}

  with pytest.raises(ValueError) as e:
    _fit(model_dir, 2, 4)
  assert str(e.value) == (
      f"--freeze_layers=2 but {model_dir} was trained with "
      f"--freeze_layers=1 ({model_dir / 'frozen_layers.json'}): its "
      "checkpoints hold the optimizer slots of the variables it trained, "
      "and a resumed run keeps the frozen ones frozen; rerun with "
      f"--freeze_layers=1 or use another --model_dir")
  os.remove(model_dir / "frozen_layers.json")
  with pytest.raises(ValueError) as e:
    _fit(model_dir, 1, 4)
  assert "trained with --freeze_layers=0 (no frozen_layers.json)" in str(
      e.value)
