"""Sequence classification and regression heads on the XLNet backbone.

Pure graph builders (no session, no optimizer): they run inside a
`tf.function` training step as well as inside a TPUEstimator model_fn.

  summary = XLNetModel.get_pooled_out(summary_type, use_summ_proj)
            (default "last": the `<cls>` state, then the tanh projection
            `model/sequnece_summary/summary/{kernel,bias}`, then dropout)
  classification: `model/classification_{cls_scope or task}/logit/{kernel,bias}`
            [d_model, n_class]; per-example softmax cross-entropy.
  regression: `model/regression_{task}/logit/{kernel,bias}` [d_model, 1];
            per-example squared error against the float label.
  multi-label: the classification head's variables, one logit per label
            [d_model, n_labels]; per-example mean over the labels of the
            sigmoid cross-entropy against the multi-hot label (so the
            total is the mean over every label of every example, as
            PyTorch's `BCEWithLogitsLoss`).
  total_loss = mean of the per-example losses.
"""
import tensorflow as tf

from xlnet import finetune_backbone
from xlnet import modeling

_dense = modeling._dense  # pylint: disable=protected-access

# Variables a pretrained checkpoint does not hold: the fine-tuning pooler and
# the task heads start from their initializers.
NEW_VARIABLE_PATTERNS = (
    r"^model/sequnece_summary/",
    r"^model/(classification|regression)_[^/]+/logit/",
)


def classification_scope(task_name, cls_scope=None):
  """`classification_{cls_scope or task_name.lower()}`."""
  return f"classification_{cls_scope or task_name.lower()}"


def regression_scope(task_name):
  """`regression_{task_name.lower()}`."""
  return f"regression_{task_name.lower()}"


def sequence_summary(xlnet_config, run_config, features, summary_type="last",
                     use_summ_proj=True):
  """Runs the backbone on batch-major features and pools each sequence.

  Args:
    xlnet_config: the pretrained model's `XLNetConfig`.
    run_config: the backbone's `RunConfig` (`is_training`: dropout on).
    features: dict of batch-major tensors: `input_ids` int32 [B, L],
      `segment_ids` int32 [B, L], `input_mask` float32 [B, L] (1 = padding).
    summary_type: "last", "first", "mean" or "attn".
    use_summ_proj: the tanh projection of the summary.

  Returns:
    (summary float32 [B, d_model], the XLNetModel).
  """
  xlnet_model = finetune_backbone.finetune_model(
      xlnet_config, run_config, features["input_ids"],
      features["segment_ids"], features["input_mask"])
  summary = xlnet_model.get_pooled_out(summary_type, use_summ_proj)
  return summary, xlnet_model


def get_classification_loss(xlnet_config, run_config, features, n_class,
                            scope, summary_type="last", use_summ_proj=True,
                            summarize=None):
  """Classification head and loss.

  Args:
    xlnet_config, run_config, summary_type, use_summ_proj: as
      `sequence_summary`.
    features: as `sequence_summary`, plus `label_ids` int32 [B].
    n_class: int, number of classes.
    scope: the head's scope under `model/` (`classification_scope`).
    summarize: a function of `sequence_summary`'s arguments and results
      that summarizes the features otherwise (a long document's windows:
      `long_documents/memory_forward.summarize_fn`), or None:
      `sequence_summary`.

  Returns:
    (total_loss float32 scalar, per_example_loss float32 [B],
     logits float32 [B, n_class]).
  """
  summary, xlnet_model = (summarize or sequence_summary)(
      xlnet_config, run_config, features, summary_type, use_summ_proj)
  labels = tf.reshape(features["label_ids"], [-1])
  with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
    per_example_loss, logits = modeling.classification_loss(
        hidden=summary, labels=labels, n_class=n_class,
        initializer=xlnet_model.get_initializer(), scope=scope,
        return_logits=True)
  return tf.reduce_mean(per_example_loss), per_example_loss, logits


def get_regression_loss(xlnet_config, run_config, features, scope,
                        summary_type="last", use_summ_proj=True,
                        summarize=None):
  """Regression head and loss.

  Args:
    xlnet_config, run_config, summary_type, use_summ_proj: as
      `sequence_summary`.
    features: as `sequence_summary`, plus `label_ids` float32 [B].
    scope: the head's scope under `model/` (`regression_scope`).
    summarize: as `get_classification_loss`.

  Returns:
    (total_loss float32 scalar, per_example_loss float32 [B],
     logits float32 [B], the predicted scores).
  """
  summary, xlnet_model = (summarize or sequence_summary)(
      xlnet_config, run_config, features, summary_type, use_summ_proj)
  labels = tf.reshape(features["label_ids"], [-1])
  with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
    per_example_loss, logits = modeling.regression_loss(
        hidden=summary, labels=labels,
        initializer=xlnet_model.get_initializer(), scope=scope,
        return_logits=True)
  return tf.reduce_mean(per_example_loss), per_example_loss, logits


def get_multi_label_loss(xlnet_config, run_config, features, n_labels,
                         scope, summary_type="last", use_summ_proj=True,
                         summarize=None):
  """Multi-label head and loss: the classification head's dense layer
  with one sigmoid output per label.

  Args:
    xlnet_config, run_config, summary_type, use_summ_proj: as
      `sequence_summary`.
    features: as `sequence_summary`, plus `label_ids` int32
      [B, n_labels] (multi-hot).
    n_labels: int, number of labels.
    scope: the head's scope under `model/` (`classification_scope`).
    summarize: as `get_classification_loss`.

  Returns:
    (total_loss float32 scalar, per_example_loss float32 [B] (the mean
     over the labels), logits float32 [B, n_labels]).
  """
  summary, xlnet_model = (summarize or sequence_summary)(
      xlnet_config, run_config, features, summary_type, use_summ_proj)
  with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
    with tf.compat.v1.variable_scope(scope):
      logits = _dense(summary, n_labels, xlnet_model.get_initializer(),
                      "logit")
  labels = tf.cast(tf.reshape(features["label_ids"], [-1, n_labels]),
                   logits.dtype)
  per_example_loss = tf.reduce_mean(
      tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits),
      axis=-1)
  return tf.reduce_mean(per_example_loss), per_example_loss, logits


def get_head_outputs(xlnet_config, run_config, features, n_class, task_name,
                     cls_scope=None, summary_type="last", use_summ_proj=True,
                     multi_label=False, summarize=None):
  """The task's head: regression when `n_class` is None, else
  classification (`multi_label`: one sigmoid output per label).

  Args:
    xlnet_config, run_config, features, summary_type, use_summ_proj,
      summarize: as `get_classification_loss` / `get_regression_loss` /
      `get_multi_label_loss`.
    n_class: int, or None for regression.
    task_name: names the head (`classification_scope`, `regression_scope`).
    cls_scope: the classification head's name instead of the task's.
    multi_label: the multi-label head (`get_multi_label_loss`).

  Returns:
    dict with `total_loss`, `per_example_loss` and `logits` (see the two
    heads), plus `label_ids` and `is_real_example` passed through from
    `features` (the latter 1s when absent), so that evaluation can drop the
    fake examples.
  """
  if multi_label:
    total_loss, per_example_loss, logits = get_multi_label_loss(
        xlnet_config, run_config, features, n_class,
        classification_scope(task_name, cls_scope), summary_type,
        use_summ_proj, summarize)
  elif n_class is None:
    total_loss, per_example_loss, logits = get_regression_loss(
        xlnet_config, run_config, features, regression_scope(task_name),
        summary_type, use_summ_proj, summarize)
  else:
    total_loss, per_example_loss, logits = get_classification_loss(
        xlnet_config, run_config, features, n_class,
        classification_scope(task_name, cls_scope), summary_type,
        use_summ_proj, summarize)
  is_real = features.get("is_real_example")
  if is_real is None:
    is_real = tf.ones_like(per_example_loss, dtype=tf.int32)
  return {"total_loss": total_loss, "per_example_loss": per_example_loss,
          "logits": logits, "label_ids": features["label_ids"],
          "is_real_example": is_real}
