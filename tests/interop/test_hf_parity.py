"""HF transformers' XLNet loaded from our export computes what our model
computes (<= 1e-4): hidden states, LM logits with memories, and each head's
logits; HF's tokenizer from the export gives our ids. Needs PyTorch and
transformers (the `interop` environment); skipped elsewhere."""
import csv
import json
import os

import numpy as np
import pytest

from tests.interop import interop_fixtures as fx
from xlnet.chain import hf_check
from xlnet.data import prepro_utils
from xlnet.interop import hf_export
from xlnet.interop import hf_names
from xlnet.training import checkpoint_io

torch = pytest.importorskip(
    "torch", reason="needs PyTorch (the interop environment: "
    "XLNET_TEST_ENVS=interop bash scripts/test.sh)")
transformers = pytest.importorskip(
    "transformers", reason="needs HF transformers (the interop environment)")

pytestmark = pytest.mark.interop
TOL = 1e-4


def _export(kind, summary=("last", True), **overrides):
  """A random checkpoint of `kind` (its head pooling by `summary`, see
  `fx.build`) exported, shared by the test run (read-only); returns (HF
  dir, prefix, XLNetConfig)."""
  return fx.shared_hf_export(kind, summary, **overrides)


def _torch(feats):
  """HF's keyword arguments of our batch-major features."""
  out = {"input_ids": torch.tensor(feats["input_ids"], dtype=torch.long),
         "token_type_ids": torch.tensor(feats["segment_ids"],
                                        dtype=torch.long),
         "input_mask": torch.tensor(feats["input_mask"])}
  if "p_mask" in feats:
    out["p_mask"] = torch.tensor(feats["p_mask"])
    out["cls_index"] = torch.tensor(feats["cls_index"], dtype=torch.long)
  return out


def _close(ours, theirs):
  theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else theirs
  assert ours.shape == theirs.shape
  diff = float(np.max(np.abs(ours - theirs)))
  assert diff <= TOL, diff
  return diff


@pytest.mark.parametrize("untie_r", [True, False])
def test_lm_hidden_states_and_logits_with_memories(untie_r):
  hf_dir, prefix, config = _export("lm", untie_r=untie_r)
  first, second = fx.features("lm", seed=1), fx.features("lm", seed=2)
  mem_len = 5

  def ours():
    seg1 = fx.lm_outputs(config, first, mem_len=mem_len)
    seg2 = fx.lm_outputs(config, second, mems=seg1["mems"], mem_len=mem_len)
    return seg1, seg2

  seg1, seg2 = fx.run_ours(prefix, ours)
  model = transformers.XLNetLMHeadModel.from_pretrained(hf_dir, mem_len=mem_len)
  model.eval()
  assert model.config.architectures == ["XLNetLMHeadModel"]
  with torch.no_grad():
    out1 = model(**_torch(first), use_mems=True, output_hidden_states=True)
    out2 = model(**_torch(second), mems=out1.mems, use_mems=True,
                 output_hidden_states=True)
  for ours_seg, theirs in ((seg1, out1), (seg2, out2)):
    _close(ours_seg["hidden"], theirs.hidden_states[-1])
    _close(ours_seg["logits"], theirs.logits)
  for ours_mem, theirs_mem in zip(seg2["mems"], out2.mems):
    _close(ours_mem, theirs_mem)


@pytest.mark.parametrize("kind,summary", [
    ("classification", ("last", True)), ("regression", ("last", True)),
    ("race", ("last", True)), ("classification", ("mean", True)),
    ("classification", ("first", False)), ("race", ("mean", True))])
def test_summary_heads(kind, summary):
  """Each summary HF has (ours: "last", "first", "mean"), with and without
  the projection."""
  hf_dir, prefix, config = _export(kind, summary)
  feats = fx.features(kind)
  ours = fx.run_ours(prefix, lambda: fx.build(kind, config, feats,
                                              summary))["logits"]
  if kind == "race":
    model = transformers.XLNetForMultipleChoice.from_pretrained(hf_dir)
    theirs_in = {k: v.reshape(v.shape[0], 4, -1)
                 for k, v in _torch(feats).items()}
  else:
    model = transformers.XLNetForSequenceClassification.from_pretrained(
        hf_dir)
    theirs_in = _torch(feats)
    assert model.config.num_labels == (
        fx.N_CLASS if kind == "classification" else 1)
  model.eval()
  with torch.no_grad():
    theirs = model(**theirs_in).logits
  if kind == "regression":
    theirs = theirs[:, 0]
  _close(ours, theirs)


def test_token_classification_logits():
  """HF's XLNetForTokenClassification (a Linear on the last hidden state,
  no extra dropout) gives our tagging head's logits at every position, the
  padding included."""
  hf_dir, prefix, config = _export("tagging")
  feats = fx.features("tagging")
  ours = fx.run_ours(prefix, lambda: fx.build("tagging", config,
                                              feats))["logits"]
  model = transformers.XLNetForTokenClassification.from_pretrained(hf_dir)
  model.eval()
  assert model.config.num_labels == fx.N_CLASS
  with torch.no_grad():
    theirs = model(**_torch(feats)).logits
  assert ours.shape == (2, 7, fx.N_CLASS)
  _close(ours, theirs)


def test_multi_label_logits_and_hfs_bce_loss(tmp_path):
  """A head fine-tuned with --multi_label (its task.json says so) loads as
  HF's multi-label sequence classifier: our logits, and HF's loss (BCE
  with logits, the mean over every label of every example) equal to our
  head's total loss and to NumPy's binary cross-entropy."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tests.interop import test_multi_label_export as ml_export  # pylint: disable=g-import-not-at-top
  from xlnet.finetuning.classifier import head as classifier_head  # pylint: disable=g-import-not-at-top
  prefix, _, config, _ = fx.copied_checkpoint(str(tmp_path / "ckpt"),
                                              "classification")
  ml_export.write_task_record(os.path.dirname(prefix))
  hf_dir = str(tmp_path / "hf")
  hf_export.export_hf(prefix, config, fx.SPIECE, hf_dir, fx.TASK)
  feats = fx.features("classification")
  labels = np.array([[1, 0, 1], [0, 0, 0]], np.int32)

  def ours():
    t = {k: tf.constant(v) for k, v in feats.items()}
    out = classifier_head.get_head_outputs(
        config, fx.RUN, dict(t, label_ids=tf.constant(labels)), fx.N_CLASS,
        fx.TASK, multi_label=True)
    return {"logits": out["logits"], "loss": out["total_loss"]}

  got = fx.run_ours(prefix, ours)
  model = transformers.XLNetForSequenceClassification.from_pretrained(hf_dir)
  model.eval()
  assert model.config.problem_type == "multi_label_classification"
  assert model.config.id2label == {0: "art", 1: "politics", 2: "sport"}
  with torch.no_grad():
    theirs = model(**_torch(feats), labels=torch.tensor(labels,
                                                        dtype=torch.float))
  _close(got["logits"], theirs.logits)
  x = theirs.logits.double().numpy()
  bce = np.maximum(x, 0) - x * labels + np.log1p(np.exp(-np.abs(x)))
  assert abs(float(theirs.loss) - bce.mean()) <= 1e-6
  assert abs(float(theirs.loss) - float(got["loss"])) <= TOL


@pytest.mark.eager
def test_saved_model_masked_lm_equals_hf_with_perm_mask():
  """The SavedModel's `masked_lm` signature and HF's XLNetLMHeadModel given
  the same `perm_mask` and `target_mapping` predict the hidden words
  alike."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  hf_dir, _, _ = _export("lm")
  out = fx.shared_saved_model("lm")[0]
  masked = tf.saved_model.load(out).signatures["masked_lm"]
  feats = fx.features("lm", seed=3)
  perm_mask, target_mapping = fx.masked_inputs(feats, [2, 3, 5])
  ours = masked(**{k: tf.constant(v) for k, v in feats.items()},
                perm_mask=tf.constant(perm_mask),
                target_mapping=tf.constant(target_mapping))
  model = transformers.XLNetLMHeadModel.from_pretrained(hf_dir).eval()
  with torch.no_grad():
    theirs = model(**_torch(feats), perm_mask=torch.tensor(perm_mask),
                   target_mapping=torch.tensor(target_mapping))
  _close(ours["lm_logits"].numpy(), theirs.logits)


def test_squad_beam_and_answer_class():
  """HF's XLNetForQuestionAnswering at inference runs the release's beam:
  the same top starts, top ends per start and answerability logits. HF
  returns probabilities under the names `*_log_probs` (ours are log
  probabilities) and orders the ends end-major (e * K + k; ours k * E + e).
  Positions closed by p_mask tie at probability 0 and the two frameworks
  break the tie differently: only the open ones are compared."""
  hf_dir, prefix, config = _export("squad")
  feats = fx.features("squad")
  ours = fx.run_ours(prefix, lambda: fx.build("squad", config, feats))
  model = transformers.XLNetForQuestionAnswering.from_pretrained(hf_dir)
  model.eval()
  with torch.no_grad():
    theirs = model(**_torch(feats))
  k = e = hf_export.BEAM

  def start_major(x):
    return x.numpy().reshape(-1, e, k).transpose(0, 2, 1).reshape(-1, k * e)

  _close(ours["cls_logits"], theirs.cls_logits)
  start_open = np.exp(ours["start_top_log_probs"]) > 0
  assert start_open.sum(1).tolist() == [4, 2]  # 4 and 2 open positions
  _close(np.exp(ours["start_top_log_probs"]),
         theirs.start_top_log_probs.numpy())
  np.testing.assert_array_equal(
      ours["start_top_index"][start_open],
      theirs.start_top_index.numpy()[start_open])
  end_probs = np.exp(ours["end_top_log_probs"])
  end_open = (end_probs > 0) & np.repeat(start_open, e, axis=1)
  _close(end_probs * end_open,
         start_major(theirs.end_top_log_probs) * end_open)
  np.testing.assert_array_equal(
      ours["end_top_index"][end_open],
      start_major(theirs.end_top_index)[end_open])


# Real text: accents, curly and TeX quotes, runs of spaces, tabs.
TEXTS = [
    "Ce café naïve près de l'hôtel — “Zoë”   sang ``Ångström'' à 9 h.",
    "  The   quick\tbrown fox, 'jumped' over   \"the\" lazy dog…  ",
    "In 1999 the price rose to 1,250 dollars, then fell.",
]


def test_tokenizer_gives_our_ids():
  """Single texts end `<sep> <cls>`, pairs `a <sep> b <sep> <cls>`, as our
  fine-tuning features; HF has no digit-comma rule, so the texts here have
  no digit right before a comma (its rate is measured in
  test_digit_comma_rate)."""
  hf_dir, _, _ = _export("lm")
  tok = transformers.AutoTokenizer.from_pretrained(hf_dir)
  sp = _sp()
  assert tok.padding_side == "left"

  def ours(text):
    return prepro_utils.encode_ids(sp, prepro_utils.preprocess_text(text))

  sep, cls = prepro_utils.SEP_ID, prepro_utils.CLS_ID
  for text in TEXTS[:2]:
    assert tok(text)["input_ids"] == ours(text) + [sep, cls], text
  a, b = TEXTS[:2]
  assert tok(a, b)["input_ids"] == ours(a) + [sep] + ours(b) + [sep, cls]


def _sp():
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  sp = spm.SentencePieceProcessor()
  sp.Load(fx.SPIECE)
  return sp


PAIRS = [("A man is playing a guitar.", "Someone plays music on a guitar."),
         ("The cat sat.", "A much longer second text about dogs that run "
          "in the park, then sleep.")]
SINGLES = ["The quick brown fox jumped over the lazy dog.", "Short."]


def _our_features(examples, max_seq_length):
  """run_classifier.py's features of `examples` (text_a, text_b or None):
  batch-major arrays, left-padded to max_seq_length (None: each example's
  own length, no padding; then one array per example)."""
  from xlnet.finetuning.classifier import processors as classifier_processors  # pylint: disable=g-import-not-at-top
  from xlnet.finetuning.classifier import features as classifier_features  # pylint: disable=g-import-not-at-top
  tokenize = classifier_features.make_tokenize_fn(_sp(), False)
  feats = []
  for i, (a, b) in enumerate(examples):
    example = classifier_processors.InputExample(str(i), a, b)
    length = max_seq_length or len(tokenize(a)) + len(
        tokenize(b) if b else []) + (3 if b else 2)
    feats.append(classifier_features.convert_single_example(
        i, example, None, length, tokenize))
  return [{"input_ids": np.array([f.input_ids], np.int32),
           "segment_ids": np.array([f.segment_ids], np.int32),
           "input_mask": np.array([f.input_mask], np.float32)}
          for f in feats]


def _stack(feats):
  return {k: np.concatenate([f[k] for f in feats]) for k in feats[0]}


@pytest.mark.parametrize("kind,summary", [
    ("classification", ("last", True)), ("regression", ("last", True)),
    ("classification", ("mean", True))])
def test_exported_tokenizer_into_hf_gives_our_features_and_logits(
    kind, summary):
  """Text -> the exported tokenizer -> HF's model, for pairs and single
  texts: the ids and segments (A and its <sep> 0, B and its <sep> 1, <cls>
  2) of run_classifier.py's features, and the logits of our classifier on
  those features (<= 1e-5). HF pads on the left, with <pad> and segment 3
  where our features pad with id 0 and segment 4: the <cls> position sees
  no padding, so with the default "last" summary padded batches agree with
  our features at any length; "first" and "mean" pool over the padding (in
  the release too), so they agree on unpadded inputs."""
  hf_dir, prefix, config = _export(kind, summary)
  tok = transformers.AutoTokenizer.from_pretrained(hf_dir)
  model = transformers.XLNetForSequenceClassification.from_pretrained(
      hf_dir).eval()
  n_class = fx.N_CLASS if kind == "classification" else None
  examples = PAIRS + [(s, None) for s in SINGLES]

  def ours(feats):
    logits = fx.run_ours(prefix, lambda: fx.classifier_logits(
        config, feats, n_class, fx.TASK, summary))
    return logits if n_class else logits[:, None]

  def theirs(encoded):
    with torch.no_grad():
      return model(**encoded).logits.numpy()

  unpadded = _our_features(examples, None)
  for (a, b), feats in zip(examples, unpadded):
    encoded = tok(a, b, return_tensors="pt")
    assert encoded["input_ids"].tolist() == feats["input_ids"].tolist()
    assert encoded["token_type_ids"].tolist() == (
        feats["segment_ids"].tolist())
    diff = np.max(np.abs(ours(feats) - theirs(encoded)))
    assert diff <= 1e-5, (a, b, diff)
  if summary[0] != "last":
    return
  padded = _stack(_our_features(examples, 48))
  expected = ours(padded)
  pairs = tok([a for a, _ in PAIRS], [b for _, b in PAIRS], padding=True,
              return_tensors="pt")
  singles = tok(SINGLES, padding=True, return_tensors="pt")
  for encoded in (pairs, singles):
    assert (encoded["attention_mask"][:, 0] == 0).any()  # left padding
  got = np.concatenate([theirs(pairs), theirs(singles)])
  assert np.max(np.abs(expected - got)) <= 1e-5


@pytest.mark.parametrize("kind", ["classification", "squad"])
def test_hf_written_model_round_trips_bit_for_bit(tmp_path, kind):
  """HF -> TF -> HF on files HF itself wrote (`save_pretrained`)."""
  hf_dir, _, _ = _export(kind)
  arch = getattr(transformers, hf_names.HEADS[kind][0])
  saved = str(tmp_path / "saved")
  arch.from_pretrained(hf_dir).save_pretrained(saved)
  import shutil  # pylint: disable=g-import-not-at-top
  shutil.copyfile(fx.SPIECE, os.path.join(saved, "spiece.model"))
  tf_dir, again = str(tmp_path / "tf"), str(tmp_path / "again")
  from xlnet.interop import hf_import  # pylint: disable=g-import-not-at-top
  prefix = hf_import.import_hf(saved, tf_dir)
  from xlnet import model as model_lib  # pylint: disable=g-import-not-at-top
  config = model_lib.XLNetConfig(
      json_path=os.path.join(tf_dir, "xlnet_config.json"))
  hf_export.export_hf(prefix, config, fx.SPIECE, again)
  from safetensors import numpy as st  # pylint: disable=g-import-not-at-top
  theirs = st.load_file(os.path.join(saved, "model.safetensors"))
  ours = st.load_file(os.path.join(again, "model.safetensors"))
  assert sorted(ours) == sorted(theirs)
  for name, value in theirs.items():
    assert ours[name].tobytes() == value.tobytes(), name


def _tokenizer_of(spiece, out):
  """HF's tokenizer from the export's tokenizer files and `spiece`."""
  import shutil  # pylint: disable=g-import-not-at-top
  for name, value in hf_export.tokenizer_files(False, spiece).items():
    hf_export._write_json(os.path.join(out, name), value)  # pylint: disable=protected-access
  shutil.copyfile(spiece, os.path.join(out, "spiece.model"))
  return transformers.AutoTokenizer.from_pretrained(out)


@pytest.mark.parametrize("vocab_size", [1000, 2000])
def test_ids_equal_on_every_line_of_a_novel_but_for_ties(tmp_path,
                                                          vocab_size):
  """Every line of the demo novel (and the texts above) gets our ids from
  HF's tokenizer, except where two splits of a word score exactly the same
  (e.g. "000" as "0" "00" or "00" "0"): SentencePiece and HF's `tokenizers`
  break such ties differently (docs/interop.md: 1 line of 2,596 with the
  2,000-piece vocabulary, none with 1,000 pieces). There the two splits
  spell the same text with the same total score. The release splits a
  piece ending in digit + ',' ("1999," -> "1999" ","), which HF lacks;
  these vocabularies hold no such piece (`hf_export.digit_comma_pieces`).
  Both ways HF reads the export's tokenizer.json: transformers 5's
  XLNetTokenizer (which takes its pieces, scores, post-processor and
  character map) and the `tokenizers` library alone (the whole file, as
  transformers 4's fast tokenizer)."""
  from tests import data_helpers  # pylint: disable=g-import-not-at-top
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  import tokenizers  # pylint: disable=g-import-not-at-top
  spiece = data_helpers.train_tiny_spm(vocab_size=vocab_size)
  sp = spm.SentencePieceProcessor()
  sp.Load(spiece)
  assert hf_export.digit_comma_pieces(spiece) == []
  tok = _tokenizer_of(spiece, str(tmp_path))
  raw = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
  with open(data_helpers.demo_corpus(), encoding="utf-8") as f:
    lines = [l for l in f.read().splitlines() if l.strip()]
  lines += TEXTS
  assert len(lines) > 2500

  def score(ids):
    return sum(sp.GetScore(i) for i in ids)

  for line in lines:
    ours = prepro_utils.encode_ids(sp, prepro_utils.preprocess_text(line))
    for theirs in (tok(line, add_special_tokens=False)["input_ids"],
                   raw.encode(line, add_special_tokens=False).ids):
      if theirs != ours:
        assert sp.DecodeIds(theirs) == sp.DecodeIds(ours), line
        assert abs(score(theirs) - score(ours)) <= 1e-4, line


def test_tokenizer_json_reads_the_models_character_map():
  """The export's normalizer ends with SentencePiece's own character map
  (nmt_nfkc, which spm_train.py's models hold), read without protobuf:
  the bytes sentencepiece's protobuf module reads."""
  import base64  # pylint: disable=g-import-not-at-top
  from sentencepiece import sentencepiece_model_pb2  # pylint: disable=g-import-not-at-top
  from tests import data_helpers  # pylint: disable=g-import-not-at-top
  from xlnet.interop import hf_tokenizer  # pylint: disable=g-import-not-at-top
  spiece = data_helpers.train_tiny_spm(vocab_size=1000)
  proto = sentencepiece_model_pb2.ModelProto()
  with open(spiece, "rb") as f:
    proto.ParseFromString(f.read())
  charsmap = proto.normalizer_spec.precompiled_charsmap
  assert len(charsmap) > 1000
  last = hf_tokenizer.tokenizer_json(spiece, False)["normalizer"][
      "normalizers"][-1]
  assert last["type"] == "Precompiled"
  assert base64.b64decode(last["precompiled_charsmap"]) == charsmap


def test_export_refuses_a_tokenizer_json_that_disagrees_with_ours():
  """`check_ids` runs the file through the `tokenizers` library and
  compares ids and segments with our features: a file that lost the pair's
  segment B, or whose scores split a word otherwise, is one line."""
  from xlnet.interop import hf_tokenizer  # pylint: disable=g-import-not-at-top
  config = hf_tokenizer.tokenizer_json(fx.SPIECE, False)
  assert hf_tokenizer.check_ids(config, fx.SPIECE, False)
  one_segment = json.loads(json.dumps(config))
  one_segment["post_processor"]["pair"][2]["Sequence"]["type_id"] = 0
  sp = _sp()
  rescored = json.loads(json.dumps(config))
  rescored["model"]["vocab"][sp.PieceToId("▁the")][1] = -1e3
  for bad in (one_segment, rescored):
    with pytest.raises(ValueError, match="the tokenizer.json built from it "
                       "encodes .* ours as .*; nothing written") as info:
      hf_tokenizer.check_ids(bad, fx.SPIECE, False)
    assert "\n" not in str(info.value)


def _program(args, cwd):
  """A program's command line, run in this process."""
  from tests import in_process  # pylint: disable=g-import-not-at-top
  proc = in_process.run_program(*args, cwd=cwd)
  assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.eager  # the programs run as in a process of their own
def test_a_pretrained_then_fine_tuned_model(tmp_path):
  """A model the programs trained (train_gpu.py, then run_classifier.py
  from its checkpoint; their command lines run in this process): the
  exported LM and classifier match HF's, and the chain's HF check
  (`hf_check.check_classifier`) passes on texts through HF's tokenizer, a
  truncated one and a last, smaller batch among them, and on pairs through
  a model fine-tuned on pairs."""
  from tests import train_fixtures  # pylint: disable=g-import-not-at-top
  from tests.finetuning import test_python_api  # pylint: disable=g-import-not-at-top
  from xlnet import configs  # pylint: disable=g-import-not-at-top
  from xlnet import model as model_lib  # pylint: disable=g-import-not-at-top
  config_path = configs.path("xlnet_tiny.json")
  config = model_lib.XLNetConfig(json_path=config_path)
  records = train_fixtures.shared_program_records(num_core_per_host=1)
  _program(train_fixtures.program_command(
      "train_gpu.py", records, tmp_path / "pretrained", "--train_steps=3",
      "--num_core_per_host=1", f"--model_config_path={config_path}")[1:],
           cwd=fx.REPO)
  test_python_api.write_task(str(tmp_path))
  spiece = str(tmp_path / "spiece.model")
  _program(["run_classifier.py", "--task_name=sst-2",
            "--data_dir=glue/SST-2", "--output_dir=sst-2/records",
            "--spiece_model_file=spiece.model",
            f"--model_config_path={config_path}",
            f"--init_checkpoint={tmp_path / 'pretrained'}",
            "--model_dir=sst-2/model", "--max_seq_length=32",
            "--train_batch_size=4", "--train_steps=3", "--warmup_steps=1",
            "--iterations=1", "--learning_rate=1e-3", "--do_train"],
           cwd=str(tmp_path))
  feats = fx.features("lm")
  feats["input_ids"] %= 1000  # the vocabulary of the records
  for ckpt, kind in ((tmp_path / "pretrained", "lm"),
                     (tmp_path / "sst-2" / "model", "classification")):
    out = str(tmp_path / f"hf-{kind}")
    hf_export.export_hf(str(ckpt), config, spiece, out)
    prefix = checkpoint_io.resolve_checkpoint(str(ckpt))
    if kind == "lm":
      ours = fx.run_ours(prefix, lambda: fx.lm_outputs(config, feats))
      model = transformers.XLNetLMHeadModel.from_pretrained(out).eval()
      with torch.no_grad():
        theirs = model(**_torch(feats), output_hidden_states=True)
      _close(ours["hidden"], theirs.hidden_states[-1])
      _close(ours["logits"], theirs.logits)
    else:
      ours = fx.run_ours(prefix, lambda: fx.classifier_logits(
          config, feats, 2, "sst-2"))
      model = transformers.XLNetForSequenceClassification.from_pretrained(
          out).eval()
      with torch.no_grad():
        _close(ours, model(**_torch(feats)).logits)
  texts = ["a fine film 3", "an awful plot, isn't it?", "great acting!!!!",
           " ".join(["dull and long"] * 20), "a wonderful cast", "Hmmm..",
           "a terrible ending 1999"]
  dev = tmp_path / "dev.csv"
  with open(dev, "w", newline="", encoding="utf-8") as f:
    csv.writer(f).writerows([["text_a"]] + [[t] for t in texts])
  result = hf_check.check_classifier(
      str(tmp_path / "sst-2" / "model"), str(tmp_path / "hf-classification"),
      str(dev), batch_size=4)
  assert [result[k] for k in ("total", "agree", "split_differently",
                              "not_ties")] == [7, 7, 0, 0], result
  assert result["max_diff"] <= TOL and result["passed"], result
  # A model fine-tuned on pairs: `A <sep> B <sep> <cls>` with segments 0,
  # 1 and 2 in both worlds, and the longer text shortened first (the
  # second when they are equally long). When both are longer than half
  # the room, HF's tokenizer keeps the odd piece in the longer text, the
  # release in the first: the last pair is cut differently, and named.
  # An empty second text makes a single text, in the release and in HF.
  pairs = [("a fine film 3", "an awful plot, isn't it?"),
           ("a wonderful cast", ""),
           (" ".join(["dull and long"] * 20), "great acting!!!!"),
           ("Hmmm..", " ".join(["a wonderful cast"] * 20)),
           (" ".join(["a terrible ending"] * 9), " ".join(["a fine film"] * 9)),
           (" ".join(["a fine film"] * 9), " ".join(["a terrible ending"] * 9))]
  (tmp_path / "pairs").mkdir()
  for split in ("train", "dev"):
    with open(tmp_path / "pairs" / f"{split}.csv", "w", newline="",
              encoding="utf-8") as f:
      csv.writer(f).writerows([["label", "text_a", "text_b"]] + [
          [str(i % 2), a, b] for i, (a, b) in enumerate(pairs)])
  _program(["run_classifier.py", "--task_name=csv", "--data_dir=pairs",
            "--text_b_column=text_b", "--output_dir=pairs/records",
            "--spiece_model_file=spiece.model",
            f"--model_config_path={config_path}",
            f"--init_checkpoint={tmp_path / 'pretrained'}",
            "--model_dir=pairs/model", "--max_seq_length=32",
            "--train_batch_size=2", "--train_steps=2", "--warmup_steps=1",
            "--iterations=1", "--learning_rate=1e-3", "--do_train"],
           cwd=str(tmp_path))
  hf_export.export_hf(str(tmp_path / "pairs" / "model"), config, spiece,
                      str(tmp_path / "hf-pairs"))
  result = hf_check.check_classifier(
      str(tmp_path / "pairs" / "model"), str(tmp_path / "hf-pairs"),
      str(tmp_path / "pairs" / "dev.csv"), batch_size=3)
  assert [result[k] for k in ("total", "agree", "split_differently",
                              "cut_differently", "not_ties")] == [
                                  6, 6, 0, 1, 0], result
  assert result["examples"] == [{"row": 5, "kind": "cut_differently",
                                 "ours": "15 + 14 pieces",
                                 "hf": "14 + 15 pieces"}], result
  assert result["max_diff"] <= TOL and result["passed"], result
