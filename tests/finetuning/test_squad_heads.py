"""The SQuAD heads against a NumPy reference on a tiny random checkpoint
written by variable name (the released names), and the beam against an
exhaustive search."""
import numpy as np
import pytest
import tensorflow as tf

from tests import checkpoint_fixtures as ckpt_fx
from tests import np_reference
from tests import qa_fixtures
from xlnet.finetuning.squad import alignment as squad_alignment
from xlnet.finetuning.squad import features as squad_features
from xlnet.finetuning.squad import head as squad_head

D = qa_fixtures.TINY_CONFIG["d_model"]
SEQ_LEN = 12
TOL = dict(rtol=1e-4, atol=1e-4)
HEAD_SHAPES = {
    "start_logits/dense/kernel": [D, 1],
    "start_logits/dense/bias": [1],
    "end_logits/dense_0/kernel": [2 * D, D],
    "end_logits/dense_0/bias": [D],
    "end_logits/LayerNorm/gamma": [D],
    "end_logits/LayerNorm/beta": [D],
    "end_logits/dense_1/kernel": [D, 1],
    "end_logits/dense_1/bias": [1],
    "answer_class/dense_0/kernel": [2 * D, D],
    "answer_class/dense_0/bias": [D],
    "answer_class/dense_1/kernel": [D, 1],
}


# ---------------------------------------------------------- NumPy reference
def _dense(params, name, x):
  return x @ params[name + "/kernel"] + params[name + "/bias"]


def _log_softmax(x):
  top = x.max()
  return x - top - np.log(np.exp(x - top).sum())


def _masked(logits, p_mask):
  return logits * (1 - p_mask) - 1e30 * p_mask


def np_start_logits(params, hidden, p_mask):
  """`[L]` masked start logits of one window (hidden `[L, D]`)."""
  return _masked(_dense(params, "start_logits/dense", hidden)[:, 0], p_mask)


def np_end_log_probs(params, hidden, start, p_mask):
  """`[L]` end log-probabilities of one window given start position."""
  x = np.concatenate([hidden, np.tile(hidden[start], [len(hidden), 1])], -1)
  h = np.tanh(_dense(params, "end_logits/dense_0", x))
  h = np_reference.layer_norm(h, params["end_logits/LayerNorm/gamma"],
                              params["end_logits/LayerNorm/beta"])
  logits = _dense(params, "end_logits/dense_1", h)[:, 0]
  return _log_softmax(_masked(logits, p_mask))


def np_cls_logit(params, hidden, start_logits, cls_index):
  """Answerability logit of one window."""
  prob = np.exp(start_logits - start_logits.max())
  prob /= prob.sum()
  feature = np.concatenate([prob @ hidden, hidden[cls_index]])
  h = np.tanh(_dense(params, "answer_class/dense_0", feature))
  return float(h @ params["answer_class/dense_1/kernel"][:, 0])


# ---------------------------------------------------------------- fixtures
def _features(rng):
  """Two windows in the SQuAD layout (the second padded)."""
  paragraph = squad_alignment.TokenizedParagraph(
      rng.integers(9, 1000, 20).astype(np.int32), None, None)
  rows = [squad_features.window_features(paragraph, [31, 32, 33], [(2, 6)],
                                         SEQ_LEN),
          squad_features.window_features(paragraph, [41], [(10, 5)], SEQ_LEN)]
  feats = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
  out = {k: v.astype(np.int32) for k, v in feats.items()}
  out["input_mask"] = feats["input_mask"].astype(np.float32)
  out["p_mask"] = feats["p_mask"].astype(np.float32)
  out["cls_index"] = feats["cls_index"][:, 0].astype(np.int32)
  out["unique_ids"] = np.array([7, 8], np.int32)
  out["start_positions"] = np.array([1, 4], np.int32)
  out["end_positions"] = np.array([3, 4], np.int32)
  out["is_impossible"] = np.array([0.0, 1.0], np.float32)
  return out


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
  """(checkpoint prefix, params) of a random model + heads, by name."""
  path = str(tmp_path_factory.mktemp("squad_ckpt") / "model.ckpt")
  shapes = dict(qa_fixtures.backbone_shapes(), **HEAD_SHAPES)
  return path, ckpt_fx.random_checkpoint(path, shapes, seed=3)


def _run(fn, ckpt, features):
  """Builds fn(features), restores `ckpt` by name, returns values and the
  variable names/shapes of the graph."""
  with tf.Graph().as_default():
    tensors = fn({k: tf.constant(v) for k, v in features.items()})
    variables = {v.op.name: v.shape.as_list()
                 for v in tf.compat.v1.global_variables()}
    with tf.compat.v1.Session() as sess:
      tf.compat.v1.train.Saver().restore(sess, ckpt)
      return sess.run(tensors), variables


def _beam(model, start_n_top, end_n_top):
  """`get_qa_predictions` of `model` (a ModelConfig) as fn(features)."""
  return lambda feats: squad_head.get_qa_predictions(
      model.xlnet_config, model.run_config(is_training=False), feats,
      start_n_top, end_n_top)


def _np_backbone(params, features):
  """Reference backbone output `[L, B, D]`."""
  c = qa_fixtures.TINY_CONFIG
  output, _ = np_reference.forward(
      params, c["n_layer"], c["d_model"], c["n_head"], c["d_head"],
      c["d_inner"], c["ff_activation"], c["untie_r"],
      inp_k=features["input_ids"].T, seg_id=features["segment_ids"].T,
      input_mask=features["input_mask"].T.astype(np.float64))
  return output


# ------------------------------------------------------------------- tests
@pytest.mark.quick
@pytest.mark.tf_version
def test_training_heads_and_loss_match_numpy(tmp_path, checkpoint):
  ckpt, params = checkpoint
  features = _features(np.random.default_rng(0))
  model = qa_fixtures.tiny_model(tmp_path)

  def build(feats):
    run_config = model.run_config(is_training=True)
    outputs = squad_head.get_qa_outputs(model.xlnet_config, run_config,
                                        feats)
    return dict(outputs, loss=squad_head.get_qa_loss(
        model.xlnet_config, run_config, feats)[0])

  got, variables = _run(build, ckpt, features)
  assert variables == dict(qa_fixtures.backbone_shapes(), **HEAD_SHAPES)

  hidden = _np_backbone(params, features)
  losses = []
  for b in range(2):
    p_mask = features["p_mask"][b]
    open_pos = p_mask == 0
    start = np_start_logits(params, hidden[:, b], p_mask)
    start_lp = _log_softmax(start)
    end_lp = np_end_log_probs(params, hidden[:, b],
                              features["start_positions"][b], p_mask)
    cls = np_cls_logit(params, hidden[:, b], start,
                       features["cls_index"][b])
    np.testing.assert_allclose(got["start_log_probs"][b][open_pos],
                               start_lp[open_pos], **TOL)
    np.testing.assert_allclose(got["end_log_probs"][b][open_pos],
                               end_lp[open_pos], **TOL)
    assert (got["start_log_probs"][b][~open_pos] < -1e29).all()
    np.testing.assert_allclose(got["cls_logits"][b], cls, **TOL)
    z = features["is_impossible"][b]
    sigmoid_ce = max(cls, 0) - cls * z + np.log1p(np.exp(-abs(cls)))
    losses.append((-start_lp[features["start_positions"][b]],
                   -end_lp[features["end_positions"][b]], sigmoid_ce))
  start_ce, end_ce, cls_ce = np.mean(losses, axis=0)
  np.testing.assert_allclose(got["loss"],
                             0.5 * (start_ce + end_ce) + 0.5 * cls_ce, **TOL)


@pytest.mark.tf_version
def test_beam_matches_exhaustive_top_k(tmp_path, checkpoint):
  ckpt, params = checkpoint
  features = _features(np.random.default_rng(1))
  k, e = 3, 2
  got, _ = _run(_beam(qa_fixtures.tiny_model(tmp_path), k, e), ckpt,
                features)
  np.testing.assert_array_equal(got["unique_ids"], [7, 8])
  hidden = _np_backbone(params, features)
  for b in range(2):
    p_mask = features["p_mask"][b]
    start = np_start_logits(params, hidden[:, b], p_mask)
    start_lp = _log_softmax(start)
    # Every start, ranked; keep the k best.
    best_starts = np.argsort(-start_lp, kind="stable")[:k]
    np.testing.assert_array_equal(got["start_top_index"][b], best_starts)
    np.testing.assert_allclose(got["start_top_log_probs"][b],
                               start_lp[best_starts], **TOL)
    for i, s in enumerate(best_starts):
      end_lp = np_end_log_probs(params, hidden[:, b], s, p_mask)
      best_ends = np.argsort(-end_lp, kind="stable")[:e]
      np.testing.assert_array_equal(
          got["end_top_index"][b, i * e:(i + 1) * e], best_ends)
      np.testing.assert_allclose(
          got["end_top_log_probs"][b, i * e:(i + 1) * e], end_lp[best_ends],
          **TOL)
    np.testing.assert_allclose(
        got["cls_logits"][b],
        np_cls_logit(params, hidden[:, b], start, features["cls_index"][b]),
        **TOL)


def test_full_width_beam_finds_the_best_span_of_all(tmp_path, checkpoint):
  ckpt, params = checkpoint
  features = _features(np.random.default_rng(2))
  got, _ = _run(_beam(qa_fixtures.tiny_model(tmp_path), SEQ_LEN, SEQ_LEN),
                ckpt, features)
  hidden = _np_backbone(params, features)
  for b in range(2):
    p_mask = features["p_mask"][b]
    start_lp = _log_softmax(np_start_logits(params, hidden[:, b], p_mask))
    open_pos = np.flatnonzero(p_mask == 0)
    # Exhaustive: every (start, end) pair of open positions.
    pairs = {(s, t): start_lp[s] + np_end_log_probs(params, hidden[:, b], s,
                                                    p_mask)[t]
             for s in open_pos for t in open_pos}
    best = max(pairs, key=pairs.get)
    scores = (got["start_top_log_probs"][b][:, None] +
              got["end_top_log_probs"][b].reshape(SEQ_LEN, SEQ_LEN))
    i, j = np.unravel_index(np.argmax(scores), scores.shape)
    assert (got["start_top_index"][b][i],
            got["end_top_index"][b].reshape(SEQ_LEN, SEQ_LEN)[i, j]) == best
    np.testing.assert_allclose(scores[i, j], pairs[best], **TOL)
