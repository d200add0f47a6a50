"""XLNet building blocks: the two-stream Transformer-XL backbone and its heads.

Everything is written on `tf.compat.v1.get_variable` and `tf.nn` (no Keras) so
that graphs build on every TensorFlow 2.x and variables carry the names of the
released checkpoints (docs/model.md lists them).

Layout conventions:
  * Activations are time-major: `[len, bsz, ...]`.
  * Masks hold 1 where a query may NOT attend and 0 where it may.
  * Inside the attention core, scores live in the layout `[bsz, n_head, qlen,
    klen]` so that the batched matmuls and the softmax (last axis) need no
    transposes of the largest tensors; the public functions below say which
    layout each argument uses.

Mixed precision: with `use_bfloat16` (or `use_fp16`) the activations and
matrix products are computed in bfloat16 (float16) while every variable stays
float32 (it is cast when read); the attention softmax, the LayerNorm
statistics and the loss run in float32. The backbone returns its output and
new memories in float32.
"""
import contextlib
import math
import threading

import numpy as np
import tensorflow as tf
# The one way to tell, while a graph is built, that XLA will compile it
# (tf.function(jit_compile=True), TPU replication); public in no TensorFlow.
from tensorflow.python.ops import control_flow_util

_LN_EPSILON = 1e-12


def gelu(x):
  """Gaussian Error Linear Unit, tanh approximation.

  Args:
    x: float Tensor of any shape.

  Returns:
    Tensor of the same shape and dtype:
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
  """
  # TensorFlow's op graph for this formula is one the CPU graph optimizer
  # fuses with a preceding matmul + bias into one oneDNN kernel when no
  # gradient needs the intermediate values (inference).
  return tf.nn.gelu(x, approximate=True)


_ACTIVATIONS = {"relu": tf.nn.relu, "gelu": gelu}


def _get_activation(activation_type):
  """Returns the activation function named `activation_type` ("relu"|"gelu")."""
  if activation_type not in _ACTIVATIONS:
    raise ValueError(
        f"ff_activation must be one of {sorted(_ACTIVATIONS)}, "
        f"got {activation_type!r}")
  return _ACTIVATIONS[activation_type]


def _variable(name, shape, dtype, initializer=None):
  """Creates (or reuses) a float32 variable and returns it cast to `dtype`.

  Args:
    name: variable name relative to the current variable scope.
    shape: list of ints.
    dtype: compute dtype the caller works in.
    initializer: initializer, or None for TensorFlow's default
      (Glorot-uniform).

  Returns:
    Tensor of shape `shape` and dtype `dtype`.
  """
  var = tf.compat.v1.get_variable(
      name, shape, dtype=tf.float32, initializer=initializer)
  return var if dtype == tf.float32 else tf.cast(var, dtype)


# Per thread (tf.distribute traces each replica in its own thread): the stack
# of [seed, calls so far, byte_masks] set by `stateless_dropout_seed`.
_DROPOUT_SEEDS = threading.local()


@contextlib.contextmanager
def stateless_dropout_seed(seed, byte_masks=None):
  """Makes every dropout mask built inside the block a pure function of seed.

  The n-th dropout op built in the block draws its mask from
  `fold_in(seed, n)` with stateless random ops. A trainer derives `seed`
  from (run seed, global step, replica, micro-batch), so a resumed run draws
  exactly the masks an uninterrupted run would have drawn. Outside such a
  block dropout draws its masks from the stateful random ops (seeded by the
  graph seed).

  Args:
    seed: int32/int64 Tensor `[2]`.
    byte_masks: draw the masks of float32 tensors with `_byte_keep_mask`
      (the same distribution from about a quarter of the random bits, faster
      on the CPU); None: where `_byte_masks_pay` (on the CPU without XLA,
      as outside a block). Its ops have data-dependent shapes: only for
      graphs that run on the CPU without XLA.
  """
  with _dropout_block(seed, 0, byte_masks):
    yield


@contextlib.contextmanager
def _dropout_block(seed, count, byte_masks):
  """The block of `stateless_dropout_seed` whose first dropout op draws
  from `fold_in(seed, count + 1)`; yields its entry `[seed, draws so far,
  byte_masks]`."""
  stack = getattr(_DROPOUT_SEEDS, "stack", None)
  if stack is None:
    stack = _DROPOUT_SEEDS.stack = []
  entry = [seed, count, byte_masks]
  stack.append(entry)
  try:
    yield entry
  finally:
    stack.pop()


def _keep_mask(x, rate):
  """Which entries of x dropout keeps: True with probability `1 - rate`.

  An entry is kept when a uniform number drawn in x's dtype is `>= rate`,
  as in `tf.nn.dropout`. Inside `stateless_dropout_seed` the draws are a pure
  function of its seed, outside they come from the stateful random ops. A
  float32 mask comes from `_byte_keep_mask`, which has the same
  distribution, with the block's `byte_masks` or, by default, where
  `_byte_masks_pay`.

  Args:
    x: float Tensor of any shape.
    rate: float in (0, 1), the drop probability.

  Returns:
    bool Tensor of x's shape.
  """
  stack = getattr(_DROPOUT_SEEDS, "stack", None)
  seed, byte_masks = None, None
  if stack:
    stack[-1][1] += 1
    seed = tf.random.experimental.stateless_fold_in(stack[-1][0],
                                                    stack[-1][1])
    byte_masks = stack[-1][2]
  if byte_masks is None:
    byte_masks = _byte_masks_pay()
  threshold = _drop_threshold(rate)
  if byte_masks and x.dtype == tf.float32 and threshold < 2 ** 23:
    if seed is None:  # the byte draw is stateless: a stateful seed for it
      seed = tf.random.uniform([2], maxval=2 ** 31 - 1, dtype=tf.int32)
    return _byte_keep_mask(tf.shape(x), seed, threshold)
  if seed is None:
    return tf.random.uniform(tf.shape(x), dtype=x.dtype) >= rate
  return tf.random.stateless_uniform(tf.shape(x), seed, dtype=x.dtype) >= rate


def _byte_masks_pay():
  """Whether dropout masks built now are drawn faster from bytes
  (`_byte_keep_mask`): when no GPU is visible (there the random numbers are
  cheap) and the graph is not being compiled by XLA (jit_compile, TPUs),
  which needs the static shapes the byte draw does not have. It decides for
  every caller alike: the trainer, the estimator and `XLNetModel` used
  directly."""
  return (not tf.config.list_physical_devices("GPU") and
          not control_flow_util.GraphOrParentsInXlaContext(
              tf.compat.v1.get_default_graph()))


def _drop_threshold(rate):
  """How many of the 2^23 float32 uniform values `m / 2^23` lie below the
  float32 `rate`: the draw `u >= rate` drops with probability
  `threshold / 2^23`."""
  return math.ceil(float(np.float32(rate)) * 2 ** 23)


def _byte_keep_mask(shape, seed, threshold):
  """A keep mask with P(drop) = threshold / 2^23 from 8 random bits per
  entry, and 15 more for the entries those 8 bits leave undecided.

  Think of a float32 uniform's 23 random bits as `m = 2^15 top + low`: it
  drops when `m < threshold`. With `threshold = 2^15 hi + lo`, an entry whose
  8-bit `top` is below `hi` drops and one above keeps, whatever `low` is;
  only the 1 in 256 entries with `top == hi` draw `low` (15 bits) and drop if
  `low < lo`. So the mask has exactly the uniform draw's distribution
  (independent entries, the same probability) from 8.06 instead of 32
  random bits per entry: on the CPU, where generating the random numbers is
  most of dropout's cost, about half the time.

  Args:
    shape: int Tensor, the mask's shape.
    seed: int Tensor `[2]`, stateless seed.
    threshold: int in [1, 2^23).

  Returns:
    bool Tensor of `shape`.
  """
  hi, lo = divmod(threshold, 2 ** 15)
  size = tf.reduce_prod(shape)
  words = tf.random.stateless_uniform(
      [(size + 3) // 4], tf.random.experimental.stateless_fold_in(seed, 0),
      minval=None, maxval=None, dtype=tf.uint32)
  top = tf.slice(tf.reshape(tf.bitcast(words, tf.uint8), [-1]), [0], [size])
  undecided = tf.where(tf.equal(top, hi))
  low = tf.random.stateless_uniform(
      tf.shape(undecided)[:1],
      tf.random.experimental.stateless_fold_in(seed, 1),
      minval=0, maxval=2 ** 15, dtype=tf.int32)
  keep = tf.tensor_scatter_nd_update(top > hi, undecided, low >= lo)
  return tf.reshape(keep, shape)


def _dropout(x, rate, is_training):
  """Dropout with drop probability `rate`, only when training (stateless
  inside `stateless_dropout_seed`): the kept entries are scaled by
  `1 / (1 - rate)` in x's dtype, as `tf.nn.dropout` does."""
  if not is_training or not rate:
    return x
  return _zero_dropped(x * tf.constant(1.0 / (1.0 - rate), x.dtype), rate)


def _zero_dropped(x, rate):
  """x with the entries dropout drops (probability `rate`) set to 0, the
  others unchanged."""
  return tf.where(_keep_mask(x, rate), x, tf.zeros([], x.dtype))


def _dense(x, units, kernel_initializer, name, activation=None):
  """Fully connected layer on the last axis: `activation(x W + b)`.

  Args:
    x: float Tensor `[..., d_in]` (static `d_in`).
    units: int, output width.
    kernel_initializer: initializer of `{name}/kernel` (bias starts at 0).
    name: variable scope of `kernel [d_in, units]` and `bias [units]`.
    activation: callable or None.

  Returns:
    Tensor `[..., units]` of x's dtype.
  """
  d_in = x.shape[-1]
  with tf.compat.v1.variable_scope(name):
    kernel = _variable("kernel", [d_in, units], x.dtype, kernel_initializer)
    bias = _variable("bias", [units], x.dtype, tf.compat.v1.zeros_initializer())
  # A 2-D matmul + bias_add (+ activation) is the pattern the CPU graph
  # optimizer fuses into one oneDNN kernel.
  out = tf.nn.bias_add(tf.matmul(tf.reshape(x, [-1, d_in]), kernel), bias)
  if activation is not None:
    out = activation(out)
  return tf.reshape(out, tf.concat([tf.shape(x)[:-1], [units]], 0))


def _layer_norm(x, name="LayerNorm"):
  """Layer normalization over the last axis (population variance, eps 1e-12).

  Computed in float32 whatever the input dtype, then cast back.

  Args:
    x: float Tensor `[..., d]` (static `d`).
    name: variable scope of `gamma [d]` (init 1) and `beta [d]` (init 0).

  Returns:
    Tensor of x's shape and dtype.
  """
  d = x.shape[-1]
  with tf.compat.v1.variable_scope(name):
    gamma = tf.compat.v1.get_variable(
        "gamma", [d], dtype=tf.float32,
        initializer=tf.compat.v1.ones_initializer())
    beta = tf.compat.v1.get_variable(
        "beta", [d], dtype=tf.float32,
        initializer=tf.compat.v1.zeros_initializer())
  x32 = tf.cast(x, tf.float32)
  mean, variance = tf.nn.moments(x32, axes=[-1], keepdims=True)
  out = tf.nn.batch_normalization(x32, mean, variance, offset=beta,
                                  scale=gamma, variance_epsilon=_LN_EPSILON)
  return tf.cast(out, x.dtype)


def embedding_lookup(x, n_token, d_embed, initializer, use_tpu=True,
                     scope="embedding", reuse=None, dtype=tf.float32):
  """Looks up token embeddings.

  Args:
    x: int Tensor `[len, bsz]` of token ids.
    n_token: vocabulary size.
    d_embed: embedding width.
    initializer: initializer of `{scope}/lookup_table`.
    use_tpu: if True, a one-hot matmul (TPU friendly) instead of a gather.
    scope: variable scope.
    reuse: variable-scope reuse flag.
    dtype: compute dtype of the output.

  Returns:
    (output `[len, bsz, d_embed]` in `dtype`,
     lookup_table `[n_token, d_embed]` float32 variable).
  """
  with tf.compat.v1.variable_scope(scope, reuse=reuse):
    lookup_table = tf.compat.v1.get_variable(
        "lookup_table", [n_token, d_embed], dtype=tf.float32,
        initializer=initializer)
    if use_tpu:
      one_hot_idx = tf.one_hot(x, n_token, dtype=dtype)
      output = tf.einsum("ibn,nd->ibd", one_hot_idx,
                         tf.cast(lookup_table, dtype))
    else:
      # Gather from the read value, then cast the few rows. A gather on the
      # variable itself would switch it to copy-on-read, a copy of the whole
      # table at every other read (the tied softmax weight); casting the
      # table first would cost a pass over it.
      output = tf.cast(tf.gather(tf.identity(lookup_table), x), dtype)
  return output, lookup_table


def positional_embedding(pos_seq, inv_freq, bsz=None):
  """Sinusoid embedding of positions.

  Args:
    pos_seq: float Tensor `[rlen]` of (relative) positions.
    inv_freq: float Tensor `[d_model // 2]` of inverse frequencies.
    bsz: if given (int or scalar Tensor), the result is tiled to this batch.

  Returns:
    Tensor `[rlen, 1 or bsz, d_model]`: concat(sin(pos*f), cos(pos*f)).
  """
  sinusoid_inp = tf.einsum("i,d->id", pos_seq, inv_freq)
  pos_emb = tf.concat([tf.sin(sinusoid_inp), tf.cos(sinusoid_inp)], -1)
  pos_emb = pos_emb[:, None, :]
  if bsz is not None:
    pos_emb = tf.tile(pos_emb, [1, bsz, 1])
  return pos_emb


def relative_positional_encoding(qlen, klen, d_model, clamp_len, attn_type,
                                 bi_data, bsz=None, dtype=None):
  """Sinusoid encodings of the relative distances seen by the attention.

  For attn_type "bi" the distances run from klen down to -qlen+1 (rlen =
  klen + qlen); for "uni" from klen down to 0 (rlen = klen + 1). With
  `clamp_len > 0` they are clipped to [-clamp_len, clamp_len].

  Args:
    qlen: int or scalar int Tensor, current segment length.
    klen: int or scalar int Tensor, memory + segment length.
    d_model: int, even embedding width.
    clamp_len: int, -1 (or 0) for no clamping.
    attn_type: "bi" or "uni".
    bi_data: if True the first half of the batch gets the forward distances
      and the second half the negated (backward) ones.
    bsz: batch size to tile to (int or scalar Tensor). If None, the batch axis
      is 1 (forward only) or 2 (forward, backward with `bi_data`); the
      attention core broadcasts each over its share of the batch.
    dtype: dtype of the result (float32 if None).

  Returns:
    Tensor `[rlen, nb, d_model]` with nb = bsz if given, else 1 or 2.
  """
  freq_seq = tf.range(0, d_model, 2.0)
  inv_freq = 1.0 / (10000.0 ** (freq_seq / d_model))
  if attn_type == "bi":
    beg, end = klen, -qlen
  elif attn_type == "uni":
    beg, end = klen, -1
  else:
    raise ValueError(f"attn_type must be 'bi' or 'uni', got {attn_type!r}")

  def _encode(pos_seq, batch):
    pos_seq = tf.cast(pos_seq, tf.float32)
    if clamp_len > 0:
      pos_seq = tf.clip_by_value(pos_seq, -clamp_len, clamp_len)
    return positional_embedding(pos_seq, inv_freq, batch)

  fwd_pos_seq = tf.range(beg, end, -1)
  if bi_data:
    half = None if bsz is None else bsz // 2
    pos_emb = tf.concat([_encode(fwd_pos_seq, half),
                         _encode(-fwd_pos_seq, half)], axis=1)
  else:
    pos_emb = _encode(fwd_pos_seq, bsz)
  return tf.cast(pos_emb, dtype or tf.float32)


def rel_shift(x, klen=-1):
  """Aligns relative-position scores with absolute key positions.

  Operates on the last two axes (the score layout `[bsz, n_head, qlen,
  rlen]`): reshape to `[..., rlen, qlen]`, drop the first row, reshape to
  `[..., qlen, rlen - 1]` and keep the first `klen` columns. Afterwards entry
  `[..., i, j]` holds the score for relative distance `(mlen + i) - j`.

  Args:
    x: Tensor `[bsz, n_head, qlen, rlen]`.
    klen: number of key columns to keep.

  Returns:
    Tensor `[bsz, n_head, qlen, klen]`.
  """
  # tf.slice rather than Python slicing: its gradient is a cheap Pad, while
  # StridedSliceGrad dominated the CPU backward pass.
  x_size = tf.shape(x)
  x = tf.reshape(x, [x_size[0], x_size[1], x_size[3], x_size[2]])
  x = tf.slice(x, [0, 0, 1, 0], [-1, -1, -1, -1])
  x = tf.reshape(x, [x_size[0], x_size[1], x_size[2], x_size[3] - 1])
  return tf.slice(x, [0, 0, 0, 0], [-1, -1, -1, klen])


def _create_mask(qlen, mlen, dtype=tf.float32, same_length=False):
  """Causal ("uni") attention mask.

  Args:
    qlen: int or scalar Tensor, segment length.
    mlen: int or scalar Tensor, memory length.
    dtype: dtype of the mask.
    same_length: if True, also mask column j < i among the first qlen
      columns so that every query sees exactly mlen + 1 keys.

  Returns:
    Tensor `[qlen, mlen + qlen]`, 1 = may not attend: memory columns are 0 and
    block position i may not see block position j > i.
  """
  ones = tf.ones([qlen, qlen], dtype=dtype)
  mask_upper = tf.linalg.band_part(ones, 0, -1)  # j >= i
  mask_diag = tf.linalg.band_part(ones, 0, 0)
  ret = tf.concat([tf.zeros([qlen, mlen], dtype=dtype),
                   mask_upper - mask_diag], 1)
  if same_length:
    mask_lower = tf.linalg.band_part(ones, -1, 0)  # j <= i
    ret = tf.concat([ret[:, :qlen] + mask_lower - mask_diag, ret[:, qlen:]], 1)
  return ret


def _cache_mem(curr_out, prev_mem, mem_len, reuse_len=None):
  """Memory for the next segment: the last `mem_len` states, no gradient.

  Args:
    curr_out: Tensor `[qlen, bsz, d_model]`, this layer's input states.
    prev_mem: Tensor `[mlen, bsz, d_model]` or None.
    mem_len: int, memory length; None or 0 means no memory.
    reuse_len: int or None; if > 0 only `curr_out[:reuse_len]` is cached.

  Returns:
    float32 Tensor `[min(mem_len, mlen + len), bsz, d_model]`, or None.
  """
  if not mem_len:
    return None
  if reuse_len is not None and reuse_len > 0:
    curr_out = curr_out[:reuse_len]
  if prev_mem is None:
    new_mem = curr_out[-mem_len:]
  else:
    new_mem = tf.concat([tf.cast(prev_mem, curr_out.dtype), curr_out],
                        0)[-mem_len:]
  return tf.stop_gradient(tf.cast(new_mem, tf.float32))


def head_projection(h, d_model, n_head, d_head, kernel_initializer, name):
  """Projects states to attention heads with `{name}/kernel [d_model, n_head,
  d_head]` (no bias).

  Args:
    h: Tensor `[len, bsz, d_model]`, or a list of such Tensors: each is
      projected with the one kernel and the results are concatenated on the
      time axis.

  Returns:
    Tensor `[len, bsz, n_head, d_head]` (len summed over a list).
  """
  parts = h if isinstance(h, (list, tuple)) else [h]
  kernel = _variable(f"{name}/kernel", [d_model, n_head, d_head],
                     parts[0].dtype, kernel_initializer)
  heads = [tf.einsum("ibh,hnd->ibnd", x, kernel) for x in parts]
  return heads[0] if len(heads) == 1 else tf.concat(heads, 0)


def _masked_softmax(score, attn_mask):
  """Softmax over the key axis after pushing masked scores far down.

  The mask is applied in the scores' dtype, the softmax runs in float32.

  Args:
    score: float Tensor `[..., qlen, klen]` (any float dtype).
    attn_mask: Tensor broadcastable to `score` (1 = may not attend) or None.

  Returns:
    float32 attention probabilities of `score`'s shape.
  """
  if attn_mask is not None:
    score -= _mask_value(score.dtype) * tf.cast(attn_mask, score.dtype)
  return tf.nn.softmax(tf.cast(score, tf.float32), axis=-1)


def _attend(prob, v_head, dropatt, is_training):
  """The attention output: dropout of the probabilities, then their
  weighted sum of the values.

  In float32, dropout's `1 / (1 - dropatt)` scale multiplies the output
  instead of the probabilities: a tensor klen / d_head times smaller, so one
  pass less over the largest tensor of the layer forward and one backward.
  In a lower precision the probabilities are scaled in float32 before their
  cast, as the scale itself would round (1/0.9 is 1.109 in bfloat16).

  Args:
    prob: float32 Tensor `[bsz, n_head, rows, klen]`.
    v_head: Tensor `[klen, bsz, n_head, d_head]`.
    dropatt: dropout rate of the probabilities.
    is_training: bool.

  Returns:
    Tensor `[rows, bsz, n_head, d_head]` of v_head's dtype.
  """
  fold_scale = bool(is_training and dropatt) and v_head.dtype == tf.float32
  if fold_scale:
    prob = _zero_dropped(prob, dropatt)
  else:
    prob = _dropout(prob, dropatt, is_training)
  attn_vec = tf.einsum("bnij,jbnd->ibnd", tf.cast(prob, v_head.dtype), v_head)
  if fold_scale:
    attn_vec *= 1.0 / (1.0 - dropatt)
  return attn_vec


def _mask_value(dtype):
  """What a masked score loses: 1e30, or in float16 (max 65504) half the
  largest value, so that the subtraction cannot overflow to -inf (a fully
  masked row of -inf would give NaN)."""
  if dtype == tf.float16:
    return 0.5 * np.finfo(np.float16).max
  return 1e30


def _positional_scores(q_r, k_head_r, klen, q_key_pos=None):
  """Scores of the queries against the relative-position keys.

  Args:
    q_r: Tensor `[rows, bsz, n_head, d_head]`, queries plus r_r_bias.
    k_head_r: Tensor `[rlen, nb, n_head, d_head]`, positional keys; row r
      encodes the relative distance `klen - r`; nb divides bsz and batch row
      b uses positional row `b // (bsz / nb)`.
    klen: scalar int Tensor, number of keys.
    q_key_pos: None when the queries are the qlen consecutive positions of
      the segment (query i sits at key position mlen + i); otherwise int32
      Tensor `[bsz, rows]`, each query's own position on the key axis.

  Returns:
    Tensor `[bsz, n_head, rows, klen]` of q_r's dtype: entry `[b, n, i, j]`
    scores the distance from query i to key j.
  """
  q_shape = tf.shape(q_r)
  rlen, nb = tf.shape(k_head_r)[0], tf.shape(k_head_r)[1]
  # The batch rows sharing one positional encoding form a group over which
  # the positional keys broadcast: no per-row copy of k_head_r and no
  # transpose of the large [.., rows, rlen] product.
  q_t = tf.reshape(tf.transpose(q_r, [1, 2, 0, 3]),
                   [nb, q_shape[1] // nb, q_shape[2], q_shape[0], q_shape[3]])
  k_t = tf.transpose(k_head_r, [1, 2, 0, 3])[:, None]
  bd = tf.matmul(q_t, k_t, transpose_b=True)
  bd = tf.reshape(bd, [q_shape[1], q_shape[2], q_shape[0], rlen])
  if q_key_pos is None:
    return rel_shift(bd, klen)
  return _gather_rel_window(bd, klen, q_key_pos)


def _gather_rel_window(bd, klen, q_key_pos):
  """The relative shift for queries at arbitrary key positions.

  Args:
    bd: Tensor `[bsz, n_head, rows, rlen]`, column r for distance klen - r.
    klen: scalar int Tensor.
    q_key_pos: int32 Tensor `[bsz, rows]`, each query's key position p.

  Returns:
    Tensor `[bsz, n_head, rows, klen]`, entry `[b, n, i, j]` = `bd[b, n, i,
    klen - p + j]` (distance p - j). Columns past rlen - 1, which only keys
    after the query reach under "uni" attention (masked there), are clipped.
  """
  rlen = tf.shape(bd)[3]
  col = klen - q_key_pos[:, :, None] + tf.range(klen)  # [bsz, rows, klen]
  col = tf.minimum(col, rlen - 1)
  # The column depends on the batch row and the query, not on the head: with
  # the heads innermost, one gather moves n_head values per index, and its
  # gradient (a segment sum) is much cheaper than with one value per index.
  window = tf.gather(tf.transpose(bd, [0, 2, 3, 1]), col, axis=2,
                     batch_dims=2)  # [bsz, rows, klen, n_head]
  return tf.transpose(window, [0, 3, 1, 2])


def _segment_scores(q_s, seg_embed, seg_mat):
  """Segment term of the attention scores.

  The score of query i and key j gets `q_s[i] . seg_embed[c]` with c = 1
  when they are in different segments, else 0. The part `q_s[i] .
  seg_embed[0]` is the same for every key of row i and the softmax ignores
  it, so only `seg_mat * q_s[i] . (seg_embed[1] - seg_embed[0])` is added.

  Args:
    q_s: Tensor `[rows, bsz, n_head, d_head]`, queries plus r_s_bias.
    seg_embed: Tensor `[2, n_head, d_head]`.
    seg_mat: float Tensor `[bsz, 1, rows, klen]`, 1 = different segments.

  Returns:
    Tensor `[bsz, n_head, rows, klen]` of q_s's dtype.
  """
  delta = tf.einsum("ibnd,nd->bni", q_s, seg_embed[1] - seg_embed[0])
  return tf.cast(seg_mat, delta.dtype) * delta[..., None]


def _biased_queries(q_head, biases, scale):
  """`(q_head + b) * scale` for each bias b, computed by one broadcast add.

  Scaling the queries ([rows, d_head] per head) instead of the scores
  ([rows, klen]) saves a pass over the largest tensors. One add instead of
  one per bias gives q_head a single consumer, so its gradient is a sum
  over the bias axis in a fixed order. With one add per bias it was an
  AddN of three gradients, and TensorFlow's CPU AddN starts its sum from
  whichever input buffer it can reuse at run time (the one no pending op
  still reads): the order, and so the last bits of the query kernel's
  gradient, changed from run to run.

  Args:
    q_head: Tensor `[rows, bsz, n_head, d_head]`.
    biases: list of Tensors `[n_head, d_head]` of q_head's dtype.
    scale: float.

  Returns:
    list of len(biases) Tensors of q_head's shape and dtype.
  """
  # The bias axis leads, so each term is one contiguous block.
  stacked = (q_head[None] + tf.stack(biases)[:, None, None]) * scale
  return tf.unstack(stacked)


def rel_attn_core(q_head, k_head_h, v_head_h, k_head_r, seg_embed, seg_mat,
                  r_w_bias, r_r_bias, r_s_bias, attn_mask, dropatt,
                  is_training, scale, q_key_pos=None):
  """Relative multi-head attention of one stream.

  The matrix products and the scores are in q_head's dtype; the softmax
  runs in float32.

  Args:
    q_head: Tensor `[rows, bsz, n_head, d_head]`.
    k_head_h: Tensor `[klen, bsz, n_head, d_head]` (content keys).
    v_head_h: Tensor `[klen, bsz, n_head, d_head]` (content values).
    k_head_r: Tensor `[rlen, nb, n_head, d_head]`, positional keys (see
      `_positional_scores`).
    seg_embed: Tensor `[2, n_head, d_head]` or None.
    seg_mat: float Tensor `[bsz, 1, rows, klen]`, 1 where query and key are
      in different segments, or None.
    r_w_bias, r_r_bias, r_s_bias: Tensors `[n_head, d_head]` (r_s_bias may be
      None without segments).
    attn_mask: float Tensor `[bsz, 1, rows, klen]` (1 = may not attend) or
      None.
    dropatt: attention-probability dropout rate.
    is_training: bool.
    scale: float, 1 / sqrt(d_head).
    q_key_pos: None when the rows are the whole segment, else int32 Tensor
      `[bsz, rows]` with each query's position on the key axis (see
      `_positional_scores`).

  Returns:
    Tensor `[rows, bsz, n_head, d_head]` of q_head's dtype.
  """
  klen = tf.shape(k_head_h)[0]
  biases = [r_w_bias, r_r_bias] + ([r_s_bias] if seg_mat is not None else [])
  q_w, q_r, *q_s = _biased_queries(q_head, biases, scale)
  ac = tf.einsum("ibnd,jbnd->bnij", q_w, k_head_h)
  bd = _positional_scores(q_r, k_head_r, klen, q_key_pos)
  # The terms are summed (and masked) in the compute dtype: one rounding,
  # and one cast of the sum instead of one per term.
  score = ac + bd
  if seg_mat is not None:
    score += _segment_scores(q_s[0], seg_embed, seg_mat)
  return _attend(_masked_softmax(score, attn_mask), v_head_h, dropatt,
                 is_training)


def post_attention(h, attn_vec, d_model, n_head, d_head, dropout, is_training,
                   kernel_initializer, residual=True):
  """Output projection `o/kernel`, dropout, residual and `LayerNorm`.

  Args:
    h: Tensor `[len, bsz, d_model]`, the residual input.
    attn_vec: Tensor `[len, bsz, n_head, d_head]`.

  Returns:
    Tensor `[len, bsz, d_model]`.
  """
  proj_o = _variable("o/kernel", [d_model, n_head, d_head], attn_vec.dtype,
                     kernel_initializer)
  attn_out = tf.einsum("ibnd,hnd->ibh", attn_vec, proj_o)
  attn_out = _dropout(attn_out, dropout, is_training)
  if residual:
    attn_out = attn_out + h
  return _layer_norm(attn_out)


def _key_heads(h, r, mems, d_model, n_head, d_head, kernel_initializer):
  """Keys, values and positional keys of one layer's attention.

  Computed once per layer from the content stream (and memory) and shared by
  both streams. Call inside the layer's `rel_attn` variable scope.

  Args:
    h: Tensor `[qlen, bsz, d_model]`, content stream.
    r: Tensor `[rlen, nb, d_model]`, positional encodings.
    mems: Tensor `[mlen, bsz, d_model]` or None; it gets no gradient.
    d_model, n_head, d_head, kernel_initializer: as in `head_projection`.

  Returns:
    (k `[klen, bsz, n_head, d_head]`, v `[klen, bsz, n_head, d_head]`,
     k_r `[rlen, nb, n_head, d_head]`).
  """
  # The memory rows are projected apart from h's rather than concatenated
  # before the projection: they get no gradient, and the projection of a
  # concatenation would compute the input gradient of every memory row too
  # (3/7 of that product at mem 384, seq 512).
  rows = [h]
  if mems is not None:
    rows.insert(0, tf.stop_gradient(tf.cast(mems, h.dtype)))

  return tuple(
      head_projection(x, d_model, n_head, d_head, kernel_initializer, name)
      for x, name in ((rows, "k"), (rows, "v"), (r, "r")))


def rel_multihead_attn(h, r, r_w_bias, r_r_bias, seg_mat, r_s_bias,
                       seg_embed, attn_mask, mems, d_model, n_head, d_head,
                       dropout, dropatt, is_training, kernel_initializer,
                       scope="rel_attn", reuse=None):
  """Relative multi-head attention of the content stream only.

  Args:
    h: Tensor `[qlen, bsz, d_model]`.
    r: Tensor `[rlen, nb, d_model]`, positional encodings (nb divides bsz).
    mems: Tensor `[mlen, bsz, d_model]` or None.
    seg_mat, seg_embed, r_*_bias, attn_mask: as in `rel_attn_core`.

  Returns:
    Tensor `[qlen, bsz, d_model]`.
  """
  scale = 1.0 / math.sqrt(d_head)
  with tf.compat.v1.variable_scope(scope, reuse=reuse):
    k_head_h, v_head_h, k_head_r = _key_heads(
        h, r, mems, d_model, n_head, d_head, kernel_initializer)
    q_head_h = head_projection(h, d_model, n_head, d_head,
                               kernel_initializer, "q")
    attn_vec = rel_attn_core(q_head_h, k_head_h, v_head_h, k_head_r,
                             seg_embed, seg_mat, r_w_bias, r_r_bias, r_s_bias,
                             attn_mask, dropatt, is_training, scale)
    return post_attention(h, attn_vec, d_model, n_head, d_head, dropout,
                          is_training, kernel_initializer)


def two_stream_rel_attn(h, g, r, mems, r_w_bias, r_r_bias, seg_mat, r_s_bias,
                        seg_embed, attn_mask_h, attn_mask_g, target_mapping,
                        d_model, n_head, d_head, dropout, dropatt,
                        is_training, kernel_initializer, scope="rel_attn"):
  """Two-stream relative attention: content stream h and query stream g.

  Keys, values and positional keys are computed once from the content stream
  (and memory) and shared by both streams; so are all variables.

  Args:
    h: Tensor `[qlen, bsz, d_model]`, content stream.
    g: Tensor `[num_predict or qlen, bsz, d_model]`, query stream.
    r: Tensor `[rlen, nb, d_model]`, positional encodings.
    mems: Tensor `[mlen, bsz, d_model]` or None.
    attn_mask_h: content-stream mask `[bsz, 1, qlen, klen]` or None.
    attn_mask_g: query-stream mask `[bsz, 1, qlen, klen]` or None.
    target_mapping: Tensor `[num_predict, qlen, bsz]` or None (then g has
      qlen rows).
    Others: as in `rel_attn_core`.

  Returns:
    (output_h `[qlen, bsz, d_model]`, output_g of g's shape).
  """
  qlen = tf.shape(h)[0]
  output = _stacked_two_stream_attn(
      tf.concat([h, g], 0), qlen, r, mems, r_w_bias, r_r_bias, seg_mat,
      r_s_bias, seg_embed, attn_mask_h, attn_mask_g, target_mapping, d_model,
      n_head, d_head, dropout, dropatt, is_training, kernel_initializer,
      scope)
  output_h, output_g = tf.split(output, [qlen, -1])
  return output_h, output_g


def _stacked_two_stream_attn(hg, qlen, r, mems, r_w_bias, r_r_bias, seg_mat,
                             r_s_bias, seg_embed, attn_mask_h, attn_mask_g,
                             target_mapping, d_model, n_head, d_head, dropout,
                             dropatt, is_training, kernel_initializer, scope):
  """`two_stream_rel_attn` on the two streams stacked on the time axis.

  The query projection, the output projection and the LayerNorm treat every
  row alike, so they run once on both streams.

  Args:
    hg: Tensor `[qlen + rows_g, bsz, d_model]`: the content stream h, then
      the query stream g.
    qlen: scalar int Tensor, rows of h.
    Others: as in `two_stream_rel_attn`.

  Returns:
    Tensor of hg's shape: the new content stream, then the new query stream.
  """
  scale = 1.0 / math.sqrt(d_head)
  with tf.compat.v1.variable_scope(scope):
    h = _content_rows(hg, qlen)
    k_head_h, v_head_h, k_head_r = _key_heads(
        h, r, mems, d_model, n_head, d_head, kernel_initializer)
    q_head_h, q_head_g = tf.split(
        head_projection(hg, d_model, n_head, d_head, kernel_initializer, "q"),
        [qlen, -1])

    def core(q_head, mask, seg, q_key_pos):
      return rel_attn_core(q_head, k_head_h, v_head_h, k_head_r, seg_embed,
                           seg, r_w_bias, r_r_bias, r_s_bias, mask, dropatt,
                           is_training, scale, q_key_pos=q_key_pos)

    attn_vec_h = core(q_head_h, attn_mask_h, seg_mat, None)
    if target_mapping is None:
      attn_vec_g = core(q_head_g, attn_mask_g, seg_mat, None)
    else:
      # Attend only from the num_predict target rows, each at its own
      # position: the same numbers as attending from every position and
      # keeping the targets, without the work for the other rows.
      pos, present = _target_positions(target_mapping)
      mlen = tf.shape(k_head_h)[0] - qlen
      attn_vec_g = core(q_head_g, _query_rows(attn_mask_g, pos),
                        _query_rows(seg_mat, pos), mlen + pos)
      # Padding rows of target_mapping select nothing.
      attn_vec_g *= tf.cast(present, attn_vec_g.dtype)[:, :, None, None]
    return post_attention(hg, tf.concat([attn_vec_h, attn_vec_g], 0),
                          d_model, n_head, d_head, dropout, is_training,
                          kernel_initializer)


def _content_rows(hg, qlen):
  """The first qlen rows (the content stream) of stacked streams.

  Args:
    hg: Tensor `[qlen + rows_g, bsz, d_model]`.
    qlen: scalar int Tensor.

  Returns:
    Tensor `[qlen, bsz, d_model]`.
  """
  # A split, not a slice: its gradient is a concat, while StridedSliceGrad
  # is slow on the CPU.
  return tf.split(hg, [qlen, -1])[0]


def _target_positions(target_mapping):
  """Where the prediction targets are.

  Args:
    target_mapping: float Tensor `[num_predict, qlen, bsz]`, one-hot rows;
      all-zero rows are padding.

  Returns:
    (pos: int32 `[bsz, num_predict]`, each target's position in the segment
     (0 for padding rows),
     present: float32 `[num_predict, bsz]`, 1 for a target, 0 for padding).
  """
  target_mapping = tf.cast(target_mapping, tf.float32)
  pos = tf.argmax(target_mapping, axis=1, output_type=tf.int32)
  return tf.transpose(pos), tf.reduce_sum(target_mapping, axis=1)


def _query_rows(x, pos):
  """Rows `pos` of a per-query tensor.

  Args:
    x: Tensor `[bsz, 1, qlen or 1, klen]` (size 1: the same for every
      query) or None.
    pos: int32 Tensor `[bsz, rows]`.

  Returns:
    Tensor `[bsz, 1, rows or 1, klen]` (None if x is None).
  """
  if x is None or x.shape[2] == 1:
    return x
  return tf.gather(x, pos, axis=2, batch_dims=1)


def positionwise_ffn(inp, d_model, d_inner, dropout, kernel_initializer,
                     activation_type="relu", scope="ff", is_training=True,
                     reuse=None):
  """Position-wise feed-forward block with residual and LayerNorm.

  `LayerNorm(inp + dropout(layer_2(dropout(act(layer_1(inp))))))`.

  Args:
    inp: Tensor `[len, bsz, d_model]`.
    activation_type: "relu" or "gelu".

  Returns:
    Tensor `[len, bsz, d_model]`.
  """
  activation = _get_activation(activation_type)
  with tf.compat.v1.variable_scope(scope, reuse=reuse):
    output = _dense(inp, d_inner, kernel_initializer, "layer_1", activation)
    output = _dropout(output, dropout, is_training)
    output = _dense(output, d_model, kernel_initializer, "layer_2")
    output = _dropout(output, dropout, is_training)
    return _layer_norm(output + inp)


def _check_bi_data_batch(inp_k):
  """Checks the per-core batch is even (needed by `bi_data`).

  Args:
    inp_k: int Tensor `[qlen, bsz]`.

  Returns:
    A list of assert ops (empty when the batch size is known statically).

  Raises:
    ValueError: if the static batch size is odd.
  """
  bsz = inp_k.shape[1]
  message = ("bi_data=True needs an even per-core batch size (first half "
             "forward rows, second half backward rows)")
  if bsz is not None:
    if bsz % 2 != 0:
      raise ValueError(f"{message}; got per-core batch size {bsz}")
    return []
  return [tf.debugging.assert_equal(
      tf.math.floormod(tf.shape(inp_k)[1], 2), 0, message=message)]


def _build_masks(attn_type, qlen, mlen, bsz, input_mask, perm_mask,
                 same_length, dtype):
  """Query-stream and content-stream attention masks.

  Args:
    attn_type: "bi" or "uni".
    qlen, mlen, bsz: scalar int Tensors.
    input_mask: `[qlen, bsz]` (1 = padding) or None.
    perm_mask: `[qlen, qlen, bsz]` (1 = i may not see j) or None.
    same_length: bool, see `_create_mask`.
    dtype: mask dtype.

  Returns:
    (attn_mask, non_tgt_mask), each `[bsz, 1, qlen, klen]` or None: the
    query-stream mask, and the same with every position allowed to see its
    own content (content stream).
  """
  if attn_type == "uni":
    causal = _create_mask(qlen, mlen, dtype, same_length)[None, None]
  elif attn_type == "bi":
    causal = None
  else:
    raise ValueError(f"attn_type must be 'bi' or 'uni', got {attn_type!r}")

  data_mask = None
  if input_mask is not None:
    data_mask = tf.cast(input_mask, dtype)[None]
  if perm_mask is not None:
    perm_mask = tf.cast(perm_mask, dtype)
    data_mask = perm_mask if data_mask is None else data_mask + perm_mask
  if data_mask is not None:
    # [qlen or 1, qlen, bsz] -> [bsz, 1, qlen or 1, mlen + qlen]
    data_mask = tf.transpose(data_mask, [2, 0, 1])[:, None]
    mem_cols = tf.zeros([bsz, 1, tf.shape(data_mask)[2], mlen], dtype=dtype)
    data_mask = tf.concat([mem_cols, data_mask], -1)

  if causal is None and data_mask is None:
    return None, None
  attn_mask = data_mask if causal is None else (
      causal if data_mask is None else causal + data_mask)
  attn_mask = tf.cast(attn_mask > 0, dtype)
  self_visible = tf.concat([tf.zeros([qlen, mlen], dtype=dtype),
                            tf.eye(qlen, dtype=dtype)], 1)
  non_tgt_mask = tf.cast(attn_mask - self_visible > 0, dtype)
  return attn_mask, non_tgt_mask


def _segment_matrix(seg_id, mlen, dtype):
  """Which query/key pairs lie in different segments.

  Args:
    seg_id: int Tensor `[qlen, bsz]`.
    mlen: scalar int Tensor; memory positions count as segment 0.
    dtype: float dtype of the result.

  Returns:
    Tensor `[bsz, 1, qlen, mlen + qlen]`: 1 where query i and key j are in
    different segments, else 0.
  """
  seg_id = tf.cast(tf.transpose(seg_id), tf.int32)  # [bsz, qlen]
  mem_pad = tf.zeros([tf.shape(seg_id)[0], mlen], dtype=tf.int32)
  cat_ids = tf.concat([mem_pad, seg_id], 1)
  different = tf.not_equal(seg_id[:, :, None], cat_ids[:, None, :])
  return tf.cast(different, dtype)[:, None]


def _compute_dtype(use_bfloat16, use_fp16):
  """The activations' dtype: bfloat16, float16 or float32."""
  if use_bfloat16 and use_fp16:
    raise ValueError("use_bfloat16 and use_fp16 exclude each other; got both")
  if use_bfloat16:
    return tf.bfloat16
  return tf.float16 if use_fp16 else tf.float32


def transformer_xl(inp_k, n_token, n_layer, d_model, n_head, d_head, d_inner,
                   dropout, dropatt, attn_type, bi_data, initializer,
                   is_training, mem_len=None, inp_q=None, mems=None,
                   same_length=False, clamp_len=-1, untie_r=False,
                   use_tpu=True, input_mask=None, perm_mask=None, seg_id=None,
                   reuse_len=None, ff_activation="relu", target_mapping=None,
                   use_bfloat16=False, scope="transformer", use_fp16=False,
                   recompute=False, **kwargs):
  """The XLNet backbone: a two-stream Transformer-XL (time-major).

  Args:
    inp_k: int Tensor `[qlen, bsz]`, token ids (content stream).
    n_token, n_layer, d_model, n_head, d_head, d_inner: model sizes.
    dropout, dropatt: dropout rates (states / attention probabilities).
    attn_type: "bi" (XLNet) or "uni" (causal Transformer-XL).
    bi_data: first half of the batch forward, second half backward.
    initializer: initializer of kernels, embeddings, r_*_bias and seg_embed.
    is_training: bool, enables dropout.
    mem_len: int, length of the returned memories (None/0: none).
    inp_q: float Tensor `[qlen, bsz]`, 1 at query-stream positions, or None
      (content stream only).
    mems: list of n_layer Tensors `[mlen, bsz, d_model]` or None.
    same_length: with "uni", every query sees the same number of keys.
    clamp_len: clip relative distances to this (-1: no clipping).
    untie_r: separate r_w/r_r/r_s biases per layer.
    use_tpu: one-hot matmul embedding lookup.
    input_mask: float Tensor `[qlen, bsz]`, 1 = padding, or None.
    perm_mask: float Tensor `[qlen, qlen, bsz]`, 1 = i may not see j, or None.
    seg_id: int Tensor `[qlen, bsz]` or None.
    reuse_len: int, only the first reuse_len states go to the memory.
    ff_activation: "relu" or "gelu".
    target_mapping: float Tensor `[num_predict, qlen, bsz]` or None.
    use_bfloat16: matrix products and activations in bfloat16 (variables,
      attention softmax and LayerNorm statistics stay float32).
    scope: variable scope of the backbone.
    use_fp16: the same in float16 (excludes use_bfloat16).
    recompute: in training, compute each layer again to differentiate it.
    **kwargs: ignored (accepted for call-site compatibility).

  Returns:
    (output float32 `[qlen or num_predict, bsz, d_model]` (query stream when
     inp_q is given, else content stream),
     new_mems: list of n_layer float32 Tensors `[<=mem_len, bsz, d_model]`,
       or None when mem_len is unset,
     lookup_table: float32 variable `[n_token, d_model]`).

  Raises:
    ValueError: on an unknown attn_type / ff_activation or an odd static
      per-core batch with bi_data.
  """
  del kwargs
  _get_activation(ff_activation)
  if attn_type not in ("bi", "uni"):
    raise ValueError(f"attn_type must be 'bi' or 'uni', got {attn_type!r}")
  tf_float = _compute_dtype(use_bfloat16, use_fp16)

  with tf.compat.v1.variable_scope(scope):
    bias_shape = [n_layer, n_head, d_head] if untie_r else [n_head, d_head]
    r_w_bias = _variable("r_w_bias", bias_shape, tf_float, initializer)
    r_r_bias = _variable("r_r_bias", bias_shape, tf_float, initializer)

    asserts = _check_bi_data_batch(inp_k) if bi_data else []
    if asserts:
      # Everything that uses the ids or their shape waits for the check, so
      # an odd batch fails with its message, not in a reshape it breaks.
      with tf.control_dependencies(asserts):
        inp_k = tf.identity(inp_k)
    qlen = tf.shape(inp_k)[0]
    bsz = tf.shape(inp_k)[1]
    mlen = tf.shape(mems[0])[0] if mems is not None else 0
    klen = mlen + qlen

    # Masks and segment matrix in the compute dtype (0/1 values are exact):
    # built once, not cast again in every layer.
    attn_mask, non_tgt_mask = _build_masks(
        attn_type, qlen, mlen, bsz, input_mask, perm_mask, same_length,
        tf_float)

    output_h, output_g, lookup_table = _stream_inputs(
        inp_k, inp_q, target_mapping, bsz, n_token, d_model, initializer,
        use_tpu, dropout, is_training, tf_float)
    r_s_bias, seg_embed, seg_mat = _segment_inputs(
        seg_id, mlen, bias_shape, n_layer, n_head, d_head, tf_float,
        initializer)

    # Per-example positional dropout needs one encoding per batch row;
    # otherwise one (or two with bi_data) encodings are shared by the batch.
    pos_bsz = bsz if (is_training and dropout) else None
    with tf.control_dependencies(asserts):
      pos_emb = relative_positional_encoding(
          qlen, klen, d_model, clamp_len, attn_type, bi_data, bsz=pos_bsz,
          dtype=tf_float)
    pos_emb = _dropout(pos_emb, dropout, is_training)

    # With a query stream, the two streams travel stacked on the time axis
    # (content rows first): the layers' dense parts treat every row alike
    # and run once on both.
    two_stream = output_g is not None
    states = tf.concat([output_h, output_g], 0) if two_stream else output_h
    settings = dict(two_stream=two_stream, d_model=d_model, n_head=n_head,
                    d_head=d_head, d_inner=d_inner, dropout=dropout,
                    dropatt=dropatt, is_training=is_training,
                    initializer=initializer, ff_activation=ff_activation)
    shared = dict(qlen=qlen, r=pos_emb, seg_mat=seg_mat, mask_h=non_tgt_mask,
                  mask_g=attn_mask, target_mapping=target_mapping)
    layer = _recomputed if recompute and is_training else _layer
    new_mems = []
    for i in range(n_layer):
      layer_mem = mems[i] if mems is not None else None
      content = _content_rows(states, qlen) if two_stream else states
      new_mems.append(_cache_mem(content, layer_mem, mem_len, reuse_len))
      biases = _layer_biases(i, untie_r, r_w_bias, r_r_bias, r_s_bias,
                             seg_embed)
      with tf.compat.v1.variable_scope(f"layer_{i}"):
        states = layer(states, biases, dict(shared, mem=layer_mem), settings)

    output = tf.split(states, [qlen, -1])[1] if two_stream else states
    output = _dropout(output, dropout, is_training)
    return (tf.cast(output, tf.float32), new_mems if mem_len else None,
            lookup_table)


def _stream_inputs(inp_k, inp_q, target_mapping, bsz, n_token, d_model,
                   initializer, use_tpu, dropout, is_training, dtype):
  """The two streams' inputs, after dropout: the word embeddings (scope
  `word_embedding`) for the content stream; for the query stream the
  learned `mask_emb` (scope `mask_emb`) where a token is predicted.

  Args:
    inp_k: int Tensor `[qlen, bsz]`, token ids.
    inp_q: float Tensor `[qlen, bsz]`, 1 at query-stream positions, or None
      (no query stream).
    target_mapping: float Tensor `[num_predict, qlen, bsz]` or None.
    bsz: scalar int Tensor.
    n_token, d_model: model sizes.
    initializer: the embeddings' initializer.
    use_tpu: one-hot matmul embedding lookup.
    dropout, is_training: the inputs' dropout.
    dtype: the compute dtype.

  Returns:
    (content stream `[qlen, bsz, d_model]`, query stream or None: with
     target_mapping `[num_predict, bsz, d_model]`, `mask_emb` in every row;
     else `[qlen, bsz, d_model]`, `mask_emb` where inp_q is 1 and the word
     embedding elsewhere, lookup_table `[n_token, d_model]`).
  """
  word_emb_k, lookup_table = embedding_lookup(
      inp_k, n_token, d_model, initializer, use_tpu=use_tpu,
      scope="word_embedding", dtype=dtype)
  output_h = _dropout(word_emb_k, dropout, is_training)
  if inp_q is None:
    return output_h, None, lookup_table
  with tf.compat.v1.variable_scope("mask_emb"):
    mask_emb = _variable("mask_emb", [1, 1, d_model], dtype)
  if target_mapping is not None:
    word_emb_q = tf.tile(mask_emb, [tf.shape(target_mapping)[0], bsz, 1])
  else:
    inp_q_ext = tf.cast(inp_q, dtype)[:, :, None]
    word_emb_q = inp_q_ext * mask_emb + (1 - inp_q_ext) * word_emb_k
  return output_h, _dropout(word_emb_q, dropout, is_training), lookup_table


def _segment_inputs(seg_id, mlen, bias_shape, n_layer, n_head, d_head, dtype,
                    initializer):
  """The segment bias `r_s_bias`, the segment embeddings `seg_embed`
  (created here, in the caller's scope) and the segment matrix.

  Args:
    seg_id: int Tensor `[qlen, bsz]`, or None (no segment terms).
    mlen: scalar int Tensor, memory length.
    bias_shape: `[n_layer, n_head, d_head]` (untie_r) or `[n_head, d_head]`.
    n_layer, n_head, d_head: model sizes.
    dtype: the compute dtype.
    initializer: their initializer.

  Returns:
    (r_s_bias `bias_shape`, seg_embed `[n_layer, 2, n_head, d_head]`,
     seg_mat `[bsz, 1, qlen, mlen + qlen]` (`_segment_matrix`)), or three
    Nones without seg_id.
  """
  if seg_id is None:
    return None, None, None
  r_s_bias = _variable("r_s_bias", bias_shape, dtype, initializer)
  seg_embed = _variable("seg_embed", [n_layer, 2, n_head, d_head], dtype,
                        initializer)
  return r_s_bias, seg_embed, _segment_matrix(seg_id, mlen, dtype)


def _layer_biases(i, untie_r, r_w_bias, r_r_bias, r_s_bias, seg_embed):
  """Layer i's attention biases and segment embedding.

  Args:
    i: int, the layer.
    untie_r: the biases hold one `[n_head, d_head]` slice per layer.
    r_w_bias, r_r_bias: `[n_layer, n_head, d_head]` (untie_r) or
      `[n_head, d_head]`.
    r_s_bias, seg_embed: as r_w_bias and `[n_layer, 2, n_head, d_head]`, or
      None (no segment terms).

  Returns:
    (r_w_bias, r_r_bias, r_s_bias, seg_embed) of layer i, each `[n_head,
    d_head]` but seg_embed `[2, n_head, d_head]`; the last two None without
    segments.
  """
  layer = (lambda bias: bias[i]) if untie_r else (lambda bias: bias)
  biases = (layer(r_w_bias), layer(r_r_bias))
  if r_s_bias is None:
    return biases + (None, None)
  return biases + (layer(r_s_bias), seg_embed[i])


def _layer(states, biases, tensors, settings):
  """One layer (call it in its scope `layer_{i}`): the relative attention
  on one stream or both, then the position-wise feed-forward block.

  Args:
    states: Tensor `[qlen (+ rows of g), bsz, d_model]`.
    biases: `_layer_biases` of the layer.
    tensors: dict of the other tensors the layer reads, each a Tensor or
      None: `qlen`, `mem` (the layer's memory), `r` (the positional
      encodings), `seg_mat`, `mask_h` and `mask_g` (`_build_masks`' content-
      and query-stream masks), `target_mapping`.
    settings: dict of the layer's sizes and settings: `two_stream`,
      `d_model`, `n_head`, `d_head`, `d_inner`, `dropout`, `dropatt`,
      `is_training`, `initializer`, `ff_activation`.

  Returns:
    Tensor of states' shape.
  """
  s = settings
  attn = dict(r=tensors["r"], seg_mat=tensors["seg_mat"], d_model=s["d_model"],
              n_head=s["n_head"], d_head=s["d_head"], dropout=s["dropout"],
              dropatt=s["dropatt"], is_training=s["is_training"],
              kernel_initializer=s["initializer"])
  states = _layer_attention(
      states, tensors["qlen"], s["two_stream"], tensors["mem"], biases,
      (tensors["mask_h"], tensors["mask_g"]), tensors["target_mapping"], attn)
  return positionwise_ffn(
      states, s["d_model"], s["d_inner"], s["dropout"], s["initializer"],
      activation_type=s["ff_activation"], is_training=s["is_training"])


def _recomputed(states, biases, tensors, settings, layer=_layer):
  """`layer(states, biases, tensors, settings)` keeping none of its
  activations for the backward pass, only its inputs: the backward pass
  runs the layer again (the same variables, the same dropout masks:
  `_DropoutReplay`) and differentiates that second run.

  Args:
    states, biases, tensors, settings: as `_layer`'s; the gradient reaches
      the variables, `states` and `biases`, not `tensors` (no variable of
      the model needs a gradient through them: positions, masks, memories).
    layer: `_layer`, or a function of its arguments that builds its
      variables with `tf.compat.v1.get_variable` in the current variable
      scope.

  Returns:
    the layer's output.
  """
  scope = tf.compat.v1.get_variable_scope()
  replay = _DropoutReplay(
      settings["is_training"] and (settings["dropout"] or settings["dropatt"]))
  present = [i for i, bias in enumerate(biases) if bias is not None]
  made = {}  # full name -> the variable the forward pass's getter returned

  def remember(getter, name, *args, **kwargs):
    made[name] = getter(name, *args, **kwargs)
    return made[name]

  def reuse(getter, name, *args, **kwargs):
    del getter, args, kwargs
    return made[name]

  def run(getter, inputs, others, forward):
    full = list(biases)
    for i, bias in zip(present, inputs[1:]):
      full[i] = bias
    with tf.compat.v1.variable_scope(scope, custom_getter=getter):
      with replay.draws(forward):
        return layer(inputs[0], tuple(full), others, settings)

  @tf.custom_gradient
  def recomputed(*inputs):

    def grad(dy, variables=None):
      names = sorted(tensors)
      waited = _waiting_for(list(inputs) + [tensors[n] for n in names], dy)
      again, others = waited[:len(inputs)], dict(zip(names,
                                                    waited[len(inputs):]))
      read = list(variables or [])
      with tf.GradientTape() as tape:
        tape.watch(again)
        tape.watch(read)
        out = run(reuse, again, others, forward=False)
      grads = tape.gradient(out, again + read, output_gradients=dy,
                            unconnected_gradients=tf.UnconnectedGradients.ZERO)
      return grads[:len(again)], grads[len(again):]

    return run(remember, inputs, tensors, forward=True), grad

  return recomputed(states, *[biases[i] for i in present])


def _waiting_for(tensors, dy):
  """`tensors` (Tensors or None), each plus a zero computed from `dy`: the
  same values, which exist only once dy does.

  A recomputed layer's second run reads these. Made from the forward
  pass's tensors themselves, it would be started by the graph executor as
  soon as they exist, during the forward pass, holding its activations
  until the backward pass; and grappler's and XLA's merging of identical
  ops would fold it into the forward pass's run. (A control dependency
  on dy would do the first only, and XLA drops those.)
  """
  nan = tf.math.is_nan(tf.reshape(dy, [-1])[:1])
  # Always False (no entry is NaN and not NaN), which no optimizer folds.
  never = tf.reduce_any(tf.logical_and(nan, tf.logical_not(nan)))
  return [None if t is None else t + tf.cast(never, t.dtype)
          for t in tensors]


class _DropoutReplay:
  """Where a recomputed layer's dropout ops draw their masks, so that the
  backward pass's run of the layer draws the forward pass's.

  Inside `stateless_dropout_seed` the layer's ops draw from the block's
  seed, counting on from where the block's count is when the layer is
  built: the masks a layer without recomputation draws. Outside such a
  block (dropout from the stateful random ops: TPUEstimator's fine-tuning,
  `XLNetModel` used directly) the layer draws one seed from the stateful
  ops and each of its masks statelessly from that seed.

  Args:
    random: whether the layer draws masks (training with a dropout rate).
  """

  def __init__(self, random):
    stack = getattr(_DROPOUT_SEEDS, "stack", None)
    self.outer = stack[-1] if stack else None
    self.seed = self.start = self.byte_masks = None
    if self.outer is not None:
      self.seed, self.start, self.byte_masks = self.outer
    elif random:
      self.seed = tf.random.uniform([2], maxval=2 ** 31 - 1, dtype=tf.int32)
      self.start = 0
    if self.seed is not None and self.byte_masks is None:
      self.byte_masks = _byte_masks_pay()

  @contextlib.contextmanager
  def draws(self, forward):
    """The block of one run of the layer; after the forward pass's, the
    enclosing block's count has advanced past the layer's draws."""
    if self.seed is None:
      yield
      return
    with _dropout_block(self.seed, self.start, self.byte_masks) as entry:
      yield
    if forward and self.outer is not None:
      self.outer[1] = entry[1]


def _layer_attention(states, qlen, two_stream, mem, biases, masks,
                     target_mapping, attn):
  """One layer's relative attention, on the content stream alone or on
  both streams stacked (scope `rel_attn`).

  Args:
    states: Tensor `[qlen (+ rows of g), bsz, d_model]`.
    qlen: scalar int Tensor, rows of the content stream.
    two_stream: states hold the query stream after the content stream.
    mem: the layer's memory `[mlen, bsz, d_model]` or None.
    biases: `_layer_biases` of the layer.
    masks: (content-stream mask, query-stream mask), `_build_masks`'.
    target_mapping: float Tensor `[num_predict, qlen, bsz]` or None.
    attn: the arguments every layer shares (`r`, `seg_mat`, the sizes,
      dropout rates, `is_training`, `kernel_initializer`).

  Returns:
    Tensor of states' shape.
  """
  r_w_bias, r_r_bias, r_s_bias, seg_embed = biases
  if two_stream:
    return _stacked_two_stream_attn(
        hg=states, qlen=qlen, mems=mem, r_w_bias=r_w_bias, r_r_bias=r_r_bias,
        r_s_bias=r_s_bias, seg_embed=seg_embed, attn_mask_h=masks[0],
        attn_mask_g=masks[1], target_mapping=target_mapping,
        scope="rel_attn", **attn)
  return rel_multihead_attn(
      h=states, r_w_bias=r_w_bias, r_r_bias=r_r_bias, r_s_bias=r_s_bias,
      seg_embed=seg_embed, attn_mask=masks[0], mems=mem, **attn)


def _vocab_logits(hidden, softmax_w):
  """Logits of every vocabulary entry: `hidden . softmax_w^T`.

  Args:
    hidden: Tensor `[len, bsz, d_model]`.
    softmax_w: Tensor `[n_token, d_model]` of hidden's dtype.

  Returns:
    Tensor `[len, bsz, n_token]` of hidden's dtype.
  """
  d_model, n_token = hidden.shape[-1], tf.shape(softmax_w)[0]
  # The transposed product `softmax_w . hidden^T`, with the vocabulary as its
  # long first side, then a transpose of the result: on the CPU this runs
  # 2.5x faster than `hidden . softmax_w^T` (and its einsum), whose few
  # rows and 32000 columns oneDNN splits poorly (docs/performance.md).
  logits_t = tf.matmul(softmax_w, tf.reshape(hidden, [-1, d_model]),
                       transpose_b=True)
  logits = tf.reshape(tf.transpose(logits_t),
                      tf.concat([tf.shape(hidden)[:-1], [n_token]], 0))
  logits.set_shape(hidden.shape[:-1].concatenate(softmax_w.shape[:1]))
  return logits


def lm_loss(hidden, target, n_token, d_model, initializer, lookup_table=None,
            tie_weight=False, bi_data=True, use_tpu=False, use_bfloat16=False,
            use_fp16=False, return_logits=False):
  """Per-position language-model cross-entropy (scope `lm_loss`).

  Args:
    hidden: float Tensor `[len, bsz, d_model]`.
    target: int Tensor `[len, bsz]`.
    n_token: vocabulary size.
    d_model: hidden width.
    initializer: initializer of `lm_loss/weight` (untied only).
    lookup_table: `[n_token, d_model]` embedding table (needed when tied).
    tie_weight: use `lookup_table` as the softmax weight.
    bi_data: unused (kept for the original signature).
    use_tpu: one-hot / log-softmax form instead of the sparse op.
    use_bfloat16, use_fp16: compute the logits' matrix product in bfloat16 /
      float16 (the softmax and the loss stay float32).
    return_logits: also return the float32 logits `[len, bsz, n_token]`.

  Returns:
    float32 Tensor `[len, bsz]` of losses, and the logits when
    `return_logits`.
  """
  del bi_data
  dtype = _compute_dtype(use_bfloat16, use_fp16)
  with tf.compat.v1.variable_scope("lm_loss"):
    if tie_weight:
      if lookup_table is None:
        raise ValueError("lm_loss: tie_weight=True needs a lookup_table")
      softmax_w = tf.cast(lookup_table, dtype)
    else:
      softmax_w = _variable("weight", [n_token, d_model], dtype, initializer)
    softmax_b = _variable("bias", [n_token], tf.float32,
                          tf.compat.v1.zeros_initializer())
    logits = tf.cast(_vocab_logits(tf.cast(hidden, dtype), softmax_w),
                     tf.float32) + softmax_b
    if use_tpu:
      one_hot_target = tf.one_hot(target, n_token, dtype=logits.dtype)
      loss = -tf.reduce_sum(tf.nn.log_softmax(logits) * one_hot_target, -1)
    else:
      loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=target, logits=logits)
    return (loss, logits) if return_logits else loss


def multihead_attn(q, k, v, attn_mask, d_model, n_head, d_head, dropout,
                   dropatt, is_training, kernel_initializer, residual=True,
                   scope="abs_attn", reuse=None):
  """Standard (absolute) multi-head attention.

  Args:
    q: Tensor `[qlen, bsz, d_model]`.
    k, v: Tensors `[klen, bsz, d_model]`.
    attn_mask: Tensor `[qlen or 1, klen, bsz, 1]` (1 = may not attend) or
      None.
    residual: add q to the projected output before LayerNorm.

  Returns:
    Tensor `[qlen, bsz, d_model]`.
  """
  scale = 1.0 / math.sqrt(d_head)
  with tf.compat.v1.variable_scope(scope, reuse=reuse):
    q_head = head_projection(q, d_model, n_head, d_head, kernel_initializer,
                             "q")
    k_head = head_projection(k, d_model, n_head, d_head, kernel_initializer,
                             "k")
    v_head = head_projection(v, d_model, n_head, d_head, kernel_initializer,
                             "v")
    score = tf.einsum("ibnd,jbnd->bnij", q_head * scale, k_head)
    if attn_mask is not None:
      attn_mask = tf.transpose(attn_mask, [2, 3, 0, 1])
    attn_vec = _attend(_masked_softmax(score, attn_mask), v_head, dropatt,
                       is_training)
    return post_attention(q, attn_vec, d_model, n_head, d_head, dropout,
                          is_training, kernel_initializer, residual=residual)


def summarize_sequence(summary_type, hidden, d_model, n_head, d_head, dropout,
                       dropatt, input_mask, is_training, initializer,
                       scope=None, reuse=None, use_proj=True):
  """Pools a sequence into one vector per example.

  Args:
    summary_type: "last" (hidden[-1]), "first" (hidden[0]), "mean", or
      "attn" (a learned query attending over hidden).
    hidden: Tensor `[len, bsz, d_model]`.
    input_mask: float Tensor `[len, bsz]` (1 = padding) or None; used by
      "attn" only.
    scope: variable scope (default `sequnece_summary`, the released name).
    use_proj: add a dense tanh projection named `summary`.

  Returns:
    Tensor `[bsz, d_model]`.

  Raises:
    ValueError: on an unknown summary_type.
  """
  with tf.compat.v1.variable_scope(scope, "sequnece_summary", reuse=reuse):
    if summary_type == "last":
      summary = hidden[-1]
    elif summary_type == "first":
      summary = hidden[0]
    elif summary_type == "mean":
      summary = tf.reduce_mean(hidden, axis=0)
    elif summary_type == "attn":
      bsz = tf.shape(hidden)[1]
      summary_bias = _variable("summary_bias", [d_model], hidden.dtype,
                               initializer)
      summary_bias = tf.tile(summary_bias[None, None], [1, bsz, 1])
      if input_mask is not None:
        input_mask = input_mask[None, :, :, None]
      summary = multihead_attn(summary_bias, hidden, hidden, input_mask,
                               d_model, n_head, d_head, dropout, dropatt,
                               is_training, initializer, residual=False)
      summary = summary[0]
    else:
      raise ValueError("summary_type must be one of 'last', 'first', 'mean', "
                       f"'attn', got {summary_type!r}")
    if use_proj:
      summary = _dense(summary, d_model, initializer, "summary",
                       activation=tf.tanh)
    return _dropout(summary, dropout, is_training)


def classification_loss(hidden, labels, n_class, initializer, scope,
                        reuse=None, return_logits=False):
  """Softmax cross-entropy of a dense `logit` layer.

  Args:
    hidden: Tensor `[bsz, d_model]`.
    labels: int Tensor `[bsz]`.
    n_class: number of classes.

  Returns:
    loss `[bsz]`, and logits `[bsz, n_class]` if return_logits.
  """
  with tf.compat.v1.variable_scope(scope, reuse=reuse):
    logits = _dense(hidden, n_class, initializer, "logit")
    one_hot_target = tf.one_hot(labels, n_class, dtype=hidden.dtype)
    loss = -tf.reduce_sum(tf.nn.log_softmax(logits) * one_hot_target, -1)
    return (loss, logits) if return_logits else loss


def regression_loss(hidden, labels, initializer, scope, reuse=None,
                    return_logits=False):
  """Squared error of a one-unit dense `logit` layer.

  Args:
    hidden: Tensor `[bsz, d_model]`.
    labels: float Tensor `[bsz]`.

  Returns:
    loss `[bsz]`, and logits `[bsz]` if return_logits.
  """
  with tf.compat.v1.variable_scope(scope, reuse=reuse):
    logits = tf.squeeze(_dense(hidden, 1, initializer, "logit"), axis=-1)
    loss = tf.square(logits - tf.cast(labels, logits.dtype))
    return (loss, logits) if return_logits else loss
