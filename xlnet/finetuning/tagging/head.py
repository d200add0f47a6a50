"""The tagging head of XLNet: one dense layer on every position's last
hidden state, softmax over the tags.

  output  = the backbone's sequence output [L, B, d_model] (after its
            final dropout, as HF's `XLNetForTokenClassification` reads
            `transformer(...)[0]`)
  logits  = output `model/tagging/logit/{kernel [d_model, n_class],
            bias [n_class]}`, batch-major [B, L, n_class]
  loss    = softmax cross-entropy at each position, weighted by
            `label_weights` (1 on a word's first piece, 0 elsewhere),
            summed and divided by the weights' sum: the mean over the
            batch's scored words (HF's mean over the labels that are not
            -100)
"""
import tensorflow as tf

from xlnet import finetune_backbone
from xlnet import modeling

SCOPE = "model/tagging"
# The head's variables, which a pretrained checkpoint lacks.
NEW_VARIABLE_PATTERNS = (rf"^{SCOPE}/",)

_dense = modeling._dense  # pylint: disable=protected-access


def get_tagging_logits(xlnet_config, run_config, features, n_class):
  """Every position's tag logits.

  Args:
    xlnet_config: the model's `XLNetConfig`.
    run_config: the backbone's `RunConfig` (`is_training`: dropout on).
    features: batch-major `input_ids`, `segment_ids` int32 [B, L],
      `input_mask` float32 [B, L] (1 = padding).
    n_class: the tags.

  Returns:
    float32 [B, L, n_class].
  """
  xlnet_model = finetune_backbone.finetune_model(
      xlnet_config, run_config, features["input_ids"],
      features["segment_ids"], features["input_mask"])
  output = xlnet_model.get_sequence_output()
  with tf.compat.v1.variable_scope(SCOPE, reuse=tf.compat.v1.AUTO_REUSE):
    logits = _dense(output, n_class, xlnet_model.get_initializer(), "logit")
  return tf.transpose(logits, [1, 0, 2])


def tagging_loss(logits, label_ids, label_weights):
  """The weighted mean cross-entropy of the scored positions.

  Args:
    logits: float32 [B, L, n_class].
    label_ids: int32 [B, L].
    label_weights: float32 [B, L].

  Returns:
    float32 scalar (0 when nothing is scored).
  """
  n_class = logits.shape[-1]
  one_hot = tf.one_hot(label_ids, n_class, dtype=logits.dtype)
  per_position = -tf.reduce_sum(tf.nn.log_softmax(logits) * one_hot, -1)
  weights = tf.cast(label_weights, logits.dtype)
  return (tf.reduce_sum(per_position * weights)
          / tf.maximum(tf.reduce_sum(weights), 1.0))


def get_tagging_loss(xlnet_config, run_config, features, n_class):
  """The training loss of a batch of windows (`tagging_loss`)."""
  logits = get_tagging_logits(xlnet_config, run_config, features, n_class)
  return tagging_loss(logits, features["label_ids"],
                      features["label_weights"])
