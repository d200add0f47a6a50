"""A slow, literal NumPy forward pass of XLNet, written from its semantics.

It exists to check the TensorFlow model: no rel_shift trick, no clever
broadcasting. The relative attention score of query i and key j is computed
from the relative distance `(mlen + i) - j` directly, masks are built entry by
entry, and masked keys are left out of the softmax.

Parameters come as a dict keyed by the released checkpoints' variable names
without the `:0` suffix, e.g. `model/transformer/layer_0/rel_attn/q/kernel`.
All tensors are time-major, as in the model.
"""
import math

import numpy as np

PREFIX = "model/transformer/"


def layer_norm(x, gamma, beta):
  """LayerNorm over the last axis, population variance, eps 1e-12."""
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def gelu(x):
  """tanh approximation of GELU."""
  return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) *
                                  (x + 0.044715 * x ** 3)))


def relu(x):
  return np.maximum(x, 0.0)


def sinusoid(pos, d_model):
  """Encoding of one relative distance: concat(sin(pos*f), cos(pos*f))."""
  inv_freq = 1.0 / (10000.0 ** (np.arange(0, d_model, 2.0) / d_model))
  return np.concatenate([np.sin(pos * inv_freq), np.cos(pos * inv_freq)])


def build_masks(qlen, mlen, bsz, attn_type, same_length, input_mask,
                perm_mask):
  """Entry-by-entry masks (1 = may not attend) `[qlen, klen, bsz]`.

  Returns (query-stream mask, content-stream mask).
  """
  klen = mlen + qlen
  mask_g = np.zeros([qlen, klen, bsz])
  for i in range(qlen):
    for j in range(klen):
      for b in range(bsz):
        masked = False
        if attn_type == "uni":
          if j >= mlen and j - mlen > i:
            masked = True
          if same_length and j < qlen and j < i:
            masked = True
        if j >= mlen:
          jj = j - mlen
          if input_mask is not None and input_mask[jj, b] > 0:
            masked = True
          if perm_mask is not None and perm_mask[i, jj, b] > 0:
            masked = True
        mask_g[i, j, b] = float(masked)
  mask_h = mask_g.copy()
  for i in range(qlen):
    mask_h[i, mlen + i, :] = 0.0
  return mask_g, mask_h


def attention_core(q, k, v, pos_keys, seg_class, w_bias, r_bias, s_bias,
                   seg_embed, mask, d_head):
  """One stream of relative attention, with explicit loops.

  Args:
    q: `[qlen, bsz, n_head, d_head]` query heads.
    k, v: `[klen, bsz, n_head, d_head]` content keys / values.
    pos_keys: function (i, j, b) -> `[n_head, d_head]` positional key for
      relative distance `(mlen + i) - j` as seen by batch row b.
    seg_class: `[qlen, klen, bsz]` ints (1 = different segment) or None.
    w_bias, r_bias, s_bias: `[n_head, d_head]` (s_bias None w/o segments).
    seg_embed: `[2, n_head, d_head]` or None.
    mask: `[qlen, klen, bsz]`, 1 = may not attend.

  Returns:
    `[qlen, bsz, n_head, d_head]`.
  """
  qlen, bsz, n_head, _ = q.shape
  klen = k.shape[0]
  out = np.zeros_like(q)
  for i in range(qlen):
    for b in range(bsz):
      for n in range(n_head):
        scores = np.zeros(klen)
        for j in range(klen):
          ac = np.dot(q[i, b, n] + w_bias[n], k[j, b, n])
          bd = np.dot(q[i, b, n] + r_bias[n], pos_keys(i, j, b)[n])
          ef = 0.0
          if seg_class is not None:
            ef = np.dot(q[i, b, n] + s_bias[n],
                        seg_embed[seg_class[i, j, b], n])
          scores[j] = (ac + bd + ef) / math.sqrt(d_head)
        allowed = mask[i, :, b] == 0
        assert allowed.any(), f"query {i} of row {b} sees no key"
        probs = np.zeros(klen)
        ex = np.exp(scores[allowed] - scores[allowed].max())
        probs[allowed] = ex / ex.sum()
        out[i, b, n] = probs @ v[:, b, n]
  return out


def two_stream_attention(weights, h, g, mem, biases, seg_class, mask_h,
                         mask_g, target_mapping, distance, d_head):
  """One layer's relative attention block (both streams, no dropout).

  Args:
    weights: dict of the block's variables: "q", "k", "v", "r", "o"
      kernels `[d_model, n_head, d_head]`, LayerNorm "gamma", "beta".
    h: content stream `[qlen, bsz, d_model]`.
    g: query stream `[qlen or num_predict, bsz, d_model]` or None.
    mem: memory `[mlen, bsz, d_model]` or None.
    biases: (w_bias, r_bias, s_bias, seg_embed); the last two None without
      segments.
    seg_class: `[qlen, klen, bsz]` ints (1 = different segment) or None.
    mask_h, mask_g: `[qlen, klen, bsz]` masks (1 = may not attend) of the
      content and query streams.
    target_mapping: `[num_predict, qlen, bsz]` or None.
    distance: function (i, j, b) -> the relative distance query i uses for
      key j in batch row b (clamped, negated for backward rows).
    d_head: head width.

  Returns:
    (new h, new g or None), after the residual and LayerNorm.
  """
  w_bias, r_bias, s_bias, seg_embed = biases
  d_model = h.shape[-1]
  cat = h if mem is None else np.concatenate([mem, h], 0)
  k = np.einsum("ibh,hnd->ibnd", cat, weights["k"])
  v = np.einsum("ibh,hnd->ibnd", cat, weights["v"])

  def pos_keys(i, j, b):
    return np.einsum("h,hnd->nd", sinusoid(distance(i, j, b), d_model),
                     weights["r"])

  def attend(q, mask):
    return attention_core(q, k, v, pos_keys, seg_class, w_bias, r_bias,
                          s_bias, seg_embed, mask, d_head)

  def post(residual, vec):
    out = np.einsum("ibnd,hnd->ibh", vec, weights["o"]) + residual
    return layer_norm(out, weights["gamma"], weights["beta"])

  new_h = post(h, attend(np.einsum("ibh,hnd->ibnd", h, weights["q"]), mask_h))
  if g is None:
    return new_h, None
  q_g = np.einsum("ibh,hnd->ibnd", g, weights["q"])
  if target_mapping is not None:
    q_g = np.einsum("mbnd,mlb->lbnd", q_g, target_mapping)
  vec_g = attend(q_g, mask_g)
  if target_mapping is not None:
    vec_g = np.einsum("lbnd,mlb->mbnd", vec_g, target_mapping)
  return new_h, post(g, vec_g)


def forward_of(params, config, **inputs):
  """`forward` with the sizes of `config` (a dict of an XLNetConfig's keys,
  e.g. tests/classifier_fixtures.TINY_CONFIG), the parameters in float64.

  Args:
    params: dict checkpoint name -> array.
    config: dict with n_layer, d_model, n_head, d_head, d_inner,
      ff_activation, untie_r.
    **inputs: `forward`'s inputs and options (inp_k, seg_id, ...).
  """
  sizes = ("n_layer", "d_model", "n_head", "d_head", "d_inner",
           "ff_activation", "untie_r")
  return forward({k: np.asarray(v, np.float64) for k, v in params.items()},
                 **{k: config[k] for k in sizes}, **inputs)


def forward(params, n_layer, d_model, n_head, d_head, d_inner, ff_activation,
            untie_r, inp_k, inp_q=None, seg_id=None, input_mask=None, perm_mask=None,
            target_mapping=None, mems=None, attn_type="bi", bi_data=False,
            clamp_len=-1, same_length=False, mem_len=None, reuse_len=None):
  """XLNet backbone forward pass (dropout off).

  Returns:
    (output `[qlen or num_predict, bsz, d_model]`, new_mems list or None).
  """
  p = lambda name: params[PREFIX + name]  # noqa: E731
  qlen, bsz = inp_k.shape
  mlen = 0 if mems is None else mems[0].shape[0]
  klen = mlen + qlen
  act = {"relu": relu, "gelu": gelu}[ff_activation]

  mask_g, mask_h = build_masks(qlen, mlen, bsz, attn_type, same_length,
                               input_mask, perm_mask)

  table = p("word_embedding/lookup_table")
  h = table[inp_k]  # [qlen, bsz, d_model]
  g = None
  if inp_q is not None:
    mask_emb = p("mask_emb/mask_emb")[0, 0]
    if target_mapping is not None:
      g = np.tile(mask_emb, [target_mapping.shape[0], bsz, 1])
    else:
      g = (inp_q[:, :, None] * mask_emb +
           (1 - inp_q[:, :, None]) * h)

  seg_class = None
  if seg_id is not None:
    seg_class = np.zeros([qlen, klen, bsz], dtype=np.int64)
    for i in range(qlen):
      for j in range(klen):
        for b in range(bsz):
          key_seg = 0 if j < mlen else seg_id[j - mlen, b]
          seg_class[i, j, b] = int(seg_id[i, b] != key_seg)

  def distance(i, j, b):
    dist = (mlen + i) - j
    if clamp_len > 0:
      dist = max(-clamp_len, min(clamp_len, dist))
    if bi_data and b >= bsz // 2:
      dist = -dist
    return dist

  new_mems = [] if mem_len else None
  for layer in range(n_layer):
    lp = lambda name: p(f"layer_{layer}/{name}")  # noqa: E731,B023
    mem = None if mems is None else mems[layer]
    if mem_len:
      cached = h[:reuse_len] if reuse_len else h
      cat_mem = cached if mem is None else np.concatenate([mem, cached], 0)
      new_mems.append(cat_mem[-mem_len:])

    def bias(name):
      value = p(name)
      return value[layer] if untie_r else value  # noqa: B023

    biases = (bias("r_w_bias"), bias("r_r_bias"),
              bias("r_s_bias") if seg_id is not None else None,
              p("seg_embed")[layer] if seg_id is not None else None)
    weights = {x: lp(f"rel_attn/{x}/kernel") for x in "qkvro"}
    weights["gamma"] = lp("rel_attn/LayerNorm/gamma")
    weights["beta"] = lp("rel_attn/LayerNorm/beta")

    def ffn(x):
      assert lp("ff/layer_1/kernel").shape == (d_model, d_inner)
      y = act(x @ lp("ff/layer_1/kernel") + lp("ff/layer_1/bias"))
      y = y @ lp("ff/layer_2/kernel") + lp("ff/layer_2/bias")
      return layer_norm(y + x, lp("ff/LayerNorm/gamma"),
                        lp("ff/LayerNorm/beta"))

    h, g = two_stream_attention(weights, h, g, mem, biases, seg_class,
                                mask_h, mask_g, target_mapping, distance,
                                d_head)
    h = ffn(h)
    if g is not None:
      g = ffn(g)

  output = g if g is not None else h
  return output, new_mems


def lm_loss(hidden, target, lookup_table, bias):
  """Per-position cross-entropy with the tied softmax weight `[len, bsz]`."""
  logits = hidden @ lookup_table.T + bias
  top = logits.max(-1, keepdims=True)
  log_z = np.log(np.exp(logits - top).sum(-1)) + top[..., 0]
  picked = np.take_along_axis(logits, target[..., None], -1)[..., 0]
  return log_z - picked


def variable_shapes(cfg, two_stream=True, lm_loss=True, summary=False):
  """The released checkpoint names of a model and their shapes (untie_r).

  Args:
    cfg: dict with n_layer, d_model, n_head, d_head, d_inner, n_token.
    two_stream: include `mask_emb` (pretraining's query stream).
    lm_loss: include the LM output bias.
    summary: include the sequence summary projection (fine-tuning).

  Returns:
    dict name -> shape (list of ints): the backbone with segment biases,
    plus the optional parts.
  """
  n, h, d, i = cfg["n_layer"], cfg["n_head"], cfg["d_head"], cfg["d_inner"]
  m, t = cfg["d_model"], PREFIX
  shapes = {t + "word_embedding/lookup_table": [cfg["n_token"], m],
            t + "r_w_bias": [n, h, d], t + "r_r_bias": [n, h, d],
            t + "r_s_bias": [n, h, d], t + "seg_embed": [n, 2, h, d]}
  if two_stream:
    shapes[t + "mask_emb/mask_emb"] = [1, 1, m]
  if lm_loss:
    shapes["model/lm_loss/bias"] = [cfg["n_token"]]
  if summary:
    shapes["model/sequnece_summary/summary/kernel"] = [m, m]
    shapes["model/sequnece_summary/summary/bias"] = [m]
  for layer in range(n):
    p = f"{t}layer_{layer}/"
    for name in "qkvro":
      shapes[f"{p}rel_attn/{name}/kernel"] = [m, h, d]
    for block in ("rel_attn", "ff"):
      shapes[f"{p}{block}/LayerNorm/gamma"] = [m]
      shapes[f"{p}{block}/LayerNorm/beta"] = [m]
    shapes[f"{p}ff/layer_1/kernel"] = [m, i]
    shapes[f"{p}ff/layer_1/bias"] = [i]
    shapes[f"{p}ff/layer_2/kernel"] = [i, m]
    shapes[f"{p}ff/layer_2/bias"] = [m]
  return shapes
