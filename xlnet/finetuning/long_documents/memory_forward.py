"""A long document's windows through the backbone (`windows.py` lays them
out), and the one summary per document the classification head reads.

  windows  every window alone (the batch's documents x windows side by
           side), each summarized as the classifier summarizes a sequence;
           the summaries of the document's windows pooled (mean or max)
  memory   the windows fed in order, window k with the memory of the
           windows before it (each layer's input states of the last
           `mem_len` positions: Transformer-XL's memory, HF's `mems`); the
           summary read at the document's last window. Gradients flow
           through the memories of the last `bptt_windows` windows of each
           document; the memories before are constants (stop_gradient)

Inputs are batch-major records of `windows.document_windows`: `input_ids`,
`segment_ids` int32 [B, W, L], `input_mask` float32 [B, W, L] (1 =
padding), `window_mask` float32 [B, W] (1 = a window of the document). Like
a task head, this module imports only the model, so that the exports take
it (`xlnet/interop/`).
"""
import dataclasses

import tensorflow as tf

from xlnet import model as model_lib
from xlnet import modeling
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.long_documents.settings import MEMORY, WINDOWS

WINDOW_INPUTS = ("input_ids", "segment_ids", "input_mask")


def last_windows(window_mask):
  """int32 [B]: the index of each document's last window (its windows come
  first; a row without any, such as the zeros a model is first built on,
  reads window 0)."""
  count = tf.cast(tf.reduce_sum(window_mask, axis=1), tf.int32)
  return tf.maximum(count - 1, 0)


def window_model(xlnet_config, run_config, window, mems=None,
                 stop_mem_gradient=True):
  """The backbone on one window of every document.

  Args:
    xlnet_config: the model's `XLNetConfig`.
    run_config: its `RunConfig` (its `mem_len`: the memory returned).
    window: dict of `WINDOW_INPUTS`, batch-major [B, L].
    mems: list of n_layer float32 [M, B, d_model], or None.
    stop_mem_gradient: the new memories carry no gradient.

  Returns:
    an `XLNetModel` (time-major outputs).
  """
  return model_lib.XLNetModel(
      xlnet_config, run_config,
      input_ids=tf.transpose(window["input_ids"]),
      seg_ids=tf.transpose(window["segment_ids"]),
      input_mask=tf.transpose(window["input_mask"]), mems=mems,
      stop_mem_gradient=stop_mem_gradient)


def memory_windows(xlnet_config, run_config, features, mem_len,
                   bptt_windows=1, keep_states=False):
  """Feeds every document's windows in order through the backbone, each
  with the memory the windows before it left.

  Args:
    xlnet_config, run_config: as `window_model` (run_config's own mem_len
      is replaced).
    features: the records' dict (module docstring); `window_mask` is read
      when bptt_windows > 1.
    mem_len: int >= 1, the memory's length.
    bptt_windows: int >= 1: gradients reach back through the memories of
      the last `bptt_windows` windows of each document (1: none).
    keep_states: also return each window's layer input states (the static
      window length is then needed).

  Returns:
    list of W (XLNetModel, states): states is a list of n_layer float32
    [L, B, d_model] (the input of each layer: the embeddings, then each
    layer's output but the last), or None without keep_states.
  """
  num_windows = features["input_ids"].shape[1]
  length = int(features["input_ids"].shape[2]) if keep_states else 0
  # The model caches the window too when its states are kept: the last L
  # rows of its new memories are the window's, the last mem_len the next
  # window's memory.
  run = dataclasses.replace(run_config, mem_len=mem_len + length)
  with_gradient = bptt_windows > 1
  if with_gradient:
    first = last_windows(features["window_mask"]) - bptt_windows + 1
  mems, runs = None, []
  for w in range(num_windows):
    window = {k: features[k][:, w] for k in WINDOW_INPUTS}
    model = window_model(xlnet_config, run, window, mems,
                         stop_mem_gradient=not with_gradient)
    new_mems = model.get_new_memory()
    states = [m[-length:] for m in new_mems] if keep_states else None
    mems = [m[-mem_len:] for m in new_mems]
    if with_gradient:
      passes = (w >= first)[None, :, None]
      mems = [tf.where(passes, m, tf.stop_gradient(m)) for m in mems]
    runs.append((model, states))
  return runs


def at_windows(values, index):
  """`values[index[b], b]` for each b: [W, X, B, ...] -> [X, B, ...] (one
  window per document, the time-major layout kept)."""
  batch_major = tf.transpose(values, [2, 0, 1] + list(
      range(3, values.shape.rank)))
  picked = tf.gather(batch_major, index, axis=1, batch_dims=1)
  return tf.transpose(picked, [1, 0] + list(range(2, values.shape.rank - 1)))


def _summarize(model, hidden, input_mask, summary_type, use_summ_proj):
  """`XLNetModel.get_pooled_out` of `hidden` [L, B, D] (input_mask [L, B])
  instead of the model's own output, with its variables."""
  config, run = model.xlnet_config, model.run_config
  with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
    return modeling.summarize_sequence(
        summary_type=summary_type, hidden=hidden, d_model=config.d_model,
        n_head=config.n_head, d_head=config.d_head, dropout=run.dropout,
        dropatt=run.dropatt, input_mask=input_mask,
        is_training=run.is_training, initializer=model.get_initializer(),
        use_proj=use_summ_proj)


def memory_summary(xlnet_config, run_config, features, summary_type,
                   use_summ_proj, mem_len, bptt_windows=1):
  """The summary of each document at its last window, read after the
  windows before it went through as memory.

  Returns:
    (summary float32 [B, d_model], the last window's XLNetModel).
  """
  runs = memory_windows(xlnet_config, run_config, features, mem_len,
                        bptt_windows)
  last = last_windows(features["window_mask"])
  hidden = at_windows(tf.stack([m.get_sequence_output() for m, _ in runs]),
                      last)
  input_mask = at_windows(tf.transpose(features["input_mask"], [1, 2, 0]),
                          last)
  model = runs[-1][0]
  return _summarize(model, hidden, input_mask, summary_type,
                    use_summ_proj), model


def pool_windows(values, window_mask, pooling):
  """Pools per-window vectors over each document's windows.

  Args:
    values: float32 [B, W, D].
    window_mask: float32 [B, W], 1 on the document's windows.
    pooling: "mean" or "max".

  Returns:
    float32 [B, D]; the absent windows take no part.
  """
  present = tf.cast(window_mask, tf.bool)[:, :, None]
  if pooling == "max":
    return tf.reduce_max(tf.where(present, values, values.dtype.min), 1)
  total = tf.reduce_sum(tf.where(present, values, 0.0), 1)
  return total / tf.reduce_sum(window_mask, 1, keepdims=True)


def flat_windows(features):
  """The windows of every document as one batch: [B, W, L] -> [B W, L]."""
  length = tf.shape(features["input_ids"])[2]
  return {k: tf.reshape(features[k], [-1, length]) for k in WINDOW_INPUTS}


def windows_summary(xlnet_config, run_config, features, summary_type,
                    use_summ_proj, pooling):
  """Each window summarized alone (`classifier_head.sequence_summary`),
  the summaries of each document pooled.

  Returns:
    (summary float32 [B, d_model], the XLNetModel of all windows).
  """
  summary, model = classifier_head.sequence_summary(
      xlnet_config, run_config, flat_windows(features), summary_type,
      use_summ_proj)
  shape = tf.shape(features["window_mask"])
  per_window = tf.reshape(summary, [shape[0], shape[1],
                                    xlnet_config.d_model])
  return pool_windows(per_window, features["window_mask"], pooling), model


def summarize_fn(settings, max_seq_length):
  """The head's summary of documents read as `settings` say
  (`classifier_head.get_head_outputs`'s `summarize`).

  Args:
    settings: a `settings.LongDocuments`.
    max_seq_length: L, the windows' length.

  Returns:
    `summarize(xlnet_config, run_config, features, summary_type,
    use_summ_proj)` -> (summary [B, d_model], XLNetModel), or None for
    `truncate` (the classifier's own).
  """
  if settings.long_documents == WINDOWS:
    return lambda *args: windows_summary(*args, settings.window_pooling)
  if settings.long_documents == MEMORY:
    return lambda *args: memory_summary(
        *args, settings.memory_length(max_seq_length), settings.bptt_windows)
  return None
