"""The fine-tuning memory model: the peak memory of one fine-tuning
training step, counted term by term.

The count is analytic: what one training step
(`xlnet/training/trainer.py`: forward, backward, Adam update) keeps in
device memory, derived from the code (docs/performance.md, "Fine-tuning
memory" has the derivation and the measurements that check it):

* state: float32 weights and Adam's two float32 slots per trained weight
  (`optimizer.AdamState`);
* with `--accum_steps` > 1, a float32 gradient sum per trained weight,
  through the step's micro-batches and its update (`trainer._accumulated`);
* the activations the backward pass needs, per layer (`modeling.py`): the
  layer's input, keys, values, the three biased queries, the transposed
  positional queries and keys, the float32 attention probabilities, their
  dropout mask and the dropped probabilities, the attention vector, the
  LayerNorms' float32 inputs and scales, the feed-forward layer's GELU
  intermediates and dropout; once per step the positional encodings and
  the segment matrix; the head's (`squad/head.py` keeps several
  `[len, bsz, d_model]` float32 tensors, the summary heads almost nothing);
* the largest temporaries at the top of the step: the relative-position
  scores `[bsz, n_head, len, 2 len]` and their relative shift, forward and
  backward;
* at the end of the step, the float32 gradient of every trained weight.

Two options shrink the count: with activation recomputation
(`--recompute`) a layer keeps its input for the backward pass, which
makes the rest again one layer at a time (the saving counted is the share
measured, `RECOMPUTE_SAVING`); with `--freeze_layers=N` the
backbone's embeddings and relative biases and its lower N layers get no
gradients, no Adam slots and no sums, and keep nothing for the backward
pass (none reaches them).

With float16/bfloat16 (`--use_fp16`, `--use_bfloat16`) the variables and
slots stay float32 (docs/model.md, "Mixed precision"); activations and the
compute-dtype copies of the layer weights are 2 bytes, the softmax
probabilities and the LayerNorm statistics 4.

That count was checked against TensorFlow's CPU allocator; what a GPU adds
to it, and the plan that fits a device, are `memory_plan.py`'s. A task's
kind (`task_kinds`) gives the sequences one example runs as (a RACE
question: four) and its head.
"""
import dataclasses

from xlnet import task_kinds
from xlnet import validation

# Bytes of one activation in the compute dtype.
PRECISION_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
_F32 = 4  # variables, slots, gradients, softmax, LayerNorm statistics
_MASK = 1  # a dropout keep mask (bool)
_N_CLASS = 2  # classifier head width (a few more classes: a few KB)

# The allocator's peak over the tensors' bytes: TensorFlow's BFC allocator
# rounds each tensor up and serves it from a free chunk up to twice its size,
# and the executor's order varies from run to run. The largest ratio of the
# measured peak to `tensor_bytes` on the calibration grid of
# bench/finetune_memory.py (0.990 to 1.033 on the CPU), rounded up; the
# check grid measured 0.977 to 1.068 (docs/performance.md, "Fine-tuning
# memory").
ALLOCATOR_OVERHEAD = 1.04

# The share of what a layer keeps beyond its input that recomputation
# saves (`kept_below`): the smallest measured on the CPU's allocator, per
# layer below the top one, at widths 768 and 1024, 128 and 512 tokens
# (bench/recompute_memory.py; docs/performance.md, "Activation
# recomputation and frozen layers"), at most 1 (no more than derived).
RECOMPUTE_SAVING = 0.84


@dataclasses.dataclass(frozen=True)
class ModelSizes:
  """The sizes of an XLNet config that memory depends on."""
  n_layer: int
  d_model: int
  n_head: int
  d_head: int
  d_inner: int
  n_token: int
  ff_activation: str = "gelu"
  untie_r: bool = True

  @classmethod
  def of(cls, xlnet_config):
    """From an `XLNetConfig`, a dict of its keys, or a `ModelSizes`."""
    if isinstance(xlnet_config, cls):
      return xlnet_config
    get = (xlnet_config.get if isinstance(xlnet_config, dict)
           else lambda k: getattr(xlnet_config, k))
    return cls(**{f.name: get(f.name) for f in dataclasses.fields(cls)})


def check(task_kind, precision):
  """Raises unless `task_kind` is one of `task_kinds.NAMES` and `precision`
  one of PRECISION_BYTES."""
  task_kinds.get(task_kind)
  if precision not in PRECISION_BYTES:
    raise ValueError(f"precision must be one of {tuple(PRECISION_BYTES)}, "
                     f"got {precision!r}")


################################################################################
# Parameters.
################################################################################
def layer_matrix_params(sizes):
  """Weights of one layer that a matrix product reads (q, k, v, r, o
  kernels `[d_model, n_head, d_head]`, the feed-forward kernels): in
  float16/bfloat16 their compute-dtype copies live until the backward pass
  has used them."""
  s = sizes
  return 5 * s.d_model * s.n_head * s.d_head + 2 * s.d_model * s.d_inner


def layer_params(sizes):
  """Parameters of one layer (scope `layer_{i}`): its matrices, the
  feed-forward biases and two LayerNorms."""
  s = sizes
  return (layer_matrix_params(s) + s.d_inner + s.d_model  # ff biases
          + 2 * 2 * s.d_model)  # two LayerNorms


def shared_params(sizes):
  """Parameters outside the layers' scopes that hold every layer's values:
  the relative-attention biases and the segment embeddings."""
  s = sizes
  head = s.n_head * s.d_head
  biases = 3 * head * (s.n_layer if s.untie_r else 1)  # r_w, r_r, r_s
  return biases + s.n_layer * 2 * head  # seg_embed


def backbone_params(sizes):
  """Trainable parameters of the fine-tuning backbone (segments, no
  mask_emb): embedding, relative biases, seg_embed and the layers."""
  s = sizes
  return (s.n_token * s.d_model + shared_params(s)
          + s.n_layer * layer_params(s))


def frozen_params(sizes, freeze_layers):
  """Parameters `--freeze_layers=N` leaves untrained
  (`optimizer.is_frozen`): the word embedding, the relative biases and
  segment embeddings (frozen whole) and the lower N layers' (none for 0)."""
  if not freeze_layers:
    return 0
  return (sizes.n_token * sizes.d_model + shared_params(sizes)
          + freeze_layers * layer_params(sizes))


def head_params(sizes, task_kind):
  """Trainable parameters of the task's head (`classifier/head.py`,
  `squad/head.py`, `race/head.py`, `tagging/head.py`)."""
  d = sizes.d_model
  summary = d * d + d  # sequnece_summary/summary (tanh projection)
  if task_kind == "classifier":
    return summary + d * _N_CLASS + _N_CLASS
  if task_kind == "race":
    return summary + d + 1
  if task_kind == "tagging":  # no summary: a dense layer on every position
    return d * _N_CLASS + _N_CLASS
  start = d + 1
  end = 2 * d * d + d + 2 * d + d + 1  # dense_0, LayerNorm, dense_1
  answer = 2 * d * d + d + d  # dense_0, dense_1 (no bias)
  return start + end + answer


def param_count(xlnet_config, task_kind):
  """Trainable parameters of backbone + head."""
  sizes = ModelSizes.of(xlnet_config)
  return backbone_params(sizes) + head_params(sizes, task_kind)


################################################################################
# Activations.
################################################################################
def _shapes(sizes, seq_len, rows):
  """Entries of the step's recurring tensor shapes for `rows` sequences."""
  s, t = sizes, seq_len
  return dict(
      d=t * rows * s.d_model,  # [len, bsz, d_model]
      h=t * rows * s.n_head * s.d_head,  # [len, bsz, n_head, d_head]
      f=t * rows * s.d_inner,  # [len, bsz, d_inner]
      s=rows * s.n_head * t * t,  # scores [bsz, n_head, len, len]
      m=rows * t * t)  # masks [bsz, 1, len, len]


def layer_activation_terms(sizes, seq_len, rows, precision):
  """Bytes one layer keeps for the backward pass, by tensor (`modeling.py`:
  `rel_multihead_attn`, `rel_attn_core`, `post_attention`,
  `positionwise_ffn`)."""
  n = _shapes(sizes, seq_len, rows)
  c = PRECISION_BYTES[precision]
  ffn_kept = 4 if sizes.ff_activation == "gelu" else 1
  return {
      # the layer's input (the projections' weight gradients)
      "input": n["d"] * c,
      # k, v heads; the three biased queries (content, position, segment)
      "keys, values": 2 * n["h"] * c,
      "biased queries": 3 * n["h"] * c,
      # `_positional_scores`: transposed copies of the positional queries
      # [bsz, n_head, len, d_head] and keys [bsz, n_head, 2 len, d_head]
      "positional q, k": 3 * n["h"] * c,
      # softmax output (float32), dropout mask, dropped probabilities
      # (float32 in fp32, else cast to the compute dtype)
      "attention probabilities": n["s"] * (_F32 + _MASK + c),
      "attention vector": n["h"] * c,
      # two LayerNorms: float32 input and its [len, bsz, d_model] scale
      # (`tf.nn.batch_normalization` multiplies by rsqrt(var) * gamma);
      # the attention LayerNorm's output (the FFN's input); the dropout
      # masks of the attention output and the FFN output
      "layer norms": 2 * 2 * n["d"] * _F32 + n["d"] * c + 2 * n["d"] * _MASK,
      # GELU (tanh form): its input, tanh, 0.5 x and 1 + tanh; the dropped
      # hidden layer and its mask
      "feed-forward": ffn_kept * n["f"] * c + n["f"] * (c + _MASK),
  }


def embedding_activation_terms(sizes, seq_len, rows, precision):
  """Bytes kept once per step below the layers (`transformer_xl`)."""
  n = _shapes(sizes, seq_len, rows)
  c = PRECISION_BYTES[precision]
  return {
      "word dropout mask": n["d"] * _MASK,
      # per-row positional encodings [2 len, bsz, d_model] after dropout,
      # read by every layer's r projection (no gradient flows into them, so
      # their dropout mask is not kept)
      "positional encodings": 2 * n["d"] * c,
      "segment matrix": n["m"] * c,
  }


def head_activation_terms(sizes, task_kind, seq_len, rows):
  """Bytes of the head's backward pass: what the head keeps and the
  gradients it makes (float32: the heads run on the float32 output)."""
  n = _shapes(sizes, seq_len, rows)
  if task_kind == "tagging":
    # every position's logits, their softmax and its gradient, and the
    # output's gradient [len, bsz, d_model]
    return {"tagging head": (3 * _N_CLASS * n["d"] // sizes.d_model
                             + n["d"]) * _F32}
  if task_kind != "squad":
    # the summary heads keep [bsz, d_model] tensors; the gradient of the
    # summary's slice of the output is a dense [len, bsz, d_model]
    return {"summary head": n["d"] * _F32}
  # The end head runs on every position (`squad_head.end_logits`): it keeps
  # [output; start] (2 d_model), its tanh layer and LayerNorm scale; its
  # LayerNorm's backward makes 4 [len, bsz, d_model] tensors, and the
  # output's gradients from the start, end and answer heads 5 more.
  return {"squad heads": (2 + 1 + 1) * n["d"] * _F32,
          "squad head gradients": (4 + 5) * n["d"] * _F32}


def top_layer_phases(sizes, task_kind, seq_len, rows, precision):
  """Bytes live at the top layer's memory-heavy moments, beyond the state
  and what the embeddings and the layers below keep.

  The top layer has kept its input, keys, values, queries and positional
  copies by the time it forms its scores; its dropout masks depend only on
  the step's seed, so they are drawn early. Then:
    forward, score sum: the content scores, the segment term, the
      positional scores `[bsz, n_head, len, 2 len]` and the first slice of
      their relative shift (`rel_shift`) live at once: 6 score tensors;
    backward, head: the whole top layer and the head's tensors;
    backward, top LayerNorm: the whole top layer, the output's gradient and
      4 float32 `[len, bsz, d_model]` tensors of the LayerNorm's backward
      (`tf.nn.batch_normalization`);
    backward, feed-forward: the top layer less its last LayerNorm, the
      gradient of the hidden layer and the layer's weight gradients;
    backward, probabilities: the kept probabilities and their gradient (and
      its float32 cast in float16/bfloat16);
    backward, relative shift: the score gradient and the two pads of the
      shift's gradient (each `[.., 2 len, len]`).
  """
  n = _shapes(sizes, seq_len, rows)
  c = PRECISION_BYTES[precision]
  layer = layer_activation_terms(sizes, seq_len, rows, precision)
  whole = sum(layer.values())
  pre = (layer["input"] + layer["keys, values"] + layer["biased queries"]
         + layer["positional q, k"])
  masks = n["s"] * _MASK + n["f"] * _MASK + 2 * n["d"] * _MASK
  grads = _F32 * (layer_matrix_params(sizes) + sizes.d_inner + sizes.d_model)
  to_f32 = 0 if c == _F32 else _F32
  head = sum(head_activation_terms(sizes, task_kind, seq_len, rows).values())
  return {
      "forward: score sum": pre + masks + n["m"] * c + 6 * n["s"] * c,
      "backward: head": whole + head,
      "backward: top LayerNorm": whole + 5 * n["d"] * _F32,
      "backward: feed-forward": (whole - 2 * n["d"] * _F32
                                 + (n["f"] + n["d"]) * c + grads),
      "backward: probabilities":
          pre + masks + n["s"] * (_F32 + c + c + to_f32) + grads,
      "backward: relative shift": pre + masks + n["s"] * (c + 4 * c) + grads,
  }


################################################################################
# The step.
################################################################################
@dataclasses.dataclass(frozen=True)
class StepMemory:
  """The estimate of one training step's peak, in bytes, by term.

  Attributes:
    state: held between steps (weights, slots, constants).
    below: kept by the embeddings and every layer but the top one.
    top: the top layer's phases (`top_layer_phases`), each on top of
      state + below; the largest is the step's activation peak.
    end: the float32 gradients at the update, on top of the state.
    sums: with accumulation, the float32 gradient sums, live at both
      peaks (at the update the sums and the mean gradients made of them).
  """
  state: dict
  below: dict
  top: dict
  end: dict
  sums: int = 0

  @property
  def activation_peak(self):
    return (sum(self.state.values()) + self.sums + sum(self.below.values())
            + max(self.top.values()))

  @property
  def update_peak(self):
    return sum(self.state.values()) + self.sums + sum(self.end.values())

  @property
  def tensor_bytes(self):
    """The most bytes of tensors live at once."""
    return max(self.activation_peak, self.update_peak)

  @property
  def peak_bytes(self):
    """The allocator's peak: the tensors and `ALLOCATOR_OVERHEAD`."""
    return ALLOCATOR_OVERHEAD * self.tensor_bytes

  @property
  def activation_bytes(self):
    """What the activations' peak holds beyond the state."""
    return sum(self.below.values()) + max(self.top.values())

  def weight_copy_bytes(self, weight_copies):
    """What a device holds in float32 copies of the trained weights
    (`memory_plan.DeviceTerms.weight_copies` of them) beyond the state.

    Only gradients come in copies of the weights (the gradients, clipped,
    scaled, Adam's temporaries), and the release's step held all its
    gradients at once (its clipping needs their global norm before it
    scales any). The gradient sums are those gradients: they take their
    place (each micro-batch's gradient is added as it is made, and the
    mean gradients of the update are made of the sums). So the sums add to
    a device's peak only where it holds fewer than one copy.
    """
    return max(weight_copies * self.end["gradients"], self.sums)

  def device_peak_bytes(self, terms):
    """The peak on a device whose additions are `terms` (a
    `memory_plan.DeviceTerms`)."""
    held = sum(self.state.values())
    copies = self.weight_copy_bytes(terms.weight_copies)
    return ALLOCATOR_OVERHEAD * max(
        held + terms.activation_factor * self.activation_bytes + copies,
        held + sum(self.end.values()) + copies)


def kept_below(sizes, seq_len, rows, precision, recompute=False,
               freeze_layers=0):
  """Bytes kept for the backward pass below the top layer, by term.

  A frozen layer keeps nothing: no gradient reaches it (the lowest trained
  layer keeps its input). With recomputation a trained layer keeps its
  input; the rest (its dropout masks drawn again alike) is made again
  when the backward pass reaches it, one layer at a time (the top layer's
  phases), and so are the compute-dtype copies of its weights. Of the rest
  the count saves the share `RECOMPUTE_SAVING` measured.
  """
  below = embedding_activation_terms(sizes, seq_len, rows, precision)
  if freeze_layers:
    del below["word dropout mask"]  # the embedding gets no gradient
  trained = sizes.n_layer - freeze_layers
  terms = layer_activation_terms(sizes, seq_len, rows, precision)
  if recompute:
    rest = sum(terms.values()) - terms["input"]
    terms = {"input": terms["input"],
             "not saved by recomputation": (1 - RECOMPUTE_SAVING) * rest}
  for name, value in terms.items():
    below[f"layers: {name}"] = value * max(trained - 1, 0)
  if precision != "fp32" and trained:
    below["layers: weight copies"] = (
        (1 if recompute else trained) * layer_matrix_params(sizes)
        * PRECISION_BYTES[precision])
  return below


def step_memory(xlnet_config, task_kind, seq_len, micro_batch, precision,
                accumulate=False, recompute=False, freeze_layers=0):
  """The terms of one fine-tuning training step's peak memory per device.

  Args:
    xlnet_config: an `XLNetConfig` (or a dict of its keys).
    task_kind: a kind of `task_kinds`: "classifier" (also regression),
      "squad", "race" or "tagging".
    seq_len: tokens per sequence (--max_seq_length).
    micro_batch: examples per replica and micro-step (--train_batch_size per
      GPU); a RACE example is 4 sequences.
    precision: "fp32", "fp16" or "bf16".
    accumulate: --accum_steps > 1 (adds a float32 gradient sum per trained
      weight).
    recompute: --recompute (a layer keeps its input only: `kept_below`).
    freeze_layers: --freeze_layers (`frozen_params`, `kept_below`).

  Returns:
    a `StepMemory`.
  """
  check(task_kind, precision)
  sizes = ModelSizes.of(xlnet_config)
  validation.check_value("freeze_layers", freeze_layers)
  validation.check_freeze_layers(freeze_layers, sizes.n_layer)
  rows = micro_batch * task_kinds.get(task_kind).sequences_per_example
  params = param_count(sizes, task_kind)
  trained = params - frozen_params(sizes, freeze_layers)
  n = _shapes(sizes, seq_len, rows)
  c = PRECISION_BYTES[precision]
  state = {
      "weights": params * _F32,
      "adam slots": 2 * trained * _F32,
      # constants the step's function holds from its first run: grappler
      # folds the positional encodings [2 len, bsz, d_model] (scaled for
      # dropout) and the self-visibility matrix [len, len]; its memory
      # optimizer may turn one layer's sum of the score terms into an
      # accumulation on a temporary variable whose zero initializer is a
      # constant of the scores' shape
      "folded constants": 2 * n["d"] * c + seq_len * seq_len * c,
      "score-sum constant": n["s"] * c,
  }
  below = kept_below(sizes, seq_len, rows, precision, recompute,
                     freeze_layers)
  top = top_layer_phases(sizes, task_kind, seq_len, rows, precision)
  if freeze_layers == sizes.n_layer:  # the head alone trains
    top = {"forward: score sum": top["forward: score sum"],
           "backward: head": sum(head_activation_terms(
               sizes, task_kind, seq_len, rows).values())}
  return StepMemory(state, below, top, {"gradients": trained * _F32},
                    trained * _F32 if accumulate else 0)
