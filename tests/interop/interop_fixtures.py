"""Random tiny checkpoints with each head, built from the graph builders'
own variables (so the names are the ones the programs write), and our
model's outputs on them (the side HF's outputs are compared with); the
checkpoints, their HF exports and SavedModels shared by a test run
(`shared_checkpoint`, `shared_hf_export`, `shared_saved_model`)."""
import json
import os

import numpy as np
import tensorflow as tf

from tests import shared_artifacts
from xlnet import model as model_lib
from xlnet import modeling
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.race import head as race_head
from xlnet.finetuning.squad import head as squad_head
from xlnet.finetuning.tagging import head as tagging_head
from xlnet.interop import hf_export
from xlnet.interop import saved_model
from xlnet.training import checkpoint_io

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
SPIECE = os.path.join(REPO, "tests", "testdata", "golden-spiece.model")
CONFIG = dict(n_layer=2, d_model=8, n_head=2, d_head=4, d_inner=16,
              ff_activation="gelu", untie_r=True, n_token=400)
HEADS = ("lm", "classification", "regression", "race", "squad", "tagging")
TASK = "sts-b"
N_CLASS = 3
RUN = model_lib.RunConfig(is_training=False, use_tpu=False,
                          use_bfloat16=False, dropout=0.0, dropatt=0.0)


def write_config(directory, **overrides):
  """xlnet_config.json of CONFIG (with overrides); returns (path, config)."""
  os.makedirs(directory, exist_ok=True)
  path = os.path.join(directory, "xlnet_config.json")
  values = dict(CONFIG, **overrides)
  with open(path, "w") as f:
    json.dump(values, f)
  return path, model_lib.XLNetConfig(json_path=path)


def features(kind, bsz=2, seq_len=7, seed=0):
  """Batch-major numpy features for `kind`'s head: padding on the left of
  the second row, two segments, `<cls>` last."""
  rng = np.random.RandomState(seed)
  rows = bsz * 4 if kind == "race" else bsz
  ids = rng.randint(9, CONFIG["n_token"], size=(rows, seq_len))
  seg = np.zeros((rows, seq_len), np.int32)
  seg[:, seq_len // 2:] = 1
  seg[:, -1] = 2
  mask = np.zeros((rows, seq_len), np.float32)
  mask[1::2, :2] = 1.0  # padding in front, as the fine-tuning records
  ids[1::2, :2] = 5
  ids[:, -1] = 3
  out = {"input_ids": ids.astype(np.int32), "segment_ids": seg,
         "input_mask": mask}
  if kind == "race":
    out = {k: v.reshape(bsz, 4 * seq_len) for k, v in out.items()}
  if kind == "squad":
    p_mask = np.zeros((bsz, seq_len), np.float32)
    p_mask[:, seq_len // 2:-1] = 1.0  # the question and <sep> cannot answer
    p_mask[1::2, :2] = 1.0
    out.update(p_mask=p_mask,
               cls_index=np.full([bsz], seq_len - 1, np.int32))
  return out


def masked_inputs(feats, hidden):
  """`perm_mask` [B, L, L] hiding the positions `hidden` from every
  position, and `target_mapping` [B, P, L] naming them in order (the
  SavedModel's `masked_lm` inputs, HF's `perm_mask`/`target_mapping`)."""
  bsz, seq_len = feats["input_ids"].shape
  perm_mask = np.zeros([bsz, seq_len, seq_len], np.float32)
  perm_mask[:, :, hidden] = 1.0
  target_mapping = np.zeros([bsz, len(hidden), seq_len], np.float32)
  target_mapping[:, np.arange(len(hidden)), hidden] = 1.0
  return perm_mask, target_mapping


def build(kind, xlnet_config, feats, summary=("last", True)):
  """Our outputs of `kind`'s head on numpy `feats` (a dict of tensors):
  the programs' graph builders with dropout off; `summary` is the
  (summary_type, use_summ_proj) of a classification, regression or RACE
  head."""
  t = {k: tf.constant(v) for k, v in feats.items()}
  if kind in ("classification", "regression"):
    n_class = N_CLASS if kind == "classification" else None
    return {"logits": classifier_logits(xlnet_config, feats, n_class, TASK,
                                        summary)}
  if kind == "race":
    return {"logits": race_head.get_race_logits(xlnet_config, RUN, t,
                                                *summary)}
  if kind == "squad":
    return squad_head.get_qa_outputs(xlnet_config, RUN, t)
  if kind == "tagging":
    return {"logits": tagging_head.get_tagging_logits(xlnet_config, RUN, t,
                                                      N_CLASS)}
  return lm_outputs(xlnet_config, feats)


def classifier_logits(xlnet_config, feats, n_class, task,
                      summary=("last", True)):
  """The classification (`n_class`) or regression (None) head's logits."""
  t = {k: tf.constant(v) for k, v in feats.items()}
  label = tf.zeros(tf.shape(t["input_ids"])[:1],
                   tf.int32 if n_class else tf.float32)
  return classifier_head.get_head_outputs(
      xlnet_config, RUN, dict(t, label_ids=label), n_class, task,
      summary_type=summary[0], use_summ_proj=summary[1])["logits"]


def lm_outputs(xlnet_config, feats, mems=None, mem_len=None):
  """Backbone (with a query stream, to create `mask_emb`) hidden states
  [B, L, D], tied-LM logits [B, L, V] and new memories (time-major)."""
  run = model_lib.RunConfig(is_training=False, use_tpu=False,
                            use_bfloat16=False, dropout=0.0, dropatt=0.0,
                            mem_len=mem_len)
  ids = tf.transpose(tf.constant(feats["input_ids"]))
  seg = tf.transpose(tf.constant(feats["segment_ids"]))
  mask = tf.transpose(tf.constant(feats["input_mask"]))
  model = model_lib.XLNetModel(xlnet_config, run, ids, seg, mask, mems=mems)
  # A query stream builds `mask_emb`, which pretraining checkpoints hold.
  model_lib.XLNetModel(xlnet_config, run, ids, seg, mask,
                       inp_q=tf.zeros_like(mask))
  hidden = model.get_sequence_output()
  with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
    _, logits = modeling.lm_loss(
        hidden, ids, xlnet_config.n_token, xlnet_config.d_model,
        model.get_initializer(), lookup_table=model.get_embedding_table(),
        tie_weight=True, return_logits=True)
  out = {"hidden": tf.transpose(hidden, [1, 0, 2]),
         "logits": tf.transpose(logits, [1, 0, 2])}
  if mem_len:
    out["mems"] = model.get_new_memory()
  return out


def random_checkpoint(directory, kind, seed=0, summary=("last", True),
                      **overrides):
  """A checkpoint of `kind`'s model (its head pooling by `summary`, see
  `build`) with random weights; `overrides` change the XLNetConfig.

  Returns:
    (prefix, config path, XLNetConfig, {name: value}).
  """
  config_path, xlnet_config = write_config(directory, **overrides)
  with tf.Graph().as_default():
    build(kind, xlnet_config, features(kind), summary)
    shapes = {v.op.name: v.shape.as_list()
              for v in tf.compat.v1.global_variables()}
  rng = np.random.RandomState(seed)
  values = {n: (rng.randn(*s) * 0.5).astype(np.float32)
            for n, s in sorted(shapes.items())}
  prefix = checkpoint_io.write_checkpoint(
      os.path.join(directory, "model.ckpt"), values)
  return prefix, config_path, xlnet_config, values


def run_ours(prefix, fetches_fn):
  """Builds `fetches_fn()` in a fresh graph, restores `prefix` and returns
  the fetched numpy values."""
  with tf.Graph().as_default():
    fetches = fetches_fn()
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as sess:
      saver.restore(sess, prefix)
      return sess.run(fetches)


# ---- shared artifacts (tests/shared_artifacts.py) ---------------------------
def shared_checkpoint(kind, seed=0, summary=("last", True), **overrides):
  """`random_checkpoint` of these arguments, written once per test run and
  shared read-only (a test that changes its directory, e.g. writes a
  head.json beside it, works on `shared_artifacts.copy_of`).

  Returns:
    (prefix, config path, XLNetConfig, {name: value}).
  """
  def write(directory, kind, seed, summary, overrides):
    random_checkpoint(directory, kind, seed, tuple(summary), **overrides)

  directory = shared_artifacts.build_once(
      "interop-checkpoint", write, kind=kind, seed=seed,
      summary=list(summary), overrides=overrides)
  return checkpoint_in(directory)


def checkpoint_in(directory):
  """(prefix, config path, XLNetConfig, {name: value}) of the
  `random_checkpoint` written into `directory` (e.g. a copy of a shared
  one)."""
  prefix = os.path.join(directory, "model.ckpt")
  config_path = os.path.join(directory, "xlnet_config.json")
  return (prefix, config_path, model_lib.XLNetConfig(json_path=config_path),
          checkpoint_io.read_tensors(prefix))


def task_of(kind):
  """The --task_name an export of `kind`'s head needs (None: none)."""
  return TASK if kind in ("classification", "regression") else None


def shared_hf_export(kind, summary=("last", True), **overrides):
  """The HF directory `hf_export.export_hf` writes of
  `shared_checkpoint(kind, summary=summary, **overrides)` (with the
  summary type given), once per test run, read-only.

  Returns:
    (HF directory, prefix, XLNetConfig).
  """
  prefix, _, config, _ = shared_checkpoint(kind, summary=summary,
                                           **overrides)

  def export(directory, **recipe):
    del recipe
    hf_export.export_hf(prefix, config, SPIECE, os.path.join(directory, "hf"),
                        task_name=task_of(kind), summary_type=summary[0])

  directory = shared_artifacts.build_once(
      "interop-hf", export, kind=kind, summary=list(summary),
      overrides=overrides)
  return os.path.join(directory, "hf"), prefix, config


def shared_saved_model(kind):
  """The SavedModel `saved_model.export_saved_model` writes of
  `shared_checkpoint(kind)`, once per test run, read-only.

  Returns:
    (SavedModel directory, prefix, XLNetConfig, {name: value}).
  """
  prefix, _, config, values = shared_checkpoint(kind)

  def export(directory, kind):
    assert saved_model.export_saved_model(
        prefix, config, os.path.join(directory, "serving"),
        task_of(kind)) == kind

  directory = shared_artifacts.build_once("interop-saved-model", export,
                                          kind=kind)
  return os.path.join(directory, "serving"), prefix, config, values


def copied_checkpoint(directory, kind, seed=0, summary=("last", True),
                      **overrides):
  """A writable copy, at `directory`, of `shared_checkpoint(kind, seed,
  summary, **overrides)`: (prefix, config path, XLNetConfig, values)."""
  prefix = shared_checkpoint(kind, seed, summary, **overrides)[0]
  return checkpoint_in(shared_artifacts.copy_of(os.path.dirname(prefix),
                                                directory))
