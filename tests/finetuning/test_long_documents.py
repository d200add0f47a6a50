"""Long documents: the windows cut by hand, every piece once and in order,
and the `windows` and `memory` heads against a NumPy reference
(`tests/np_reference.py` window by window, the memory threaded through as
Transformer-XL defines it), the memory against one long sequence, and
where the gradient reaches with `bptt_windows`."""
import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import np_reference
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.long_documents import memory_forward
from xlnet.finetuning.long_documents import settings as settings_lib
from xlnet.finetuning.long_documents import windows
from xlnet.training import warm_start

LENGTH = 6  # 4 pieces a window
TOL = dict(rtol=1e-4, atol=1e-5)
SCOPE = "classification_imdb"


@pytest.mark.quick
def test_windows_cut_by_hand():
  got = windows.document_windows(list(range(11, 18)), 5, 4)
  assert got["input_ids"].tolist() == [[11, 12, 13, 4, 3], [14, 15, 16, 4, 3],
                                       [0, 0, 17, 4, 3], [0, 0, 0, 0, 0]]
  assert got["segment_ids"].tolist() == [[0, 0, 0, 0, 2], [0, 0, 0, 0, 2],
                                         [4, 4, 0, 0, 2], [4, 4, 4, 4, 4]]
  assert got["input_mask"].tolist() == [[0] * 5, [0] * 5, [1, 1, 0, 0, 0],
                                        [1] * 5]
  assert got["window_mask"].tolist() == [1, 1, 1, 0]
  # Two windows at most: the seventh piece is dropped, as truncate drops
  # all after the third.
  assert windows.cut(list(range(11, 18)), 5, 2) == [[11, 12, 13],
                                                    [14, 15, 16]]
  assert windows.document_windows([], 5, 2)["input_ids"].tolist() == [
      [0, 0, 0, 4, 3], [0, 0, 0, 0, 0]]


@pytest.mark.quick
def test_every_piece_in_one_window_in_order():
  rng = np.random.RandomState(0)
  for _ in range(50):
    length, max_windows = rng.randint(3, 9), rng.randint(1, 6)
    ids = list(rng.randint(9, 100, size=rng.randint(0, 40)))
    doc = windows.document_windows(ids, length, max_windows)
    real = doc["window_mask"] > 0
    seen = [doc["input_ids"][w][windows.piece_positions(
        doc["segment_ids"][w], length, 0)][:-1] for w in np.flatnonzero(real)]
    kept = ids[:(length - 2) * max_windows]
    assert np.concatenate(seen).tolist() == kept
    # The real windows come first; all but the last are full.
    assert real.tolist() == sorted(real.tolist(), reverse=True)
    assert all(len(s) == length - 2 for s in seen[:-1])


def documents(distinct=False):
  """Three documents of 3, 1 and 2 windows (W = 3), labels 1, 0, 1; with
  `distinct`, no piece twice in a document."""
  rng = np.random.RandomState(3)
  docs = [windows.document_windows(
      list(9 + np.arange(n) if distinct else rng.randint(9, 32, size=n)),
      LENGTH, 3) for n in (11, 2, 5)]
  feats = {k: np.stack([d[k] for d in docs]) for k in docs[0]}
  feats["label_ids"] = np.array([1, 0, 1], np.int32)
  return feats


def checkpoint(tmp_path):
  """A random pretrained backbone with the pooler and a 2-class head."""
  params = fx.random_values(dict(fx.pretrained_shapes(),
                                 **fx.head_shapes(SCOPE, 2)), seed=4)
  return params, fx.write_checkpoint(str(tmp_path / "model.ckpt"), params)


def run_heads(tmp_path, settings, feats):
  """The classifier head's logits on `feats` read as each of `settings`
  (one graph: the heads share the variables), dropout off."""
  params, ckpt = checkpoint(tmp_path)
  model = fx.head_model(fx.write_config(str(tmp_path)))
  with tf.Graph().as_default():
    tensors = {k: tf.constant(v) for k, v in feats.items()}
    logits = [classifier_head.get_head_outputs(
        model.xlnet_config, model.run_config(False), tensors, 2, "imdb",
        summarize=memory_forward.summarize_fn(s, LENGTH))["logits"]
              for s in settings]
    warm_start.init_from_checkpoint(ckpt, False)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      return params, sess.run(logits)


def np_window(params, feats, b, w, mems=None, mem_len=None):
  """np_reference's backbone on window w of document b (batch of one)."""
  cfg = fx.TINY_CONFIG
  column = lambda name: feats[name][b, w][:, None]  # noqa: E731
  return np_reference.forward_of(
      params, cfg, inp_k=column("input_ids"), seg_id=column("segment_ids"),
      input_mask=column("input_mask"), mems=mems, mem_len=mem_len)


def np_logits(params, summaries):
  """The pooler's projection was applied; the logit layer."""
  return (summaries @ params[f"model/{SCOPE}/logit/kernel"]
          + params[f"model/{SCOPE}/logit/bias"])


def np_summary(params, out):
  """The `<cls>` (last) state projected with tanh."""
  pre = "model/sequnece_summary/summary/"
  return np.tanh(out[-1, 0] @ params[pre + "kernel"] + params[pre + "bias"])


@pytest.mark.quick
@pytest.mark.tf_version
def test_memory_head_matches_numpy(tmp_path):
  feats = documents()
  mem_lens = (4, 9)  # within a window, across two
  params, got = run_heads(tmp_path, [settings_lib.LongDocuments(
      "memory", max_windows=3, mem_len=m) for m in mem_lens], feats)
  for mem_len, logits in zip(mem_lens, got):
    want = []
    for b in range(3):
      mems = None
      for w in range(int(feats["window_mask"][b].sum())):
        out, mems = np_window(params, feats, b, w, mems, mem_len)
      want.append(np_summary(params, out))
    np.testing.assert_allclose(logits, np_logits(params, np.stack(want)),
                               **TOL)


@pytest.mark.tf_version
def test_windows_head_matches_numpy(tmp_path):
  feats = documents()
  poolings = {"mean": np.mean, "max": np.max}
  params, got = run_heads(tmp_path, [settings_lib.LongDocuments(
      "windows", window_pooling=p, max_windows=3) for p in poolings], feats)
  per_window = [[np_summary(params, np_window(params, feats, b, w)[0])
                 for w in range(int(feats["window_mask"][b].sum()))]
                for b in range(3)]
  for pool, logits in zip(poolings.values(), got):
    want = np.stack([pool(summaries, axis=0) for summaries in per_window])
    np.testing.assert_allclose(logits, np_logits(params, want), **TOL)


@pytest.mark.tf_version
def test_memory_equals_one_sequence_where_windows_see_only_the_past(
    tmp_path):
  """With a memory that holds every window before, window k's states are
  the model's on the whole document where each window may not see the
  windows after it (a block perm_mask). Exactly so when the windows read
  as memory have segment 0 everywhere: memory positions count as segment
  0 (their own ids are not kept)."""
  feats = documents()
  feats["segment_ids"][:, :2] = 0
  _, ckpt = checkpoint(tmp_path)
  model = fx.head_model(fx.write_config(str(tmp_path)))
  run = model.run_config(False)
  with tf.Graph().as_default():
    first = {k: tf.constant(feats[k][:1]) for k in feats}
    runs = memory_forward.memory_windows(
        model.xlnet_config, run, first, mem_len=2 * LENGTH)
    per_window = [m.get_sequence_output()[:, 0] for m, _ in runs]
    whole = {k: tf.reshape(first[k], [1, -1])
             for k in memory_forward.WINDOW_INPUTS}
    block = np.repeat(np.arange(3), LENGTH)
    perm = (block[None, :] > block[:, None]).astype(np.float32)[:, :, None]
    long_run = memory_forward.model_lib.XLNetModel(
        model.xlnet_config, run, tf.transpose(whole["input_ids"]),
        tf.transpose(whole["segment_ids"]), tf.transpose(whole["input_mask"]),
        perm_mask=tf.constant(perm))
    warm_start.init_from_checkpoint(ckpt, False)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      got, long_out = sess.run([per_window, long_run.get_sequence_output()])
  np.testing.assert_allclose(np.concatenate(got), long_out[:, 0], **TOL)


@pytest.mark.tf_version
def test_gradient_reaches_the_last_bptt_windows(tmp_path):
  """No piece is in two windows of the batch: the embedding rows of a
  window's pieces get a gradient exactly when the window is among the
  last `bptt_windows` windows of its document (3, 1 and 2 windows)."""
  feats = documents(distinct=True)
  for b in range(1, 3):  # distinct over the batch too
    shift = (feats["input_ids"][:b] >= 9).sum()
    feats["input_ids"][b] += np.where(feats["input_ids"][b] >= 9, shift,
                                      0).astype(np.int32)
  # Two layers: a window's memory of the second layer is the first
  # layer's output, which read the window before as memory.
  model = fx.head_model(fx.write_config(str(tmp_path)))
  spans = (1, 2)  # the last window only; the last two (not all of the first)
  with tf.Graph().as_default():
    tensors = {k: tf.constant(v) for k, v in feats.items()}
    losses = [classifier_head.get_head_outputs(
        model.xlnet_config, model.run_config(False), tensors, 2, "imdb",
        summarize=memory_forward.summarize_fn(settings_lib.LongDocuments(
            "memory", max_windows=3, bptt_windows=k, mem_len=LENGTH),
                                              LENGTH))["total_loss"]
              for k in spans]
    table = [v for v in tf.compat.v1.trainable_variables()
             if "lookup_table" in v.op.name][0]
    grads = [tf.convert_to_tensor(tf.gradients(loss, table)[0])
             for loss in losses]
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      rows = [np.abs(g).sum(1) for g in sess.run(grads)]
  lasts = {0: 2, 1: 0, 2: 1}
  for bptt_windows, reached_rows in zip(spans, rows):
    reached = []
    for b, last in lasts.items():
      for w in range(last + 1):
        pieces = feats["input_ids"][b, w][windows.piece_positions(
            feats["segment_ids"][b, w], LENGTH, 0)][:-1]
        assert len(set(reached_rows[pieces] > 0)) == 1, (b, w)
        reached.append((b, w, bool(reached_rows[pieces[0]] > 0)))
    assert reached == [(b, w, w > lasts[b] - bptt_windows)
                       for b, w, _ in reached], bptt_windows
