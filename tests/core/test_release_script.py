"""A script written against the release's modules runs here unchanged.

The first half of this file is such a script, in the release's style: it
defines the release's flags (their names and defaults as the release's
train_gpu.py, run_classifier.py, run_squad.py and run_race.py define them)
and builds its graphs with `function_builder`, `model_utils`, `xlnet` and
`modeling` imported under the release's module names, then runs a few
steps in a `tf.compat.v1.Session`. The tests check its numbers by hand:
the losses from the fetched logits in NumPy, the learning rate from the
schedule's formula, the checkpoint names the release's graphs create, the
warm start's values, the configs from the flags' values.
"""
import glob
import json
import os

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

import function_builder
import model_utils
import modeling
from tests import train_fixtures
import xlnet
from xlnet.training import tpu_estimator

pytestmark = pytest.mark.tf_version

# ---- the script ---------------------------------------------------------------
FLAGS = flags.FlagValues()
_fv = dict(flag_values=FLAGS)
# Model (train_gpu.py).
flags.DEFINE_integer("n_layer", 1, "Number of layers.", **_fv)
flags.DEFINE_integer("d_model", 16, "Dimension of the model.", **_fv)
flags.DEFINE_integer("n_head", 2, "Number of attention heads.", **_fv)
flags.DEFINE_integer("d_head", 8, "Dimension of each attention head.", **_fv)
flags.DEFINE_integer("d_inner", 32, "Dimension of inner hidden size.", **_fv)
flags.DEFINE_string("ff_activation", "gelu", "relu or gelu.", **_fv)
flags.DEFINE_bool("untie_r", True, "Untie r_w_bias and r_r_bias.", **_fv)
flags.DEFINE_integer("n_token", 40, "Vocab size.", **_fv)
flags.DEFINE_integer("mem_len", 3, "Number of steps to cache.", **_fv)
flags.DEFINE_integer("reuse_len", 4, "Tokens that can be reused.", **_fv)
flags.DEFINE_bool("same_length", False, "Same length attention.", **_fv)
flags.DEFINE_bool("bi_data", False, "Bidirectional data.", **_fv)
flags.DEFINE_integer("num_predict", 3, "Tokens to predict.", **_fv)
# The run (run_classifier.py).
flags.DEFINE_string("model_config_path", None, "Model config path.", **_fv)
flags.DEFINE_float("dropout", 0.1, "Dropout rate.", **_fv)
flags.DEFINE_float("dropatt", 0.1, "Attention dropout rate.", **_fv)
flags.DEFINE_integer("clamp_len", -1, "Clamp length.", **_fv)
flags.DEFINE_string("summary_type", "last", "Method used to summarize a "
                    "sequence into a vector.", **_fv)
flags.DEFINE_bool("use_summ_proj", True, "Whether to use projection for "
                  "summarizing sequences.", **_fv)
flags.DEFINE_bool("use_bfloat16", False, "Whether to use bfloat16.", **_fv)
flags.DEFINE_enum("init", "normal", ["normal", "uniform"],
                  "Initialization method.", **_fv)
flags.DEFINE_float("init_std", 0.02, "Initialization std when init is "
                   "normal.", **_fv)
flags.DEFINE_float("init_range", 0.1, "Initialization std when init is "
                   "uniform.", **_fv)
flags.DEFINE_string("init_checkpoint", None, "Checkpoint path for "
                    "initializing the model.", **_fv)
flags.DEFINE_string("model_dir", "", "Directory for saving the finetuned "
                    "model.", **_fv)
flags.DEFINE_bool("use_tpu", False, "whether to use TPU.", **_fv)
flags.DEFINE_integer("num_hosts", 1, "How many TPU hosts.", **_fv)
flags.DEFINE_integer("num_core_per_host", 1, "8 for TPU v2 and v3-8, 16 "
                     "for larger TPU v3 pod.", **_fv)
flags.DEFINE_string("tpu", None, "TPU name.", **_fv)
flags.DEFINE_string("master", None, "master", **_fv)
flags.DEFINE_integer("iterations", 1000, "number of iterations per TPU "
                     "training loop.", **_fv)
flags.DEFINE_integer("train_steps", 4, "Number of training steps", **_fv)
flags.DEFINE_integer("warmup_steps", 0, "number of warmup steps", **_fv)
flags.DEFINE_float("learning_rate", 1e-3, "initial learning rate", **_fv)
flags.DEFINE_float("lr_layer_decay_rate", 1.0, "Top layer: lr[L] = "
                   "FLAGS.learning_rate. Low layer: lr[l-1] = lr[l] * "
                   "lr_layer_decay_rate.", **_fv)
flags.DEFINE_float("min_lr_ratio", 0.0, "min lr ratio for cos decay.", **_fv)
flags.DEFINE_float("clip", 1.0, "Gradient clipping", **_fv)
flags.DEFINE_integer("max_save", 0, "Max number of checkpoints to save. "
                     "Use 0 to save all.", **_fv)
flags.DEFINE_integer("save_steps", None, "Save the model for every "
                     "save_steps. If None, not to save any model.", **_fv)
flags.DEFINE_float("weight_decay", 0.0, "Weight decay rate", **_fv)
flags.DEFINE_float("adam_epsilon", 1e-8, "Adam epsilon", **_fv)
flags.DEFINE_string("decay_method", "poly", "poly or cos", **_fv)
# The tasks (run_classifier.py, run_squad.py).
flags.DEFINE_string("task_name", "sts-b", "Task name", **_fv)
flags.DEFINE_string("cls_scope", None, "Classifier layer scope.", **_fv)
flags.DEFINE_integer("start_n_top", 2, "Beam size for span start.", **_fv)
flags.DEFINE_integer("end_n_top", 3, "Beam size for span end.", **_fv)

BSZ, SEQ_LEN, N_CLASS = 4, 8, 3


def pretrain_graph(steps):
  """train_gpu.py's graph: the loss with memories, the train op; `steps`
  steps on one batch, then a checkpoint in --model_dir. Returns what the
  checks need."""
  batch = train_fixtures.fake_batch(np.random.RandomState(0), BSZ, SEQ_LEN,
                                    FLAGS.num_predict, FLAGS.n_token)
  features = {k: tf.constant(v) for k, v in batch.items()}
  mems = {"mems": [tf.zeros([FLAGS.mem_len, BSZ, FLAGS.d_model])
                   for _ in range(FLAGS.n_layer)]}
  total_loss, new_mems, monitor_dict = function_builder.get_loss(
      FLAGS, features, None, mems, True)
  train_op, learning_rate, gnorm = model_utils.get_train_op(FLAGS,
                                                            total_loss)
  global_step = tf.compat.v1.train.get_or_create_global_step()
  saver = tf.compat.v1.train.Saver()
  with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    rates = []
    for _ in range(steps):
      _, rate, norm, loss = sess.run([train_op, learning_rate, gnorm,
                                      total_loss])
      rates.append(rate)
    prefix = saver.save(sess, os.path.join(FLAGS.model_dir, "model.ckpt"),
                        global_step=global_step)
    shapes = [m.shape.as_list() for m in new_mems["mems"]]
    names = sorted(v.op.name for v in tf.compat.v1.trainable_variables())
    step = sess.run(global_step)
  return dict(loss=loss, norm=norm, rates=rates, step=step, shapes=shapes,
              names=names, prefix=prefix,
              monitored=monitor_dict["total_loss"] is total_loss)


def finetune_features(rng, width):
  """A batch of fine-tuning features (the release's names and dtypes):
  ids in [9, n_token), padding in front of the first two rows."""
  input_mask = np.zeros((BSZ, width), np.float32)
  input_mask[:2, :2] = 1.0
  segment_ids = (np.arange(width) >= width // 2).astype(np.int32)
  return dict(
      input_ids=rng.randint(9, FLAGS.n_token, (BSZ, width)).astype(np.int32),
      segment_ids=np.tile(segment_ids, (BSZ, 1)), input_mask=input_mask)


def finetune_graph():
  """run_classifier.py's, run_race.py's and run_squad.py's heads on one
  backbone, warm-started from --init_checkpoint, one training step of the
  classifier; the release's own kind of head built with `xlnet` and
  `modeling` (in evaluation mode: the same numbers without dropout)."""
  rng = np.random.RandomState(1)
  cls = dict(finetune_features(rng, SEQ_LEN),
             label_ids=np.array([0, 2, 1, 2], np.int32))
  race = dict(finetune_features(rng, 4 * SEQ_LEN),
              label_ids=np.array([3, 0, 1, 2], np.int32))
  p_mask = np.zeros((BSZ, SEQ_LEN), np.float32)
  p_mask[:, :3] = 1.0
  squad = dict(finetune_features(rng, SEQ_LEN), p_mask=p_mask,
               cls_index=np.full(BSZ, SEQ_LEN - 1, np.int32),
               start_positions=np.array([3, 4, 5, 6], np.int32))
  const = lambda batch: {k: tf.constant(v) for k, v in batch.items()}  # noqa
  cls_loss, cls_per_example, cls_logits = (
      function_builder.get_classification_loss(FLAGS, const(cls), N_CLASS,
                                               True))
  race_loss, race_per_example, race_logits = function_builder.get_race_loss(
      FLAGS, const(race), True)
  qa_train = function_builder.get_qa_outputs(FLAGS, const(squad), True)
  qa_beam = function_builder.get_qa_outputs(FLAGS, const(squad), False)
  own_logits = own_head_logits(const(cls))
  model_utils.init_from_checkpoint(FLAGS)
  train_op, _, _ = model_utils.get_train_op(FLAGS, cls_loss)
  table = [v for v in tf.compat.v1.global_variables()
           if v.op.name == "model/transformer/word_embedding/lookup_table"][0]
  with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    out = sess.run(dict(
        cls=(cls_loss, cls_per_example, cls_logits),
        race=(race_loss, race_per_example, race_logits), qa_train=qa_train,
        qa_beam=qa_beam, own_logits=own_logits, table=table))
    sess.run(train_op)
    out["trained_table"] = sess.run(table)
  return out, cls, race, squad


def own_head_logits(features):
  """A classification head of the release's kind, written with `xlnet` and
  `modeling` (evaluation mode)."""
  xlnet_config = xlnet.XLNetConfig(json_path=FLAGS.model_config_path)
  run_config = xlnet.create_run_config(False, True, FLAGS)
  model = xlnet.XLNetModel(
      xlnet_config=xlnet_config, run_config=run_config,
      input_ids=tf.transpose(features["input_ids"], [1, 0]),
      seg_ids=tf.transpose(features["segment_ids"], [1, 0]),
      input_mask=tf.transpose(features["input_mask"], [1, 0]))
  summary = model.get_pooled_out(FLAGS.summary_type, FLAGS.use_summ_proj)
  with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
    _, logits = modeling.classification_loss(
        hidden=summary, labels=features["label_ids"], n_class=N_CLASS,
        initializer=model.get_initializer(),
        scope=f"classification_{FLAGS.task_name.lower()}",
        return_logits=True)
  return logits
# ---- end of the script ------------------------------------------------------


def _log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


# The release's checkpoint names of a 1-layer model with untie_r and
# segments (zihangdai/xlnet modeling.py, transformer_xl and lm_loss).
_LAYER = ["rel_attn/q/kernel", "rel_attn/k/kernel", "rel_attn/v/kernel",
          "rel_attn/r/kernel", "rel_attn/o/kernel", "rel_attn/LayerNorm/beta",
          "rel_attn/LayerNorm/gamma", "ff/layer_1/kernel", "ff/layer_1/bias",
          "ff/layer_2/kernel", "ff/layer_2/bias", "ff/LayerNorm/beta",
          "ff/LayerNorm/gamma"]
RELEASE_PRETRAINING_NAMES = sorted(
    [f"model/transformer/{n}" for n in (
        "r_w_bias", "r_r_bias", "r_s_bias", "seg_embed",
        "word_embedding/lookup_table", "mask_emb/mask_emb")] +
    [f"model/transformer/layer_0/{n}" for n in _LAYER] +
    ["model/lm_loss/bias"])


@pytest.fixture(scope="module")
def script_run(tmp_path_factory):
  """The script's two graphs, run as the release's programs would run them
  (the pretraining, then fine-tuning from its config and checkpoint)."""
  model_dir = tmp_path_factory.mktemp("release_script")
  FLAGS(["script", f"--model_dir={model_dir / 'pretrain'}"])
  try:
    with tf.Graph().as_default():
      pretrain = pretrain_graph(steps=2)
    FLAGS.model_config_path = str(model_dir / "pretrain" / "config.json")
    FLAGS.init_checkpoint = pretrain["prefix"]
    FLAGS.model_dir = str(model_dir / "finetune")
    FLAGS.dropout = FLAGS.dropatt = 0.0
    with tf.Graph().as_default():
      finetune = finetune_graph()
  finally:
    FLAGS.unparse_flags()
  return pretrain, finetune, model_dir


def test_pretraining_as_train_gpu(script_run):
  pretrain, _, model_dir = script_run
  # The release's graph: its variable names, memories, monitored loss.
  assert pretrain["names"] == RELEASE_PRETRAINING_NAMES
  assert pretrain["shapes"] == [[3, BSZ, 16]]
  assert pretrain["monitored"]
  assert np.isfinite(pretrain["loss"]) and pretrain["norm"] > 0
  # poly decay from 1e-3 over 4 steps, no warmup: 1e-3 * (1 - step / 4).
  np.testing.assert_allclose(pretrain["rates"], [1e-3, 7.5e-4], rtol=1e-6)
  assert pretrain["step"] == 2
  # get_loss wrote the model's sizes (the flags') to --model_dir.
  with open(model_dir / "pretrain" / "config.json") as f:
    assert json.load(f) == dict(n_layer=1, d_model=16, n_head=2, d_head=8,
                                d_inner=32, ff_activation="gelu",
                                untie_r=True, n_token=40)


def test_finetuning_heads_as_the_release_programs(script_run):
  _, (out, cls, race, squad), _ = script_run
  loss, per_example, logits = out["cls"]
  assert logits.shape == (BSZ, N_CLASS)
  want = -_log_softmax(logits)[np.arange(BSZ), cls["label_ids"]]
  np.testing.assert_allclose(per_example, want, rtol=1e-5)
  np.testing.assert_allclose(loss, want.mean(), rtol=1e-5)
  loss, per_example, logits = out["race"]
  assert logits.shape == (BSZ, 4)
  want = -_log_softmax(logits)[np.arange(BSZ), race["label_ids"]]
  np.testing.assert_allclose(per_example, want, rtol=1e-5)
  np.testing.assert_allclose(loss, want.mean(), rtol=1e-5)
  # SQuAD, training: log-probabilities over the positions, none where
  # p_mask closes them.
  train = out["qa_train"]
  assert sorted(train) == ["cls_logits", "end_log_probs", "start_log_probs"]
  for key in ("start_log_probs", "end_log_probs"):
    probs = np.exp(train[key])
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)
    assert np.all(probs[squad["p_mask"] > 0] == 0)
  # Inference: the start_n_top x end_n_top beam, best first, open starts.
  beam = out["qa_beam"]
  assert beam["start_top_index"].shape == (BSZ, 2)
  assert beam["end_top_index"].shape == (BSZ, 6)
  assert np.all(np.diff(beam["start_top_log_probs"], axis=-1) <= 0)
  assert np.all(beam["start_top_index"] >= 3)
  assert beam["cls_logits"].shape == (BSZ,)
  # The release's own head (xlnet + modeling, same scope) is the same head.
  np.testing.assert_allclose(out["own_logits"], out["cls"][2], rtol=1e-6)


def test_finetuning_warm_starts_and_trains(script_run):
  pretrain, (out, _, _, _), _ = script_run
  reader = tf.train.load_checkpoint(pretrain["prefix"])
  pretrained = reader.get_tensor("model/transformer/word_embedding/"
                                 "lookup_table")
  np.testing.assert_array_equal(out["table"], pretrained)
  assert not np.array_equal(out["trained_table"], pretrained)


def test_configs_from_the_release_flags(tmp_path):
  FLAGS(["script", f"--model_dir={tmp_path}", "--dropout=0.25",
         "--clamp_len=5", "--bi_data", "--init=uniform"])
  try:
    pre = xlnet.create_run_config(True, False, FLAGS)
    fine = xlnet.create_run_config(False, True, FLAGS)
    config = xlnet.XLNetConfig(FLAGS=FLAGS)
  finally:
    FLAGS.unparse_flags()
  assert (pre.is_training, pre.dropout, pre.clamp_len, pre.init,
          pre.mem_len, pre.reuse_len, pre.bi_data) == (
              True, 0.25, 5, "uniform", 3, 4, True)
  assert (fine.is_training, fine.mem_len, fine.reuse_len, fine.bi_data,
          fine.use_fp16) == (False, None, None, False, False)
  assert config.to_dict() == dict(n_layer=1, d_model=16, n_head=2, d_head=8,
                                  d_inner=32, ff_activation="gelu",
                                  untie_r=True, n_token=40)


def test_configure_tpu_as_train_tpu(tmp_path):
  """model_utils.configure_tpu(FLAGS): TPUEstimator's run config from the
  flags (TensorFlow 2.15); several GPUs without a TPU are one line."""
  FLAGS(["script", f"--model_dir={tmp_path}", "--iterations=7",
         "--save_steps=3", "--max_save=2", "--num_hosts=2"])
  try:
    if tpu_estimator.tpu_estimator() is not None:
      run = model_utils.configure_tpu(FLAGS)
      assert (run.model_dir, run.save_checkpoints_steps,
              run.keep_checkpoint_max) == (str(tmp_path), 3, 2)
      assert (run.tpu_config.iterations_per_loop,
              run.tpu_config.num_shards) == (7, 2)
    else:
      with pytest.raises(ValueError, match="needs TPUEstimator"):
        model_utils.configure_tpu(FLAGS)
    FLAGS.num_core_per_host = 2
    with pytest.raises(ValueError, match=r"^configure_tpu: "
                       r"--num_core_per_host=2 without --use_tpu"):
      model_utils.configure_tpu(FLAGS)
  finally:
    FLAGS.unparse_flags()


@pytest.mark.eager
def test_scalar_host_call_writes_the_monitored_scalars(tmp_path):
  """function_builder.construct_scalar_host_call: the host call (run here
  eagerly, as TPUEstimator runs it on the host) writes prefix + name, the
  cores' values reduced, at step 0 only of every 100."""
  host_call_fn, args = function_builder.construct_scalar_host_call(
      {"total_loss": tf.constant(2.5)}, str(tmp_path), prefix="train/",
      reduce_fn=tf.reduce_sum)
  two_cores = [tf.concat([a, a], 0) for a in args]
  host_call_fn(*two_cores)
  host_call_fn(two_cores[0] + 1, two_cores[1])  # step 1: not written
  written = [(v.tag, float(tf.make_ndarray(v.tensor)))
             for path in glob.glob(str(tmp_path / "*.host_call"))
             for event in tf.compat.v1.train.summary_iterator(path)
             for v in event.summary.value]
  assert written == [("train/total_loss", 5.0)]
