"""The pretraining loss: XLNet's two-stream model and its partial-prediction
language-model loss, shared by every pretraining trainer and the held-out
evaluation."""
import tensorflow as tf

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


def two_stream_loss(xlnet_config, run_config, features, mems, is_training):
  """Builds the two-stream XLNet model and its partial-prediction LM loss.

  Args:
    xlnet_config: the model's `XLNetConfig`.
    run_config: the run's `RunConfig` (dropout, init, mem_len, reuse_len,
      bi_data, precision, ...); `is_training` picks its mode.
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
  run_config = run_config.for_training(is_training)

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


def get_loss(xlnet_config, run_config, features, labels, mems, is_training):
  """The pretraining loss (the release's name; see `two_stream_loss`).

  With `run_config.use_bfloat16` or `use_fp16` the model computes in that
  dtype while memories, outputs, the loss and every variable stay float32.

  Args:
    xlnet_config, run_config, features, mems, is_training: as
      `two_stream_loss`.
    labels: unused (kept for the Estimator model_fn signature).

  Returns:
    (total_loss float32 scalar, new_mems list of float32 tensors or None,
    outputs dict).
  """
  del labels
  return two_stream_loss(xlnet_config, run_config, features, mems,
                         is_training)


def pretrain_loss_fn(xlnet_config, run_config):
  """The engine's loss function of pretraining (see `xlnet/training/trainer.Trainer`).

  Returns:
    loss_fn(features, mems, is_training) -> (loss, new_mems, outputs).
  """
  def loss_fn(features, mems, is_training):
    return get_loss(xlnet_config, run_config, features, None, mems,
                    is_training)
  return loss_fn
