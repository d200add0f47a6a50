"""convert_checkpoint.py without PyTorch: the HF directory it writes, the
round trips TF -> HF -> TF and HF -> TF -> HF (bit for bit), the SavedModel
and the one-line refusals of bad input (nothing half-written).

The random checkpoints (and the SavedModels of the heads) are built once
per test run and shared read-only (interop_fixtures.shared_checkpoint,
shared_saved_model); a test that writes beside a checkpoint works on a
copy. The checkpoint formats and the SavedModel depend on the TensorFlow
version: a few representative tests are marked `tf_version` (so the
reference environment runs them on TensorFlow 2.15 as well)."""
import json
import os

import numpy as np
import pytest
from safetensors import numpy as safetensors_numpy
import tensorflow as tf

from tests import in_process
from tests.interop import interop_fixtures as fx
from xlnet.interop import hf_export
from xlnet.interop import hf_import
from xlnet.interop import saved_model
from xlnet.training import checkpoint_io


_task = fx.task_of
# A test of every TensorFlow (the reference environment runs it too).
VERSIONED = pytest.mark.tf_version


def _read(prefix):
  return checkpoint_io.read_tensors(prefix)


# The LM and SQuAD's head stand for the checkpoint reading and writing of
# every TensorFlow (the quick tier too).
@pytest.mark.parametrize("kind,untie_r", [
    pytest.param("lm", True, marks=[VERSIONED, pytest.mark.quick]),
    ("lm", False), ("classification", True), ("regression", False),
    ("race", True), ("tagging", False),
    pytest.param("squad", True, marks=[VERSIONED, pytest.mark.quick])])
def test_tf_hf_tf_and_hf_tf_hf_are_bit_identical(tmp_path, kind, untie_r):
  prefix, _, config, values = fx.shared_checkpoint(kind, untie_r=untie_r)
  hf1, tf_dir, hf2 = (str(tmp_path / n) for n in ("hf1", "tf", "hf2"))
  arch = hf_export.export_hf(prefix, config, fx.SPIECE, hf1, _task(kind))
  assert arch == {"lm": "XLNetLMHeadModel",
                  "classification": "XLNetForSequenceClassification",
                  "regression": "XLNetForSequenceClassification",
                  "race": "XLNetForMultipleChoice",
                  "squad": "XLNetForQuestionAnswering",
                  "tagging": "XLNetForTokenClassification"}[kind]
  back = _read(hf_import.import_hf(hf1, tf_dir))
  assert sorted(back) == sorted(values)
  for name, value in values.items():
    assert back[name].dtype == value.dtype and back[name].tobytes() == (
        value.tobytes()), name
  with open(os.path.join(tf_dir, "xlnet_config.json")) as f:
    assert json.load(f) == config.to_dict()
  hf_export.export_hf(os.path.join(tf_dir, "model.ckpt"), config,
                      os.path.join(tf_dir, "spiece.model"), hf2)
  for name in ("config.json", "spiece.model", "tokenizer_config.json"):
    with open(os.path.join(hf1, name), "rb") as a, open(
        os.path.join(hf2, name), "rb") as b:
      assert a.read() == b.read(), name
  first = safetensors_numpy.load_file(os.path.join(hf1, "model.safetensors"))
  second = safetensors_numpy.load_file(os.path.join(hf2, "model.safetensors"))
  assert sorted(first) == sorted(second)
  for name, value in first.items():
    assert second[name].tobytes() == value.tobytes(), name


# The quick tier's check of the name map: a round trip survives any
# mapping applied the same way both ways (two kernels swapped), these
# hand-written names do not.
@VERSIONED
@pytest.mark.quick
def test_export_layout(tmp_path):
  """Hand-checked names and layouts: the attention kernels keep their
  (d_model, n_head, d_head) layout under HF's names, a dense kernel is
  transposed, a shared relative bias is copied into every layer, the LM
  softmax is tied (not stored), the config names HF's tanh GELU and the
  vocabulary's ids."""
  prefix, _, config, values = fx.shared_checkpoint("lm", untie_r=False)
  out = str(tmp_path / "hf")
  hf_export.export_hf(prefix, config, fx.SPIECE, out)
  tensors = safetensors_numpy.load_file(os.path.join(out, "model.safetensors"))
  for i in range(2):
    for name in "qkvro":
      want = values[f"model/transformer/layer_{i}/rel_attn/{name}/kernel"]
      assert want.shape == (8, 2, 4)
      assert np.array_equal(
          tensors[f"transformer.layer.{i}.rel_attn.{name}"], want), (i, name)
  kernel = values["model/transformer/layer_1/ff/layer_1/kernel"]
  assert kernel.shape == (8, 16)
  assert np.array_equal(tensors["transformer.layer.1.ff.layer_1.weight"],
                        kernel.T)
  for i in range(2):
    assert np.array_equal(tensors[f"transformer.layer.{i}.rel_attn.r_w_bias"],
                          values["model/transformer/r_w_bias"])
    assert np.array_equal(
        tensors[f"transformer.layer.{i}.rel_attn.seg_embed"],
        values["model/transformer/seg_embed"][i])
  assert "lm_loss.weight" not in tensors and "lm_loss.bias" in tensors
  with open(os.path.join(out, "config.json")) as f:
    hf = json.load(f)
  assert (hf["model_type"], hf["ff_activation"], hf["d_head"]) == (
      "xlnet", "gelu_new", 4)
  assert (hf["pad_token_id"], hf["bos_token_id"], hf["eos_token_id"]) == (
      5, 1, 2)
  assert sorted(os.listdir(out)) == [
      "config.json", "model.safetensors", "special_tokens_map.json",
      "spiece.model", "tokenizer.json", "tokenizer_config.json"]


def _task_record(directory, **record):
  with open(os.path.join(directory, "task.json"), "w") as f:
    json.dump(dict({"kind": "classifier", "task_name": fx.TASK,
                    "cls_scope": None}, **record), f)


def test_label_names_travel_from_the_task_record(tmp_path):
  """config.json's id2label/label2id are the label_list fine-tuning
  recorded in task.json (for this head only); a record whose labels do not
  fit the head is one line; without a record, HF's LABEL_i."""
  prefix = fx.copied_checkpoint(str(tmp_path / "ckpt"), "classification")[0]
  config = fx.shared_checkpoint("classification")[2]

  def exported(name, task=fx.TASK):
    out = str(tmp_path / name)
    hf_export.export_hf(prefix, config, fx.SPIECE, out, task)
    with open(os.path.join(out, "config.json")) as f:
      hf = json.load(f)
    return hf["id2label"], hf["label2id"]

  assert exported("plain") == ({"0": "LABEL_0", "1": "LABEL_1",
                                "2": "LABEL_2"},
                               {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2})
  _task_record(os.path.dirname(prefix),
               label_list=["contradiction", "entailment", "neutral"])
  assert exported("named") == (
      {"0": "contradiction", "1": "entailment", "2": "neutral"},
      {"contradiction": 0, "entailment": 1, "neutral": 2})
  _task_record(os.path.dirname(prefix), task_name="other",
               label_list=["a", "b"])
  assert exported("other")[0]["1"] == "LABEL_1"  # another head's record
  _task_record(os.path.dirname(prefix), label_list=["neg", "pos"])
  _refused(hf_export.export_hf, prefix, config, fx.SPIECE,
           output=str(tmp_path / "bad"), task_name=fx.TASK,
           match=r'task.json: label_list \["neg", "pos"\] is not 3 distinct '
           "names, one per class of the checkpoint's classification_sts-b "
           "head")


def test_tag_names_travel_both_ways(tmp_path):
  """A tagger's task.json names its tags in config.json's id2label (in the
  head's order); the import writes them back into a task.json, which the
  next export reads."""
  prefix, _, config, _ = fx.copied_checkpoint(str(tmp_path / "ckpt"),
                                              "tagging")
  tags = ["B-PER", "I-PER", "O"]
  with open(os.path.join(os.path.dirname(prefix), "task.json"), "w") as f:
    json.dump({"kind": "tagging", "label_list": tags, "tag_scheme": "iob2"},
              f)
  out, tf_dir = str(tmp_path / "hf"), str(tmp_path / "tf")
  hf_export.export_hf(prefix, config, fx.SPIECE, out)
  with open(os.path.join(out, "config.json")) as f:
    hf = json.load(f)
  assert hf["architectures"] == ["XLNetForTokenClassification"]
  assert hf["id2label"] == {"0": "B-PER", "1": "I-PER", "2": "O"}
  assert hf["label2id"] == {"B-PER": 0, "I-PER": 1, "O": 2}
  hf_import.import_hf(out, tf_dir)
  with open(os.path.join(tf_dir, "task.json")) as f:
    assert json.load(f) == {"kind": "tagging", "label_list": tags}
  again = str(tmp_path / "again")
  hf_export.export_hf(os.path.join(tf_dir, "model.ckpt"), config,
                      fx.SPIECE, again)
  with open(os.path.join(again, "config.json")) as f:
    assert json.load(f) == hf


# SQuAD's head (the most outputs: the beam) stands for the SavedModel's
# serving signature on every TensorFlow.
@pytest.mark.eager
@pytest.mark.parametrize("kind", [
    "classification", "regression", "race",
    pytest.param("squad", marks=VERSIONED), "lm", "tagging"])
def test_saved_model_equals_the_heads_predictions(kind):
  """The SavedModel's serving signature (batch 2, then batch 1 and another
  length: both free) gives what the programs' graph builders give on the
  same features."""
  out, prefix, config, _ = fx.shared_saved_model(kind)
  serve = tf.saved_model.load(out).signatures["serving_default"]
  for bsz, seq_len in ((2, 7), (1, 9)):
    feats = fx.features(kind, bsz=bsz, seq_len=seq_len)
    ours = fx.run_ours(prefix, lambda f=feats: fx.build(kind, config, f))
    got = serve(**{k: tf.constant(v) for k, v in feats.items()})
    if kind == "lm":
      ours = {"sequence_output": ours["hidden"], "lm_logits": ours["logits"]}
    for name, value in ours.items():
      np.testing.assert_allclose(got[name].numpy(), value, atol=1e-5,
                                 err_msg=name)


def numpy_masked_lm(values, config, feats, perm_mask, target_mapping):
  """The LM logits [B, P, n_token] of the two-stream model at the target
  positions, by tests/np_reference.py (a literal NumPy forward pass)."""
  from tests import np_reference  # pylint: disable=g-import-not-at-top
  c = config.to_dict()
  output, _ = np_reference.forward(
      values, c["n_layer"], c["d_model"], c["n_head"], c["d_head"],
      c["d_inner"], c["ff_activation"], c["untie_r"],
      inp_k=feats["input_ids"].T, inp_q=target_mapping.sum(1).T,
      seg_id=feats["segment_ids"].T, input_mask=feats["input_mask"].T,
      perm_mask=perm_mask.transpose(1, 2, 0),
      target_mapping=target_mapping.transpose(1, 2, 0))
  table = values["model/transformer/word_embedding/lookup_table"]
  logits = output @ table.T + values["model/lm_loss/bias"]  # [P, B, V]
  return logits.transpose(1, 0, 2)


@VERSIONED
@pytest.mark.eager
def test_saved_model_masked_lm_predicts_hidden_words():
  """A pretrained backbone's `masked_lm` signature computes the query
  stream's LM logits at `target_mapping`'s positions under `perm_mask`, as
  the literal NumPy model does (batch and lengths free); the hidden words
  themselves do not move them, a visible word does."""
  out, _, config, values = fx.shared_saved_model("lm")
  loaded = tf.saved_model.load(out)
  assert sorted(loaded.signatures) == ["masked_lm", "serving_default"]
  masked = loaded.signatures["masked_lm"]
  for bsz, seq_len, hidden in ((2, 7, [2, 4]), (1, 9, [6])):
    feats = fx.features("lm", bsz=bsz, seq_len=seq_len, seed=seq_len)
    perm_mask, target_mapping = fx.masked_inputs(feats, hidden)

    def run(f):
      got = masked(**{k: tf.constant(v) for k, v in f.items()},
                   perm_mask=tf.constant(perm_mask),
                   target_mapping=tf.constant(target_mapping))
      assert got["query_output"].shape == (bsz, len(hidden), 8)
      return got["lm_logits"].numpy()

    got = run(feats)
    expected = numpy_masked_lm(values, config, feats, perm_mask,
                               target_mapping)
    assert got.shape == (bsz, len(hidden), fx.CONFIG["n_token"])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    other = dict(feats, input_ids=feats["input_ids"].copy())
    other["input_ids"][:, hidden] = 7  # other hidden words: same logits
    np.testing.assert_allclose(run(other), got, atol=1e-5)
    other["input_ids"][:, 3] = 8  # another visible word: other logits
    assert np.max(np.abs(run(other) - got)) > 1e-3


def test_saved_model_of_a_fine_tuned_backbone_has_no_masked_lm(tmp_path):
  """Without mask_emb (fine-tuning does not train it) there is no query
  stream to serve: the SavedModel has serving_default only."""
  _, _, config, values = fx.shared_checkpoint("lm")
  values = dict(values)
  del values["model/transformer/mask_emb/mask_emb"]
  bare = checkpoint_io.write_checkpoint(str(tmp_path / "bare" / "model.ckpt"),
                                        values)
  out = str(tmp_path / "serving")
  saved_model.export_saved_model(bare, config, out)
  with tf.Graph().as_default():
    meta = tf.compat.v1.saved_model.load(
        tf.compat.v1.Session(), [tf.saved_model.SERVING], out)
  assert sorted(meta.signature_def) == ["serving_default"]


def _record_head(prefix, summary_type, use_summ_proj=True):
  """head.json beside `prefix`, as a fine-tuning run writes it
  (docs/interop.md)."""
  with open(os.path.join(os.path.dirname(prefix), "head.json"), "w") as f:
    json.dump({"summary_type": summary_type,
               "use_summ_proj": use_summ_proj}, f)


@pytest.mark.eager
@pytest.mark.parametrize("kind,summary", [
    ("classification", ("mean", True)), ("regression", ("first", False)),
    ("race", ("mean", False)), ("classification", ("attn", True))])
def test_saved_model_pools_as_the_head_was_fine_tuned(tmp_path, kind,
                                                      summary):
  """The summary type comes from the head.json fine-tuning wrote beside
  the checkpoint, the projection from the checkpoint's variables: the
  SavedModel gives the graph builders' outputs with that summary, not
  those of the default "last" with a projection."""
  prefix, _, config, _ = fx.copied_checkpoint(tmp_path / "ckpt", kind,
                                              summary=summary)
  _record_head(prefix, *summary)
  out = str(tmp_path / "serving")
  saved_model.export_saved_model(prefix, config, out, _task(kind))
  serve = tf.saved_model.load(out).signatures["serving_default"]
  feats = fx.features(kind)
  ours = fx.run_ours(prefix, lambda: fx.build(kind, config, feats, summary))
  got = serve(**{k: tf.constant(v) for k, v in feats.items()})["logits"]
  np.testing.assert_allclose(got.numpy(), ours["logits"], atol=1e-5)
  with tf.Graph().as_default():  # what "last" would have given
    last = fx.build(kind, config, feats)["logits"]
    names = {v.op.name for v in tf.compat.v1.global_variables()}
    if names <= set(dict(tf.train.list_variables(prefix))):
      with tf.compat.v1.Session() as sess:
        tf.compat.v1.train.Saver().restore(sess, prefix)
        assert np.max(np.abs(sess.run(last) - ours["logits"])) > 1e-3


def test_summary_type_from_the_record_the_flag_or_the_variables(tmp_path):
  """HF's config.json says how the head pools; a --summary_type that
  contradicts head.json or the checkpoint's variables is one line, and an
  'attn' summary (which HF lacks) is refused for HF."""
  prefix, _, config, _ = fx.copied_checkpoint(
      tmp_path / "mean", "classification", summary=("mean", True))

  def hf_summary(out, **kwargs):
    hf_export.export_hf(prefix, config, fx.SPIECE, str(tmp_path / out),
                        fx.TASK, **kwargs)
    with open(tmp_path / out / "config.json") as f:
      hf = json.load(f)
    return hf["summary_type"], hf["summary_use_proj"]

  assert hf_summary("no_record") == ("last", True)  # nothing says otherwise
  assert hf_summary("flag", summary_type="mean") == ("mean", True)
  _record_head(prefix, "mean")
  assert hf_summary("recorded") == ("mean", True)
  out = str(tmp_path / "out")
  _refused(hf_export.export_hf, prefix, config, fx.SPIECE, output=out,
           task_name=fx.TASK, summary_type="last",
           match=r"^--summary_type=last but .*head.json records "
           "summary_type=mean, the one the head was fine-tuned with$")

  attn, _, config, _ = fx.shared_checkpoint("classification",
                                            summary=("attn", True))
  _refused(saved_model.export_saved_model, attn, config, output=out,
           match=r"summary_type=last but the checkpoint holds the 'attn' "
           r"summary's model/sequnece_summary/summary_bias; pass "
           r"--summary_type=attn$")
  _refused(hf_export.export_hf, attn, config, fx.SPIECE, output=out,
           summary_type="attn", match="HF's XLNet has no 'attn' sequence "
           "summary .* export this head with --to=saved_model$")
  _refused(saved_model.export_saved_model, prefix, config, output=out,
           summary_type="attn", match=r"^--summary_type=attn but ")
  os.remove(os.path.join(os.path.dirname(prefix), "head.json"))
  _refused(saved_model.export_saved_model, prefix, config, output=out,
           summary_type="attn", match="summary_type=attn but the checkpoint "
           "lacks the 'attn' summary's model/sequnece_summary/summary_bias$")


def test_hf_import_records_how_the_head_pools(tmp_path):
  """An HF classifier pooling by "mean" comes back as a checkpoint whose
  head.json says so, and goes to HF again as "mean"; HF's "cls_index" is
  our "last"; a summary we lack is one line."""
  prefix, _, config, _ = fx.copied_checkpoint(
      tmp_path / "ckpt", "classification", summary=("mean", True))
  _record_head(prefix, "mean")
  hf_dir = str(tmp_path / "hf")
  hf_export.export_hf(prefix, config, fx.SPIECE, hf_dir, fx.TASK)
  back = hf_import.import_hf(hf_dir, str(tmp_path / "back"))
  with open(os.path.join(os.path.dirname(back), "head.json")) as f:
    assert json.load(f) == {"summary_type": "mean", "use_summ_proj": True}
  again = str(tmp_path / "again")
  hf_export.export_hf(back, config, fx.SPIECE, again, fx.TASK)
  with open(os.path.join(again, "config.json")) as f:
    assert json.load(f)["summary_type"] == "mean"

  config_path = os.path.join(hf_dir, "config.json")
  with open(config_path) as f:
    hf = json.load(f)
  for summary_type, expected in (("cls_index", "last"), ("first", "first")):
    with open(config_path, "w") as f:
      json.dump(dict(hf, summary_type=summary_type), f)
    out = hf_import.import_hf(hf_dir, str(tmp_path / summary_type))
    with open(os.path.join(os.path.dirname(out), "head.json")) as f:
      assert json.load(f)["summary_type"] == expected
  with open(config_path, "w") as f:
    json.dump(dict(hf, summary_type="attn"), f)
  _refused(hf_import.import_hf, hf_dir, output=str(tmp_path / "out"),
           match="summary_type 'attn' has no equivalent here")


def _program(*args):
  """convert_checkpoint.py's command line, run in this process (its runs
  in a process of their own: test_convert_faults.py)."""
  proc = in_process.run_program("convert_checkpoint.py", *args)
  return proc.returncode, proc.stderr.strip().splitlines()


def test_program_round_trip_and_bad_input_one_line(tmp_path):
  prefix, config_path, _, values = fx.shared_checkpoint("squad")
  hf_dir, tf_dir = str(tmp_path / "hf"), str(tmp_path / "tf")
  code, _ = _program("--to=hf", f"--checkpoint={os.path.dirname(prefix)}",
                     f"--model_config_path={config_path}",
                     f"--spiece_model_file={fx.SPIECE}",
                     f"--output_dir={hf_dir}")
  assert code == 0
  code, _ = _program("--to=tf", f"--checkpoint={hf_dir}",
                     f"--output_dir={tf_dir}")
  assert code == 0
  back = _read(os.path.join(tf_dir, "model.ckpt"))
  assert all(back[n].tobytes() == v.tobytes() for n, v in values.items())
  code, err = _program("--to=tf", f"--checkpoint={hf_dir}",
                       f"--output_dir={tf_dir}")
  assert code == 2 and "Traceback" not in "\n".join(err), err
  assert err[-1].startswith("convert_checkpoint.py: error: --output_dir="), err
  assert err[-1].endswith("exists and is not an empty directory; choose a "
                          "new one (nothing is overwritten)"), err


def _refused(fn, *args, match, output, **kwargs):
  """`fn` raises one line matching `match` and leaves no `output` and no
  temporary directory beside it."""
  with pytest.raises(ValueError, match=match) as info:
    fn(*args, output, **kwargs)
  assert "\n" not in str(info.value)
  parent = os.path.dirname(output)
  assert not [n for n in os.listdir(parent)
              if n.startswith(os.path.basename(output))]


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
  prefix, _, config, _ = fx.shared_checkpoint("classification")
  out = str(tmp_path / "out")
  _refused(hf_export.export_hf, prefix, config, fx.SPIECE, output=out,
           task_name="mnli", match="--task_name=mnli: the checkpoint has no "
           "classification_mnli or regression_mnli head")
  _refused(hf_export.export_hf, prefix, config, fx.SPIECE, output=out,
           task_name=fx.TASK, is_regression=True,
           match="no regression_sts-b head")
  _, odd = fx.write_config(str(tmp_path / "odd"), d_head=3)
  _refused(hf_export.export_hf, prefix, odd, fx.SPIECE, output=out,
           match=r"d_head \* n_head == d_model, got d_head=3")
  _refused(saved_model.export_saved_model, prefix, odd, output=out,
           match="has shape")

  hf_dir = str(tmp_path / "hf")
  hf_export.export_hf(prefix, config, fx.SPIECE, hf_dir, fx.TASK)
  bert = str(tmp_path / "bert")
  os.makedirs(bert)
  with open(os.path.join(bert, "config.json"), "w") as f:
    json.dump({"model_type": "bert"}, f)
  _refused(hf_import.import_hf, bert, output=out,
           match="model_type is 'bert', expected 'xlnet'")
  _refused(hf_import.import_hf, str(tmp_path / "nowhere"), output=out,
           match="no config.json")
  with open(os.path.join(bert, "config.json"), "w") as f:
    json.dump({"model_type": "xlnet", "d_model": 8}, f)
  _refused(hf_import.import_hf, bert, output=out,
           match=r"lacks \['vocab_size', 'n_layer', 'n_head', 'd_inner'\]")
  os.remove(os.path.join(hf_dir, "model.safetensors"))
  _refused(hf_import.import_hf, hf_dir, output=out,
           match="no model.safetensors")

  os.makedirs(out)
  with open(os.path.join(out, "keep.txt"), "w") as f:
    f.write("mine")
  with pytest.raises(ValueError, match="exists and is not an empty"):
    hf_export.export_hf(prefix, config, fx.SPIECE, out, fx.TASK)
  assert os.listdir(out) == ["keep.txt"]


@pytest.mark.slow
@pytest.mark.eager
def test_saved_model_equals_run_classifier_predictions(tmp_path):
  """run_classifier.py fine-tunes a tiny random model and labels SST-2's dev
  set (--do_predict; its command line run in this process); the
  SavedModel of its checkpoint gives the logits of {task}.logits.json on
  the same feature records."""
  from tests import classifier_fixtures  # pylint: disable=g-import-not-at-top
  from tests.finetuning import test_python_api  # pylint: disable=g-import-not-at-top
  from xlnet.finetuning.classifier import features as classifier_features  # pylint: disable=g-import-not-at-top
  from xlnet import model as model_lib  # pylint: disable=g-import-not-at-top
  config = dict(classifier_fixtures.TINY_CONFIG, n_token=1000)
  classifier_fixtures.write_config(str(tmp_path / "pretrained"), config)
  classifier_fixtures.write_checkpoint(
      str(tmp_path / "pretrained" / "model.ckpt-100"),
      classifier_fixtures.random_values(
          classifier_fixtures.pretrained_shapes(config)))
  test_python_api.write_task(str(tmp_path))
  config_path = str(tmp_path / "pretrained" / "xlnet_config.json")
  proc = in_process.run_program(
      "run_classifier.py", "--task_name=sst-2", "--data_dir=glue/SST-2",
      "--output_dir=records", "--spiece_model_file=spiece.model",
      f"--model_config_path={config_path}", "--init_checkpoint=pretrained",
      "--model_dir=model", "--max_seq_length=32", "--train_batch_size=4",
      "--eval_batch_size=4", "--train_steps=3", "--warmup_steps=1",
      "--iterations=1", "--do_train", "--do_predict", "--predict_dir=predict",
      cwd=str(tmp_path))
  assert proc.returncode == 0, proc.stderr[-3000:]
  with open(tmp_path / "predict" / "sst-2.logits.json") as f:
    expected = np.array(json.load(f), np.float32)

  out = str(tmp_path / "serving" / "1")
  saved_model.export_saved_model(
      str(tmp_path / "model"), model_lib.XLNetConfig(json_path=config_path),
      out)
  serve = tf.saved_model.load(out).signatures["serving_default"]
  (records,) = tf.io.gfile.glob(str(tmp_path / "records" /
                                    "sst-2.dev.len-32.*.tf_record"))
  parse = classifier_features.make_parser(32, False)
  got = []
  for batch in tf.data.TFRecordDataset(records).map(parse).batch(4):
    got.append(serve(input_ids=batch["input_ids"],
                     segment_ids=batch["segment_ids"],
                     input_mask=batch["input_mask"])["logits"].numpy())
  got = np.concatenate(got)
  assert got.shape == expected.shape == (6, 2)
  np.testing.assert_allclose(got, expected, atol=1e-5)


def test_interop_doc_lists_every_installed_command():
  """docs/interop.md names each program setup.py installs (`PROGRAMS`,
  read from its source) and says how many there are."""
  import ast  # pylint: disable=g-import-not-at-top
  with open(os.path.join(fx.REPO, "setup.py"), encoding="utf-8") as f:
    tree = ast.parse(f.read())
  programs = next(ast.literal_eval(node.value) for node in tree.body
                  if isinstance(node, ast.Assign)
                  and node.targets[0].id == "PROGRAMS")
  with open(os.path.join(fx.REPO, "docs", "interop.md"),
            encoding="utf-8") as f:
    installing = f.read().split("## Installing", 1)[1].split("\n## ", 1)[0]
  assert [p for p in programs if f"`{p}`" not in installing] == []
  assert f"The {len(programs)} commands" in installing
