"""The pretraining loss shared by the GPU and TPU trainers."""
import os

import tensorflow as tf

from xlnet.flags import configs as config_flags
from xlnet.flags import pretraining as pretrain_flags
from xlnet.data import input_pipeline
from xlnet import model as model_lib
from xlnet import modeling

# Features whose time-major layout needs [1, 2, 0] instead of [1, 0].
_THREE_D_FEATURES = ("perm_mask", "target_mapping")


def to_time_major(features):
  """Transposes batch-major input features to the model's time-major layout.

  Args:
    features: dict of batch-major tensors from the input function:
      `perm_mask [B,L,L]`, `target_mapping [B,P,L]` and `[B,L]`/`[B,P]` ones.
      `label` is passed through unchanged.

  Returns:
    dict with `perm_mask [L,L,B]`, `target_mapping [P,L,B]`, and the 2-D
    features `input_k, input_q, seg_id [L,B]`, `target, target_mask [P,B]`.
  """
  out = {}
  for key, value in features.items():
    if key in _THREE_D_FEATURES:
      out[key] = tf.transpose(value, [1, 2, 0])
    elif key == "label":
      out[key] = value
    else:
      out[key] = tf.transpose(value, [1, 0])
  return out


def get_input_fn(FLAGS, num_core_per_host, corpus_info=None, split="train",
                 record_dir=None, num_hosts=None):
  """The pretraining input function of the flags (every program's).

  The data flags must already be resolved against the corpus info
  (`flags.resolve_all`).

  Args:
    FLAGS: flags with the data flags, `train_batch_size` (global),
      `num_hosts`, `perm_size`, `num_passes`, `seed`.
    num_core_per_host: cores (replicas) that each read one per-core batch
      per step; the input function regroups the rows when the data was
      written for a different core count, so every core gets [forward,
      backward] halves with `bi_data`.
    corpus_info: the corpus info dict the flags were resolved from (None:
      the one next to the records).
    split: the records' split name (held-out evaluation reads "valid").
    record_dir: the record infos' directory (default
      `FLAGS.record_info_dir`).
    num_hosts: hosts sharing the files (default `FLAGS.num_hosts`).

  Returns:
    (input_fn, record_info) as `input_pipeline.get_input_fn`.
  """
  return input_pipeline.get_input_fn(
      tfrecord_dir=record_dir or FLAGS.record_info_dir,
      split=split,
      bsz_per_host=pretrain_flags.bsz_per_host(FLAGS),
      seq_len=FLAGS.seq_len,
      reuse_len=FLAGS.reuse_len,
      bi_data=FLAGS.bi_data,
      num_hosts=FLAGS.num_hosts if num_hosts is None else num_hosts,
      num_core_per_host=num_core_per_host,
      perm_size=FLAGS.perm_size,
      mask_alpha=FLAGS.mask_alpha,
      mask_beta=FLAGS.mask_beta,
      uncased=FLAGS.uncased,
      num_passes=FLAGS.num_passes,
      use_bfloat16=FLAGS.use_bfloat16,
      num_predict=FLAGS.num_predict,
      corpus_info=corpus_info,
      seed=FLAGS.seed)


def save_xlnet_config(xlnet_config, model_dir):
  """Writes the model's XLNetConfig to `{model_dir}/config.json`, as the
  released trainers did, so a checkpoint always comes with its config.

  Returns:
    the path written.
  """
  path = os.path.join(model_dir, "config.json")
  xlnet_config.to_json(path)
  return path


def two_stream_loss(xlnet_config, FLAGS, features, mems, is_training):
  """Builds the two-stream XLNet model and its partial-prediction LM loss.

  Args:
    xlnet_config: the model's `XLNetConfig`.
    FLAGS: run flags (dropout, dropatt, init, mem_len, reuse_len, bi_data,
      clamp_len, same_length, use_tpu, use_bfloat16, ...).
    features: dict of batch-major tensors from the input function,
      `input_k, input_q, seg_id [B,L]`, `perm_mask [B,L,L]`,
      `target, target_mask [B,P]`, `target_mapping [B,P,L]`.
    mems: list of `n_layer` float tensors `[mem_len, B, d_model]`, or None.
    is_training: bool.

  Returns:
    total_loss: float32 scalar, `sum(loss * target_mask) / sum(target_mask)`.
    new_mems: list of `n_layer` tensors `[mem_len, B, d_model]` (or None).
    outputs: dict of per-example tensors: `loss_sum [B]` (the summed loss
      of the targets), `num_targets [B]`, `correct [B]` (targets whose
      argmax prediction is right).
  """
  tm = to_time_major(features)
  run_config = config_flags.run_config(is_training, False, FLAGS)

  xlnet_model = model_lib.XLNetModel(
      xlnet_config=xlnet_config,
      run_config=run_config,
      input_ids=tm["input_k"],
      seg_ids=tm["seg_id"],
      input_mask=None,
      mems=mems,
      perm_mask=tm["perm_mask"],
      target_mapping=tm["target_mapping"],
      inp_q=tm["input_q"])

  output = xlnet_model.get_sequence_output()
  new_mems = xlnet_model.get_new_memory()
  lookup_table = xlnet_model.get_embedding_table()
  initializer = xlnet_model.get_initializer()

  with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
    lm_loss, logits = modeling.lm_loss(
        hidden=output,
        target=tm["target"],
        n_token=xlnet_config.n_token,
        d_model=xlnet_config.d_model,
        initializer=initializer,
        lookup_table=lookup_table,
        tie_weight=True,
        bi_data=run_config.bi_data,
        use_tpu=run_config.use_tpu,
        use_bfloat16=run_config.use_bfloat16,
        use_fp16=run_config.use_fp16,
        return_logits=True)

  lm_loss = tf.cast(lm_loss, tf.float32)
  tgt_mask = tf.cast(tm["target_mask"], tf.float32)
  total_loss = tf.reduce_sum(lm_loss * tgt_mask) / tf.reduce_sum(tgt_mask)
  correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32),
                             tf.cast(tm["target"], tf.int32)), tf.float32)
  outputs = {"loss_sum": tf.reduce_sum(lm_loss * tgt_mask, 0),
             "num_targets": tf.reduce_sum(tgt_mask, 0),
             "correct": tf.reduce_sum(correct * tgt_mask, 0)}
  return total_loss, new_mems, outputs


def get_loss(FLAGS, features, labels, mems, is_training, xlnet_config):
  """The pretraining loss (the release's name; see `two_stream_loss`).

  With `--use_bfloat16` or `--use_fp16` the model computes in that dtype
  while memories, outputs, the loss and every variable stay float32.

  Args:
    FLAGS, features, mems, is_training: as `two_stream_loss`.
    labels: unused (kept for the Estimator model_fn signature).
    xlnet_config: the model's `XLNetConfig`.

  Returns:
    (total_loss float32 scalar, new_mems list of float32 tensors or None,
    outputs dict).
  """
  del labels
  return two_stream_loss(xlnet_config, FLAGS, features, mems, is_training)


def pretrain_loss_fn(xlnet_config, FLAGS):
  """The engine's loss function of pretraining (see `trainer.Trainer`).

  Returns:
    loss_fn(features, mems, is_training) -> (loss, new_mems, outputs).
  """
  def loss_fn(features, mems, is_training):
    return get_loss(FLAGS, features, None, mems, is_training, xlnet_config)
  return loss_fn
