"""The release's public functions, called as the release's programs call
them (zihangdai/xlnet, the files cited beside each entry).

`SIGNATURES` is written by hand from the release's source: for each public
name we expose, its parameters in order and their defaults. Ours must take
the same parameters in the same order with the same defaults; parameters of
ours after them must have defaults. `DIFFERENT` lists the release's names we
deliberately do not offer with the release's signature; docs/differences.md
must name each. `RELEASE_NAMES` lists every public name of the release's
function_builder.py, model_utils.py, data_utils.py, modeling.py and
xlnet.py: each must be in one of the two, or be a constant of the
release's value. The remaining tests call the functions with the release's
arguments and check their results by hand-worked values
(tests/core/test_release_script.py runs a whole script of the release's
kind).
"""
import importlib
import inspect
import os
import types

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

import data_utils
from tests import data_helpers
import xlnet
from xlnet import modeling
from xlnet.data import prepro_utils
from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.classifier.processors import InputExample
from xlnet.training import config as train_config

pytestmark = pytest.mark.tf_version

REQUIRED = inspect.Parameter.empty
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# (the module a script imports: the release's name, or ours where the
# release's file is not kept at the root; name, [(parameter, default)]),
# the release's file:function.
SIGNATURES = [
    # data_utils.py: format_filename
    ("data_utils", "format_filename",
     [("prefix", REQUIRED), ("bsz_per_host", REQUIRED),
      ("seq_len", REQUIRED), ("bi_data", REQUIRED), ("suffix", REQUIRED),
      ("mask_alpha", 5), ("mask_beta", 1), ("reuse_len", None),
      ("uncased", False), ("fixed_num_predict", None)]),
    # data_utils.py: batchify
    ("data_utils", "batchify",
     [("data", REQUIRED), ("bsz_per_host", REQUIRED), ("sent_ids", None)]),
    # data_utils.py: get_input_fn
    ("data_utils", "get_input_fn",
     [("tfrecord_dir", REQUIRED), ("split", REQUIRED),
      ("bsz_per_host", REQUIRED), ("seq_len", REQUIRED),
      ("reuse_len", REQUIRED), ("bi_data", REQUIRED), ("num_hosts", 1),
      ("num_core_per_host", 1), ("perm_size", None), ("mask_alpha", None),
      ("mask_beta", None), ("uncased", False), ("num_passes", None),
      ("use_bfloat16", False), ("num_predict", None)]),
    # xlnet.py: XLNetConfig.__init__, create_run_config
    ("xlnet", "XLNetConfig", [("FLAGS", None), ("json_path", None)]),
    ("xlnet", "create_run_config",
     [("is_training", REQUIRED), ("is_finetune", REQUIRED),
      ("FLAGS", REQUIRED)]),
    # xlnet.py: RunConfig.__init__
    ("xlnet", "RunConfig",
     [("is_training", REQUIRED), ("use_tpu", REQUIRED),
      ("use_bfloat16", REQUIRED), ("dropout", REQUIRED),
      ("dropatt", REQUIRED), ("init", "normal"), ("init_range", 0.1),
      ("init_std", 0.02), ("mem_len", None), ("reuse_len", None),
      ("bi_data", False), ("clamp_len", -1), ("same_length", False)]),
    # xlnet.py: XLNetModel.__init__
    ("xlnet", "XLNetModel",
     [("xlnet_config", REQUIRED), ("run_config", REQUIRED),
      ("input_ids", REQUIRED), ("seg_ids", REQUIRED),
      ("input_mask", REQUIRED), ("mems", None), ("perm_mask", None),
      ("target_mapping", None), ("inp_q", None), ("**kwargs", REQUIRED)]),
    # xlnet.py: XLNetModel.get_pooled_out, get_sequence_output,
    # get_new_memory, get_embedding_table, get_initializer;
    # XLNetConfig.to_json
    ("xlnet", "XLNetModel.get_pooled_out",
     [("summary_type", REQUIRED), ("use_summ_proj", True)]),
    ("xlnet", "XLNetModel.get_sequence_output", []),
    ("xlnet", "XLNetModel.get_new_memory", []),
    ("xlnet", "XLNetModel.get_embedding_table", []),
    ("xlnet", "XLNetModel.get_initializer", []),
    ("xlnet", "XLNetConfig.to_json", [("json_path", REQUIRED)]),
    # modeling.py: gelu
    ("modeling", "gelu", [("x", REQUIRED)]),
    # modeling.py: embedding_lookup
    ("modeling", "embedding_lookup",
     [("x", REQUIRED), ("n_token", REQUIRED), ("d_embed", REQUIRED),
      ("initializer", REQUIRED), ("use_tpu", True), ("scope", "embedding"),
      ("reuse", None), ("dtype", tf.float32)]),
    # modeling.py: positional_embedding
    ("modeling", "positional_embedding",
     [("pos_seq", REQUIRED), ("inv_freq", REQUIRED), ("bsz", None)]),
    # modeling.py: positionwise_ffn
    ("modeling", "positionwise_ffn",
     [("inp", REQUIRED), ("d_model", REQUIRED), ("d_inner", REQUIRED),
      ("dropout", REQUIRED), ("kernel_initializer", REQUIRED),
      ("activation_type", "relu"), ("scope", "ff"), ("is_training", True),
      ("reuse", None)]),
    # modeling.py: head_projection
    ("modeling", "head_projection",
     [("h", REQUIRED), ("d_model", REQUIRED), ("n_head", REQUIRED),
      ("d_head", REQUIRED), ("kernel_initializer", REQUIRED),
      ("name", REQUIRED)]),
    # modeling.py: post_attention
    ("modeling", "post_attention",
     [("h", REQUIRED), ("attn_vec", REQUIRED), ("d_model", REQUIRED),
      ("n_head", REQUIRED), ("d_head", REQUIRED), ("dropout", REQUIRED),
      ("is_training", REQUIRED), ("kernel_initializer", REQUIRED),
      ("residual", True)]),
    # modeling.py: rel_attn_core
    ("modeling", "rel_attn_core",
     [("q_head", REQUIRED), ("k_head_h", REQUIRED), ("v_head_h", REQUIRED),
      ("k_head_r", REQUIRED), ("seg_embed", REQUIRED), ("seg_mat", REQUIRED),
      ("r_w_bias", REQUIRED), ("r_r_bias", REQUIRED), ("r_s_bias", REQUIRED),
      ("attn_mask", REQUIRED), ("dropatt", REQUIRED),
      ("is_training", REQUIRED), ("scale", REQUIRED)]),
    # modeling.py: rel_shift
    ("modeling", "rel_shift", [("x", REQUIRED), ("klen", -1)]),
    # modeling.py: relative_positional_encoding
    ("modeling", "relative_positional_encoding",
     [("qlen", REQUIRED), ("klen", REQUIRED), ("d_model", REQUIRED),
      ("clamp_len", REQUIRED), ("attn_type", REQUIRED), ("bi_data", REQUIRED),
      ("bsz", None), ("dtype", None)]),
    # modeling.py: multihead_attn
    ("modeling", "multihead_attn",
     [("q", REQUIRED), ("k", REQUIRED), ("v", REQUIRED),
      ("attn_mask", REQUIRED), ("d_model", REQUIRED), ("n_head", REQUIRED),
      ("d_head", REQUIRED), ("dropout", REQUIRED), ("dropatt", REQUIRED),
      ("is_training", REQUIRED), ("kernel_initializer", REQUIRED),
      ("residual", True), ("scope", "abs_attn"), ("reuse", None)]),
    # modeling.py: rel_multihead_attn
    ("modeling", "rel_multihead_attn",
     [("h", REQUIRED), ("r", REQUIRED), ("r_w_bias", REQUIRED),
      ("r_r_bias", REQUIRED), ("seg_mat", REQUIRED), ("r_s_bias", REQUIRED),
      ("seg_embed", REQUIRED), ("attn_mask", REQUIRED), ("mems", REQUIRED),
      ("d_model", REQUIRED), ("n_head", REQUIRED), ("d_head", REQUIRED),
      ("dropout", REQUIRED), ("dropatt", REQUIRED), ("is_training", REQUIRED),
      ("kernel_initializer", REQUIRED), ("scope", "rel_attn"),
      ("reuse", None)]),
    # modeling.py: two_stream_rel_attn
    ("modeling", "two_stream_rel_attn",
     [("h", REQUIRED), ("g", REQUIRED), ("r", REQUIRED), ("mems", REQUIRED),
      ("r_w_bias", REQUIRED), ("r_r_bias", REQUIRED), ("seg_mat", REQUIRED),
      ("r_s_bias", REQUIRED), ("seg_embed", REQUIRED),
      ("attn_mask_h", REQUIRED), ("attn_mask_g", REQUIRED),
      ("target_mapping", REQUIRED), ("d_model", REQUIRED),
      ("n_head", REQUIRED), ("d_head", REQUIRED), ("dropout", REQUIRED),
      ("dropatt", REQUIRED), ("is_training", REQUIRED),
      ("kernel_initializer", REQUIRED), ("scope", "rel_attn")]),
    # modeling.py: transformer_xl
    ("modeling", "transformer_xl",
     [("inp_k", REQUIRED), ("n_token", REQUIRED), ("n_layer", REQUIRED),
      ("d_model", REQUIRED), ("n_head", REQUIRED), ("d_head", REQUIRED),
      ("d_inner", REQUIRED), ("dropout", REQUIRED), ("dropatt", REQUIRED),
      ("attn_type", REQUIRED), ("bi_data", REQUIRED),
      ("initializer", REQUIRED), ("is_training", REQUIRED),
      ("mem_len", None), ("inp_q", None), ("mems", None),
      ("same_length", False), ("clamp_len", -1), ("untie_r", False),
      ("use_tpu", True), ("input_mask", None), ("perm_mask", None),
      ("seg_id", None), ("reuse_len", None), ("ff_activation", "relu"),
      ("target_mapping", None), ("use_bfloat16", False),
      ("scope", "transformer"), ("**kwargs", REQUIRED)]),
    # modeling.py: lm_loss
    ("modeling", "lm_loss",
     [("hidden", REQUIRED), ("target", REQUIRED), ("n_token", REQUIRED),
      ("d_model", REQUIRED), ("initializer", REQUIRED),
      ("lookup_table", None), ("tie_weight", False), ("bi_data", True),
      ("use_tpu", False)]),
    # modeling.py: summarize_sequence
    ("modeling", "summarize_sequence",
     [("summary_type", REQUIRED), ("hidden", REQUIRED), ("d_model", REQUIRED),
      ("n_head", REQUIRED), ("d_head", REQUIRED), ("dropout", REQUIRED),
      ("dropatt", REQUIRED), ("input_mask", REQUIRED),
      ("is_training", REQUIRED), ("initializer", REQUIRED), ("scope", None),
      ("reuse", None), ("use_proj", True)]),
    # modeling.py: classification_loss
    ("modeling", "classification_loss",
     [("hidden", REQUIRED), ("labels", REQUIRED), ("n_class", REQUIRED),
      ("initializer", REQUIRED), ("scope", REQUIRED), ("reuse", None),
      ("return_logits", False)]),
    # modeling.py: regression_loss
    ("modeling", "regression_loss",
     [("hidden", REQUIRED), ("labels", REQUIRED), ("initializer", REQUIRED),
      ("scope", REQUIRED), ("reuse", None), ("return_logits", False)]),
    # function_builder.py: construct_scalar_host_call
    ("function_builder", "construct_scalar_host_call",
     [("monitor_dict", REQUIRED), ("model_dir", REQUIRED), ("prefix", ""),
      ("reduce_fn", None)]),
    # function_builder.py: two_stream_loss, get_loss
    *[("function_builder", name,
       [("FLAGS", REQUIRED), ("features", REQUIRED), ("labels", REQUIRED),
        ("mems", REQUIRED), ("is_training", REQUIRED)])
      for name in ("two_stream_loss", "get_loss")],
    # function_builder.py: get_classification_loss
    ("function_builder", "get_classification_loss",
     [("FLAGS", REQUIRED), ("features", REQUIRED), ("n_class", REQUIRED),
      ("is_training", REQUIRED)]),
    # function_builder.py: get_regression_loss, get_qa_outputs,
    # get_race_loss
    *[("function_builder", name,
       [("FLAGS", REQUIRED), ("features", REQUIRED),
        ("is_training", REQUIRED)])
      for name in ("get_regression_loss", "get_qa_outputs", "get_race_loss")],
    # model_utils.py: configure_tpu, init_from_checkpoint, get_train_op
    ("model_utils", "configure_tpu", [("FLAGS", REQUIRED)]),
    ("model_utils", "init_from_checkpoint",
     [("FLAGS", REQUIRED), ("global_vars", False)]),
    ("model_utils", "get_train_op",
     [("FLAGS", REQUIRED), ("total_loss", REQUIRED),
      ("grads_and_vars", None)]),
    # model_utils.py: avg_checkpoints, get_assignment_map_from_checkpoint
    ("model_utils", "avg_checkpoints",
     [("model_dir", REQUIRED), ("output_model_dir", REQUIRED),
      ("last_k", REQUIRED)]),
    ("model_utils", "get_assignment_map_from_checkpoint",
     [("tvars", REQUIRED), ("init_checkpoint", REQUIRED)]),
    # prepro_utils.py: preprocess_text
    ("xlnet.data.prepro_utils", "preprocess_text",
     [("inputs", REQUIRED), ("lower", False), ("remove_space", True),
      ("keep_accents", False)]),
    # prepro_utils.py: encode_pieces
    ("xlnet.data.prepro_utils", "encode_pieces",
     [("sp_model", REQUIRED), ("text", REQUIRED), ("return_unicode", True),
      ("sample", False)]),
    # prepro_utils.py: encode_ids
    ("xlnet.data.prepro_utils", "encode_ids",
     [("sp_model", REQUIRED), ("text", REQUIRED), ("sample", False)]),
    # classifier_utils.py: InputFeatures.__init__
    ("xlnet.finetuning.classifier.features", "InputFeatures",
     [("input_ids", REQUIRED), ("input_mask", REQUIRED),
      ("segment_ids", REQUIRED), ("label_id", REQUIRED),
      ("is_real_example", True)]),
    # classifier_utils.py: convert_single_example
    ("xlnet.finetuning.classifier.features", "convert_single_example",
     [("ex_index", REQUIRED), ("example", REQUIRED), ("label_list", REQUIRED),
      ("max_seq_length", REQUIRED), ("tokenize_fn", REQUIRED)]),
]

# The release's public names offered differently on purpose (release file:
# names). docs/differences.md names each (the string checked here).
DIFFERENT = [
    # data_utils.py: create_data(_) reads FLAGS; ours takes the settings.
    "data_utils.create_data",
    # data_utils.py: steps of create_data and get_input_fn.
    "data_utils.create_tfrecords",
    "data_utils.parse_files_to_dataset",
    "data_utils.get_dataset",
    # model_utils.py: several GPUs, missing variables, the optimizer,
    # clean_ckpt(_) (which reads FLAGS).
    "model_utils.configure_tpu",
    "model_utils.init_from_checkpoint",
    "model_utils.get_assignment_map_from_checkpoint",
    "model_utils.AdamWeightDecayOptimizer",
    "model_utils.clean_ckpt",
    # modeling.py: abs_attn_core, and the attention-score layout.
    "modeling.abs_attn_core",
    "modeling.rel_shift",
    # prepro_utils.py: Python 2 helpers.
    "prepro_utils.printable_text",
    # classifier_utils.py: PaddingInputExample.
    "classifier_utils.PaddingInputExample",
    # squad_utils.py: the official SQuAD 2.0 evaluation script.
    "squad_utils",
]
# Of those, the names a script cannot import under the release's module
# name: touching one is an ImportError naming what to use instead.
NOT_OFFERED = ["data_utils.create_tfrecords",
               "data_utils.parse_files_to_dataset", "data_utils.get_dataset",
               "model_utils.AdamWeightDecayOptimizer",
               "modeling.abs_attn_core"]

# Every public name of the release's function_builder.py, model_utils.py,
# data_utils.py, modeling.py and xlnet.py (its module-level defs, classes
# and constants), by module.
RELEASE_NAMES = {
    "function_builder": [
        "construct_scalar_host_call", "two_stream_loss", "get_loss",
        "get_classification_loss", "get_regression_loss", "get_qa_outputs",
        "get_race_loss"],
    "model_utils": [
        "configure_tpu", "init_from_checkpoint", "get_train_op",
        "clean_ckpt", "avg_checkpoints",
        "get_assignment_map_from_checkpoint", "AdamWeightDecayOptimizer"],
    "data_utils": [
        "special_symbols", "VOCAB_SIZE", "UNK_ID", "CLS_ID", "SEP_ID",
        "MASK_ID", "EOD_ID", "format_filename", "create_data", "batchify",
        "create_tfrecords", "parse_files_to_dataset", "get_dataset",
        "get_input_fn"],
    "modeling": [
        "gelu", "embedding_lookup", "positional_embedding",
        "positionwise_ffn", "head_projection", "post_attention",
        "abs_attn_core", "rel_attn_core", "rel_shift",
        "relative_positional_encoding", "multihead_attn",
        "rel_multihead_attn", "two_stream_rel_attn", "transformer_xl",
        "lm_loss", "summarize_sequence", "classification_loss",
        "regression_loss"],
    "xlnet": ["XLNetConfig", "create_run_config", "RunConfig", "XLNetModel"],
}
# The release's constants (data_utils.py), their values.
RELEASE_CONSTANTS = {
    "data_utils.special_symbols": {
        "<unk>": 0, "<s>": 1, "</s>": 2, "<cls>": 3, "<sep>": 4, "<pad>": 5,
        "<mask>": 6, "<eod>": 7, "<eop>": 8},
    "data_utils.VOCAB_SIZE": 32000, "data_utils.UNK_ID": 0,
    "data_utils.CLS_ID": 3, "data_utils.SEP_ID": 4, "data_utils.MASK_ID": 6,
    "data_utils.EOD_ID": 7,
}


def _ours(module, name):
  obj = importlib.import_module(module)
  for part in name.split("."):
    obj = getattr(obj, part)
  return obj


def check_signature(obj, release):
  """Raises AssertionError unless obj takes the release's parameters."""
  params = [p for p in inspect.signature(obj).parameters.values()
            if p.name != "self"]
  named = [(n, d) for n, d in release if not n.startswith("**")]
  for i, (name, default) in enumerate(named):
    assert i < len(params), f"parameter {name} is missing"
    p = params[i]
    assert p.name == name, f"parameter {i} is {p.name}, the release's {name}"
    assert p.kind == p.POSITIONAL_OR_KEYWORD, f"{p} is not positional"
    assert p.default is default or p.default == default, (
        f"{name} defaults to {p.default!r}, the release's to {default!r}")
  extra = params[len(named):]
  for p in extra:
    assert p.default is not REQUIRED or p.kind == p.VAR_KEYWORD, (
        f"extra parameter {p.name} has no default")
  if len(named) < len(release):  # the release's **kwargs
    assert extra and extra[-1].kind == extra[-1].VAR_KEYWORD, (
        "no **kwargs")


@pytest.mark.parametrize("module,name,release", SIGNATURES,
                         ids=[f"{m}.{n}" for m, n, _ in SIGNATURES])
@pytest.mark.quick
def test_release_signature(module, name, release):
  check_signature(_ours(module, name), release)


def test_signature_check_can_fail():
  def moved(data, sent_ids, bsz_per_host):
    del data, sent_ids, bsz_per_host

  def no_default(x, klen):
    del x, klen

  def required_extra(x, klen=-1, more=None, *, seed):
    del x, klen, more, seed

  for fn, release in [(moved, SIGNATURES[1][2]),
                      (no_default, [("x", REQUIRED), ("klen", -1)]),
                      (required_extra, [("x", REQUIRED), ("klen", -1)])]:
    with pytest.raises(AssertionError):
      check_signature(fn, release)


@pytest.mark.parametrize("name", DIFFERENT)
def test_differences_are_documented(name):
  with open(os.path.join(REPO_ROOT, "docs", "differences.md")) as f:
    text = f.read()
  assert f"`{name}" in text, f"docs/differences.md does not name {name}"


_RELEASE_ROWS = [(m, n) for m, names in RELEASE_NAMES.items() for n in names]


@pytest.mark.parametrize("module,name", _RELEASE_ROWS,
                         ids=[f"{m}.{n}" for m, n in _RELEASE_ROWS])
@pytest.mark.quick
def test_every_release_name_is_offered_or_replaced(module, name):
  """Under the release's module name, each public name of the release is
  there with the release's arguments (SIGNATURES), or is one of its
  constants (by value), or is a documented difference; one not offered
  says in one line what to use instead."""
  qualified = f"{module}.{name}"
  if qualified in NOT_OFFERED:
    with pytest.raises(ImportError, match=(
        rf"^{qualified} \(the release's\) is not offered here: use \S.* "
        r"\(docs/differences.md\)$")):
      getattr(importlib.import_module(module), name)
    return
  found = getattr(importlib.import_module(module), name)
  if qualified in RELEASE_CONSTANTS:
    assert found == RELEASE_CONSTANTS[qualified]
    return
  assert (module, name) in [(m, n) for m, n, _ in SIGNATURES] or (
      qualified in DIFFERENT), f"{qualified}: neither in SIGNATURES nor " \
                               "in DIFFERENT"


def test_not_offered_names_are_no_attributes():
  """A name not offered is left out of dir() (tools that walk a module's
  names do not meet its error); an unknown name stays an AttributeError."""
  for qualified in NOT_OFFERED:
    module, name = qualified.split(".")
    assert name not in dir(importlib.import_module(module))
  with pytest.raises(AttributeError, match="has no attribute 'nonesuch'"):
    getattr(importlib.import_module("model_utils"), "nonesuch")


# ---- called as the release's programs call them -----------------------------


def test_get_input_fn_as_train_gpu(tmp_path):
  """train_gpu.py (the release): get_input_fn(...) by keyword, no seed."""
  record_dir = data_helpers.make_records(
      str(tmp_path), num_lines=200, bsz_per_host=4, num_core_per_host=1,
      seq_len=32, reuse_len=16, bi_data=True, num_predict=6)
  flags = types.SimpleNamespace(
      record_info_dir=record_dir, train_batch_size=4, seq_len=32,
      reuse_len=16, bi_data=True, perm_size=16, mask_alpha=6, mask_beta=1,
      uncased=False, num_passes=None, use_bfloat16=False, num_predict=6)
  train_input_fn, record_info_dict = data_utils.get_input_fn(
      tfrecord_dir=flags.record_info_dir, split="train",
      bsz_per_host=flags.train_batch_size, seq_len=flags.seq_len,
      reuse_len=flags.reuse_len, bi_data=flags.bi_data, num_hosts=1,
      num_core_per_host=1, perm_size=flags.perm_size,
      mask_alpha=flags.mask_alpha, mask_beta=flags.mask_beta,
      uncased=flags.uncased, num_passes=flags.num_passes,
      use_bfloat16=flags.use_bfloat16, num_predict=flags.num_predict)
  assert record_info_dict["num_batch"] > 0
  batch, = data_helpers.take_batches(train_input_fn, 1, batch_size=4)
  shapes = {k: v.shape for k, v in batch.items()}
  assert shapes == {"input_k": (4, 32), "seg_id": (4, 32),
                    "input_q": (4, 32), "perm_mask": (4, 32, 32),
                    "target_mapping": (4, 6, 32), "target": (4, 6),
                    "target_mask": (4, 6), "label": (4,)}
  # The stream of our programs' default --seed, and only that one.
  same = positional_seed_stream(record_dir,
                                train_config.TrainConfig().seed)
  other = positional_seed_stream(record_dir,
                                 train_config.TrainConfig().seed + 1)
  assert np.array_equal(batch["perm_mask"], same["perm_mask"])
  assert not np.array_equal(batch["perm_mask"], other["perm_mask"])


def positional_seed_stream(record_dir, seed):
  """The first batch of the same records read with an explicit seed."""
  fn, _ = data_utils.get_input_fn(record_dir, "train", 4, 32, 16, True, 1, 1,
                                  16, 6, 1, False, None, False, 6, seed=seed)
  return data_helpers.take_batches(fn, 1, batch_size=4)[0]


def test_batchify_as_create_data():
  """data_utils.py (the release): batchify(data, bsz_per_host, sent_ids)."""
  data = np.arange(11, dtype=np.int32)
  sent_ids = np.arange(11) % 2 == 0
  rows, sent_rows = data_utils.batchify(data, 3, sent_ids)
  assert rows.tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
  assert sent_rows.tolist() == [[True, False, True], [False, True, False],
                                [True, False, True]]
  assert data_utils.batchify(data, 2).tolist() == [[0, 1, 2, 3, 4],
                                                   [5, 6, 7, 8, 9]]


def test_format_filename_as_get_input_fn():
  """data_utils.py (the release): format_filename by keyword."""
  name = data_utils.format_filename(
      prefix="record_info-train-*", bsz_per_host=4, seq_len=32, bi_data=True,
      suffix="json", mask_alpha=6, mask_beta=1, reuse_len=16, uncased=False,
      fixed_num_predict=6)
  assert name == "record_info-train-*.bsz-4.seqlen-32.reuse-16.bi.alpha-6." \
                 "beta-1.fnp-6.json"


@pytest.mark.quick
def test_rel_shift_positional():
  """modeling.py (the release): rel_shift(x, klen); here on the score layout
  [bsz, n_head, qlen, rlen] (docs/model.md). Column r of row i is the
  relative distance klen - r; afterwards [i, j] holds distance i - j."""
  x = tf.constant([[[[0., 1., 2., 3.], [10., 11., 12., 13.]]]])
  with tf.compat.v1.Session() as sess:
    out = sess.run(modeling.rel_shift(x, 2))
  assert out[0, 0].tolist() == [[2., 3.], [11., 12.]]


@pytest.mark.quick
def test_two_stream_rel_attn_positional():
  """modeling.py (the release): two_stream_rel_attn with every argument
  positional. With the query stream equal to the content stream, no
  target_mapping and no masks, both streams attend alike."""
  qlen, bsz, n_head, d_head, d_model = 3, 2, 2, 4, 8
  rng = np.random.RandomState(0)
  h = tf.constant(rng.randn(qlen, bsz, d_model), tf.float32)
  r = tf.constant(rng.randn(2 * qlen, bsz, d_model), tf.float32)
  bias = lambda: tf.constant(rng.randn(n_head, d_head), tf.float32)  # noqa
  init = tf.compat.v1.initializers.random_normal(stddev=0.5, seed=1)
  out_h, out_g = modeling.two_stream_rel_attn(
      h, h, r, None, bias(), bias(), None, None, None, None, None, None,
      d_model, n_head, d_head, 0.0, 0.0, False, init, "rel_attn")
  with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    out_h, out_g, h = sess.run([out_h, out_g, h])
  assert out_h.shape == out_g.shape == (qlen, bsz, d_model)
  np.testing.assert_allclose(out_g, out_h, rtol=1e-5, atol=1e-5)
  assert not np.allclose(out_h, h, atol=1e-2)  # it attended


def test_preprocess_text_as_run_squad():
  """prepro_utils.py (the release): preprocess_text(text, lower=...):
  spaces collapsed, `` and '' made ", accents stripped, lower-cased."""
  text = "  Caf\u00e9   ``Quoted''  TEXT "
  assert prepro_utils.preprocess_text(text, lower=True) == 'cafe "quoted" text'
  assert prepro_utils.preprocess_text(text, False, True, True) == \
      'Caf\u00e9 "Quoted" TEXT'


def test_encode_as_run_squad(tiny_spm):
  """prepro_utils.py (the release): encode_ids / encode_pieces(sp_model,
  text, return_unicode=..., sample=...), positional: the ids are the
  pieces', and a piece ending in a digit and a comma is split before the
  comma (the release's rule)."""
  sp = spm.SentencePieceProcessor()
  sp.Load(tiny_spm)
  text = prepro_utils.preprocess_text("In 1988, 20,000 men came.", False)
  pieces = prepro_utils.encode_pieces(sp, text, True, False)
  ids = prepro_utils.encode_ids(sp, text, False)
  assert ids == [sp.PieceToId(p) for p in pieces]
  assert "".join(pieces).replace("\u2581", " ").strip() == text
  assert pieces.count(",") == 2
  assert not [p for p in pieces if len(p) > 1 and p.endswith(",")
              and p[-2].isdigit()]


def test_convert_single_example_as_run_classifier():
  """classifier_utils.py (the release): convert_single_example(ex_index,
  example, label_list, max_seq_length, tokenize_fn). The release's layout:
  A <sep> B <sep> <cls>, padded in front; <sep>=4, <cls>=3; segments A=0,
  B=1, <cls>=2, padding=4; input_mask 1 on padding."""
  example = InputExample(guid="dev-0", text_a="5 6 7", text_b="8 9",
                         label="b")
  tokenize_fn = lambda text: [int(t) for t in text.split()]  # noqa: E731
  feature = classifier_features.convert_single_example(0, example, ["a", "b"],
                                                       10, tokenize_fn)
  assert feature.input_ids == [0, 0, 5, 6, 7, 4, 8, 9, 4, 3]
  assert feature.segment_ids == [4, 4, 0, 0, 0, 0, 1, 1, 1, 2]
  assert feature.input_mask == [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
  assert feature.label_id == 1 and feature.is_real_example


def test_xlnet_model_as_release_scripts():
  """xlnet.py (the release): RunConfig positional, XLNetModel by keyword,
  get_pooled_out / get_sequence_output / get_new_memory."""
  config = xlnet.XLNetConfig(n_layer=2, d_model=8, n_head=2, d_head=4,
                             d_inner=16, ff_activation="gelu", untie_r=True,
                             n_token=32)
  run = xlnet.RunConfig(False, False, False, 0.1, 0.1, "normal", 0.1, 0.02,
                        4)
  seq_len, bsz = 5, 3
  ids = tf.constant(np.arange(seq_len * bsz).reshape(seq_len, bsz) % 32,
                    tf.int32)
  model = xlnet.XLNetModel(
      xlnet_config=config, run_config=run, input_ids=ids,
      seg_ids=tf.zeros([seq_len, bsz], tf.int32),
      input_mask=tf.zeros([seq_len, bsz], tf.float32))
  pooled = model.get_pooled_out("last", True)
  fetches = [pooled, model.get_sequence_output(), model.get_new_memory(),
             model.get_embedding_table(), ids]
  with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    pooled, seq, mems, table, ids = sess.run(fetches)
  assert seq.shape == (seq_len, bsz, 8) and pooled.shape == (bsz, 8)
  assert np.all(np.abs(pooled) < 1)  # the summary's tanh projection
  # The memory of layer 0 is its input: the last mem_len word embeddings.
  assert len(mems) == 2 and all(m.shape == (4, bsz, 8) for m in mems)
  np.testing.assert_allclose(mems[0], table[ids[-4:]], rtol=1e-6)
