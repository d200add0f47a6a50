"""Tests of SQuAD reading, piece alignment, windows and features.

The checks are independent of the code under test: pieces are re-encoded
here with SentencePiece, answers are known by construction, and the layout
is checked position by position against its definition.
"""
import unicodedata

import numpy as np
import pytest
import sentencepiece as spm

from tests import qa_fixtures
from tests.data_helpers import train_tiny_spm
from xlnet.data import prepro_utils
from xlnet.finetuning.squad import alignment as squad_alignment
from xlnet.finetuning.squad import features as squad_features

U = prepro_utils.SPIECE_UNDERLINE


@pytest.fixture(scope="module")
def sp_model():
  return spm.SentencePieceProcessor(model_file=train_tiny_spm())


def _pieces(sp_model, text, lower):
  return prepro_utils.encode_pieces(
      sp_model, prepro_utils.preprocess_text(text, lower=lower))


def _as_sp_text(text, lower):
  """What the pieces of `text` spell: normalized, NFKC, spaces kept."""
  return unicodedata.normalize(
      "NFKC", prepro_utils.preprocess_text(text, lower=lower))


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("text", [
    "Café naïve 東京タワー 😀 emoji  runs",
    "  \tﬁsh ① x\u200dy \u00a0 e\u0301cole man\u0303ana  ",
    "In 1999, the ``cat'' said 2,000 yen.",
    "Zoë's\tnew\n\n  ΟΔΟΣ car İstanbul Straße",
    "한국어 \u1112\u1161\u11ab 끝",  # precomposed and decomposed Hangul
    "\u2581weird \u2581 text",  # the piece marker itself in the text
])
def test_every_piece_maps_to_the_characters_it_spells(sp_model, text, lower):
  pieces = _pieces(sp_model, text, lower)
  starts, ends = squad_alignment.align_pieces(text, pieces, lower)
  assert len(starts) == len(pieces)
  assert all(np.diff(starts) >= 0) and all(ends >= starts)
  for piece, start, end in zip(pieces, starts, ends):
    spelled = piece.replace(U, " ").strip()
    original = text[start:end]
    if not spelled:  # a lone '▁' covers no character
      assert start == end
      continue
    # The original characters normalize to exactly what the piece spells.
    assert _as_sp_text(original, lower) == spelled, (piece, original)
  # Every non-space character that survives normalization is in a piece.
  covered = np.zeros(len(text), bool)
  for start, end in zip(starts, ends):
    covered[start:end] = True
  for i, c in enumerate(text):
    if not covered[i] and _as_sp_text(c, lower).strip() and c != U:
      raise AssertionError(f"character {i} {c!r} of {text!r} is in no piece")


@pytest.mark.parametrize("lower", [False, True])
def test_normalized_view_is_what_sentencepiece_spells(sp_model, lower):
  """Character by character normalization reproduces the pieces' text, so
  ordinary text aligns in one pass (mismatches only take a slower path)."""
  text = ("  Café\tnaïve ``Zoë's'' e\u0301cole 東京タワー 😀  ﬁsh ① "
          "1999, 2,000\u00a0(note) \n Straße İstanbul x\u200dy ")
  key, src_start, src_end = squad_alignment._char_keys(text, lower)  # pylint: disable=protected-access
  spelled = "".join(_pieces(sp_model, text, lower)).replace(U, " ").strip()
  assert key == spelled
  for k, c in enumerate(key):
    if c != " ":
      assert _as_sp_text(text[src_start[k]:src_end[k]], lower).find(c) >= 0


@pytest.mark.quick
def test_char_span_to_pieces_and_back(sp_model):
  text = "Tokyo  (東京) hosted the 1964, Olympics."
  paragraph = squad_alignment.tokenize_paragraph(
      sp_model, squad_alignment.piece_vocab(sp_model), text, False)
  pieces = _pieces(sp_model, text, False)
  for answer in ["(東京)", "the 1964, Olympics", "Tokyo", "Olympics."]:
    start = text.index(answer)
    first, last = squad_alignment.char_span_to_pieces(paragraph, start,
                                                  start + len(answer))
    assert "".join(pieces[first:last + 1]).replace(U, " ").strip() == answer
    got, s, e = squad_alignment.piece_span_text(text, paragraph, first, last)
    assert (got, s, e) == (answer, start, start + len(answer))
  assert squad_alignment.char_span_to_pieces(paragraph, 5, 7) is None  # spaces


@pytest.mark.quick
def test_doc_windows_and_max_context_hand_worked():
  # 10 pieces, windows of 4, stride 3: [0,4) [3,7) [6,10).
  windows = squad_features.doc_windows(10, 4, 3)
  assert windows == [(0, 4), (3, 4), (6, 4)]
  # Piece 3: min(3,0) in w0, min(0,3) in w1 -> tie, first wins; piece 4:
  # min(1,2)=1 in w1 only; piece 6: w1 min(3,0)=0, w2 min(0,3)=0 -> w1.
  masks = squad_features.max_context_masks(windows, 10)
  assert masks[0].tolist() == [True, True, True, True]
  assert masks[1].tolist() == [False, True, True, True]
  assert masks[2].tolist() == [False, True, True, True]
  # The last window is shorter; the stride never exceeds the window.
  assert squad_features.doc_windows(5, 4, 8) == [(0, 4), (4, 1)]
  assert squad_features.doc_windows(0, 4, 2) == [(0, 0)]
  assert squad_features.doc_windows(4, 4, 2) == [(0, 4)]


@pytest.mark.quick
def test_window_features_layout_hand_worked():
  paragraph = squad_alignment.TokenizedParagraph(
      np.array([11, 12, 13, 14, 15], np.int32), None, None)
  feats = squad_features.window_features(paragraph, [21, 22], [(1, 3)], 10)
  sep, cls = prepro_utils.SEP_ID, prepro_utils.CLS_ID
  assert feats["input_ids"][0].tolist() == [12, 13, 14, sep, 21, 22, sep, cls,
                                            0, 0]
  assert feats["segment_ids"][0].tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 3, 3]
  assert feats["p_mask"][0].tolist() == [0, 0, 0, 1, 1, 1, 1, 0, 1, 1]
  assert feats["input_mask"][0].tolist() == [0] * 8 + [1, 1]
  assert feats["cls_index"].tolist() == [[7]]
  targets = squad_features.window_targets((2, 3), [(1, 3), (3, 3)],
                                          np.array([[7], [7]]))
  assert targets["start_positions"].tolist() == [[1], [7]]
  assert targets["end_positions"].tolist() == [[2], [7]]
  assert targets["is_impossible"].tolist() == [[0], [1]]
  impossible = squad_features.window_targets(None, [(1, 3)], np.array([[7]]))
  assert impossible["start_positions"].tolist() == [[7]]
  assert impossible["is_impossible"].tolist() == [[1]]


@pytest.mark.parametrize("uncased", [False, True])
def test_features_of_a_tricky_set(sp_model, tmp_path, uncased):
  """Every answer decodes from its feature span; windows cover every piece;
  p_mask is 0 exactly on the paragraph and <cls>."""
  rng = np.random.default_rng(7)
  data = qa_fixtures.synthetic_squad(rng, 12, 6)
  path = qa_fixtures.write_json(tmp_path / "train.json", {"data": data})
  paragraphs, examples, skipped = squad_features.read_squad_examples(path, True)
  assert not skipped and len(examples) == 72
  max_seq_length, max_query_length, doc_stride = 40, 8, 7

  train = squad_features.FeatureConverter(sp_model, paragraphs, max_seq_length,
                                          max_query_length, doc_stride, uncased,
                                          is_training=True)
  spans = squad_features.FeatureConverter(sp_model, paragraphs, max_seq_length,
                                          max_query_length, doc_stride, uncased,
                                          is_training=False)
  at_border = answered = 0
  for index, example in enumerate(examples):
    feats = train.convert(index, example)
    spans.convert(index, example)
    windows = [w for w in spans.windows if w.example_index == index]
    text = paragraphs[example.paragraph_index]
    pieces = _pieces(sp_model, text, uncased)
    ids = [sp_model.piece_to_id(p) for p in pieces]
    question = _pieces(sp_model, example.question_text, uncased)
    q_ids = [sp_model.piece_to_id(p) for p in question][:max_query_length]
    covered = set()
    global_span = set()
    for w, window in enumerate(windows):
      s, n = window.doc_start, window.doc_len
      covered.update(range(s, s + n))
      cls = n + len(q_ids) + 2
      expect_ids = (ids[s:s + n] + [prepro_utils.SEP_ID] + q_ids +
                    [prepro_utils.SEP_ID, prepro_utils.CLS_ID])
      assert feats["input_ids"][w].tolist() == (
          expect_ids + [0] * (max_seq_length - len(expect_ids)))
      open_positions = np.flatnonzero(feats["p_mask"][w] == 0).tolist()
      assert open_positions == list(range(n)) + [cls]
      assert feats["cls_index"][w, 0] == cls
      start, end = feats["start_positions"][w, 0], feats["end_positions"][w, 0]
      if example.is_impossible or feats["is_impossible"][w, 0]:
        assert start == end == cls
        continue
      answered += 1
      at_border += start == 0 or end == n - 1
      answer = text[example.start_char:example.end_char]
      spelled = "".join(pieces[s + start:s + end + 1]).replace(U, " ").strip()
      assert spelled == _as_sp_text(answer, uncased)
      paragraph = train.paragraph(example.paragraph_index)
      assert squad_alignment.piece_span_text(text, paragraph, s + start,
                                         s + end)[0] == answer
      global_span.add((s + start, s + end))
    assert covered == set(range(len(pieces))) or not pieces
    if not example.is_impossible:
      # One answer span, inside every window marked answerable, and windows
      # that hold the whole span are never marked impossible.
      assert len(global_span) == 1
      (first, last), = global_span
      for w, window in enumerate(windows):
        inside = (window.doc_start <= first and
                  last < window.doc_start + window.doc_len)
        assert feats["is_impossible"][w, 0] == (not inside)
  assert answered > 50 and at_border > 5


def test_read_counts_and_skips_misplaced_answers(tmp_path, caplog):
  context = "Alpha beta gamma."
  data = [{"paragraphs": [{"context": context, "qas": [
      {"id": "ok", "question": "q?", "answers": [
          {"text": " beta ", "answer_start": 5}]},
      {"id": "moved", "question": "q?", "answers": [
          {"text": "beta", "answer_start": 0}]},
      {"id": "past", "question": "q?", "answers": [
          {"text": "gamma", "answer_start": 40}]},
      {"id": "none", "question": "q?", "answers": [], "is_impossible": True},
  ]}]}]
  path = qa_fixtures.write_json(tmp_path / "t.json", {"data": data})
  paragraphs, examples, skipped = squad_features.read_squad_examples(path, True)
  assert paragraphs == [context]
  assert skipped == ["moved", "past"]
  assert [(e.qas_id, e.start_char, e.end_char, e.is_impossible,
           e.raw_end_char) for e in examples] == [
               ("ok", 6, 10, False, 11), ("none", None, None, True, None)]
  assert "skipped 2 of 4 questions" in caplog.text
  # Prediction reads every question and ignores answers.
  _, examples, skipped = squad_features.read_squad_examples(path, False)
  assert [e.qas_id for e in examples] == ["ok", "moved", "past", "none"]
  assert not skipped


@pytest.mark.parametrize("content,match", [
    ("{not json", r"--train_file=.*bad.json: not valid JSON"),
    ('{"version": "v2.0"}', r"expected a SQuAD JSON object with a 'data'"),
    ('{"data": [{"paragraphs": [{"qas": []}]}]}',
     r"bad.json: data\[0\].paragraphs\[0\]: missing 'context'"),
    ('{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "q7", '
     '"answers": []}]}]}]}', r"bad.json: question q7: missing 'question'"),
    ('{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "q8", '
     '"question": "?", "answers": [{"text": "c"}]}]}]}]}',
     r"question q8: missing 'answer_start'"),
    ('{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "q9", '
     '"question": "?", "answers": []}]}]}]}',
     r"question q9: no answers and is_impossible is not true"),
    ('{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "d", '
     '"question": "?", "is_impossible": true}, {"id": "d", "question": "?",'
     ' "is_impossible": true}]}]}]}', r"question d: duplicate question id"),
    ('{"data": [{"paragraphs": [{"context": "c", "qas": []}]}]}',
     r"--train_file=.*bad.json: no questions found"),
])
def test_malformed_files_name_file_and_question(tmp_path, content, match):
  path = tmp_path / "bad.json"
  path.write_text(content)
  with pytest.raises(ValueError, match=match):
    squad_features.read_squad_examples(str(path), True)


def test_missing_file_names_the_flag(tmp_path):
  with pytest.raises(ValueError, match=r"--predict_file=.*nope.json: file "
                     "not found"):
    squad_features.read_squad_examples(str(tmp_path / "nope.json"), False,
                                       "predict_file")


def _hand_paragraph(spans):
  """TokenizedParagraph of hand-made pieces: spans = [(start, end)]."""
  starts, ends = zip(*spans)
  return squad_alignment.TokenizedParagraph(np.arange(len(spans)),
                                        np.array(starts), np.array(ends))


@pytest.mark.parametrize("spans,answer,want_release,want_trim", [
    # "alpha beta gamma", answer "beta " (6, 11): the release mapped the
    # answer's last character, the space, to the '▁' that starts "▁gamma".
    ([(0, 5), (6, 10), (11, 16)], (6, 10, 11), (1, 2), (1, 1)),
    # No trailing whitespace: both end on "beta".
    ([(0, 5), (6, 10), (11, 16)], (6, 10, 10), (1, 1), (1, 1)),
    # "beta (y)" as "▁beta" "▁" "(" "y" ")": the space is the lone '▁'.
    ([(0, 4), (5, 5), (5, 6), (6, 7), (7, 8)], (0, 4, 5), (0, 1), (0, 0)),
    # "alpha beta ": nothing follows, the answer ends on its last piece.
    ([(0, 5), (6, 10)], (6, 10, 11), (1, 1), (1, 1)),
])
def test_gold_end_of_an_answer_ending_in_whitespace(spans, answer,
                                                     want_release, want_trim):
  example = squad_features.SquadExample("q", "?", 0, answer[0], answer[1],
                                        False, answer[2])
  for trim, want in ((False, want_release), (True, want_trim)):
    converter = squad_features.FeatureConverter(
        None, ["-"], 16, 4, 4, False, is_training=True,
        trim_answer_whitespace=trim)
    assert converter.gold_pieces(_hand_paragraph(spans), example) == want


def test_lcs_length_against_dynamic_programming():
  assert squad_alignment.lcs_length("ABCBDAB", "BDCABA") == 4
  assert squad_alignment.lcs_length("", "abc") == 0
  rng = np.random.default_rng(0)
  for _ in range(200):
    a = "".join(rng.choice(list("abc "), int(rng.integers(0, 12))))
    b = "".join(rng.choice(list("abc "), int(rng.integers(0, 12))))
    table = np.zeros((len(a) + 1, len(b) + 1), int)
    for i, x in enumerate(a):
      for j, y in enumerate(b):
        table[i + 1, j + 1] = (table[i, j] + 1 if x == y else
                               max(table[i, j + 1], table[i + 1, j]))
    assert squad_alignment.lcs_length(a, b) == table[-1, -1], (a, b)


@pytest.mark.parametrize("text,pieces,aligned", [
    ("Café au lait", [U + "Caf", "e", U + "au", U + "lait"], True),
    ("abcde", [U + "abcde"], True),
    ("abcde", [U + "abcd", "X"], True),  # 4 of 5 characters: 80%
    ("abcde", [U + "abc", "XY"], False),  # 3 of 5
    # "ﬁ" alone normalizes to "fi", two characters: it never matches.
    ("ﬁﬁﬁﬁ ﬁﬁﬁ ﬁﬁ ok", [U + "fifififi", U + "fififi", U + "fifi", U + "ok"],
     False),
    ("", [], False),
])
def test_release_alignment_check_hand_worked(text, pieces, aligned):
  assert squad_alignment.release_aligns(text, pieces, lower=False) == aligned


def test_unaligned_paragraphs_are_dropped_unless_kept(sp_model, tmp_path):
  data = [{"paragraphs": [
      {"context": "ﬁﬁﬁﬁ ﬁﬁﬁ ﬁﬁ ok", "qas": [
          {"id": "q0", "question": "which?", "answers": [
              {"text": "ok", "answer_start": 12}]},
          {"id": "q1", "question": "none?", "answers": [],
           "is_impossible": True}]},
      {"context": "the river said over", "qas": [
          {"id": "q2", "question": "who?", "answers": [
              {"text": "river", "answer_start": 4}]}]}]}]
  path = qa_fixtures.write_json(tmp_path / "t.json", {"data": data})
  paragraphs, examples, _ = squad_features.read_squad_examples(path, True)
  kept = {}
  for keep in (False, True):
    converter = squad_features.FeatureConverter(
        sp_model, paragraphs, 32, 8, 8, False, is_training=True,
        keep_unaligned=keep)
    kept[keep] = sum(len(f["input_ids"])
                     for f in converter.iter_features(examples))
    assert converter.unaligned == ([] if keep else ["q0", "q1"])
  assert (kept[False], kept[True]) == (1, 3)  # one window per question
  # Prediction drops them as well (see test_squad_predict.py for answers).
  for keep, windows in ((False, 1), (True, 3)):
    predict = squad_features.FeatureConverter(sp_model, paragraphs, 32, 8, 8,
                                              False, is_training=False,
                                              keep_unaligned=keep)
    assert sum(len(f["input_ids"])
               for f in predict.iter_features(examples)) == windows
