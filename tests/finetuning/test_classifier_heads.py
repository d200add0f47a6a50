"""The classification and regression heads against a NumPy reference.

A tiny random checkpoint is written by variable name and loaded by name
(`init_from_checkpoint` fails on any graph variable the checkpoint lacks),
so the variable names are checked too. The backbone reference is
`tests/np_reference.py`; pooling, projection, head and loss are written out
below from their definitions.
"""
import types

import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import np_reference
from xlnet.finetuning.classifier import features as cu
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.classifier import processors as cp
from xlnet.training import warm_start

LENGTH = 9
TOL = dict(rtol=1e-4, atol=1e-5)


def features(labels):
  """Batch-major features of three examples of the real layout (left
  padding, a pair, a truncated pair)."""
  texts = [("9 10 11", None), ("12 13", "14 15 16"),
           ("17 18 19 20 21", "22 23 24 25 26 27 28 29 30 31")]
  rows = [cu.convert_single_example(
      i, cp.InputExample(str(i), a, b, None), None, LENGTH,
      lambda t: [int(w) for w in t.split()]) for i, (a, b) in enumerate(texts)]
  return {"input_ids": np.array([r.input_ids for r in rows], np.int32),
          "segment_ids": np.array([r.segment_ids for r in rows], np.int32),
          "input_mask": np.array([r.input_mask for r in rows], np.float32),
          "label_ids": np.asarray(labels)}


def run_head(model, init_checkpoint, feats, n_class, is_training=False,
             task_name="sst-2", cls_scope=None):
  """Builds `get_head_outputs` of `model` (a ModelConfig) on `feats`, loads
  `init_checkpoint` by name and returns (outputs, trainable variable
  names)."""
  with tf.Graph().as_default():
    tensors = {k: tf.constant(v) for k, v in feats.items()}
    outputs = classifier_head.get_head_outputs(
        model.xlnet_config, model.run_config(is_training), tensors, n_class,
        task_name, cls_scope, model.summary_type, model.use_summ_proj)
    warm_start.init_from_checkpoint(init_checkpoint, False)
    names = sorted(v.op.name for v in tf.compat.v1.trainable_variables())
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      return sess.run(outputs), names


def reference_summary(params, feats, summary_type, use_proj):
  """Backbone (np_reference) then pooling and the tanh projection."""
  out, _ = np_reference.forward_of(
      params, fx.TINY_CONFIG, inp_k=feats["input_ids"].T, seg_id=feats["segment_ids"].T,
      input_mask=feats["input_mask"].T)
  # out: [len, bsz, d_model]; "last" is the <cls> position (left padding).
  pooled = {"last": out[-1], "first": out[0], "mean": out.mean(0)}[
      summary_type]
  if use_proj:
    pre = "model/sequnece_summary/summary/"
    pooled = np.tanh(pooled @ params[pre + "kernel"] + params[pre + "bias"])
  return pooled


def log_softmax(logits):
  top = logits.max(-1, keepdims=True)
  return logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))


@pytest.mark.quick
@pytest.mark.tf_version
@pytest.mark.parametrize("summary_type,use_proj,cls_scope", [
    ("last", True, None), ("mean", False, "shared_nli"),
    ("first", True, None)])
def test_classification_head_matches_numpy(tmp_path, summary_type, use_proj,
                                           cls_scope):
  n_class = 3
  scope = f"classification_{cls_scope or 'mnli_matched'}"
  shapes = dict(fx.pretrained_shapes(), **fx.head_shapes(scope, n_class))
  params = fx.random_values(shapes, seed=1)
  model = fx.head_model(fx.write_config(str(tmp_path)),
                        summary_type=summary_type, use_summ_proj=use_proj)
  ckpt = fx.write_checkpoint(str(tmp_path / "model.ckpt"), params)
  feats = features(np.array([2, 0, 1], np.int32))
  got, names = run_head(model, ckpt, feats, n_class,
                        task_name="MNLI_matched", cls_scope=cls_scope)

  pooled = reference_summary(params, feats, summary_type, use_proj)
  logits = (pooled @ params[f"model/{scope}/logit/kernel"] +
            params[f"model/{scope}/logit/bias"])
  loss = -log_softmax(logits)[np.arange(3), feats["label_ids"]]
  np.testing.assert_allclose(got["logits"], logits, **TOL)
  np.testing.assert_allclose(got["per_example_loss"], loss, **TOL)
  np.testing.assert_allclose(got["total_loss"], loss.mean(), **TOL)
  assert got["is_real_example"].tolist() == [1, 1, 1]

  # The graph holds exactly the backbone (no mask_emb, no LM bias in
  # fine-tuning), the pooler (when used) and the head.
  expected = set(shapes) - {"model/transformer/mask_emb/mask_emb",
                            "model/lm_loss/bias"}
  if not use_proj:
    expected -= {"model/sequnece_summary/summary/kernel",
                 "model/sequnece_summary/summary/bias"}
  assert names == sorted(expected)


@pytest.mark.tf_version
def test_regression_head_matches_numpy(tmp_path):
  scope = "regression_sts-b"
  shapes = dict(fx.pretrained_shapes(), **fx.head_shapes(scope, 1))
  params = fx.random_values(shapes, seed=2)
  model = fx.head_model(fx.write_config(str(tmp_path)))
  ckpt = fx.write_checkpoint(str(tmp_path / "model.ckpt"), params)
  feats = features(np.array([4.5, 0.25, 2.0], np.float32))
  got, names = run_head(model, ckpt, feats, None, task_name="STS-B",
                        cls_scope="ignored_by_regression")

  pooled = reference_summary(params, feats, "last", True)
  score = (pooled @ params[f"model/{scope}/logit/kernel"] +
           params[f"model/{scope}/logit/bias"])[:, 0]
  loss = (score - feats["label_ids"]) ** 2
  np.testing.assert_allclose(got["logits"], score, **TOL)
  np.testing.assert_allclose(got["per_example_loss"], loss, **TOL)
  np.testing.assert_allclose(got["total_loss"], loss.mean(), **TOL)
  assert f"model/{scope}/logit/kernel" in names


@pytest.mark.tf_version
def test_training_mode_applies_dropout_and_bfloat16_stays_close(tmp_path):
  scope = "classification_sst-2"
  params = fx.random_values(dict(fx.pretrained_shapes(),
                                 **fx.head_shapes(scope, 2)), seed=3)
  ckpt = fx.write_checkpoint(str(tmp_path / "model.ckpt"), params)
  config = fx.write_config(str(tmp_path))
  feats = features(np.array([1, 0, 1], np.int32))
  plain, _ = run_head(fx.head_model(config), ckpt, feats, 2)
  bf16, _ = run_head(fx.head_model(config, use_bfloat16=True), ckpt, feats,
                     2)
  assert bf16["logits"].dtype == np.float32
  np.testing.assert_allclose(bf16["logits"], plain["logits"], atol=0.1)
  dropped, _ = run_head(fx.head_model(config, dropout=0.5), ckpt, feats, 2,
                        is_training=True)
  assert not np.allclose(dropped["logits"], plain["logits"], atol=1e-3)
  no_dropout, _ = run_head(fx.head_model(config, dropout=0.0, dropatt=0.0),
                           ckpt, feats, 2, is_training=True)
  np.testing.assert_allclose(no_dropout["logits"], plain["logits"], **TOL)
