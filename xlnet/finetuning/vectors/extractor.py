"""The model's hidden states of a batch of texts, dropout off, and the
vectors pooled from them.

The states are HF's `hidden_states` (`output_hidden_states=True`): state
0 is the embeddings, state i (1..n_layer) the output of layer i. The model
returns the input of every layer as its memory (`modeling._cache_mem`),
so a memory as long as the window (plus the memory the window reads, in
`memory` mode) holds states 0..n_layer-1 and the output is state n_layer:
no other graph than the one fine-tuning and the exports build.

Pooling, per text, in NumPy (float64 sums, float32 results), so that a
text's vectors depend on nothing else in its batch:

  cls   the state at the `<cls>`, the last position (left padding) of the
        text's window (`truncate`), of its last window (`memory`: the one
        that read the others as memory), of each of its windows pooled by
        window_pooling (`windows`)
  mean  the mean over the text's pieces, each once (not `<sep>`, `<cls>`
        nor padding; an empty text: zeros)
  none  each piece's state
"""
import dataclasses

import numpy as np
import tensorflow as tf

from xlnet import model_config
from xlnet.finetuning.long_documents import memory_forward
from xlnet.finetuning.long_documents import settings as long_documents
from xlnet.training import config as train_config
from xlnet.training import predictor as predictor_lib
from xlnet.training import strategies

_INPUTS = memory_forward.WINDOW_INPUTS + ("window_mask",)
# The backbone at inference: dropout off, float32.
_RUN = model_config.RunConfig(is_training=False, use_tpu=False,
                              use_bfloat16=False, dropout=0.0, dropatt=0.0)


def layer_indices(layers, n_layer):
  """The states `layers` names (negative: from the end of the n_layer + 1),
  as indices 0..n_layer.

  Raises:
    ValueError: one line naming --layers when one is out of range.
  """
  count = n_layer + 1
  for layer in layers:
    if not -count <= layer < count:
      raise ValueError(f"--layers={','.join(map(str, layers))}: {layer} is "
                       f"not a state of this model: it has {count} (0 the "
                       f"embeddings, 1..{n_layer} its layers' outputs; "
                       f"-1 the last)")
  return [layer % count for layer in layers]


def _window_states(model, states):
  """[n_layer + 1, L, B, D]: a window's layer inputs, then its output."""
  return tf.stack(list(states) + [model.get_sequence_output()])


def states_fn(xlnet_config, settings, max_seq_length, layers):
  """`states(features)` -> float32 [B, W', len(layers), L, D]: the states
  `layers` (indices 0..n_layer) of every window of a batch of texts.

  Args:
    xlnet_config: the model's `XLNetConfig`.
    settings: a `LongDocuments`.
    max_seq_length: L.
    layers: `layer_indices`.
  """
  run = _RUN

  def states(features):
    if settings.long_documents == long_documents.MEMORY:
      runs = memory_forward.memory_windows(
          xlnet_config, run, features,
          settings.memory_length(max_seq_length), keep_states=True)
      per_window = tf.stack([tf.gather(_window_states(m, s), layers)
                             for m, s in runs])  # [W', S, L, B, D]
      return tf.transpose(per_window, [3, 0, 1, 2, 4])
    flat = memory_forward.flat_windows(features)
    model = memory_forward.window_model(
        xlnet_config, dataclasses.replace(run, mem_len=max_seq_length), flat)
    picked = tf.gather(_window_states(model, model.get_new_memory()), layers)
    shape = tf.shape(features["input_ids"])
    per_text = tf.reshape(tf.transpose(picked, [2, 0, 1, 3]), tf.stack(
        [shape[0], shape[1], len(layers), shape[2], xlnet_config.d_model]))
    return per_text
  return states


class Extractor:
  """The states of batches of texts from a checkpoint's backbone.

  Args:
    xlnet_config, settings, max_seq_length, layers: as `states_fn`.
    prefix: the checkpoint (its `model/transformer/...` variables).
    batch_size: texts per step.
    windows_per_text: W'.
  """

  def __init__(self, xlnet_config, settings, max_seq_length, layers, prefix,
               batch_size, windows_per_text):
    states = states_fn(xlnet_config, settings, max_seq_length, layers)
    self._predictor = predictor_lib.Predictor(
        strategies.for_inference(train_config.DeviceConfig()),
        lambda features: {"states": states(features)})
    shape = [batch_size, windows_per_text, max_seq_length]
    spec = {k: tf.TensorSpec(shape, tf.float32 if k == "input_mask"
                             else tf.int32)
            for k in memory_forward.WINDOW_INPUTS}
    spec["window_mask"] = tf.TensorSpec(shape[:2], tf.float32)
    self._predictor.restore(prefix, spec)
    self._batch_size = batch_size

  def states(self, arrays):
    """float32 [n, W', S, L, D] of the texts of `arrays` (n <= batch_size
    texts' stacked inputs)."""
    dataset = tf.data.Dataset.from_tensor_slices(
        {k: arrays[k] for k in _INPUTS}).batch(self._batch_size)
    return self._predictor.predict(dataset, self._batch_size)["states"]


def pool(states, window_mask, places, pooling, settings):
  """One text's vectors (module docstring).

  Args:
    states: float32 [W', S, L, D], the text's.
    window_mask: [W'], 1 on the text's windows.
    places: its kept `inputs.Piece`s.
    pooling: "cls", "mean" or "none".
    settings: the `LongDocuments` the states were read with.

  Returns:
    float32 [S, D] ("cls", "mean") or [len(places), S, D] ("none").
  """
  if pooling == "none":
    return np.stack([states[p.window, :, p.position] for p in places]
                    ) if places else np.zeros((0,) + states.shape[1::2],
                                              np.float32)
  if pooling == "mean":
    if not places:
      return np.zeros(states.shape[1::2], np.float32)
    picked = np.stack([states[p.window, :, p.position] for p in places])
    return picked.mean(0, dtype=np.float64).astype(np.float32)
  real = np.flatnonzero(window_mask)
  if settings.long_documents != long_documents.WINDOWS:
    return states[real[-1], :, -1]
  cls = states[real, :, -1]  # [windows, S, D]
  if settings.window_pooling == "max":
    return cls.max(0)
  return cls.mean(0, dtype=np.float64).astype(np.float32)
