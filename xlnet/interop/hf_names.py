"""The one table between the release's variable names (TensorFlow
checkpoints) and HuggingFace transformers' XLNet parameter names.

Both sides hold the same numbers; only names and a few layouts differ:

  dense kernels   TF `.../kernel [in, out]`  <->  HF `....weight [out, in]`
                  (transposed; attention projections `q k v r o` keep
                  `[d_model, n_head, d_head]` on both sides)
  LayerNorm       `gamma`, `beta`            <->  `weight`, `bias`
  relative biases TF `r_w_bias r_r_bias r_s_bias`: `[n_head, d_head]` shared
                  by the layers, or `[n_layer, n_head, d_head]` with untie_r;
                  `seg_embed [n_layer, 2, n_head, d_head]`  <->  HF: one copy
                  per layer, `transformer.layer.{i}.rel_attn.{name}`
  LM softmax      tied to the word embedding on both sides; only its bias
                  `model/lm_loss/bias` <-> `lm_loss.bias` is stored.

The heads (`HEADS`): a fine-tuned checkpoint holds at most one of
classification/regression (`XLNetForSequenceClassification`), RACE
(`XLNetForMultipleChoice`) and SQuAD (`XLNetForQuestionAnswering`); a
backbone alone is exported as `XLNetLMHeadModel`.
"""
import re

import numpy as np

_TRANSFORMER = "model/transformer/"
_RELATIVE = ("r_w_bias", "r_r_bias", "r_s_bias")

# Per-layer backbone variables: TF suffix under `layer_{i}/`, HF suffix
# under `transformer.layer.{i}.`, and whether the value is a dense kernel.
_LAYER = (
    ("rel_attn/q/kernel", "rel_attn.q", False),
    ("rel_attn/k/kernel", "rel_attn.k", False),
    ("rel_attn/v/kernel", "rel_attn.v", False),
    ("rel_attn/r/kernel", "rel_attn.r", False),
    ("rel_attn/o/kernel", "rel_attn.o", False),
    ("rel_attn/LayerNorm/gamma", "rel_attn.layer_norm.weight", False),
    ("rel_attn/LayerNorm/beta", "rel_attn.layer_norm.bias", False),
    ("ff/layer_1/kernel", "ff.layer_1.weight", True),
    ("ff/layer_1/bias", "ff.layer_1.bias", False),
    ("ff/layer_2/kernel", "ff.layer_2.weight", True),
    ("ff/layer_2/bias", "ff.layer_2.bias", False),
    ("ff/LayerNorm/gamma", "ff.layer_norm.weight", False),
    ("ff/LayerNorm/beta", "ff.layer_norm.bias", False),
)

# Whole-model variables outside the layers (TF name, HF name, is a kernel);
# each is present when the checkpoint has it.
_GLOBAL = (
    (_TRANSFORMER + "word_embedding/lookup_table",
     "transformer.word_embedding.weight", False),
    (_TRANSFORMER + "mask_emb/mask_emb", "transformer.mask_emb", False),
)

_SUMMARY = (
    ("model/sequnece_summary/summary/kernel", "sequence_summary.summary.weight",
     True),
    ("model/sequnece_summary/summary/bias", "sequence_summary.summary.bias",
     False),
)


def _logit_pair(scope):
  """A summary-based head's dense `logit` layer under TF `scope`."""
  return ((f"{scope}/kernel", "logits_proj.weight", True),
          (f"{scope}/bias", "logits_proj.bias", False))


# Each head: the HF architecture, and its variables (TF, HF, is a kernel);
# `{scope}` is the classification/regression head's TF scope.
HEADS = {
    "lm": ("XLNetLMHeadModel",
           (("model/lm_loss/bias", "lm_loss.bias", False),)),
    "classification": ("XLNetForSequenceClassification",
                       _SUMMARY + _logit_pair("model/{scope}/logit")),
    "regression": ("XLNetForSequenceClassification",
                   _SUMMARY + _logit_pair("model/{scope}/logit")),
    "race": ("XLNetForMultipleChoice",
             _SUMMARY + _logit_pair("logits/dense")),
    "squad": ("XLNetForQuestionAnswering", (
        ("start_logits/dense/kernel", "start_logits.dense.weight", True),
        ("start_logits/dense/bias", "start_logits.dense.bias", False),
        ("end_logits/dense_0/kernel", "end_logits.dense_0.weight", True),
        ("end_logits/dense_0/bias", "end_logits.dense_0.bias", False),
        ("end_logits/LayerNorm/gamma", "end_logits.LayerNorm.weight", False),
        ("end_logits/LayerNorm/beta", "end_logits.LayerNorm.bias", False),
        ("end_logits/dense_1/kernel", "end_logits.dense_1.weight", True),
        ("end_logits/dense_1/bias", "end_logits.dense_1.bias", False),
        ("answer_class/dense_0/kernel", "answer_class.dense_0.weight", True),
        ("answer_class/dense_0/bias", "answer_class.dense_0.bias", False),
        ("answer_class/dense_1/kernel", "answer_class.dense_1.weight", True),
    )),
}

# Variables a model may lack: `mask_emb` (only pretraining builds it), the
# LM bias (only pretraining), the summary projection (--use_summ_proj=False).
_OPTIONAL = _GLOBAL[1:] + HEADS["lm"][1] + _SUMMARY

_HEAD_SCOPE = re.compile(r"^model/((classification|regression)_[^/]+)/logit/")


def find_heads(tf_names):
  """The fine-tuned heads a checkpoint holds.

  Args:
    tf_names: iterable of the checkpoint's variable names.

  Returns:
    list of (kind, scope) sorted: kind in "classification", "regression",
    "race", "squad"; scope the classification/regression head's TF scope
    (e.g. `classification_sts-b`), else None.
  """
  found = set()
  for name in tf_names:
    match = _HEAD_SCOPE.match(name)
    if match:
      found.add((match.group(2), match.group(1)))
    elif name == "logits/dense/kernel":
      found.add(("race", None))
    elif name == "start_logits/dense/kernel":
      found.add(("squad", None))
  return sorted(found, key=lambda h: (h[0], h[1] or ""))


def _pairs(kind, scope, n_layer):
  """Every (TF name, HF name, is a kernel) of `kind`'s model, the relative
  biases left out."""
  pairs = list(_GLOBAL)
  for i in range(n_layer):
    pairs += [(f"{_TRANSFORMER}layer_{i}/{t}", f"transformer.layer.{i}.{h}",
               kernel) for t, h, kernel in _LAYER]
  pairs += [(t.format(scope=scope), h, kernel)
            for t, h, kernel in HEADS[kind][1]]
  return pairs


def _hf_relative(name, i):
  return f"transformer.layer.{i}.rel_attn.{name}"


def tf_to_hf(values, kind, scope, n_layer):
  """The HF tensors of a checkpoint's model (one head).

  Args:
    values: dict TF name -> np.ndarray (the checkpoint's weights).
    kind: a key of `HEADS`.
    scope: the classification/regression head's TF scope, else None.
    n_layer: number of layers.

  Returns:
    dict HF name -> np.ndarray (contiguous). Variables the checkpoint lacks
    (e.g. `mask_emb` after fine-tuning, `lm_loss/bias` of a fine-tuned
    backbone) are left out; the backbone's layers and the head are required.

  Raises:
    ValueError: naming the first missing required variable.
  """
  optional = {p[0] for p in _OPTIONAL}
  tensors = {}
  for tf_name, hf_name, kernel in _pairs(kind, scope, n_layer):
    if tf_name not in values:
      if tf_name in optional:
        continue
      raise ValueError(f"the checkpoint lacks {tf_name} (needed for "
                       f"{HEADS[kind][0]})")
    value = values[tf_name]
    tensors[hf_name] = np.ascontiguousarray(value.T if kernel else value)
  for name in _RELATIVE + ("seg_embed",):
    value = values.get(_TRANSFORMER + name)
    if value is None:
      raise ValueError(f"the checkpoint lacks {_TRANSFORMER + name}")
    per_layer = name == "seg_embed" or value.ndim == 3
    for i in range(n_layer):
      tensors[_hf_relative(name, i)] = np.ascontiguousarray(
          value[i] if per_layer else value)
  return tensors


def hf_to_tf(tensors, kind, scope, n_layer, untie_r):
  """The checkpoint weights of HF tensors (the inverse of `tf_to_hf`).

  Args:
    tensors: dict HF name -> np.ndarray.
    kind, scope, n_layer: as `tf_to_hf`.
    untie_r: write per-layer relative biases (else the layers' copies must
      be equal and one shared copy is written).

  Returns:
    dict TF name -> np.ndarray.

  Raises:
    ValueError: naming the first missing HF tensor.
  """
  optional = {p[1] for p in _OPTIONAL}
  values = {}
  for tf_name, hf_name, kernel in _pairs(kind, scope, n_layer):
    if hf_name not in tensors:
      if hf_name in optional:
        continue
      raise ValueError(f"the weights lack {hf_name} (needed for "
                       f"{HEADS[kind][0]})")
    value = tensors[hf_name]
    values[tf_name] = np.ascontiguousarray(value.T if kernel else value)
  for name in _RELATIVE + ("seg_embed",):
    layers = [_hf_relative(name, i) for i in range(n_layer)]
    missing = [n for n in layers if n not in tensors]
    if missing:
      raise ValueError(f"the weights lack {missing[0]}")
    stacked = np.stack([tensors[n] for n in layers])
    values[_TRANSFORMER + name] = (
        stacked if untie_r or name == "seg_embed" else stacked[0])
  return values


def relative_biases_shared(tensors, n_layer):
  """Whether every layer holds the same relative biases (so a checkpoint
  with one shared copy, untie_r false, represents them)."""
  for name in _RELATIVE:
    first = tensors.get(_hf_relative(name, 0))
    for i in range(1, n_layer):
      other = tensors.get(_hf_relative(name, i))
      if first is None or other is None or not np.array_equal(first, other):
        return False
  return True
