"""The tagging head against a NumPy reference: every position's logits
(a dense layer on the backbone's sequence output, `np_reference.forward`)
and the loss, the cross-entropy of the scored positions (a word's first
piece) averaged over them; the variables are loaded by name."""
import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import np_reference
from tests.finetuning.test_classifier_heads import log_softmax
from xlnet.finetuning.tagging import features as tagging_features
from xlnet.finetuning.tagging import head as tagging_head
from xlnet.finetuning.tagging import layouts
from xlnet.training import warm_start

N_CLASS = 3
TOL = dict(rtol=1e-4, atol=1e-5)


def _windows():
  """Two sentences' windows (the second cut in two), piece ids 9-31."""
  encode = lambda word: tuple(9 + (ord(c) - 97) % 23 for c in word)  # noqa
  sentences = [layouts.Sentence(("ab", "c"), ("B-X", "O"), (1, 2), None),
               layouts.Sentence(("de", "fgh", "i", "jk"),
                                ("O", "B-X", "I-X", "O"), (4, 5, 6, 7),
                                None)]
  windows = tagging_features.make_windows(sentences, encode,
                                          ["B-X", "I-X", "O"], 8, 2)
  assert len(windows) == 3
  return tagging_features.stacked(windows)


def _backbone(params, batch):
  """The backbone's output [B, L, d_model] by the NumPy reference, dropout
  off."""
  hidden, _ = np_reference.forward_of(
      params, fx.TINY_CONFIG, inp_k=batch["input_ids"].T, seg_id=batch["segment_ids"].T,
      input_mask=batch["input_mask"].T.astype(np.float64))
  return hidden.transpose(1, 0, 2)


@pytest.mark.tf_version
def test_tagging_head_matches_numpy(tmp_path):
  shapes = dict(fx.pretrained_shapes(), **{
      "model/tagging/logit/kernel": [fx.TINY_CONFIG["d_model"], N_CLASS],
      "model/tagging/logit/bias": [N_CLASS]})
  params = fx.random_values(shapes, seed=3)
  model = fx.head_model(fx.write_config(str(tmp_path)))
  ckpt = fx.write_checkpoint(str(tmp_path / "model.ckpt"), params)
  batch = _windows()
  with tf.Graph().as_default():
    feats = {k: tf.constant(v.astype(np.float32 if v.dtype == np.float32
                                     else np.int32))
             for k, v in batch.items()}
    logits = tagging_head.get_tagging_logits(
        model.xlnet_config, model.run_config(False), feats, N_CLASS)
    loss = tagging_head.tagging_loss(logits, feats["label_ids"],
                                     feats["label_weights"])
    warm_start.init_from_checkpoint(ckpt, False)
    names = sorted(v.op.name for v in tf.compat.v1.trainable_variables())
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      got_logits, got_loss = sess.run([logits, loss])

  hidden = _backbone(params, batch)
  want = (hidden @ params["model/tagging/logit/kernel"]
          + params["model/tagging/logit/bias"])
  np.testing.assert_allclose(got_logits, want, **TOL)
  weights = batch["label_weights"]
  # 6 scored words: 2 + 4, each once over the three windows.
  assert weights.sum() == 6
  per_position = -np.take_along_axis(
      log_softmax(want), batch["label_ids"][..., None], -1)[..., 0]
  np.testing.assert_allclose(got_loss, (per_position * weights).sum() / 6,
                             **TOL)
  assert names == sorted(set(shapes) - {"model/transformer/mask_emb/mask_emb",
                                        "model/lm_loss/bias"})
