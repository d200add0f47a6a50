"""The RACE head of XLNet: one logit per option, softmax over the four.

The four options of a question run through the backbone as four columns of
the batch; the sequence summary of each (`get_pooled_out`) goes through the
released root-scope layer `logits/dense/{kernel [d_model, 1], bias [1]}`.
"""
import tensorflow as tf

from xlnet import finetune_backbone
from xlnet import modeling
from xlnet.finetuning import race_utils

_dense = modeling._dense  # pylint: disable=protected-access


def _one_option_per_row(features, name):
  """features[name] `[B, 4 L]` -> `[4 B, L]` (row 4 b + j = option j of
  question b)."""
  value = features[name]
  return tf.reshape(value, [-1, value.shape[-1] // race_utils.NUM_CHOICES])


def get_race_logits(FLAGS, features, is_training):  # pylint: disable=invalid-name
  """Option logits of a batch of RACE records.

  Args:
    FLAGS: flags with the model and run settings (`model_config_path`,
      `dropout`, `dropatt`, `clamp_len`, `init*`, `use_tpu`,
      `use_bfloat16`, `summary_type`, `use_summ_proj`).
    features: batch-major dict from the RACE input function:
      `input_ids, segment_ids [B, 4 L]` int32, `input_mask [B, 4 L]`
      float32.
    is_training: bool.

  Returns:
    float32 `[B, 4]`.
  """
  xlnet_model = finetune_backbone.finetune_model(
      FLAGS, *[_one_option_per_row(features, name) for name in
               ("input_ids", "segment_ids", "input_mask")], is_training)
  summary = xlnet_model.get_pooled_out(FLAGS.summary_type,
                                       FLAGS.use_summ_proj)
  with tf.compat.v1.variable_scope("logits", reuse=tf.compat.v1.AUTO_REUSE):
    logits = _dense(summary, 1, xlnet_model.get_initializer(), "dense")
  return tf.reshape(logits, [-1, race_utils.NUM_CHOICES])


def race_loss(logits, labels):
  """Mean softmax cross-entropy of `logits [B, 4]` against `labels [B]`."""
  one_hot = tf.one_hot(labels, race_utils.NUM_CHOICES, dtype=logits.dtype)
  per_example = -tf.reduce_sum(tf.nn.log_softmax(logits) * one_hot, -1)
  return tf.reduce_mean(per_example)


def get_race_loss(FLAGS, features):  # pylint: disable=invalid-name
  """Training loss of a batch: (float32 scalar, dict of scalars to log)."""
  logits = get_race_logits(FLAGS, features, is_training=True)
  loss = race_loss(logits, features["label_ids"])
  return loss, {"total_loss": loss}


def get_race_predictions(FLAGS, features):  # pylint: disable=invalid-name
  """Evaluation outputs: `logits [B, 4]` (records are predicted in order,
  so the i-th output is the i-th question)."""
  return {"logits": get_race_logits(FLAGS, features, is_training=False)}
