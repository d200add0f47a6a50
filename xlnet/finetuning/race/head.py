"""The RACE head of XLNet: one logit per option, softmax over the four.

The four options of a question run through the backbone as four columns of
the batch; the sequence summary of each (`get_pooled_out`) goes through the
released root-scope layer `logits/dense/{kernel [d_model, 1], bias [1]}`.
"""
import tensorflow as tf

from xlnet import finetune_backbone
from xlnet import modeling

# The options of a RACE question (A-D): the head's softmax width, and the
# columns each record packs (`xlnet/finetuning/race/features.py`).
NUM_CHOICES = 4

_dense = modeling._dense  # pylint: disable=protected-access


def _one_option_per_row(features, name):
  """features[name] `[B, 4 L]` -> `[4 B, L]` (row 4 b + j = option j of
  question b)."""
  value = features[name]
  width = value.shape[-1]
  if width is None:  # a serving signature's free length
    width = tf.shape(value)[-1]
  return tf.reshape(value, [-1, width // NUM_CHOICES])


def get_race_logits(xlnet_config, run_config, features, summary_type="last",
                    use_summ_proj=True):
  """Option logits of a batch of RACE records.

  Args:
    xlnet_config: the pretrained model's `XLNetConfig`.
    run_config: the backbone's `RunConfig` (`is_training`: dropout on).
    features: batch-major dict from the RACE input function:
      `input_ids, segment_ids [B, 4 L]` int32, `input_mask [B, 4 L]`
      float32.
    summary_type, use_summ_proj: the sequence summary (`get_pooled_out`).

  Returns:
    float32 `[B, 4]`.
  """
  xlnet_model = finetune_backbone.finetune_model(
      xlnet_config, run_config,
      *[_one_option_per_row(features, name) for name in
        ("input_ids", "segment_ids", "input_mask")])
  summary = xlnet_model.get_pooled_out(summary_type, use_summ_proj)
  with tf.compat.v1.variable_scope("logits", reuse=tf.compat.v1.AUTO_REUSE):
    logits = _dense(summary, 1, xlnet_model.get_initializer(), "dense")
  return tf.reshape(logits, [-1, NUM_CHOICES])


def race_per_example_loss(logits, labels):
  """Softmax cross-entropy of each question: `logits [B, 4]` against
  `labels [B]` -> `[B]`."""
  one_hot = tf.one_hot(labels, NUM_CHOICES, dtype=logits.dtype)
  return -tf.reduce_sum(tf.nn.log_softmax(logits) * one_hot, -1)


def race_loss(logits, labels):
  """The batch's mean of `race_per_example_loss`."""
  return tf.reduce_mean(race_per_example_loss(logits, labels))


def get_race_loss(xlnet_config, run_config, features, summary_type="last",
                  use_summ_proj=True):
  """Training loss of a batch (`run_config.is_training` True): (float32
  scalar, dict of scalars to log)."""
  logits = get_race_logits(xlnet_config, run_config, features, summary_type,
                           use_summ_proj)
  loss = race_loss(logits, features["label_ids"])
  return loss, {"total_loss": loss}


def get_race_predictions(xlnet_config, run_config, features,
                         summary_type="last", use_summ_proj=True):
  """Evaluation outputs (`run_config.is_training` False): `logits [B, 4]`
  (records are predicted in order, so the i-th output is the i-th
  question)."""
  return {"logits": get_race_logits(xlnet_config, run_config, features,
                                    summary_type, use_summ_proj)}
