"""A checkpoint -> a SavedModel with a `serving_default` signature (and, for
a pretrained backbone, `masked_lm`), for `tf.saved_model.load` and TF
Serving.

Inputs are batch-major with the batch size and length free: `input_ids`
int32 [B, L], `segment_ids` int32 [B, L], `input_mask` float32 [B, L]
(1 = padding), as the fine-tuning records hold them (RACE: the four options
side by side, [B, 4 L]; SQuAD adds `p_mask` float32 [B, L] and `cls_index`
int32 [B]). Outputs are the head's, computed by the same graph builders as
the fine-tuning programs' predictions (dropout off):

  classification  logits [B, n_class], probabilities [B, n_class] (the
                  softmax; a head fine-tuned with --multi_label, as its
                  task record says: each label's sigmoid)
  regression      logits [B] (the predicted scores)
  race            logits [B, 4]
  tagging         logits [B, L, n_class], probabilities [B, L, n_class]
                  (every position's; a word's tag is its first piece's)
  squad           cls_logits [B], start_top_log_probs, start_top_index
                  [B, 5], end_top_log_probs, end_top_index [B, 25]
  lm (backbone)   sequence_output [B, L, d_model], and lm_logits
                  [B, L, n_token] when the checkpoint holds `lm_loss/bias`
                  (the content stream: position i sees its own token)

A classification or regression head fine-tuned on long documents (its
directory's task.json: `--long_documents=windows` or `memory`,
docs/long_documents.md) also gets the signature of its way of reading
them:

  windows        the windows of each document side by side: `input_ids`,
                 `segment_ids` int32 [B, W, L], `input_mask` float32
                 [B, W, L], `window_mask` float32 [B, W] (1 on the
                 document's windows, which come first); the pooled logits
  memory_window  one window of each document and the memory the windows
                 before left: the inputs above [B, L] plus `mems` float32
                 [n_layer, M, B, d_model] (M = 0 for a first window);
                 outputs the window's logits (the document's at its last
                 window) and `new_mems` [n_layer, M', B, d_model] for the
                 next window (HF's `mems`, stacked)

A backbone whose checkpoint holds `mask_emb` and `lm_loss/bias` (a
pretrained one) also gets the `masked_lm` signature, the pretraining
model's two streams: the inputs above plus `perm_mask` float32 [B, L, L]
(1 where position i may not see position j) and `target_mapping` float32
[B, P, L] (row k one-hot at the k-th position to predict); outputs
`lm_logits` [B, P, n_token] and `query_output` [B, P, d_model] of the query
stream at those positions. Hiding position j from every position
(`perm_mask[:, :, j] = 1`) and naming it in `target_mapping` predicts the
word there without seeing it.
"""
import dataclasses

import tensorflow as tf

from xlnet import errors
from xlnet import finetune_backbone
from xlnet import model as model_lib
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.long_documents import memory_forward
from xlnet.finetuning.long_documents import settings as long_documents
from xlnet.finetuning.race import head as race_head
from xlnet.finetuning.squad import head as squad_head
from xlnet.finetuning.tagging import head as tagging_head
from xlnet.interop import hf_export
from xlnet.interop import hf_names
from xlnet.interop import output_dir as output_dir_lib
from xlnet.training import checkpoint_io

_SERVING_RUN = model_lib.RunConfig(is_training=False, use_tpu=False,
                                   use_bfloat16=False, dropout=0.0,
                                   dropatt=0.0)
_MASK_EMB = "model/transformer/mask_emb/mask_emb"
_LM_BIAS = "model/lm_loss/bias"
MASKED_LM = "masked_lm"
MEMORY_WINDOW = "memory_window"


def _placeholders(kind):
  """The signature's inputs: {name: placeholder}."""
  def ph(dtype, shape, name):
    return tf.compat.v1.placeholder(dtype, shape, name=name)
  inputs = {"input_ids": ph(tf.int32, [None, None], "input_ids"),
            "segment_ids": ph(tf.int32, [None, None], "segment_ids"),
            "input_mask": ph(tf.float32, [None, None], "input_mask")}
  if kind == "squad":
    inputs["p_mask"] = ph(tf.float32, [None, None], "p_mask")
    inputs["cls_index"] = ph(tf.int32, [None], "cls_index")
  return inputs


def _outputs(kind, scope, n_class, xlnet_config, inputs, has_lm_bias,
             summary, multi_label=False, summarize=None):
  """The head's output tensors (a dict) on `inputs`; `summary` is
  `hf_export.summary_settings`, `multi_label`
  `hf_export.recorded_multi_label`; `summarize` how a classification or
  regression head summarizes them (`classifier_head.get_head_outputs`)."""
  if kind in hf_names.TASK_SCOPED_KINDS:
    label_dtype = tf.int32 if kind == "classification" else tf.float32
    label_shape = tf.shape(inputs["input_ids"])[:1]
    if multi_label:
      label_shape = tf.concat([label_shape, [n_class]], 0)
    features = dict(inputs, label_ids=tf.zeros(label_shape, label_dtype))
    task = scope.split("_", 1)[1]
    out = classifier_head.get_head_outputs(
        xlnet_config, _SERVING_RUN, features, n_class, task,
        cls_scope=task if kind == "classification" else None,
        summary_type=summary[0], use_summ_proj=summary[1],
        multi_label=multi_label, summarize=summarize)
    logits = out["logits"]
    if kind == "regression":
      return {"logits": logits}
    return {"logits": logits, "probabilities": (
        tf.sigmoid(logits) if multi_label else tf.nn.softmax(logits))}
  if kind == "race":
    return {"logits": race_head.get_race_logits(
        xlnet_config, _SERVING_RUN, inputs, *summary)}
  if kind == "squad":
    return squad_head.get_qa_outputs(xlnet_config, _SERVING_RUN, inputs)
  if kind == "tagging":
    logits = tagging_head.get_tagging_logits(xlnet_config, _SERVING_RUN,
                                             inputs, n_class)
    return {"logits": logits, "probabilities": tf.nn.softmax(logits)}
  return _backbone_outputs(xlnet_config, inputs, has_lm_bias)


def _backbone_outputs(xlnet_config, inputs, has_lm_bias):
  """The backbone's hidden states, and its LM logits (tied softmax)."""
  xlnet_model = finetune_backbone.finetune_model(
      xlnet_config, _SERVING_RUN, inputs["input_ids"], inputs["segment_ids"],
      inputs["input_mask"])
  hidden = xlnet_model.get_sequence_output()  # [L, B, D]
  outputs = {"sequence_output": tf.transpose(hidden, [1, 0, 2])}
  if has_lm_bias:
    outputs["lm_logits"] = tf.transpose(xlnet_model.get_lm_logits(),
                                        [1, 0, 2])
  return outputs


def _long_document_signature(head, xlnet_config, summary, long_document):
  """The signature of a head that read long documents (module docstring).

  Args:
    head: (kind, scope, n_class).
    xlnet_config, summary: as `_outputs`.
    long_document: `hf_export.recorded_long_documents`.

  Returns:
    (its name, ({name: placeholder}, {name: output})).
  """
  settings, max_seq_length = long_document
  kind, scope, n_class = head
  inputs = _placeholders(kind)
  if settings.long_documents == long_documents.WINDOWS:
    inputs = {name: tf.compat.v1.placeholder(
        p.dtype, [None, None, None], name=f"windows_{name}")
              for name, p in inputs.items()}
    inputs["window_mask"] = tf.compat.v1.placeholder(
        tf.float32, [None, None], name="window_mask")
    return long_documents.WINDOWS, (inputs, _outputs(
        kind, scope, n_class, xlnet_config, inputs, False, summary,
        summarize=memory_forward.summarize_fn(settings, max_seq_length)))
  mems = tf.compat.v1.placeholder(
      tf.float32, [xlnet_config.n_layer, None, None, xlnet_config.d_model],
      name="mems")
  stepped = {}

  def summarize(xlnet_config, run_config, window, summary_type,
                use_summ_proj):
    model = memory_forward.window_model(
        xlnet_config, dataclasses.replace(
            run_config, mem_len=settings.memory_length(max_seq_length)),
        window, tf.unstack(mems))
    stepped["new_mems"] = tf.stack(model.get_new_memory())
    return model.get_pooled_out(summary_type, use_summ_proj), model

  outputs = _outputs(kind, scope, n_class, xlnet_config, inputs, False,
                     summary, summarize=summarize)
  return MEMORY_WINDOW, (dict(inputs, mems=mems), dict(outputs, **stepped))


def _masked_lm(xlnet_config, inputs):
  """The `masked_lm` signature's extra inputs and its outputs: the query
  stream at `target_mapping`'s positions, under `perm_mask`.

  Returns:
    ({name: placeholder} of perm_mask [B, L, L] and target_mapping
    [B, P, L]), {"lm_logits": [B, P, n_token], "query_output":
    [B, P, d_model]}.
  """
  extra = {"perm_mask": tf.compat.v1.placeholder(
      tf.float32, [None, None, None], name="perm_mask"),
           "target_mapping": tf.compat.v1.placeholder(
               tf.float32, [None, None, None], name="target_mapping")}
  target_mapping = tf.transpose(extra["target_mapping"], [1, 2, 0])
  xlnet_model = model_lib.XLNetModel(
      xlnet_config, _SERVING_RUN,
      input_ids=tf.transpose(inputs["input_ids"]),
      seg_ids=tf.transpose(inputs["segment_ids"]),
      input_mask=tf.transpose(inputs["input_mask"]),
      perm_mask=tf.transpose(extra["perm_mask"], [1, 2, 0]),
      target_mapping=target_mapping,
      # Which positions are predicted ([L, B]); with a target_mapping the
      # query stream starts from mask_emb at each of them.
      inp_q=tf.reduce_sum(target_mapping, axis=0))
  outputs = {
      "lm_logits": tf.transpose(xlnet_model.get_lm_logits(), [1, 0, 2]),
      "query_output": tf.transpose(xlnet_model.get_sequence_output(),
                                   [1, 0, 2])}
  return extra, outputs


def export_saved_model(checkpoint, xlnet_config, output_dir, task_name=None,
                       is_regression=None, summary_type=None):
  """Writes a checkpoint's model (one head, or the backbone) as a SavedModel.

  Args:
    checkpoint: checkpoint prefix, directory or DIR/latest.
    xlnet_config: its `XLNetConfig`, a JSON config's path, or None: the
      checkpoint directory's (`hf_export.model_config`).
    output_dir: a new (or empty) directory: the SavedModel (for TF Serving,
      a version folder such as `models/xlnet/1`); whole or not at all.
    task_name, is_regression: which head (`hf_export.choose_head`).
    summary_type: how a summary head pools (`hf_export.summary_settings`).

  Returns:
    the head's kind ("classification", "regression", "race", "squad",
    "tagging", "lm").

  Raises:
    ValueError: one line naming the flag or file at fault.
  """
  output_dir_lib.check_output_dir(output_dir)
  prefix = checkpoint_io.resolve_checkpoint(checkpoint, "--checkpoint")
  xlnet_config, config_source = hf_export.model_config(prefix, xlnet_config)
  shapes = dict(tf.train.list_variables(prefix))
  hf_names.check_tf_layers(shapes, xlnet_config.n_layer,
                           f"--checkpoint={prefix}", config_source)
  kind, scope = hf_export.choose_head(hf_names.find_heads(shapes), task_name,
                                      is_regression)
  n_class = hf_export.n_class_of(shapes, kind, scope)
  summary = hf_export.summary_settings(prefix, shapes, kind, summary_type)
  long_document = hf_export.recorded_long_documents(prefix, kind, scope)
  with tf.Graph().as_default():
    inputs = _placeholders(kind)
    signatures = {"serving_default": (inputs, _outputs(
        kind, scope, n_class, xlnet_config, inputs, _LM_BIAS in shapes,
        summary, hf_export.recorded_multi_label(prefix, kind, scope)))}
    if long_document:
      name, signature = _long_document_signature(
          (kind, scope, n_class), xlnet_config, summary, long_document)
      signatures[name] = signature
    if kind == "lm" and _MASK_EMB in shapes and _LM_BIAS in shapes:
      extra, outputs = _masked_lm(xlnet_config, inputs)
      signatures[MASKED_LM] = (dict(inputs, **extra), outputs)
    variables = tf.compat.v1.global_variables()
    missing = [v.op.name for v in variables if v.op.name not in shapes]
    if missing:
      raise ValueError(f"--checkpoint={prefix} lacks {len(missing)} "
                       f"variable(s) of the {kind} model, e.g. {missing[:3]} "
                       f"(does {config_source} match it?)")
    _check_shapes(variables, shapes, prefix, config_source)
    saver = tf.compat.v1.train.Saver(variables)
    with tf.compat.v1.Session() as sess, output_dir_lib.staged(
        output_dir) as tmp:
      _restore(saver, sess, prefix)
      builder = tf.compat.v1.saved_model.Builder(tmp)
      builder.add_meta_graph_and_variables(
          sess, [tf.saved_model.SERVING], signature_def_map={
              name: tf.compat.v1.saved_model.predict_signature_def(
                  inputs=ins, outputs=outs)
              for name, (ins, outs) in signatures.items()},
          strip_default_attrs=True)
      builder.save()
  return kind


def _restore(saver, sess, prefix):
  """Restores `prefix`; one line naming its data file when that is
  truncated (OutOfRange) or its bytes fail their checksum (DataLoss)."""
  try:
    saver.restore(sess, prefix)
  except (tf.errors.OutOfRangeError, tf.errors.DataLossError) as e:
    # The cause is the message's last line of its own (the graph's trace
    # and the node come before and after it, indented).
    cause = [line for line in e.message.splitlines()
             if line.strip() and not line[0].isspace()][-1]
    files = ", ".join(checkpoint_io.data_files(prefix))
    raise checkpoint_io.CheckpointError(
        f"{files}: cannot read the checkpoint's tensors "
        f"({errors.error_text(ValueError(cause))[:200]})"
        "; the data file is truncated or corrupt") from None


def _check_shapes(variables, shapes, prefix, config_source):
  """One line for the first variable whose shape differs from the
  checkpoint's (a config that does not match the checkpoint)."""
  for var in variables:
    want = var.shape.as_list()
    if list(shapes[var.op.name]) != want:
      raise ValueError(f"--checkpoint={prefix}: {var.op.name} has shape "
                       f"{shapes[var.op.name]}, {config_source} gives "
                       f"{want}: is it the config of this checkpoint?")
