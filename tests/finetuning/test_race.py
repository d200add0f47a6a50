"""RACE: reading, hand-worked option packing, accuracy by level, the head
against NumPy, and bad input."""
import numpy as np
import pytest
import tensorflow as tf

from tests import checkpoint_fixtures as ckpt_fx
from tests import np_reference
from tests import qa_fixtures
from xlnet.data import prepro_utils
from xlnet.finetuning.race import features as race_features
from xlnet.finetuning.race import head as race_head

SEP, CLS = prepro_utils.SEP_ID, prepro_utils.CLS_ID


class WordSp:
  """A SentencePiece stand-in: one piece per word, id = 100 + word number
  (c1 -> 101, q2 -> 202, o3 -> 303)."""

  def encode_as_pieces(self, text):
    return [prepro_utils.SPIECE_UNDERLINE + w for w in text.split()]

  def piece_to_id(self, piece):
    word = piece.lstrip(prepro_utils.SPIECE_UNDERLINE)
    return 100 * "cqo".index(word[0]) + 100 + int(word[1:])


def _race_file(article, questions):
  """questions: list of (question, [options], answer letter)."""
  return {"article": article, "questions": [q for q, _, _ in questions],
          "options": [o for _, o, _ in questions],
          "answers": [a for _, _, a in questions], "id": "x"}


@pytest.mark.quick
def test_option_packing_hand_worked():
  articles = ["c1 c2 c3 c4 c5 c6 c7 c8", "c1 c2"]
  examples = [
      race_features.RaceExample("a", 0, "q1 _ q2", ("o1", "o2 o3",
                                                    "o4 o5 o6 o7", "o8"), 2,
                             "high"),
      race_features.RaceExample("b", 1, "q3", ("o1", "o2", "o3", "o4"), 0,
                                "middle")]
  converter = race_features.FeatureConverter(WordSp(), articles,
                                             max_seq_length=10, max_qa_length=4,
                                             uncased=False)
  first = converter.convert(examples[0])
  ids = first["input_ids"].reshape(4, 10).tolist()
  # qa = question with "_" filled; the context keeps 10 - 3 - len(qa).
  assert ids[0] == [101, 102, 103, 104, SEP, 201, 301, 202, SEP, CLS]
  assert ids[1] == [101, 102, 103, SEP, 201, 302, 303, 202, SEP, CLS]
  # 6 qa pieces: the last 4 are kept.
  assert ids[2] == [101, 102, 103, SEP, 305, 306, 307, 202, SEP, CLS]
  assert ids[3] == [101, 102, 103, 104, SEP, 201, 308, 202, SEP, CLS]
  assert first["segment_ids"].reshape(4, 10)[1].tolist() == [
      0, 0, 0, 0, 1, 1, 1, 1, 1, 2]
  assert not first["input_mask"].any()
  assert first["label_ids"].tolist() == [[2]]
  # The release's record format: float mask, is_real_example (no index).
  assert first["is_real_example"].tolist() == [[1]]
  assert {k: v.dtype.name for k, v in first.items()} == {
      "input_ids": "int64", "input_mask": "float32", "segment_ids": "int64",
      "label_ids": "int64", "is_real_example": "int64"}

  second = converter.convert(examples[1])
  ids = second["input_ids"].reshape(4, 10).tolist()
  # No blank: question + " " + option; left padding. Every option gets a
  # fresh context: nothing of option j leaks into option j+1.
  for j in range(4):
    assert ids[j] == [0, 0, 0, 101, 102, SEP, 203, 301 + j, SEP, CLS]
  assert second["segment_ids"].reshape(4, 10)[0].tolist() == [
      4, 4, 4, 0, 0, 0, 1, 1, 1, 2]
  assert second["input_mask"].reshape(4, 10)[3].tolist() == [1] * 3 + [0] * 7


def test_read_race_layout_levels_and_labels(tmp_path):
  root = qa_fixtures.write_race_dir(tmp_path, {
      "train/middle/2.txt": _race_file("m two", [("q?", ["a", "b", "c", "d"],
                                                  "B")]),
      "train/middle/1.txt": _race_file("m one", [
          ("q1", ["a", "b", "c", "d"], "A"), ("q2", ["a", "b", "c", "d"],
                                              "D")]),
      "train/high/9.txt": _race_file("h nine", [("q", ["a", "b", "c", "d"],
                                                 "C")]),
  })
  articles, examples = race_features.read_race_examples(root, "train",
                                                     race_features.LEVELS)
  assert articles == ["m one", "m two", "h nine"]
  assert [(e.example_id, e.article_index, e.label, e.level)
          for e in examples] == [("middle/1.txt/0", 0, 0, "middle"),
                                 ("middle/1.txt/1", 0, 3, "middle"),
                                 ("middle/2.txt/0", 1, 1, "middle"),
                                 ("high/9.txt/0", 2, 2, "high")]
  _, high = race_features.read_race_examples(
      root, "train", race_features.race_levels(True, False))
  assert [e.level for e in high] == ["high"]
  with pytest.raises(ValueError, match="exclude each other"):
    race_features.race_levels(True, True)
  with pytest.raises(ValueError, match=r"--data_dir=.*: no files match "
                     r".*dev/middle/\*\.txt \(expected the RACE layout"):
    race_features.read_race_examples(root, "dev", race_features.LEVELS)


@pytest.mark.parametrize("content,match", [
    ("{oops", r"dev/high/bad.txt: not valid JSON"),
    ('{"article": "a", "questions": ["q"], "options": [["a", "b", "c"]], '
     '"answers": ["A"]}',
     r"bad.txt: question 0: expected 4 option strings, got 3"),
    ('{"article": "a", "questions": ["q", "r"], "options": [["a", "b", "c", '
     '"d"], ["a", "b", "c", "d", "e"]], "answers": ["A", "B"]}',
     r"bad.txt: question 1: expected 4 option strings, got 5"),
    ('{"article": "a", "questions": ["q"], "options": [["a", "b", "c", '
     '"d"]], "answers": ["E"]}',
     r"question 0: the answer must be one of \['A', 'B', 'C', 'D'\], "
     r"got 'E'"),
    ('{"article": "a", "questions": ["q"], "options": [], "answers": []}',
     r"bad.txt: questions, options and answers differ in length"),
    ('{"questions": [], "options": [], "answers": []}',
     r"bad.txt: missing 'article'"),
])
def test_malformed_race_files(tmp_path, content, match):
  path = tmp_path / "dev" / "high" / "bad.txt"
  path.parent.mkdir(parents=True)
  path.write_text(content)
  with pytest.raises(ValueError, match=match):
    race_features.read_race_examples(str(tmp_path), "dev", ("high",))


@pytest.mark.quick
def test_accuracy_by_level_hand_worked():
  ex = [race_features.RaceExample(str(i), 0, "q", ("a", "b", "c", "d"), label,
                                  level)
        for i, (label, level) in enumerate([(0, "middle"), (1, "middle"),
                                            (2, "high"), (3, "high"),
                                            (3, "high")])]
  logits = [[5, 0, 0, 0], [5, 0, 0, 0], [0, 0, 9, 1], [0, 0, 0, 2],
            [1, 0, 0, 0]]
  # Results come in record order, which is the order of the questions.
  results = [{"logits": np.array(row)} for row in logits]
  got = race_features.accuracy_by_level(ex, results)
  assert got == {"accuracy_middle": 0.5, "num_middle": 2,
                 "accuracy_high": pytest.approx(2 / 3), "num_high": 3,
                 "accuracy": pytest.approx(3 / 5), "num_examples": 5}
  with pytest.raises(ValueError, match="results for 4 of 5 questions"):
    race_features.accuracy_by_level(ex, results[:4])


@pytest.mark.quick
@pytest.mark.tf_version
def test_race_head_matches_numpy(tmp_path):
  seq_len, bsz = 6, 2
  d = qa_fixtures.TINY_CONFIG["d_model"]
  shapes = dict(qa_fixtures.backbone_shapes(), **{
      "model/sequnece_summary/summary/kernel": [d, d],
      "model/sequnece_summary/summary/bias": [d],
      "logits/dense/kernel": [d, 1], "logits/dense/bias": [1]})
  ckpt = str(tmp_path / "race.ckpt")
  params = ckpt_fx.random_checkpoint(ckpt, shapes, seed=4)
  rng = np.random.default_rng(0)
  input_ids = rng.integers(9, 1000, [bsz, 4 * seq_len]).astype(np.int32)
  segment_ids = np.tile([4, 0, 0, 1, 1, 2], [bsz, 4]).astype(np.int32)
  input_mask = (segment_ids == 4).astype(np.float32)
  labels = np.array([3, 1], np.int32)
  model = qa_fixtures.tiny_model(tmp_path)
  with tf.Graph().as_default():
    feats = dict(input_ids=tf.constant(input_ids),
                 segment_ids=tf.constant(segment_ids),
                 input_mask=tf.constant(input_mask),
                 label_ids=tf.constant(labels))
    logits = race_head.get_race_logits(
        model.xlnet_config, model.run_config(is_training=False), feats)
    loss = race_head.race_loss(logits, feats["label_ids"])
    variables = {v.op.name: v.shape.as_list()
                 for v in tf.compat.v1.global_variables()}
    with tf.compat.v1.Session() as sess:
      tf.compat.v1.train.Saver().restore(sess, ckpt)
      got_logits, got_loss = sess.run([logits, loss])
  assert variables == shapes

  c = qa_fixtures.TINY_CONFIG
  want = np.zeros([bsz, 4])
  for b in range(bsz):
    for j in range(4):
      cols = slice(j * seq_len, (j + 1) * seq_len)
      hidden, _ = np_reference.forward(
          params, c["n_layer"], c["d_model"], c["n_head"], c["d_head"],
          c["d_inner"], c["ff_activation"], c["untie_r"],
          inp_k=input_ids[b:b + 1, cols].T,
          seg_id=segment_ids[b:b + 1, cols].T,
          input_mask=input_mask[b:b + 1, cols].T.astype(np.float64))
      summary = np.tanh(hidden[-1, 0] @ params[
          "model/sequnece_summary/summary/kernel"] + params[
              "model/sequnece_summary/summary/bias"])
      want[b, j] = (summary @ params["logits/dense/kernel"] +
                    params["logits/dense/bias"])[0]
  np.testing.assert_allclose(got_logits, want, rtol=1e-4, atol=1e-4)
  log_prob = want - np.log(np.exp(want).sum(-1, keepdims=True))
  np.testing.assert_allclose(got_loss, -log_prob[[0, 1], labels].mean(),
                             rtol=1e-4, atol=1e-4)
