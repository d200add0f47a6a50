"""A classifier fine-tuned on long documents, exported: the SavedModel's
`windows` and `memory_window` signatures give the heads' logits, and HF's
XLNetModel fed the same windows with `mems` (the memory length the export
writes into its config) computes our memory forward: every window's states
and memories, and the logits at each document's last window."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.interop import interop_fixtures as fx
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.long_documents import memory_forward
from xlnet.finetuning.long_documents import settings as settings_lib
from xlnet.finetuning.long_documents import windows
from xlnet.interop import hf_export
from xlnet.interop import saved_model

LENGTH, WINDOWS = 7, 3
TOL = 1e-4


def documents():
  """Three documents of 3, 1 and 2 windows, batch-major [3, W, L]."""
  rng = np.random.RandomState(5)
  docs = [windows.document_windows(list(rng.randint(9, 400, size=n)),
                                   LENGTH, WINDOWS) for n in (14, 3, 8)]
  return {k: np.stack([d[k] for d in docs]) for k in docs[0]}


def fine_tuned(tmp_path, settings):
  """A copy of the shared random classification checkpoint whose
  task.json says it read documents as `settings`."""
  prefix, _, config, _ = fx.copied_checkpoint(str(tmp_path / "ckpt"),
                                              "classification")
  record = dict(kind="classifier", task_name=fx.TASK, cls_scope=None,
                label_list=["a", "b", "c"],
                max_seq_length=LENGTH, **settings.record())
  with open(os.path.join(os.path.dirname(prefix), "task.json"), "w") as f:
    json.dump(record, f)
  return prefix, config


def ours(prefix, config, feats, settings):
  """The head's logits reading `feats` as `settings` (dropout off)."""
  def build():
    t = {k: tf.constant(v) for k, v in feats.items()}
    return classifier_head.get_head_outputs(
        config, fx.RUN, dict(t, label_ids=tf.zeros([3], tf.int32)),
        fx.N_CLASS, fx.TASK,
        summarize=memory_forward.summarize_fn(settings, LENGTH))["logits"]
  return fx.run_ours(prefix, build)


@pytest.mark.eager
@pytest.mark.parametrize("mode", ["windows", "memory"])
def test_saved_model_long_document_signatures(tmp_path, mode):
  settings = settings_lib.LongDocuments(mode, max_windows=WINDOWS,
                                        mem_len=5)
  prefix, config = fine_tuned(tmp_path, settings)
  out = str(tmp_path / "serving")
  saved_model.export_saved_model(prefix, config, out, fx.TASK)
  loaded = tf.saved_model.load(out)
  feats = documents()
  want = ours(prefix, config, feats, settings)
  if mode == "windows":
    got = loaded.signatures["windows"](
        **{k: tf.constant(v) for k, v in feats.items()})["logits"].numpy()
  else:
    step = loaded.signatures[saved_model.MEMORY_WINDOW]
    mems = tf.zeros([config.n_layer, 0, 3, config.d_model])
    per_window = []
    for w in range(WINDOWS):
      out = step(mems=mems, **{k: tf.constant(feats[k][:, w])
                               for k in memory_forward.WINDOW_INPUTS})
      mems = out["new_mems"]
      assert mems.shape[1] == min(5, (w + 1) * LENGTH)
      per_window.append(out["logits"].numpy())
    last = feats["window_mask"].sum(1).astype(int) - 1
    got = np.stack(per_window)[last, np.arange(3)]
  np.testing.assert_allclose(got, want, atol=TOL, rtol=0)


@pytest.mark.interop
def test_memory_forward_equals_hf_fed_windows_with_mems(tmp_path):
  torch = pytest.importorskip("torch")
  transformers = pytest.importorskip("transformers")
  settings = settings_lib.LongDocuments("memory", max_windows=WINDOWS,
                                        mem_len=10)  # across two windows
  prefix, config = fine_tuned(tmp_path, settings)
  hf_dir = str(tmp_path / "hf")
  hf_export.export_hf(prefix, config, fx.SPIECE, hf_dir, task_name=fx.TASK)
  feats = documents()

  def build():
    t = {k: tf.constant(v) for k, v in feats.items()}
    runs = memory_forward.memory_windows(config, fx.RUN, t, 10)
    return ([tf.transpose(m.get_sequence_output(), [1, 0, 2])
             for m, _ in runs], [m.get_new_memory() for m, _ in runs])

  hidden, mems = fx.run_ours(prefix, build)
  classifier = transformers.XLNetForSequenceClassification.from_pretrained(
      hf_dir).eval()
  assert classifier.config.mem_len == 10
  assert classifier.config.long_documents["long_documents"] == "memory"
  theirs_mems, logits = None, []
  with torch.no_grad():
    for w in range(WINDOWS):
      window = {"input_ids": torch.tensor(feats["input_ids"][:, w]).long(),
                "token_type_ids": torch.tensor(
                    feats["segment_ids"][:, w]).long(),
                "input_mask": torch.tensor(feats["input_mask"][:, w])}
      base = classifier.transformer(**window, mems=theirs_mems,
                                    use_mems=True)
      np.testing.assert_allclose(hidden[w], base.last_hidden_state.numpy(),
                                 atol=TOL, rtol=0)
      for ours_mem, theirs_mem in zip(mems[w], base.mems):
        np.testing.assert_allclose(ours_mem, theirs_mem.numpy(), atol=TOL,
                                   rtol=0)
      logits.append(classifier(**window, mems=theirs_mems,
                               use_mems=True).logits.numpy())
      theirs_mems = base.mems
  last = feats["window_mask"].sum(1).astype(int) - 1
  np.testing.assert_allclose(
      np.stack(logits)[last, np.arange(3)],
      ours(prefix, config, feats, settings), atol=TOL, rtol=0)


@pytest.mark.interop
@pytest.mark.eager
def test_extracted_vectors_are_hf_hidden_states_of_the_export(tmp_path):
  """Per-piece vectors of a released model's layout read through the
  memory, layers 0 (the embeddings), 1 and -1, are HF's `hidden_states` of
  its export at the pieces' windows and positions, HF reading the windows
  in order with `mems` of the same length (the last window left-padded;
  truncated texts: tests/finetuning/test_vectors.py against NumPy)."""
  torch = pytest.importorskip("torch")
  transformers = pytest.importorskip("transformers")
  from tests import classifier_fixtures  # pylint: disable=g-import-not-at-top
  from xlnet.data import prepro_utils  # pylint: disable=g-import-not-at-top
  from xlnet.finetuning import api  # pylint: disable=g-import-not-at-top
  from xlnet.finetuning.vectors import config as vectors_config  # pylint: disable=g-import-not-at-top
  from xlnet.finetuning.vectors import inputs  # pylint: disable=g-import-not-at-top
  directory = classifier_fixtures.shared_released_model(
      dict(classifier_fixtures.TINY_CONFIG, n_token=1000))
  prefix = os.path.join(directory, "xlnet_model.ckpt")
  hf_dir = str(tmp_path / "hf")
  hf_export.export_hf(prefix, None, None, hf_dir)
  text = "the film was long and the plot went nowhere, in 1999 or so"
  (tmp_path / "in.txt").write_text(text + "\n")
  settings = dict(long_documents="memory", max_windows=4, mem_len=6)
  config = vectors_config.VectorsConfig(
      input_file=str(tmp_path / "in.txt"),
      output_file=str(tmp_path / "out.jsonl"), init_checkpoint=prefix,
      layers=(0, 1, -1), pooling="none", max_seq_length=10, **settings)
  api.extract_features(config)
  with open(config.output_file) as f:
    row = json.loads(f.readline())
  got = np.array([[l["values"] for l in p["layers"]]
                  for p in row["features"]])
  sp = prepro_utils.load_sp_model(os.path.join(directory, "spiece.model"),
                                  "spm")
  arrays, places = inputs.Encoder(sp, False, 10,
                                  config.long_document_settings).encode(text)
  model = transformers.XLNetModel.from_pretrained(hf_dir, mem_len=6).eval()
  mems, hidden = None, []
  with torch.no_grad():
    for w in range(int(arrays["window_mask"].sum())):
      out = model(input_ids=torch.tensor(arrays["input_ids"][w:w + 1]).long(),
                  token_type_ids=torch.tensor(
                      arrays["segment_ids"][w:w + 1]).long(),
                  input_mask=torch.tensor(arrays["input_mask"][w:w + 1]),
                  mems=mems, use_mems=True, output_hidden_states=True)
      mems = out.mems
      hidden.append(np.stack([h[0].numpy() for h in out.hidden_states]))
  want = np.stack([hidden[p.window][[0, 1, -1], p.position] for p in places])
  assert len(places) == len(row["features"])
  assert arrays["window_mask"].sum() == 4
  np.testing.assert_allclose(got, want, atol=TOL, rtol=0)
