"""The SQuAD heads of XLNet: answer start, answer end (with a beam at
inference) and answerability, on top of `XLNetModel`.

The heads are pure graph builders on `tf.compat.v1` variables, usable in a
`tf.function` step or a TPUEstimator `model_fn`. Their variables live at the
root scope with the released names, so fine-tuned checkpoints restore by
name:

  start_logits/dense/{kernel,bias}       [d_model, 1], [1]
  end_logits/dense_0/{kernel,bias}       [2 d_model, d_model], [d_model]
  end_logits/LayerNorm/{gamma,beta}      [d_model]
  end_logits/dense_1/{kernel,bias}       [d_model, 1], [1]
  answer_class/dense_0/{kernel,bias}     [2 d_model, d_model], [d_model]
  answer_class/dense_1/kernel            [d_model, 1]   (no bias)

Every tensor inside is time-major (`[len, bsz, ...]`).
"""
import tensorflow as tf

from xlnet import finetune_backbone
from xlnet import modeling

# Added to the logits of positions that cannot hold an answer.
_CLOSED = -1e30

# The backbone's layer helpers (dense and LayerNorm on tf.compat.v1
# variables, dropout), shared so the heads compute exactly like the model.
_dense = modeling._dense  # pylint: disable=protected-access
_dropout = modeling._dropout  # pylint: disable=protected-access
_layer_norm = modeling._layer_norm  # pylint: disable=protected-access
_variable = modeling._variable  # pylint: disable=protected-access


def _masked(logits, p_mask):
  """`logits * (1 - p_mask) - 1e30 * p_mask` (same shapes, float32)."""
  return logits * (1.0 - p_mask) + _CLOSED * p_mask


def start_logits(output, p_mask, initializer):
  """Masked start logits.

  Args:
    output: float32 `[L, B, D]` backbone output.
    p_mask: float32 `[L, B]`, 1 where no answer may start.
    initializer: kernel initializer (the backbone's).

  Returns:
    float32 `[L, B]`.
  """
  with tf.compat.v1.variable_scope("start_logits",
                                   reuse=tf.compat.v1.AUTO_REUSE):
    logits = _dense(output, 1, initializer, "dense")
  return _masked(logits[..., 0], p_mask)


def end_logits(output, start_features, p_mask, initializer):
  """Masked end logits given a start.

  `[output_i ; start]` -> dense tanh (d_model) -> LayerNorm -> dense (1).

  Args:
    output: float32 `[L, B, ..., D]`.
    start_features: float32, the same shape: the start's hidden state,
      repeated over positions.
    p_mask: float32 broadcastable to `[L, B, ...]`.
    initializer: kernel initializer.

  Returns:
    float32 `[L, B, ...]`.
  """
  d_model = output.shape[-1]
  with tf.compat.v1.variable_scope("end_logits",
                                   reuse=tf.compat.v1.AUTO_REUSE):
    hidden = _dense(tf.concat([output, start_features], axis=-1), d_model,
                    initializer, "dense_0", activation=tf.tanh)
    hidden = _layer_norm(hidden, "LayerNorm")
    logits = _dense(hidden, 1, initializer, "dense_1")
  return _masked(logits[..., 0], p_mask)


def answer_class_logits(output, start_logits_, cls_index, initializer,
                        dropout, is_training):
  """One answerability logit per window (large = no answer).

  `[sum_i softmax(start)_i output_i ; output_cls]` -> dense tanh (d_model)
  -> dropout -> dense without bias (1).

  Args:
    output: float32 `[L, B, D]`.
    start_logits_: float32 `[L, B]` masked start logits.
    cls_index: int32 `[B]`, position of `<cls>`.
    initializer: kernel initializer.
    dropout: dropout rate.
    is_training: apply dropout.

  Returns:
    float32 `[B]`.
  """
  d_model = output.shape[-1]
  cls_one_hot = tf.one_hot(cls_index, tf.shape(output)[0], dtype=output.dtype)
  cls_feature = tf.einsum("lbh,bl->bh", output, cls_one_hot)
  start_p = tf.nn.softmax(start_logits_, axis=0)
  start_feature = tf.einsum("lbh,lb->bh", output, start_p)
  with tf.compat.v1.variable_scope("answer_class",
                                   reuse=tf.compat.v1.AUTO_REUSE):
    hidden = _dense(tf.concat([start_feature, cls_feature], axis=-1),
                    d_model, initializer, "dense_0", activation=tf.tanh)
    hidden = _dropout(hidden, dropout, is_training)
    with tf.compat.v1.variable_scope("dense_1"):
      kernel = _variable("kernel", [d_model, 1], hidden.dtype, initializer)
  return tf.matmul(hidden, kernel)[:, 0]


def qa_heads(output, p_mask, cls_index, initializer, dropout, is_training,
             start_positions=None, start_n_top=5, end_n_top=5):
  """The three SQuAD heads.

  With `start_positions` (training) the end head is conditioned on the gold
  start; without it the `start_n_top` most likely starts are each combined
  with every position and the `end_n_top` most likely ends of each start
  are kept (a beam of start_n_top * end_n_top spans).

  Args:
    output: float32 `[L, B, D]` backbone output.
    p_mask: float32 `[L, B]`.
    cls_index: int32 `[B]`.
    initializer: kernel initializer.
    dropout: dropout rate of the answerability head.
    is_training: bool.
    start_positions: int32 `[B]` gold starts, or None for the beam.
    start_n_top, end_n_top: beam sizes K and E.

  Returns:
    dict of float32/int32 tensors. Always `cls_logits [B]`; with
    start_positions `start_log_probs, end_log_probs [B, L]`; else
    `start_top_log_probs, start_top_index [B, K]` and
    `end_top_log_probs, end_top_index [B, K*E]` (row k*E + e is the e-th
    best end of the k-th best start).
  """
  seq_len = tf.shape(output)[0]
  start = start_logits(output, p_mask, initializer)
  start_log_probs = tf.nn.log_softmax(start, axis=0)
  outputs = {"cls_logits": answer_class_logits(
      output, start, cls_index, initializer, dropout, is_training)}

  if start_positions is not None:
    start_one_hot = tf.one_hot(start_positions, seq_len, dtype=output.dtype)
    start_features = tf.einsum("lbh,bl->bh", output, start_one_hot)
    start_features = tf.tile(start_features[None], [seq_len, 1, 1])
    end = end_logits(output, start_features, p_mask, initializer)
    outputs["start_log_probs"] = tf.transpose(start_log_probs)
    outputs["end_log_probs"] = tf.transpose(tf.nn.log_softmax(end, axis=0))
    return outputs

  start_top_log_probs, start_top_index = tf.nn.top_k(
      tf.transpose(start_log_probs), k=start_n_top)
  start_one_hot = tf.one_hot(start_top_index, seq_len, dtype=output.dtype)
  start_features = tf.einsum("lbh,bkl->bkh", output, start_one_hot)
  start_features = tf.tile(start_features[None], [seq_len, 1, 1, 1])
  end_input = tf.tile(output[:, :, None], [1, 1, start_n_top, 1])
  end = end_logits(end_input, start_features, p_mask[:, :, None],
                   initializer)
  end_log_probs = tf.nn.log_softmax(end, axis=0)  # [L, B, K]
  end_top_log_probs, end_top_index = tf.nn.top_k(
      tf.transpose(end_log_probs, [1, 2, 0]), k=end_n_top)
  bsz = tf.shape(output)[1]
  outputs.update(
      start_top_log_probs=start_top_log_probs,
      start_top_index=start_top_index,
      end_top_log_probs=tf.reshape(end_top_log_probs,
                                   [bsz, start_n_top * end_n_top]),
      end_top_index=tf.reshape(end_top_index, [bsz, start_n_top * end_n_top]))
  return outputs


def get_qa_outputs(xlnet_config, run_config, features, start_n_top=5,
                   end_n_top=5):
  """XLNet backbone and SQuAD heads on a batch of window features.

  Args:
    xlnet_config: the pretrained model's `XLNetConfig`.
    run_config: the backbone's `RunConfig`; `is_training` True conditions
      the end head on the gold start (and turns dropout on).
    features: batch-major dict from the SQuAD input function:
      `input_ids, segment_ids [B, L]` int32, `input_mask, p_mask [B, L]`
      float32, `cls_index [B]` int32, and when training `start_positions
      [B]` int32 (`end_positions`, `is_impossible` are used by the loss).
    start_n_top, end_n_top: beam sizes at inference.

  Returns:
    `qa_heads`' dict (training or beam outputs).
  """
  is_training = run_config.is_training
  xlnet_model = finetune_backbone.finetune_model(
      xlnet_config, run_config, features["input_ids"],
      features["segment_ids"], features["input_mask"])
  return qa_heads(
      output=xlnet_model.get_sequence_output(),
      p_mask=tf.transpose(features["p_mask"], [1, 0]),
      cls_index=features["cls_index"],
      initializer=xlnet_model.get_initializer(),
      dropout=xlnet_model.run_config.dropout, is_training=is_training,
      start_positions=features["start_positions"] if is_training else None,
      start_n_top=start_n_top, end_n_top=end_n_top)


def qa_loss(outputs, features):
  """The SQuAD training loss.

  0.5 (start cross-entropy + end cross-entropy) + 0.5 sigmoid cross-entropy
  of `cls_logits` against `is_impossible`, each averaged over the batch.

  Args:
    outputs: training dict of `qa_heads` (`start_log_probs`,
      `end_log_probs [B, L]`, `cls_logits [B]`).
    features: dict with `start_positions, end_positions [B]` int32 and
      `is_impossible [B]` float32.

  Returns:
    float32 scalar.
  """
  seq_len = tf.shape(outputs["start_log_probs"])[1]

  def cross_entropy(log_probs, positions):
    one_hot = tf.one_hot(positions, seq_len, dtype=log_probs.dtype)
    return -tf.reduce_mean(tf.reduce_sum(one_hot * log_probs, axis=-1))

  span_loss = 0.5 * (
      cross_entropy(outputs["start_log_probs"], features["start_positions"])
      + cross_entropy(outputs["end_log_probs"], features["end_positions"]))
  cls_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
      labels=tf.cast(features["is_impossible"], tf.float32),
      logits=outputs["cls_logits"]))
  return span_loss + 0.5 * cls_loss


def get_qa_loss(xlnet_config, run_config, features):
  """Training loss of a batch (`run_config.is_training` True): (float32
  scalar, dict of scalars to log)."""
  outputs = get_qa_outputs(xlnet_config, run_config, features)
  loss = qa_loss(outputs, features)
  return loss, {"total_loss": loss}


def get_qa_predictions(xlnet_config, run_config, features, start_n_top=5,
                       end_n_top=5):
  """Beam outputs of a batch (`run_config.is_training` False), with the
  `unique_ids` passed through."""
  outputs = get_qa_outputs(xlnet_config, run_config, features, start_n_top,
                           end_n_top)
  outputs["unique_ids"] = features["unique_ids"]
  return outputs
