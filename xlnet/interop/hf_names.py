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

The heads (`HEADS`): a fine-tuned checkpoint holds the heads of a kind of
task (`task_kinds`: classification/regression as
`XLNetForSequenceClassification`, RACE as `XLNetForMultipleChoice`, SQuAD
as `XLNetForQuestionAnswering`, tagging as `XLNetForTokenClassification`);
a backbone alone is exported as `XLNetLMHeadModel`.

Every entry also gives the variable's TF shape in the config's sizes
(`sizes_of`), so both directions refuse, in one line, a tensor whose shape
the config does not give and layers beyond the config's `n_layer`.
"""
import re

import numpy as np

from xlnet import task_kinds

_TRANSFORMER = "model/transformer/"
_RELATIVE = ("r_w_bias", "r_r_bias", "r_s_bias")

# Shapes are tuples of `sizes_of` keys (and constants), in TF's layout.
_D = ("d_model",)
_ATTN = ("d_model", "n_head", "d_head")

# Per-layer backbone variables: TF suffix under `layer_{i}/`, HF suffix
# under `transformer.layer.{i}.`, whether the value is a dense kernel, and
# its TF shape.
_LAYER = (
    ("rel_attn/q/kernel", "rel_attn.q", False, _ATTN),
    ("rel_attn/k/kernel", "rel_attn.k", False, _ATTN),
    ("rel_attn/v/kernel", "rel_attn.v", False, _ATTN),
    ("rel_attn/r/kernel", "rel_attn.r", False, _ATTN),
    ("rel_attn/o/kernel", "rel_attn.o", False, _ATTN),
    ("rel_attn/LayerNorm/gamma", "rel_attn.layer_norm.weight", False, _D),
    ("rel_attn/LayerNorm/beta", "rel_attn.layer_norm.bias", False, _D),
    ("ff/layer_1/kernel", "ff.layer_1.weight", True, ("d_model", "d_inner")),
    ("ff/layer_1/bias", "ff.layer_1.bias", False, ("d_inner",)),
    ("ff/layer_2/kernel", "ff.layer_2.weight", True, ("d_inner", "d_model")),
    ("ff/layer_2/bias", "ff.layer_2.bias", False, _D),
    ("ff/LayerNorm/gamma", "ff.layer_norm.weight", False, _D),
    ("ff/LayerNorm/beta", "ff.layer_norm.bias", False, _D),
)

# Whole-model variables outside the layers (TF name, HF name, is a kernel,
# TF shape); each is present when the checkpoint has it.
_GLOBAL = (
    (_TRANSFORMER + "word_embedding/lookup_table",
     "transformer.word_embedding.weight", False, ("n_token", "d_model")),
    (_TRANSFORMER + "mask_emb/mask_emb", "transformer.mask_emb", False,
     (1, 1, "d_model")),
)

_SUMMARY = (
    ("model/sequnece_summary/summary/kernel", "sequence_summary.summary.weight",
     True, ("d_model", "d_model")),
    ("model/sequnece_summary/summary/bias", "sequence_summary.summary.bias",
     False, _D),
)


def _logit_pair(scope):
  """A summary-based head's dense `logit` layer under TF `scope`."""
  return ((f"{scope}/kernel", "logits_proj.weight", True,
           ("d_model", "n_class")),
          (f"{scope}/bias", "logits_proj.bias", False, ("n_class",)))


def _dense(tf_scope, hf_scope, d_in, d_out, bias=True):
  """A dense layer's kernel (and bias)."""
  kernel = (f"{tf_scope}/kernel", f"{hf_scope}.weight", True, (d_in, d_out))
  if not bias:
    return (kernel,)
  return kernel, (f"{tf_scope}/bias", f"{hf_scope}.bias", False, (d_out,))


# Each fine-tuned head's own variables (TF, HF, is a kernel, TF shape),
# after the summary's when its kind pools the sequence; `{scope}` is a
# task-scoped head's TF scope.
_HEAD_VARIABLES = {
    "classification": _logit_pair("model/{scope}/logit"),
    "regression": _logit_pair("model/{scope}/logit"),
    "race": _logit_pair("logits/dense"),
    # Every position's tags: HF's `classifier`, a Linear on the sequence
    # output (`tagging/head.py`).
    "tagging": _dense("model/tagging/logit", "classifier", "d_model",
                      "n_class"),
    "squad": (
        _dense("start_logits/dense", "start_logits.dense", "d_model", 1)
        + _dense("end_logits/dense_0", "end_logits.dense_0", "2*d_model",
                 "d_model")
        + (("end_logits/LayerNorm/gamma", "end_logits.LayerNorm.weight",
            False, _D),
           ("end_logits/LayerNorm/beta", "end_logits.LayerNorm.bias", False,
            _D))
        + _dense("end_logits/dense_1", "end_logits.dense_1", "d_model", 1)
        + _dense("answer_class/dense_0", "answer_class.dense_0", "2*d_model",
                 "d_model")
        + _dense("answer_class/dense_1", "answer_class.dense_1", "d_model", 1,
                 bias=False)),
}
# Each head: the HF architecture, and its variables (TF, HF, is a kernel,
# TF shape): the backbone's LM, and the heads of the kinds of task
# (`task_kinds`).
HEADS = {
    "lm": ("XLNetLMHeadModel",
           (("model/lm_loss/bias", "lm_loss.bias", False, ("n_token",)),)),
    **{head: (kind.hf_class, (_SUMMARY if kind.pools_sequence else ())
              + _HEAD_VARIABLES[head])
       for kind in task_kinds.KINDS for head in kind.heads},
}
# The heads of a classification or regression task, scoped by it
# (`{kind}_{task}`, e.g. "regression_sts-b"), and the heads of one task
# each, whose kind is the task's name and whose scope is fixed.
TASK_SCOPED_KINDS = tuple(head for kind in task_kinds.KINDS
                          if kind.scoped_by_task for head in kind.heads)
ONE_TASK_KINDS = tuple(kind.name for kind in task_kinds.KINDS
                       if not kind.scoped_by_task)
# The first variable of each one-task head: a checkpoint holding it holds
# the head.
_ONE_TASK_MARKS = {_HEAD_VARIABLES[kind][0][0]: kind
                   for kind in ONE_TASK_KINDS}

# Variables a model may lack: `mask_emb` (only pretraining builds it), the
# LM bias (only pretraining), the summary projection (--use_summ_proj=False).
_OPTIONAL = _GLOBAL[1:] + HEADS["lm"][1] + _SUMMARY

_HEAD_SCOPE = re.compile(
    rf"^model/(({'|'.join(TASK_SCOPED_KINDS)})_[^/]+)/logit/")


def find_heads(tf_names):
  """The fine-tuned heads a checkpoint holds.

  Args:
    tf_names: iterable of the checkpoint's variable names.

  Returns:
    list of (kind, scope) sorted: kind a head of `task_kinds`
    ("classification", "regression", "race", "squad", "tagging"); scope
    the task-scoped head's TF scope (e.g. `classification_sts-b`), else
    None.
  """
  found = set()
  for name in tf_names:
    match = _HEAD_SCOPE.match(name)
    if match:
      found.add((match.group(2), match.group(1)))
    elif name in _ONE_TASK_MARKS:
      found.add((_ONE_TASK_MARKS[name], None))
  return sorted(found, key=lambda h: (h[0], h[1] or ""))


def sizes_of(xlnet_config, n_class=1):
  """The sizes the table's shapes are made of: the config's, and the
  classes of a classification or tagging head (1 for regression and
  RACE)."""
  c = xlnet_config
  return {"n_layer": c.n_layer, "d_model": c.d_model, "n_head": c.n_head,
          "d_head": c.d_head, "d_inner": c.d_inner, "n_token": c.n_token,
          "2*d_model": 2 * c.d_model, "n_class": n_class}


def _shape(spec, sizes):
  return tuple(d if isinstance(d, int) else sizes[d] for d in spec)


def _pairs(kind, scope, n_layer):
  """Every (TF name, HF name, is a kernel, TF shape spec) of `kind`'s
  model, the relative biases left out."""
  pairs = list(_GLOBAL)
  for i in range(n_layer):
    pairs += [(f"{_TRANSFORMER}layer_{i}/{t}", f"transformer.layer.{i}.{h}",
               kernel, shape) for t, h, kernel, shape in _LAYER]
  pairs += [(t.format(scope=scope), h, kernel, shape)
            for t, h, kernel, shape in HEADS[kind][1]]
  return pairs


def _hf_relative(name, i):
  return f"transformer.layer.{i}.rel_attn.{name}"


def hf_names_of(kind, scope, n_layer):
  """Every HF tensor name `hf_to_tf` reads for `kind`'s model."""
  return [h for _, h, _, _ in _pairs(kind, scope, n_layer)] + [
      _hf_relative(name, i) for name in _RELATIVE + ("seg_embed",)
      for i in range(n_layer)]


_TF_LAYER = re.compile(r"^model/transformer/layer_(\d+)/")
_HF_LAYER = re.compile(r"^transformer\.layer\.(\d+)\.")


def check_tf_layers(names, n_layer, source, config_source):
  """Refuses checkpoint variables of layers beyond the config's `n_layer`
  (one line)."""
  _check_layers(names, _TF_LAYER, {"n_layer": n_layer}, source,
                config_source)


def _check_layers(names, pattern, sizes, source, config_source):
  """Refuses variables of layers beyond the config's `n_layer`."""
  n_layer = sizes["n_layer"]
  beyond = sorted({int(m.group(1)) for m in map(pattern.match, names)
                   if m and int(m.group(1)) >= n_layer})
  if beyond:
    raise ValueError(f"{source} holds layer(s) {beyond} but {config_source} "
                     f"gives n_layer={n_layer} (layers 0-{n_layer - 1}): is "
                     "it the config of these weights?")


def _check_shape(name, value, want, source, config_source):
  """Refuses a tensor whose shape is not the one the config gives."""
  if tuple(value.shape) != tuple(want):
    raise ValueError(f"{source}: {name} has shape {list(value.shape)} but "
                     f"{config_source} gives {list(want)}: is it the config "
                     "of these weights?")


def _missing(name, kind, pattern, sizes, source, config_source):
  """The error for a required variable `name` that `source` lacks."""
  match = pattern.match(name)
  if match:
    return ValueError(f"{source} lacks {name}: layer {match.group(1)} of the "
                      f"n_layer={sizes['n_layer']} {config_source} gives")
  return ValueError(f"{source} lacks {name} (needed for {HEADS[kind][0]})")


def _mapped(weights, kind, scope, sizes, side, source, config_source):
  """The weights named in `_pairs` under the other side's names: side 0
  reads TF names and gives HF ones, side 1 the reverse; kernels
  transposed; an `_OPTIONAL` one left out when absent.

  Raises:
    ValueError: as `tf_to_hf` / `hf_to_tf`.
  """
  layer = (_TF_LAYER, _HF_LAYER)[side]
  _check_layers(weights, layer, sizes, source, config_source)
  optional = {p[side] for p in _OPTIONAL}
  out = {}
  for pair in _pairs(kind, scope, sizes["n_layer"]):
    name, kernel, spec = pair[side], pair[2], pair[3]
    if name not in weights:
      if name in optional:
        continue
      raise _missing(name, kind, layer, sizes, source, config_source)
    shape = _shape(spec, sizes)
    _check_shape(name, weights[name], shape[::-1] if kernel and side else
                 shape, source, config_source)
    value = weights[name]
    out[pair[1 - side]] = np.ascontiguousarray(value.T if kernel else value)
  return out


def tf_to_hf(values, kind, scope, sizes, source="the checkpoint",
             config_source="the config"):
  """The HF tensors of a checkpoint's model (one head).

  Args:
    values: dict TF name -> np.ndarray (the checkpoint's weights).
    kind: a key of `HEADS`.
    scope: the classification/regression head's TF scope, else None.
    sizes: `sizes_of` the model's config.
    source, config_source: what holds the values and the config, for
      messages.

  Returns:
    dict HF name -> np.ndarray (contiguous). Variables the checkpoint lacks
    (e.g. `mask_emb` after fine-tuning, `lm_loss/bias` of a fine-tuned
    backbone) are left out; the backbone's layers and the head are required.

  Raises:
    ValueError: one line naming the first missing variable, a variable
      whose shape is not the config's, or layers beyond its n_layer.
  """
  tensors = _mapped(values, kind, scope, sizes, 0, source, config_source)
  n_layer, head = sizes["n_layer"], (sizes["n_head"], sizes["d_head"])
  for name in _RELATIVE + ("seg_embed",):
    value = values.get(_TRANSFORMER + name)
    if value is None:
      raise ValueError(f"{source} lacks {_TRANSFORMER + name}")
    per_layer = name == "seg_embed" or value.ndim == 3
    want = ((n_layer, 2) + head if name == "seg_embed" else
            (n_layer,) + head if per_layer else head)
    _check_shape(_TRANSFORMER + name, value, want, source, config_source)
    for i in range(n_layer):
      tensors[_hf_relative(name, i)] = np.ascontiguousarray(
          value[i] if per_layer else value)
  return tensors


def hf_to_tf(tensors, kind, scope, sizes, untie_r, source="the model",
             config_source="the config"):
  """The checkpoint weights of HF tensors (the inverse of `tf_to_hf`).

  Args:
    tensors: dict HF name -> np.ndarray.
    kind, scope, sizes, source, config_source: as `tf_to_hf`.
    untie_r: write per-layer relative biases (else the layers' copies must
      be equal and one shared copy is written).

  Returns:
    dict TF name -> np.ndarray.

  Raises:
    ValueError: one line naming the first missing HF tensor, a tensor
      whose shape is not the config's, or layers beyond its n_layer.
  """
  values = _mapped(tensors, kind, scope, sizes, 1, source, config_source)
  head = (sizes["n_head"], sizes["d_head"])
  for name in _RELATIVE + ("seg_embed",):
    layers = [_hf_relative(name, i) for i in range(sizes["n_layer"])]
    for layer in layers:
      if layer not in tensors:
        raise _missing(layer, kind, _HF_LAYER, sizes, source, config_source)
      _check_shape(layer, tensors[layer],
                   (2,) + head if name == "seg_embed" else head, source,
                   config_source)
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
