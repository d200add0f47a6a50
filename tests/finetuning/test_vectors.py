"""extract_features: the vectors of texts from a released model's layout
(xlnet_model.ckpt, xlnet_config.json, spiece.model) against the NumPy
reference (`tests/np_reference.py`: every layer's input is its memory),
per piece, `<cls>` and mean, truncated, in windows and through the memory;
the same vectors whatever the batch and the padding; the JSON lines
layout; one-line errors."""
import json
import os
import signal

import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import np_reference
from xlnet import errors
from xlnet import signals
from xlnet.data import prepro_utils
from xlnet.finetuning import api
from xlnet.finetuning.long_documents import settings as settings_lib
from xlnet.finetuning.vectors import config as vectors_config
from xlnet.finetuning.vectors import extractor
from xlnet.finetuning.vectors import inputs
from xlnet.programs import extract_features as program

pytestmark = pytest.mark.eager
CONFIG = dict(fx.TINY_CONFIG, n_token=1000)
TEXTS = ["The film was long.", "A pair ||| and its second text",
         "", "Ünïcödé   spaced text, in 1999, yes",
         "one two three four five six seven eight nine ten eleven twelve"]
# The batch-size and padding invariance, to float32 rounding: a kernel may
# sum a row's products in another order for another batch or length; the
# states are O(1) (after LayerNorm), float32's epsilon is 1.2e-7 and a
# tiny model sums few terms, so a few ulps.
SAME = dict(rtol=1e-5, atol=1e-5)
# Against the float64 NumPy reference: float32 rounding of the whole model.
TOL = dict(rtol=1e-4, atol=1e-5)


@pytest.fixture(name="model", scope="module")
def fixture_model():
  """A released model's directory, its weights and SentencePiece model."""
  directory = fx.shared_released_model(CONFIG)
  prefix = os.path.join(directory, "xlnet_model.ckpt")
  params = {n: tf.train.load_variable(prefix, n).astype(np.float64)
            for n, _ in tf.train.list_variables(prefix)}
  sp = prepro_utils.load_sp_model(os.path.join(directory, "spiece.model"),
                                  "spm")
  return dict(prefix=prefix, params=params, sp=sp)


def extract(tmp_path, model, name, texts=TEXTS, **settings):
  """Runs api.extract_features on `texts`; returns the output's path."""
  source = tmp_path / "texts.txt"
  source.write_text("\n".join(texts) + "\n")
  config = vectors_config.VectorsConfig(
      input_file=str(source), output_file=str(tmp_path / name),
      init_checkpoint=model["prefix"], **settings)
  assert api.extract_features(config) == len(texts)
  return config


def states(model, arrays, window, mems=None, mem_len=None):
  """The NumPy reference's states [S=n_layer+1, L, D] of one window, and
  its memory for the next (`mem_len` of every layer's input)."""
  column = lambda k: arrays[k][window][:, None]  # noqa: E731
  length = len(arrays["input_ids"][window])
  out, new = np_reference.forward_of(
      model["params"], CONFIG, inp_k=column("input_ids"),
      seg_id=column("segment_ids"), input_mask=column("input_mask"),
      mems=mems, mem_len=(mem_len or 0) + length)
  layers = np.stack([m[-length:, 0] for m in new] + [out[:, 0]])
  return layers, [m[-mem_len:] for m in new] if mem_len else None


def encoder(model, length, settings=settings_lib.DEFAULT):
  return inputs.Encoder(model["sp"], False, length, settings)


def pair(text):
  return tuple(text.split(" ||| ")) if " ||| " in text else (text, None)


@pytest.mark.quick
def test_pieces_sit_where_their_ids_are_and_span_their_text(model):
  for settings, length in ((settings_lib.DEFAULT, 12),
                           (settings_lib.LongDocuments("windows"), 6)):
    for text in TEXTS[:1] + TEXTS[3:]:
      arrays, places = encoder(model, length, settings).encode(text)
      pieces = [model["sp"].id_to_piece(int(i)) for i in arrays["input_ids"][
          [p.window for p in places], [p.position for p in places]]]
      assert pieces == [p.piece for p in places]
      # Kept in order, each once, from the text's start.
      assert [p.piece for p in places] == prepro_utils.encode_pieces(
          model["sp"], prepro_utils.preprocess_text(text))[:len(places)]
      for p in places:  # the span is the piece's text, accents and all
        assert prepro_utils.preprocess_text(text[p.start:p.end]) == (
            p.piece.strip("\u2581"))
  # A pair: the second text's pieces are segment 1, after the first's
  # <sep>; truncated by the longer side (the classifier's rule).
  first, second = "the " * 8, "of the"
  count = lambda t: len(prepro_utils.encode_pieces(  # noqa: E731
      model["sp"], prepro_utils.preprocess_text(t)))
  assert count(first) > 5 and count(second) == 2
  arrays, places = encoder(model, 10).encode(first, second)
  assert [p.segment for p in places] == [0] * 5 + [1] * 2
  assert arrays["segment_ids"][0].tolist() == [0] * 6 + [1] * 3 + [2]
  assert [p.position for p in places] == [0, 1, 2, 3, 4, 6, 7]


def test_vectors_match_numpy_per_piece_and_across_padding_and_batch(
    tmp_path, model):
  a = extract(tmp_path, model, "a.jsonl", layers=(0, -1), pooling="none",
              max_seq_length=16, batch_size=3)
  b = extract(tmp_path, model, "b.jsonl", layers=(0, -1), pooling="none",
              max_seq_length=24, batch_size=1)
  rows_a = [json.loads(line) for line in open(a.output_file)]
  rows_b = [json.loads(line) for line in open(b.output_file)]
  assert [r["linex_index"] for r in rows_a] == list(range(len(TEXTS)))
  for text, row_a, row_b in zip(TEXTS, rows_a, rows_b):
    arrays, places = encoder(model, 16).encode(*pair(text))
    want, _ = states(model, arrays, 0)
    assert [f["token"] for f in row_a["features"]] == [p.piece
                                                      for p in places]
    assert all(set(f) == {"token", "segment", "start", "end", "layers"}
               for f in row_a["features"])
    got = np.array([[l["values"] for l in f["layers"]]
                    for f in row_a["features"]]).reshape(-1, 2, 8)
    assert [l["index"] for f in row_a["features"] for l in f["layers"]] == [
        0, -1] * len(places)
    np.testing.assert_allclose(
        got, want[[0, -1]][:, [p.position for p in places]].transpose(1, 0, 2)
        if places else got, **TOL)
    if len(places) < 14:  # not truncated at 16: the same pieces at 24
      other = np.array([[l["values"] for l in f["layers"]]
                        for f in row_b["features"]]).reshape(-1, 2, 8)
      np.testing.assert_allclose(got, other, **SAME)


@pytest.mark.tf_version
def test_memory_cls_and_windows_mean_match_numpy(tmp_path, model):
  memory = settings_lib.LongDocuments("memory", max_windows=3, mem_len=6)
  config = extract(tmp_path, model, "memory.npy", layers=(-1, 1),
                   max_seq_length=8, long_documents="memory", max_windows=3,
                   mem_len=6, texts=[TEXTS[0], TEXTS[4]])
  got = np.load(config.output_file)
  assert got.shape == (2, 2, 8) and got.dtype == np.float32
  for text, vectors in zip([TEXTS[0], TEXTS[4]], got):
    arrays, _ = encoder(model, 8, memory).encode(text)
    mems = None
    for w in range(int(arrays["window_mask"].sum())):
      layers, mems = states(model, arrays, w, mems, 6)
    np.testing.assert_allclose(vectors, layers[[-1, 1], -1], **TOL)

  windows = settings_lib.LongDocuments("windows", max_windows=3)
  config = extract(tmp_path, model, "mean.npy", pooling="mean",
                   max_seq_length=8, long_documents="windows", max_windows=3,
                   texts=[TEXTS[4]])
  arrays, places = encoder(model, 8, windows).encode(TEXTS[4])
  per_window = [states(model, arrays, w)[0][-1] for w in range(3)]
  want = np.mean([per_window[p.window][p.position] for p in places], 0)
  np.testing.assert_allclose(np.load(config.output_file)[0, 0], want, **TOL)


@pytest.mark.quick
def test_one_line_errors(tmp_path):
  base = dict(input_file="in.txt", output_file="out.npy",
              init_checkpoint="ckpt")
  with pytest.raises(ValueError, match=r"^--pooling=none with "
                     r"--output_file=out\.npy: one vector per piece"):
    vectors_config.VectorsConfig(pooling="none", **base)
  with pytest.raises(ValueError, match=r"^--layers=-1,3: 3 is not a state "
                     r"of this model: it has 3 \(0 the embeddings"):
    extractor.layer_indices((-1, 3), 2)
  with pytest.raises(ValueError, match=r"^--mem_len=0 with "
                     r"--long_documents=memory leaves no memory"):
    vectors_config.VectorsConfig(long_documents="memory", mem_len=0, **base)
  with pytest.raises(ValueError, match=r"^--long_documents=windows reads "
                     r"single texts as windows, but --input_file=x has text "
                     r"pairs"):
    settings_lib.check_single_texts(settings_lib.LongDocuments("windows"),
                                    True, "--input_file=x")
  with pytest.raises(ValueError, match=r"^--layers=a,1: expected integers"):
    program._layers(["a", "1"])  # pylint: disable=protected-access
  table = tmp_path / "t.tsv"
  table.write_text("id\ttext\n1\tok\n2\n")
  with pytest.raises(ValueError, match=r"t\.tsv line 3: 1 columns, column "
                     r"1 asked"):
    inputs.read_texts(vectors_config.VectorsConfig(
        input_file=str(table), output_file="o.jsonl", init_checkpoint="c",
        input_format="tsv", text_a_column="text"))


def test_an_input_without_texts_writes_an_empty_output(tmp_path, model):
  """An empty --input_file: an empty JSON lines file (GFile had created no
  file to move into place: a one-line error), and an empty array."""
  (tmp_path / "none.txt").write_text("")
  for name in ("out.jsonl", "out.npy"):
    config = vectors_config.VectorsConfig(
        input_file=str(tmp_path / "none.txt"),
        output_file=str(tmp_path / name), init_checkpoint=model["prefix"])
    assert api.extract_features(config) == 0
  assert (tmp_path / "out.jsonl").read_text() == ""
  assert np.load(tmp_path / "out.npy").shape[0] == 0


def test_a_sigterm_swallowed_inside_a_step_stops_before_the_next(
    tmp_path, model, monkeypatch):
  """SIGTERM raised inside TensorFlow's C++ during a batch can be lost
  there (it ran all 3,200 texts of a probe, 43 s, before its one line):
  the next batch does not start, and no output appears."""
  calls = []
  states = extractor.Extractor.states

  def swallowing(self, arrays):
    calls.append(1)
    if len(calls) == 1:  # (a second SIGTERM would end the process)
      try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10000):  # the handler runs at a bytecode boundary
          pass
      except errors.Terminated:
        pass  # as C++ catching it would
    return states(self, arrays)
  monkeypatch.setattr(extractor.Extractor, "states", swallowing)
  with signals.sigterm_raises(), pytest.raises(errors.Terminated):
    extract(tmp_path, model, "out.jsonl", batch_size=2)
  assert calls == [1], calls
  assert sorted(os.listdir(tmp_path)) == ["texts.txt"]


def test_a_directory_for_a_file_is_one_line_before_the_work(tmp_path, model,
                                                            monkeypatch):
  """A directory given as --output_file (it was the rename's OSError
  after every text was computed) or as --input_file."""
  monkeypatch.setattr(extractor.Extractor, "states",
                      lambda *a: pytest.fail("computed before the check"))
  (tmp_path / "texts.txt").write_text("a text\n")
  (tmp_path / "out").mkdir()
  for given, message in (
      (dict(input_file=str(tmp_path / "texts.txt"),
            output_file=str(tmp_path / "out")),
       f"{tmp_path}/out is a directory; the output is a file: give a file "
       "name"),
      (dict(input_file=str(tmp_path / "out"),
            output_file=str(tmp_path / "o.jsonl")),
       f"--input_file={tmp_path}/out: cannot read it (Is a directory)"),
      # (the tsv layout read a directory as no rows: an empty output)
      (dict(input_file=str(tmp_path / "out"), input_format="tsv",
            output_file=str(tmp_path / "o.jsonl")),
       f"--input_file={tmp_path}/out: cannot read it (Is a directory)")):
    with pytest.raises(ValueError) as e:
      api.extract_features(vectors_config.VectorsConfig(
          init_checkpoint=model["prefix"], **given))
    assert str(e.value) == message
  assert sorted(os.listdir(tmp_path)) == ["out", "texts.txt"]
  assert os.listdir(tmp_path / "out") == []
