"""Tests of the XLNet backbone and heads against the NumPy reference.

Every number is checked against `tests/np_reference.py` (a literal NumPy
implementation of the model's semantics) or against hand-written NumPy,
never against the code under test (one exception, marked: the query stream
on the target rows is also checked against the model's own full path, which
the NumPy reference checks in turn).
"""
import json

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from xlnet.flags import configs as config_flags
from tests import checkpoint_fixtures as ckpt_fx
from tests import np_reference
from xlnet import model as xlnet_model
from xlnet import modeling

N_TOKEN = 50
SIZES = dict(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32)
TOL = dict(rtol=1e-5, atol=1e-5)


def _randomize_variables(sess, rng):
  """Sets every global variable to random values (LayerNorm and biases too,
  so that no term of the model is trivially zero or one)."""
  _load(sess, {v.op.name: rng.normal(0.0, 0.4, v.shape.as_list())
               for v in tf.compat.v1.global_variables()})


def _load(sess, values):
  """Assigns `values` (name -> array) to the graph's global variables."""
  sess.run([v.assign(values[v.op.name].astype(np.float32))
            for v in tf.compat.v1.global_variables()])


def _param_values(sess):
  """Dict of variable name (no `:0`) -> float64 value."""
  variables = tf.compat.v1.global_variables()
  values = sess.run(variables)
  return {v.op.name: np.asarray(x, np.float64)
          for v, x in zip(variables, values)}


def _make_inputs(rng, qlen, bsz, num_predict=None, n_target=3, padding=False,
                 mlen=0):
  """Random, realistic XLNet inputs (time-major).

  Targets are random positions; the factorization order is a random
  permutation; perm_mask follows pretraining (targets see earlier targets
  and all non-targets; non-targets see no target).
  """
  inp_k = rng.integers(0, N_TOKEN, size=[qlen, bsz]).astype(np.int32)
  seg_id = rng.integers(0, 2, size=[qlen, bsz]).astype(np.int32)
  is_target = np.zeros([qlen, bsz], np.float32)
  perm_mask = np.zeros([qlen, qlen, bsz], np.float32)
  target_mapping = None
  if num_predict is not None:
    target_mapping = np.zeros([num_predict, qlen, bsz], np.float32)
  for b in range(bsz):
    targets = rng.choice(qlen, size=n_target, replace=False)
    is_target[targets, b] = 1
    order = rng.permutation(qlen)
    for i in range(qlen):
      for j in range(qlen):
        if is_target[j, b]:
          sees = is_target[i, b] and order[j] < order[i]
          perm_mask[i, j, b] = 0.0 if sees else 1.0
    if target_mapping is not None:
      for m, pos in enumerate(sorted(targets)):
        target_mapping[m, pos, b] = 1.0
  input_mask = None
  if padding:
    input_mask = np.zeros([qlen, bsz], np.float32)
    for b in range(bsz):
      non_targets = [i for i in range(qlen) if not is_target[i, b]]
      input_mask[non_targets[-1], b] = 1.0  # pad one non-target per row
  mems = None
  if mlen:
    mems = [rng.normal(0, 1, [mlen, bsz, SIZES["d_model"]]).astype(np.float32)
            for _ in range(SIZES["n_layer"])]
  return dict(inp_k=inp_k, seg_id=seg_id, inp_q=is_target,
              perm_mask=perm_mask, target_mapping=target_mapping,
              input_mask=input_mask, mems=mems)


def _run_backbone(inputs, seed=0, lm_target=None, **opts):
  """Builds transformer_xl under scope `model` with random variables.

  Returns (output, new_mems, lm loss or None, param values).
  """
  graph = tf.Graph()
  with graph.as_default():
    # Token ids are fed through a placeholder, as in training (constant
    # inputs would let grappler fold parts of the graph away).
    ids = tf.compat.v1.placeholder(tf.int32, inputs["inp_k"].shape)
    feed = {k: (None if v is None else
                [tf.constant(m) for m in v] if k == "mems" else tf.constant(v))
            for k, v in inputs.items() if k != "inp_k"}
    with tf.compat.v1.variable_scope("model"):
      # training=True with a vanishing dropout rate runs the training graph
      # (per-row positional encodings) with the numbers of dropout 0.
      training = opts.pop("training", False)
      rate = 1e-30 if training else 0.0
      output, new_mems, table = modeling.transformer_xl(
          n_token=N_TOKEN, dropout=rate, dropatt=rate,
          initializer=tf.compat.v1.initializers.random_normal(stddev=0.4),
          is_training=training, use_tpu=opts.pop("use_tpu", False),
          inp_k=ids, **SIZES, **feed, **opts)
      loss = None
      if lm_target is not None:
        loss = modeling.lm_loss(output, tf.constant(lm_target), N_TOKEN,
                                SIZES["d_model"], None, lookup_table=table,
                                tie_weight=True)
    with tf.compat.v1.Session() as sess:
      _randomize_variables(sess, np.random.default_rng(seed))
      fetch = [output, new_mems or [],
               loss if loss is not None else tf.constant(0.0)]
      out, mems, loss_val = sess.run(fetch, {ids: inputs["inp_k"]})
      params = _param_values(sess)
  return out, mems, (loss_val if loss is not None else None), params


def _reference(params, inputs, **opts):
  """np_reference.forward on `inputs` (mems in float64)."""
  ref_inputs = {k: v for k, v in inputs.items()}
  if ref_inputs["mems"] is not None:
    ref_inputs["mems"] = [m.astype(np.float64) for m in ref_inputs["mems"]]
  return np_reference.forward(params, **SIZES, **ref_inputs, **opts)


def _pick(inputs, *keys):
  """Inputs with only `keys` kept (others None)."""
  return {k: (v if k in keys else None) for k, v in inputs.items()}


CASES = {
    "content_only": (dict(qlen=7, bsz=2), ("inp_k",),
                     dict(untie_r=True, ff_activation="gelu",
                          attn_type="bi", bi_data=False)),
    "two_stream_target_mapping_mems_seg": (
        dict(qlen=8, bsz=2, num_predict=4, mlen=3),
        ("inp_k", "inp_q", "perm_mask", "target_mapping", "seg_id", "mems"),
        dict(untie_r=True, ff_activation="gelu", attn_type="bi",
             bi_data=False, mem_len=5)),
    "two_stream_target_mapping_padding_no_perm": (
        dict(qlen=7, bsz=2, num_predict=3, padding=True),
        ("inp_k", "inp_q", "target_mapping", "input_mask"),
        dict(untie_r=False, ff_activation="gelu", attn_type="bi",
             bi_data=False)),
    "two_stream_no_mapping_tied_relu": (
        dict(qlen=6, bsz=3), ("inp_k", "inp_q", "perm_mask"),
        dict(untie_r=False, ff_activation="relu", attn_type="bi",
             bi_data=False)),
    "content_seg_padding_mems_clamp": (
        dict(qlen=8, bsz=2, mlen=3, padding=True),
        ("inp_k", "seg_id", "input_mask", "mems"),
        dict(untie_r=False, ff_activation="gelu", attn_type="bi",
             bi_data=False, clamp_len=4, mem_len=4)),
    "bi_data_two_stream_reuse_len": (
        dict(qlen=8, bsz=4, num_predict=3, mlen=3),
        ("inp_k", "inp_q", "perm_mask", "target_mapping", "seg_id", "mems"),
        dict(untie_r=True, ff_activation="gelu", attn_type="bi",
             bi_data=True, mem_len=6, reuse_len=4, use_tpu=True)),
    "bi_data_training_graph": (
        dict(qlen=6, bsz=4, num_predict=3, mlen=2),
        ("inp_k", "inp_q", "perm_mask", "target_mapping", "mems"),
        dict(untie_r=True, ff_activation="gelu", attn_type="bi",
             bi_data=True, mem_len=3, training=True)),
    "uni_two_stream_target_mapping": (
        dict(qlen=7, bsz=2, num_predict=4, mlen=2),
        ("inp_k", "inp_q", "perm_mask", "target_mapping", "seg_id", "mems"),
        dict(untie_r=True, ff_activation="gelu", attn_type="uni",
             bi_data=False, mem_len=3)),
    "uni_mems": (dict(qlen=6, bsz=2, mlen=3), ("inp_k", "mems"),
                 dict(untie_r=True, ff_activation="relu", attn_type="uni",
                      bi_data=False, mem_len=4)),
    "uni_same_length_seg": (
        dict(qlen=6, bsz=2, mlen=3), ("inp_k", "mems", "seg_id"),
        dict(untie_r=False, ff_activation="gelu", attn_type="uni",
             bi_data=False, same_length=True)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.quick
@pytest.mark.tf_version
def test_backbone_matches_numpy_reference(case):
  shape_args, keys, opts = CASES[case]
  opts = dict(opts)
  rng = np.random.default_rng(len(case))
  inputs = _pick(_make_inputs(rng, **shape_args), *keys)
  out_len = shape_args.get("num_predict") or shape_args["qlen"]
  lm_target = rng.integers(0, N_TOKEN, [out_len, shape_args["bsz"]])
  out, new_mems, loss, params = _run_backbone(
      inputs, lm_target=lm_target.astype(np.int32), **opts)
  opts.pop("use_tpu", None)
  opts.pop("training", None)
  ref_out, ref_mems = _reference(params, inputs, **opts)
  np.testing.assert_allclose(out, ref_out, **TOL)
  assert len(new_mems) == (SIZES["n_layer"] if opts.get("mem_len") else 0)
  for got, want in zip(new_mems, ref_mems or []):
    np.testing.assert_allclose(got, want, **TOL)
  ref_loss = np_reference.lm_loss(
      ref_out, lm_target, params["model/transformer/word_embedding/"
                                 "lookup_table"], params["model/lm_loss/bias"])
  np.testing.assert_allclose(loss, ref_loss, **TOL)


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.tf_version
def test_query_stream_on_target_rows_equals_full_path(training):
  """With target_mapping the query stream attends only from the target rows;
  that must give the numbers (and gradients) of the query stream computed
  for every position (no target_mapping), read at the target positions.

  Covers bi_data (per-half positional encodings, and per-row ones in the
  training graph), memory, segments, clamping and padding rows.
  """
  rng = np.random.default_rng(21)
  qlen, bsz, n_target, num_predict, mlen = 9, 4, 3, 5, 3
  inputs = _make_inputs(rng, qlen, bsz, num_predict=num_predict,
                        n_target=n_target, mlen=mlen)
  weights = rng.normal(0, 1, [n_target, bsz, SIZES["d_model"]])
  positions = inputs["target_mapping"][:n_target].argmax(1)  # [n_target, bsz]
  with tf.Graph().as_default():
    common = dict(
        n_token=N_TOKEN, dropout=1e-30 if training else 0.0,
        dropatt=1e-30 if training else 0.0, attn_type="bi", bi_data=True,
        is_training=training, use_tpu=False, mem_len=4, clamp_len=6,
        untie_r=True, ff_activation="gelu",
        initializer=tf.compat.v1.initializers.random_normal(stddev=0.4),
        inp_q=tf.constant(inputs["inp_q"]),
        perm_mask=tf.constant(inputs["perm_mask"]),
        seg_id=tf.constant(inputs["seg_id"]),
        mems=[tf.constant(m) for m in inputs["mems"]], **SIZES)
    ids = tf.constant(inputs["inp_k"])
    with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
      rows, _, _ = modeling.transformer_xl(
          ids, target_mapping=tf.constant(inputs["target_mapping"]), **common)
      full, _, _ = modeling.transformer_xl(ids, **common)
    # [n_target, bsz, d_model]: the full path at the target positions.
    full_at_targets = tf.gather(tf.transpose(full, [1, 0, 2]),
                                positions.T, axis=1, batch_dims=1)
    full_at_targets = tf.transpose(full_at_targets, [1, 0, 2])
    variables = tf.compat.v1.trainable_variables()
    grads = [[tf.convert_to_tensor(g) for g in
              tf.gradients(tf.reduce_sum(out * weights), variables)]
             for out in (rows[:n_target], full_at_targets)]
    with tf.compat.v1.Session() as sess:
      _randomize_variables(sess, rng)
      got, want, got_grads, want_grads = sess.run(
          [rows, full_at_targets] + grads)
  np.testing.assert_allclose(got[:n_target], want, **TOL)
  for var, g, w in zip(variables, got_grads, want_grads):
    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5,
                               err_msg=var.op.name)


@pytest.mark.quick
@pytest.mark.tf_version
def test_two_stream_rel_attn_matches_numpy():
  """The public one-layer two-stream attention (query stream on the target
  rows) against the literal NumPy block, with memory and segments."""
  rng = np.random.default_rng(17)
  qlen, bsz, mlen, num_predict, d = 6, 2, 2, 3, SIZES["d_model"]
  n_head, d_head = SIZES["n_head"], SIZES["d_head"]
  inputs = _make_inputs(rng, qlen, bsz, num_predict=num_predict,
                        n_target=2, mlen=mlen)
  h = rng.normal(0, 1, [qlen, bsz, d])
  g = rng.normal(0, 1, [num_predict, bsz, d])
  mem = inputs["mems"][0]
  klen = mlen + qlen
  # Masks and segment classes entry by entry, [qlen, klen, bsz].
  mask_g, mask_h = np_reference.build_masks(qlen, mlen, bsz, "bi", False,
                                            None, inputs["perm_mask"])
  seg = np.concatenate([np.zeros([mlen, bsz], np.int64), inputs["seg_id"]])
  seg_class = (inputs["seg_id"][:, None, :] != seg[None, :, :]).astype(int)
  to_core = lambda x: tf.constant(  # noqa: E731
      x.transpose(2, 0, 1)[:, None], tf.float32)  # -> [bsz, 1, qlen, klen]
  with tf.Graph().as_default():
    biases = {name: tf.compat.v1.get_variable(name, [n_head, d_head])
              for name in ("r_w_bias", "r_r_bias", "r_s_bias")}
    seg_embed = tf.compat.v1.get_variable("seg_embed", [2, n_head, d_head])
    pos_emb = modeling.relative_positional_encoding(qlen, klen, d, -1, "bi",
                                                    False)
    with tf.compat.v1.variable_scope("layer"):
      out_h, out_g = modeling.two_stream_rel_attn(
          tf.constant(h, tf.float32), tf.constant(g, tf.float32), pos_emb,
          tf.constant(mem), biases["r_w_bias"], biases["r_r_bias"],
          to_core(seg_class), biases["r_s_bias"], seg_embed,
          to_core(mask_h), to_core(mask_g),
          tf.constant(inputs["target_mapping"]), d, n_head, d_head,
          dropout=0.0, dropatt=0.0, is_training=False,
          kernel_initializer=None)
    with tf.compat.v1.Session() as sess:
      _randomize_variables(sess, rng)
      got_h, got_g = sess.run([out_h, out_g])
      params = _param_values(sess)
  weights = {x: params[f"layer/rel_attn/{x}/kernel"] for x in "qkvro"}
  weights["gamma"] = params["layer/rel_attn/LayerNorm/gamma"]
  weights["beta"] = params["layer/rel_attn/LayerNorm/beta"]
  want_h, want_g = np_reference.two_stream_attention(
      weights, h, g, mem.astype(np.float64),
      (params["r_w_bias"], params["r_r_bias"], params["r_s_bias"],
       params["seg_embed"]),
      seg_class, mask_h, mask_g, inputs["target_mapping"],
      lambda i, j, b: (mlen + i) - j, d_head)
  np.testing.assert_allclose(got_h, want_h, **TOL)
  np.testing.assert_allclose(got_g, want_g, **TOL)


@pytest.mark.quick
def test_information_flow_respects_perm_mask():
  """A target never sees its own content; hidden tokens change nothing."""
  rng = np.random.default_rng(7)
  qlen, bsz = 8, 2
  inputs = _make_inputs(rng, qlen, bsz, n_target=4)
  graph = tf.Graph()
  with graph.as_default():
    ids = tf.compat.v1.placeholder(tf.int32, [qlen, bsz])
    common = dict(n_token=N_TOKEN, dropout=0.0, dropatt=0.0, attn_type="bi",
                  bi_data=False, is_training=False, use_tpu=False,
                  initializer=tf.compat.v1.initializers.random_normal(
                      stddev=0.4),
                  perm_mask=tf.constant(inputs["perm_mask"]), **SIZES)
    with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
      out_g, _, _ = modeling.transformer_xl(
          ids, inp_q=tf.constant(inputs["inp_q"]), **common)
      out_h, _, _ = modeling.transformer_xl(ids, **common)
    with tf.compat.v1.Session() as sess:
      _randomize_variables(sess, rng)

      def run(token_ids):
        return sess.run([out_g, out_h], {ids: token_ids})

      base_g, base_h = run(inputs["inp_k"])
      for b in range(bsz):
        targets = np.flatnonzero(inputs["inp_q"][:, b])
        # 1) A target's own content never reaches its query stream.
        for t in targets:
          changed = inputs["inp_k"].copy()
          changed[t, b] = (changed[t, b] + 1) % N_TOKEN
          new_g, new_h = run(changed)
          np.testing.assert_allclose(new_g[t, b], base_g[t, b], atol=1e-6)
          assert np.abs(new_h[t, b] - base_h[t, b]).max() > 1e-3
        # 2) The last target in the factorization order is hidden from every
        #    other position: nothing else changes, in either stream.
        last = next(t for t in targets
                    if inputs["perm_mask"][:, t, b].sum() == qlen)
        changed = inputs["inp_k"].copy()
        changed[last, b] = (changed[last, b] + 1) % N_TOKEN
        new_g, new_h = run(changed)
        others = [i for i in range(qlen) if i != last]
        np.testing.assert_allclose(new_g[:, b], base_g[:, b], atol=1e-6)
        np.testing.assert_allclose(new_h[others, b], base_h[others, b],
                                   atol=1e-6)
        other_row = 1 - b
        np.testing.assert_allclose(new_h[:, other_row], base_h[:, other_row],
                                   atol=1e-6)


def test_memory_gets_no_gradient():
  rng = np.random.default_rng(3)
  inputs = _make_inputs(rng, 6, 2, num_predict=3, mlen=3)
  graph = tf.Graph()
  with graph.as_default():
    mems = [tf.constant(m) for m in inputs["mems"]]
    with tf.compat.v1.variable_scope("model"):
      output, new_mems, _ = modeling.transformer_xl(
          tf.constant(inputs["inp_k"]), N_TOKEN, dropout=0.1, dropatt=0.1,
          attn_type="bi", bi_data=False, is_training=True,
          initializer=tf.compat.v1.initializers.random_normal(stddev=0.02),
          mem_len=4, inp_q=tf.constant(inputs["inp_q"]), mems=mems,
          perm_mask=tf.constant(inputs["perm_mask"]),
          target_mapping=tf.constant(inputs["target_mapping"]), **SIZES)
    loss = tf.reduce_sum(output ** 2)
    assert all(g is None for g in tf.gradients(loss, mems))
    variables = tf.compat.v1.trainable_variables()
    assert any(g is not None for g in tf.gradients(loss, variables))
    for new_mem in new_mems:
      assert all(g is None for g in tf.gradients(new_mem, variables))


@pytest.mark.tf_version
def test_two_chunks_with_memory_equal_one_pass():
  rng = np.random.default_rng(11)
  qlen, bsz, chunk = 8, 2, 4
  ids = rng.integers(0, N_TOKEN, [qlen, bsz]).astype(np.int32)
  graph = tf.Graph()
  with graph.as_default():
    common = dict(n_token=N_TOKEN, dropout=0.0, dropatt=0.0, attn_type="uni",
                  bi_data=False, is_training=False, mem_len=chunk,
                  initializer=tf.compat.v1.initializers.random_normal(
                      stddev=0.4), **SIZES)
    with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
      full, _, _ = modeling.transformer_xl(tf.constant(ids), **common)
      first, mems, _ = modeling.transformer_xl(tf.constant(ids[:chunk]),
                                               **common)
      second, _, _ = modeling.transformer_xl(tf.constant(ids[chunk:]),
                                             mems=mems, **common)
    with tf.compat.v1.Session() as sess:
      _randomize_variables(sess, rng)
      full, first, second = sess.run([full, first, second])
  np.testing.assert_allclose(np.concatenate([first, second]), full, **TOL)


CFG = dict(n_token=N_TOKEN, ff_activation="gelu", untie_r=True, **SIZES)


def _build_full_model(inputs, run_config):
  """XLNetModel + tied LM loss + pooled output; returns the tensors."""
  cfg = _config_from_dict(CFG)
  model = xlnet_model.XLNetModel(
      cfg, run_config, tf.constant(inputs["inp_k"]),
      tf.constant(inputs["seg_id"]), None,
      mems=[tf.constant(m) for m in inputs["mems"]],
      perm_mask=tf.constant(inputs["perm_mask"]),
      target_mapping=tf.constant(inputs["target_mapping"]),
      inp_q=tf.constant(inputs["inp_q"]))
  with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
    loss = modeling.lm_loss(model.get_sequence_output(),
                            tf.zeros(inputs["target_mapping"].shape[::2],
                                     tf.int32),
                            N_TOKEN, SIZES["d_model"],
                            model.get_initializer(),
                            lookup_table=model.get_embedding_table(),
                            tie_weight=True,
                            use_bfloat16=run_config.use_bfloat16,
                            use_fp16=run_config.use_fp16)
  pooled = model.get_pooled_out("last")
  return model, loss, pooled


def _config_from_dict(values):
  """XLNetConfig from a dict, through the explicit-values path."""
  return xlnet_model.XLNetConfig.from_dict(values)


def _pretrain_run_config(precision="fp32"):
  return xlnet_model.RunConfig(
      is_training=False, use_tpu=False, use_bfloat16=precision == "bf16",
      use_fp16=precision == "fp16", dropout=0.0, dropatt=0.0, mem_len=5,
      reuse_len=None, bi_data=False)


@pytest.mark.quick
def test_variable_names_and_shapes_match_spec():
  inputs = _make_inputs(np.random.default_rng(0), 6, 2, num_predict=3,
                        mlen=2)
  with tf.Graph().as_default():
    _build_full_model(inputs, _pretrain_run_config())
    got = {v.op.name: v.shape.as_list()
           for v in tf.compat.v1.global_variables()}
    assert all(v.dtype.base_dtype == tf.float32
               for v in tf.compat.v1.global_variables())
  assert got == np_reference.variable_shapes(CFG, summary=True)


@pytest.mark.quick
@pytest.mark.tf_version
def test_checkpoint_written_by_name_restores_into_model(tmp_path):
  ckpt = str(tmp_path / "model.ckpt")
  params = ckpt_fx.random_checkpoint(
      ckpt, np_reference.variable_shapes(CFG, summary=True), seed=5)
  inputs = _make_inputs(np.random.default_rng(6), 7, 2, num_predict=3,
                        mlen=3)
  with tf.Graph().as_default():
    model, _, _ = _build_full_model(inputs, _pretrain_run_config())
    with tf.compat.v1.Session() as sess:
      tf.compat.v1.train.Saver().restore(sess, ckpt)
      out, new_mems = sess.run([model.get_sequence_output(),
                                model.get_new_memory()])
  ref_out, ref_mems = _reference(
      params, _pick(inputs, "inp_k", "seg_id", "mems", "perm_mask",
                    "target_mapping", "inp_q"),
      untie_r=True, ff_activation="gelu", mem_len=5)
  np.testing.assert_allclose(out, ref_out, **TOL)
  for got, want in zip(new_mems, ref_mems):
    np.testing.assert_allclose(got, want, **TOL)


# Precision -> (compute dtype, bound on relative L2 errors against float32).
# The bound is 5 unit roundoffs of the format (bfloat16 keeps 8 significant
# bits, u = 2^-8; float16 keeps 11, u = 2^-11): every matrix product rounds
# its output once, and a two-layer model chains about ten such roundings
# whose errors add up like a random walk (sqrt(10) ~ 3 u), with margin.
MIXED_PRECISION = {"bf16": (tf.bfloat16, 5 * 2.0 ** -8),
                   "fp16": (tf.float16, 5 * 2.0 ** -11)}


def _run_precisions(inputs, precisions):
  """Builds the full model + LM loss once per precision with the same
  variable values; returns {precision: (output, new_mems, loss, grads,
  graph)} with the gradients of the mean loss as dense float32 arrays."""
  results = {}
  values = None
  for precision in precisions:
    graph = tf.Graph()
    with graph.as_default():
      model, loss, _ = _build_full_model(inputs,
                                         _pretrain_run_config(precision))
      mean_loss = tf.reduce_mean(loss)
      pairs = [(v, g) for v, g in zip(
          tf.compat.v1.trainable_variables(),
          tf.gradients(mean_loss, tf.compat.v1.trainable_variables()))
               if g is not None]  # the pooler is not in the loss
      variables = [v for v, _ in pairs]
      grads = [tf.convert_to_tensor(g) for _, g in pairs]
      with tf.compat.v1.Session() as sess:
        if values is None:
          _randomize_variables(sess, np.random.default_rng(1))
          values = {v.op.name: v.eval(sess)
                    for v in tf.compat.v1.global_variables()}
        _load(sess, values)
        out, mems, loss_value, grad_values = sess.run(
            [model.get_sequence_output(), model.get_new_memory(), loss,
             grads])
    names = [v.op.name for v in variables]
    results[precision] = (out, mems, loss_value,
                          dict(zip(names, grad_values)), graph)
  return results


def _rel_error(got, want):
  return np.linalg.norm(got - want) / np.linalg.norm(want)


@pytest.mark.parametrize("precision", sorted(MIXED_PRECISION))
@pytest.mark.tf_version
def test_mixed_precision_close_to_float32(precision):
  """bf16 / fp16 compute: output, memories, loss and gradients within the
  format's bound of float32, with the variables and outputs float32."""
  bound = MIXED_PRECISION[precision][1]
  inputs = _make_inputs(np.random.default_rng(9), 8, 2, num_predict=3,
                        mlen=3)
  results = _run_precisions(inputs, ["fp32", precision])
  out32, mems32, loss32, grads32, _ = results["fp32"]
  out, mems, loss, grads, graph = results[precision]
  assert out.dtype == np.float32 and loss.dtype == np.float32
  assert all(v.dtype.base_dtype == tf.float32
             for v in graph.get_collection("variables"))
  rel = _rel_error(out, out32)
  assert 0 < rel < bound, rel  # > 0: really computed in low precision
  for got, want in zip(mems, mems32):
    assert got.dtype == np.float32
    assert _rel_error(got, want) < bound
  assert _rel_error(loss, loss32) < bound
  # The backward pass rounds about twice as often as the forward pass.
  names = sorted(grads32)
  assert _rel_error(np.concatenate([grads[k].ravel() for k in names]),
                    np.concatenate([grads32[k].ravel() for k in names])
                    ) < 2 * bound


@pytest.mark.parametrize("precision", sorted(MIXED_PRECISION))
@pytest.mark.tf_version
def test_mixed_precision_keeps_softmax_layernorm_and_loss_in_float32(
    precision):
  """Matrix products run in the low precision; every softmax, the LayerNorm
  statistics and the loss's softmax cross-entropy run in float32."""
  low = MIXED_PRECISION[precision][0]
  inputs = _make_inputs(np.random.default_rng(9), 8, 2, num_predict=3,
                        mlen=3)
  with tf.Graph().as_default() as graph:
    _build_full_model(inputs, _pretrain_run_config(precision))
  ops = graph.get_operations()

  def dtypes(op_types, scope=""):
    return {op.get_attr("T") for op in ops
            if op.type in op_types and scope in op.name}

  assert dtypes(["Einsum", "MatMul", "BatchMatMulV2"],
                "transformer/layer_") == {low}
  assert dtypes(["Einsum", "MatMul"], "lm_loss") == {low}
  assert dtypes(["Softmax"]) == {tf.float32}
  assert dtypes(["Mean", "SquaredDifference"], "moments") == {tf.float32}
  loss_ops = [op for op in ops
              if op.type == "SparseSoftmaxCrossEntropyWithLogits"]
  assert [op.get_attr("T") for op in loss_ops] == [tf.float32]


@pytest.mark.tf_version
def test_jit_compiled_forward_backward_equals_graph():
  """The pretraining forward + backward step compiled whole by XLA
  (tf.function(jit_compile=True)) gives the numbers of the plain graph."""
  rng = np.random.default_rng(13)
  inputs = _make_inputs(rng, 8, 4, num_predict=4, mlen=3)
  targets = rng.integers(0, N_TOKEN, [4, 4]).astype(np.int32)
  with tf.Graph().as_default():
    def step():
      with tf.compat.v1.variable_scope("model",
                                       reuse=tf.compat.v1.AUTO_REUSE):
        output, new_mems, table = modeling.transformer_xl(
            tf.constant(inputs["inp_k"]), N_TOKEN, dropout=0.0, dropatt=0.0,
            attn_type="bi", bi_data=True, is_training=True, use_tpu=False,
            initializer=tf.compat.v1.initializers.random_normal(stddev=0.4),
            mem_len=5, untie_r=True, ff_activation="gelu",
            inp_q=tf.constant(inputs["inp_q"]),
            seg_id=tf.constant(inputs["seg_id"]),
            perm_mask=tf.constant(inputs["perm_mask"]),
            target_mapping=tf.constant(inputs["target_mapping"]),
            mems=[tf.constant(m) for m in inputs["mems"]], **SIZES)
        loss = tf.reduce_mean(modeling.lm_loss(
            output, tf.constant(targets), N_TOKEN, SIZES["d_model"], None,
            lookup_table=table, tie_weight=True))
      variables = tf.compat.v1.trainable_variables()
      grads = [tf.convert_to_tensor(g)
               for g in tf.gradients(loss, variables)]
      return [output, loss] + new_mems + grads

    plain = step()  # also creates the variables the compiled step reuses
    compiled = tf.function(step, jit_compile=True)()
    config = tf.compat.v1.ConfigProto()
    # Grappler's memory optimizer may turn a large gradient sum into
    # AccumulateNV2 on a TemporaryVariable, which XLA cannot compile.
    config.graph_options.rewrite_options.memory_optimization = (
        rewriter_config_pb2.RewriterConfig.NO_MEM_OPT)
    names = (["output", "loss"] +
             [f"new_mem {i}" for i in range(SIZES["n_layer"])] +
             [f"grad {v.op.name}"
              for v in tf.compat.v1.trainable_variables()])
    with tf.compat.v1.Session(config=config) as sess:
      _randomize_variables(sess, rng)
      want, got = sess.run([plain, compiled])
  assert len(names) == len(want) == len(got)
  for name, g, w in zip(names, got, want):
    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=name)


# ----------------------------------------------------------------- bad input


def test_odd_static_batch_with_bi_data_is_rejected():
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match="even per-core batch size.*got "
                                         "per-core batch size 3"):
      modeling.transformer_xl(
          tf.zeros([4, 3], tf.int32), N_TOKEN, dropout=0.0, dropatt=0.0,
          attn_type="bi", bi_data=True, is_training=False, initializer=None,
          **SIZES)


@pytest.mark.tf_version
def test_odd_dynamic_batch_with_bi_data_fails_at_run_time():
  with tf.Graph().as_default():
    ids = tf.compat.v1.placeholder(tf.int32, [4, None])
    out, _, _ = modeling.transformer_xl(
        ids, N_TOKEN, dropout=0.0, dropatt=0.0, attn_type="bi", bi_data=True,
        is_training=False, use_tpu=False,
        initializer=tf.compat.v1.initializers.random_normal(stddev=0.02),
        **SIZES)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      assert sess.run(out, {ids: np.zeros([4, 2])}).shape == (4, 2, 16)
      # The executor runs independent ops in any order: the check must come
      # first every time (it once lost to a reshape in 1 run of 30).
      for _ in range(20):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="even per-core batch size"):
          sess.run(out, {ids: np.zeros([4, 3])})


@pytest.mark.parametrize("bad, match", [
    (dict(ff_activation="swish"), "ff_activation.*'swish'"),
    (dict(attn_type="causal"), "attn_type.*'causal'"),
])
def test_unknown_options_are_rejected(bad, match):
  args = dict(dropout=0.0, dropatt=0.0, attn_type="bi", bi_data=False,
              is_training=False, initializer=None, **SIZES)
  args.update(bad)
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match=match):
      modeling.transformer_xl(tf.zeros([4, 2], tf.int32), N_TOKEN, **args)


def test_unknown_summary_type_is_rejected():
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match="summary_type.*'max'"):
      modeling.summarize_sequence("max", tf.zeros([4, 2, 16]), 16, 2, 8, 0.0,
                                  0.0, None, False, None)


def test_config_json_errors_name_key_and_file(tmp_path):
  path = tmp_path / "cfg.json"
  values = dict(CFG)
  del values["d_inner"]
  path.write_text(json.dumps(values))
  with pytest.raises(ValueError, match=r"cfg\.json lacks key.*d_inner"):
    xlnet_model.XLNetConfig(json_path=str(path))
  values = dict(CFG, ff_activation="swish")
  path.write_text(json.dumps(values))
  with pytest.raises(ValueError, match="ff_activation.*'swish'"):
    xlnet_model.XLNetConfig(json_path=str(path))
  values = dict(CFG, extra=1)
  path.write_text(json.dumps(values))
  with pytest.raises(ValueError, match="unknown key.*extra"):
    xlnet_model.XLNetConfig(json_path=str(path))
  with pytest.raises(ValueError, match=r"lacks key\(s\) \['n_token'\]"):
    _config_from_dict({k: v for k, v in CFG.items() if k != "n_token"})
  with pytest.raises(ValueError, match="unknown key.*extra"):
    _config_from_dict(dict(CFG, extra=1))
  with pytest.raises(ValueError, match="json_path or the values"):
    xlnet_model.XLNetConfig(json_path=str(path), **CFG)
  with pytest.raises(ValueError, match="not found"):
    xlnet_model.XLNetConfig(json_path=str(tmp_path / "missing.json"))


def test_config_json_round_trip(tmp_path):
  cfg = _config_from_dict(CFG)
  path = tmp_path / "sub" / "config.json"
  cfg.to_json(str(path))
  assert json.loads(path.read_text()) == CFG
  assert xlnet_model.XLNetConfig(json_path=str(path)).to_dict() == CFG
  assert [p.name for p in path.parent.iterdir()] == ["config.json"]


@pytest.mark.tf_version
def test_config_json_to_a_file_system_url(tmp_path, monkeypatch):
  """A model_dir like gs://bucket/run goes through tf.io.gfile (here the
  in-memory ram:// file system), not into a local directory `gs:`."""
  monkeypatch.chdir(tmp_path)
  url = f"ram://{tmp_path.name}/run/config.json"
  _config_from_dict(CFG).to_json(url)
  assert list(tmp_path.iterdir()) == []
  assert xlnet_model.XLNetConfig(json_path=url).to_dict() == CFG
  assert tf.io.gfile.listdir(url.rsplit("/", 1)[0]) == ["config.json"]


def test_unknown_init_is_rejected():
  """When the RunConfig is built, in the words of the --init flag."""
  with pytest.raises(ValueError) as info:
    xlnet_model.RunConfig(False, False, False, 0.0, 0.0, init="xavier")
  assert str(info.value) == ("--init=xavier: value should be one of "
                             "<normal|uniform>")


def test_create_run_config_finetune_and_pretrain():
  class Flags:
    use_tpu = False
    use_bfloat16 = True
    use_fp16 = False
    dropout = 0.2
    dropatt = 0.3
    init = "uniform"
    init_range = 0.05
    init_std = 0.01
    clamp_len = 7
    mem_len = 384
    reuse_len = 256
    bi_data = True
    same_length = True

  fine = config_flags.run_config(True, True, Flags)
  assert (fine.mem_len, fine.reuse_len, fine.bi_data, fine.same_length) == (
      None, None, False, False)
  assert (fine.dropout, fine.dropatt, fine.init, fine.init_range,
          fine.clamp_len, fine.use_bfloat16) == (0.2, 0.3, "uniform", 0.05, 7,
                                                 True)
  pre = config_flags.run_config(False, False, Flags)
  assert (pre.mem_len, pre.reuse_len, pre.bi_data, pre.same_length,
          pre.is_training) == (384, 256, True, True, False)
  # Values resolved against the data win over the flags; the evaluation
  # variant of a run's config differs only in is_training.
  resolved = config_flags.run_config(True, False, Flags, reuse_len=4,
                                     bi_data=False)
  assert (resolved.reuse_len, resolved.bi_data, resolved.mem_len,
          resolved.is_training) == (4, False, 384, True)
  evaluation = resolved.for_training(False)
  assert not evaluation.is_training and evaluation != resolved
  assert evaluation.for_training(True) == resolved


# ------------------------------------------------------------- dropout


def _drop_fraction_ok(kept, rate):
  """Whether the dropped share of `kept` is within 4.5 sigma of `rate`."""
  sigma = np.sqrt(rate * (1 - rate) / kept.size)
  return abs((1 - kept.mean()) - rate) < 4.5 * sigma


@pytest.mark.parametrize("masks", ["stateful", "stateless", "bytes"])
def test_dropout_zeroes_at_rate_and_scales_the_rest(masks):
  """Each entry is dropped with probability `rate`; the others are divided
  by 1 - rate, stateless inside stateless_dropout_seed or not, with byte
  masks or uniform ones."""
  rate = 0.3
  x = np.random.default_rng(4).normal(size=[40, 50, 6]).astype(np.float32)
  with tf.Graph().as_default():
    tf.compat.v1.set_random_seed(1)
    if masks == "stateful":
      out = modeling._dropout(tf.constant(x), rate, True)
    else:
      with modeling.stateless_dropout_seed(tf.constant([5, 6]),
                                           byte_masks=masks == "bytes"):
        out = modeling._dropout(tf.constant(x), rate, True)
    with tf.compat.v1.Session() as sess:
      got = sess.run(out)
  kept = got != 0
  np.testing.assert_allclose(got[kept], x[kept] / (1 - rate), rtol=1e-6)
  assert _drop_fraction_ok(kept, rate), 1 - kept.mean()


def _byte_mask_draws(rate, shape, seeds):
  """Keep masks of `_keep_mask` with byte masks, one per seed."""
  with tf.Graph().as_default():
    x = tf.zeros(shape)
    masks = []
    for seed in seeds:
      with modeling.stateless_dropout_seed(tf.constant(seed),
                                           byte_masks=True):
        masks.append(modeling._keep_mask(x, rate))
    with tf.compat.v1.Session() as sess:
      return sess.run(masks)


def test_byte_masks_drop_with_the_uniform_draws_probability():
  """A float32 uniform u (23 random bits) drops when u < rate. The byte
  masks must drop with the same probability, which for this rate is
  1.5 / 256: 1/256 from entries whose first 8 bits decide, 0.5/256 from the
  entries their 15 extra bits decide (wrong handling of those shifts the
  count by 50 sigma). Independent: adjacent entries drop together with
  probability p^2 (one 32-bit word feeds four entries)."""
  rate = 1.5 / 256  # exactly representable: threshold 2^15 + 2^14
  p = rate
  n = 2 ** 22
  (keep,) = _byte_mask_draws(rate, [n], [[3, 4]])
  drop = ~keep
  sigma = np.sqrt(n * p * (1 - p))
  assert abs(drop.sum() - n * p) < 4.5 * sigma, (drop.sum(), n * p)
  pairs = drop[:-1] & drop[1:]
  assert abs(pairs.sum() - (n - 1) * p * p) < 4.5 * np.sqrt(n * p * p) + 1


@pytest.mark.tf_version
def test_byte_masks_are_a_function_of_the_seed():
  """The same seed gives the same mask, another seed another one."""
  first, again, other = _byte_mask_draws(0.1, [64, 300],
                                         [[1, 2], [1, 2], [1, 3]])
  np.testing.assert_array_equal(first, again)
  assert (first != other).mean() > 0.1


def _op_types(graph):
  return {op.type for op in graph.get_operations()}


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")),
                    reason="the CPU's choice")
@pytest.mark.tf_version
def test_cpu_dropout_draws_byte_masks_for_every_caller_unless_xla():
  """On the CPU a float32 dropout mask comes from bytes (its Bitcast of the
  random words) whoever builds the model: outside any seed block (the
  release-style API), in a block that leaves byte_masks to the device (the
  trainer, the estimator); not in a block that asks for float draws, nor
  where XLA compiles (its shapes must be static), and there it still runs
  and drops at the rate."""
  with tf.Graph().as_default() as outside:
    modeling._dropout(tf.ones([64, 300]), 0.1, True)
  with tf.Graph().as_default() as default_block:
    with modeling.stateless_dropout_seed(tf.constant([1, 2])):
      modeling._dropout(tf.ones([64, 300]), 0.1, True)
  with tf.Graph().as_default() as float_block:
    with modeling.stateless_dropout_seed(tf.constant([1, 2]),
                                         byte_masks=False):
      modeling._dropout(tf.ones([64, 300]), 0.1, True)
  assert "Bitcast" in _op_types(outside)
  assert "Bitcast" in _op_types(default_block)
  assert "Bitcast" not in _op_types(float_block)

  def drop(x):
    return modeling._dropout(x, 0.1, True)

  for seeded in (False, True):
    def fn(x, seeded=seeded):
      if not seeded:
        return drop(x)
      with modeling.stateless_dropout_seed(tf.constant([1, 2])):
        return drop(x)
    with tf.Graph().as_default():
      x = tf.ones([64, 300])
      jitted = tf.function(fn, jit_compile=True)
      assert "Bitcast" not in _op_types(
          jitted.get_concrete_function(x).graph)
      with tf.compat.v1.Session() as sess:
        assert _drop_fraction_ok(sess.run(jitted(x)) != 0, 0.1)


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_attention_dropout_scales_the_kept_probabilities(dtype):
  """With values that are one-hot rows (v[j] = e_j), the attention output
  is the dropped-out probability matrix itself: each entry is 0 or
  prob / (1 - dropatt), whether the scale is folded into the output
  (float32) or applied to the probabilities (bfloat16)."""
  rate, bsz, n_head, rows, klen = 0.25, 2, 3, 50, 40
  logits = np.random.default_rng(5).normal(size=[bsz, n_head, rows, klen])
  prob = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
  prob = prob.astype(np.float32)
  one_hot = np.broadcast_to(np.eye(klen, dtype=np.float32)[:, None, None],
                            [klen, bsz, n_head, klen])
  with tf.Graph().as_default():
    with modeling.stateless_dropout_seed(tf.constant([7, 8])):
      out = modeling._attend(tf.constant(prob),
                             tf.cast(tf.constant(one_hot), dtype), rate, True)
    with tf.compat.v1.Session() as sess:
      got = sess.run(tf.cast(out, tf.float32)).transpose(1, 2, 0, 3)
  kept = got != 0
  rtol = 1e-6 if dtype == tf.float32 else 2.0 ** -8
  np.testing.assert_allclose(got[kept], prob[kept] / (1 - rate), rtol=rtol)
  assert _drop_fraction_ok(kept, rate), 1 - kept.mean()


# ------------------------------------------------------------- heads


@pytest.mark.quick
@pytest.mark.tf_version
def test_sequence_summary_and_losses_match_numpy():
  rng = np.random.default_rng(2)
  qlen, bsz, d = 5, 3, SIZES["d_model"]
  hidden = rng.normal(0, 1, [qlen, bsz, d]).astype(np.float32)
  labels = np.array([0, 2, 1], np.int32)
  targets = rng.normal(0, 1, [bsz]).astype(np.float32)
  init = tf.compat.v1.initializers.random_normal(stddev=0.3)
  with tf.Graph().as_default():
    h = tf.constant(hidden)
    plain = {kind: modeling.summarize_sequence(
        kind, h, d, 2, 8, 0.0, 0.0, None, False, init, scope=kind,
        use_proj=False) for kind in ("last", "first", "mean")}
    projected = modeling.summarize_sequence("mean", h, d, 2, 8, 0.0, 0.0,
                                            None, False, init)
    attn = modeling.summarize_sequence(
        "attn", h, d, 2, 8, 0.0, 0.0,
        tf.constant(np.eye(qlen, bsz, dtype=np.float32)), False, init,
        scope="attn")
    cls_loss, cls_logits = modeling.classification_loss(
        projected, tf.constant(labels), 4, init, "cls", return_logits=True)
    reg_loss, reg_logits = modeling.regression_loss(
        projected, tf.constant(targets), init, "reg", return_logits=True)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      got = sess.run(dict(plain=plain, projected=projected, attn=attn,
                          cls=(cls_loss, cls_logits),
                          reg=(reg_loss, reg_logits)))
      params = _param_values(sess)
  np.testing.assert_allclose(got["plain"]["last"], hidden[-1], **TOL)
  np.testing.assert_allclose(got["plain"]["first"], hidden[0], **TOL)
  np.testing.assert_allclose(got["plain"]["mean"], hidden.mean(0), **TOL)
  want_proj = np.tanh(hidden.mean(0) @ params[
      "sequnece_summary/summary/kernel"] + params[
          "sequnece_summary/summary/bias"])
  np.testing.assert_allclose(got["projected"], want_proj, **TOL)
  assert got["attn"].shape == (bsz, d)
  # "attn": the learned query `summary_bias` attends over the unpadded
  # positions (standard multi-head attention, no residual), LayerNorm,
  # then the tanh projection.
  pre = "attn/"
  attn_mask = np.eye(qlen, bsz)
  q = np.einsum("h,hnd->nd", params[pre + "summary_bias"],
                params[pre + "abs_attn/q/kernel"])
  k = np.einsum("ibh,hnd->ibnd", hidden, params[pre + "abs_attn/k/kernel"])
  v = np.einsum("ibh,hnd->ibnd", hidden, params[pre + "abs_attn/v/kernel"])
  for b in range(bsz):
    vec = np.zeros([2, 8])
    for n in range(2):
      keep = attn_mask[:, b] == 0
      score = k[keep, b, n] @ q[n] / np.sqrt(8)
      prob = np.exp(score - score.max())
      vec[n] = (prob / prob.sum()) @ v[keep, b, n]
    out = np.einsum("nd,hnd->h", vec, params[pre + "abs_attn/o/kernel"])
    out = np_reference.layer_norm(out, params[pre + "abs_attn/LayerNorm/gamma"],
                                  params[pre + "abs_attn/LayerNorm/beta"])
    want = np.tanh(out @ params[pre + "summary/kernel"] +
                   params[pre + "summary/bias"])
    np.testing.assert_allclose(got["attn"][b], want, **TOL)

  logits = want_proj @ params["cls/logit/kernel"] + params["cls/logit/bias"]
  np.testing.assert_allclose(got["cls"][1], logits, **TOL)
  log_prob = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  np.testing.assert_allclose(got["cls"][0],
                             -log_prob[np.arange(bsz), labels], **TOL)
  reg = (want_proj @ params["reg/logit/kernel"] + params["reg/logit/bias"])
  np.testing.assert_allclose(got["reg"][1], reg[:, 0], **TOL)
  np.testing.assert_allclose(got["reg"][0], (reg[:, 0] - targets) ** 2,
                             **TOL)
