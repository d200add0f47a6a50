"""run_ner.py's data: the three layouts (and their one-line errors naming
file and line), the predictions file, words -> pieces -> windows (a
word's label on its first piece, XLNet's left padding, <sep> and <cls> at
the end) and the windows' predictions stitched back, one per word; the
expectations are worked by hand."""
import numpy as np
import pytest

from xlnet.data import prepro_utils
from xlnet.finetuning.tagging import features
from xlnet.finetuning.tagging import layouts

pytestmark = pytest.mark.quick

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
"""

CONLLU = """# newdoc id = d1
# sent_id = 1
1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tdo\tdo\tAUX\tVBP\t_\t0\troot\t_\t_
2\tn't\tnot\tPART\tRB\t_\t1\tadvmod\t_\t_
2.1\tgo\t_\t_\t_\t_\t_\t_\t_\t_
3\tgo\tgo\tVERB\tVB\t_\t1\txcomp\t_\t_

# newdoc id = d2
1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_
"""


def _write(tmp_path, name, text):
  path = tmp_path / name
  path.write_text(text, encoding="utf-8")
  return str(path)


def test_conll2003_sentences_documents_and_lines(tmp_path):
  tagged = layouts.read(_write(tmp_path, "train.txt", CONLL))
  assert tagged.layout == "conll2003" and tagged.labelled
  got = [(s.words, s.tags, s.lines, s.document) for s in tagged.sentences]
  assert got == [
      (("EU", "rejects", "German"), ("B-ORG", "O", "B-MISC"), (3, 4, 5), 0),
      (("Peter", "Blackburn"), ("B-PER", "I-PER"), (7, 8), 0),
      (("BRUSSELS",), ("B-LOC",), (12,), 1)]
  assert tagged.num_words == 6


def test_columns_split_at_tabs_and_have_no_documents(tmp_path):
  text = "New York\tNNP\tB-LOC\nis\tVBZ\tO\n\n-DOCSTART-\t-X-\tO\n"
  tagged = layouts.read(_write(tmp_path, "a.tsv", text))
  assert tagged.layout == "columns"
  assert [(s.words, s.tags, s.document) for s in tagged.sentences] == [
      (("New York", "is"), ("B-LOC", "O"), None),
      (("-DOCSTART-",), ("O",), None)]  # a token in this layout


@pytest.mark.parametrize("column,tags", [
    ("upos", [("AUX", "PART", "VERB"), ("INTJ",)]),
    ("xpos", [("VBP", "RB", "VB"), ("UH",)])])
def test_conllu_words_documents_and_columns(tmp_path, column, tags):
  tagged = layouts.read(_write(tmp_path, "en.conllu", CONLLU),
                        conllu_column=column)
  assert [(s.words, s.tags, s.lines, s.document)
          for s in tagged.sentences] == [
              (("do", "n't", "go"), tags[0], (4, 5, 7), 0),
              (("Yes",), tags[1], (10,), 1)]


def test_unlabelled_files(tmp_path):
  tagged = layouts.read(_write(tmp_path, "raw.txt", "EU\nrejects\n\nit\n"))
  assert not tagged.labelled
  assert [s.tags for s in tagged.sentences] == [None, None]
  conllu = CONLLU.replace("AUX", "_").replace("PART", "_").replace(
      "VERB", "_").replace("INTJ", "_")
  assert not layouts.read(_write(tmp_path, "raw.conllu", conllu)).labelled


@pytest.mark.parametrize("name,text,layout,message", [
    ("a.txt", "EU NNP B-ORG\nrejects O\n", None,
     r":2: expected 3 columns \(as line 1\), got 2$"),
    ("a.conllu", "1\tdo\tdo\tAUX\tVB\t_\t0\troot\t_\t_\n\n"
     "1\tgo\tgo\t_\tVB\t_\t0\troot\t_\t_\n", None,
     ":3: no tag but line 1 has a tag: a file is labelled throughout or not "
     "at all$"),
    ("a.conllu", "1\tdo\tdo\tAUX\n", None,
     r":1: expected 10 tab-separated columns \(CoNLL-U\), got 4$"),
    ("a.conllu", "x\tdo\tdo\tAUX\tVB\t_\t0\troot\t_\t_\n", None,
     r":1: the ID column holds 'x', expected a word number$"),
    ("a.tsv", "\tO\n", None, r":1: the token \(first column\) is empty$"),
    ("a.txt", "\n\n-DOCSTART- -X- O\n", None,
     r": no tokens \(expected the conll2003 layout\)$"),
    ("a.txt", "EU O\n", "conll", r"^--file_layout=conll: value should be "
     "one of <conll2003|columns|conllu>$"),
])
def test_malformed_files_name_file_and_line(tmp_path, name, text, layout,
                                            message):
  path = _write(tmp_path, name, text)
  with pytest.raises(ValueError, match=message) as info:
    layouts.read(path, layout)
  assert "\n" not in str(info.value)
  if not message.startswith("^"):
    assert str(info.value).startswith(path)


def test_missing_and_binary_files(tmp_path):
  with pytest.raises(ValueError, match=r"/nope.txt: no such file$"):
    layouts.read(str(tmp_path / "nope.txt"))
  path = tmp_path / "bin.txt"
  path.write_bytes(b"EU \xff\xfe O\n")
  with pytest.raises(ValueError, match=r"bin.txt: not UTF-8 text \(invalid "
                     r"start byte at byte 3\)$"):
    layouts.read(str(path))


def test_predictions_keep_the_layout_and_add_a_column(tmp_path):
  tagged = layouts.read(_write(tmp_path, "dev.txt", CONLL))
  text = layouts.predictions_text(tagged, [["B-ORG", "O", "O"],
                                           ["B-PER", "I-PER"], ["B-LOC"]])
  assert text.splitlines() == [
      "-DOCSTART- -X- -X- O O", "",
      "EU NNP B-NP B-ORG B-ORG", "rejects VBZ B-VP O O",
      "German JJ B-NP B-MISC O", "",
      "Peter NNP B-NP B-PER B-PER", "Blackburn NNP I-NP I-PER I-PER", "",
      "-DOCSTART- -X- -X- O O", "", "BRUSSELS NNP B-NP B-LOC B-LOC"]
  tagged = layouts.read(_write(tmp_path, "dev.conllu", CONLLU))
  lines = layouts.predictions_text(tagged, [["AUX", "ADV", "VERB"],
                                            ["INTJ"]]).splitlines()
  assert lines[:3] == CONLLU.splitlines()[:3]
  assert lines[3].endswith("\tVBP\t_\t0\troot\t_\t_\tAUX")
  assert lines[4].endswith("\tRB\t_\t1\tadvmod\t_\t_\tADV")
  assert lines[5] == CONLLU.splitlines()[5]  # the empty node, copied
  with pytest.raises(ValueError, match=r"^1 predicted tags for the "
                     r"sentence of 3 words at .*dev.conllu:4$"):
    layouts.predictions_text(tagged, [["AUX"], ["INTJ", "X"]])


# Words whose "pieces" are their characters' codes: a word of n letters is
# n pieces, so windows can be worked by hand.
def _encode(word):
  return tuple(100 + ord(c) - ord("a") for c in word)


def _sentence(words, tags=None, document=None):
  words = tuple(words.split())
  return layouts.Sentence(words, tuple(tags.split()) if tags else None,
                          tuple(range(1, len(words) + 1)), document)


def test_a_window_is_left_padded_with_the_label_on_the_first_piece():
  sentence = _sentence("ab c de", "B-PER O B-LOC")
  [window] = features.make_windows([sentence], _encode,
                                   ["B-LOC", "B-PER", "O"], 9, 4)
  a = window.arrays
  sep, cls = prepro_utils.SEP_ID, prepro_utils.CLS_ID
  assert a["input_ids"].tolist() == [0, 0, 100, 101, 102, 103, 104, sep, cls]
  assert a["input_mask"].tolist() == [1, 1, 0, 0, 0, 0, 0, 0, 0]
  assert a["segment_ids"].tolist() == [4, 4, 0, 0, 0, 0, 0, 0, 2]
  assert a["label_ids"].tolist() == [0, 0, 1, 0, 2, 0, 0, 0, 0]
  assert a["label_weights"].tolist() == [0, 0, 1, 0, 1, 1, 0, 0, 0]
  assert window.owned == ((2, 0), (4, 1), (5, 2))


def test_unknown_or_missing_tags_weigh_nothing():
  [window] = features.make_windows([_sentence("a b", "B-X O")], _encode,
                                   ["O"], 6, 4)
  assert window.arrays["label_weights"].tolist() == [0, 0, 0, 1, 0, 0]
  [window] = features.make_windows([_sentence("a b")], _encode, ["O"], 6, 4)
  assert not window.arrays["label_weights"].any()


def test_windows_cut_between_words_and_each_word_is_scored_once():
  # Pieces per word 2, 3, 1, 4, 2; a window holds 6, starts >= 3 apart.
  lengths = [2, 3, 1, 4, 2]
  assert features.window_spans(lengths, 6, 3) == [(0, 3), (2, 4), (4, 5)]
  # Word 2 is in windows 0 and 1 with 0 pieces on its shorter side in
  # both: the earlier wins; word 3 only fits window 1.
  assert features.owners([(0, 3), (2, 4), (4, 5)], lengths) == [0, 0, 0, 1, 2]
  # The most context wins: word 1 has 1 piece either side in window 1.
  assert features.owners([(0, 3), (0, 3)], [1, 1, 1]) == [0, 0, 0]
  assert features.window_spans([1] * 5, 3, 1) == [(0, 3), (1, 4), (2, 5)]
  assert features.owners([(0, 3), (1, 4), (2, 5)], [1] * 5) == [0, 0, 1, 2, 2]
  # A stride beyond a window: the next window starts where one ended.
  assert features.window_spans([1] * 5, 2, 9) == [(0, 2), (2, 4), (4, 5)]


def test_long_sentence_windows_with_context_and_stitching():
  sentence = _sentence("ab cde f ghij kl", "B-A I-A O B-B I-B")
  labels = ["B-A", "B-B", "I-A", "I-B", "O"]
  windows = features.make_windows([sentence], _encode, labels, 8, 3)
  assert [w.owned for w in windows] == [((0, 0), (2, 1), (5, 2)),
                                        ((2, 3),), ((4, 4),)]
  # The last window (word 4 alone) is filled with word 3 as context,
  # unscored; word 2 (1 piece) no longer fits.
  last = windows[2].arrays
  assert last["input_ids"][:6].tolist() == [106, 107, 108, 109, 110, 111]
  assert last["label_weights"].nonzero()[0].tolist() == [4]
  n_class = len(labels)
  logits = np.zeros([3, 8, n_class], np.float32)
  # Each scored position votes for a tag; unscored positions vote for
  # another, which must never come out.
  logits[:, :, labels.index("O")] = 5.0
  for w, window in enumerate(windows):
    for position, word in window.owned:
      logits[w, position] = 0.0
      logits[w, position, word % n_class] = 9.0
  tags, word_logits = features.stitch(windows, logits, [sentence], labels)
  assert tags == [[labels[i % n_class] for i in range(5)]]
  assert word_logits[0].shape == (5, n_class)


def test_document_context_reads_the_neighbours_and_scores_its_own():
  doc = [_sentence("ab c", "B-A O", 0), _sentence("de", "B-A", 0),
         _sentence("f", "O", 1)]
  labels = ["B-A", "O"]
  alone = features.make_windows(doc, _encode, labels, 8, 4)
  assert alone[1].arrays["input_ids"][:5].tolist() == [0, 0, 0, 0, 103]
  with_doc = features.make_windows(doc, _encode, labels, 8, 4, True)
  # Sentence 1's window reads sentence 0 (ab c) before it, not sentence 2
  # (another document); only its own word is scored.
  ids = with_doc[1].arrays["input_ids"].tolist()
  assert ids == [0, 100, 101, 102, 103, 104, prepro_utils.SEP_ID,
                 prepro_utils.CLS_ID]
  assert with_doc[1].owned == ((4, 0),)
  assert with_doc[1].arrays["label_weights"].nonzero()[0].tolist() == [4]
  assert with_doc[2].arrays["input_ids"][:5].tolist() == [0, 0, 0, 0, 0]


def test_a_word_of_no_piece_is_unk_and_a_long_word_is_cut():
  class Pieces:  # a SentencePiece stand-in: "x" encodes to nothing
    def encode_as_pieces(self, text):
      return [] if text == "x" else ["\u2581" + text]

    def piece_to_id(self, piece):
      return 7

  encode = features.Encoder(Pieces(), uncased=False)
  assert encode("x") == (prepro_utils.UNK_ID,)
  [window] = features.make_windows([_sentence("abcdefgh")], _encode, ["O"],
                                   5, 2)
  assert window.arrays["input_ids"].tolist() == [100, 101, 102,
                                                 prepro_utils.SEP_ID,
                                                 prepro_utils.CLS_ID]


def test_stitching_refuses_a_word_scored_twice():
  sentence = _sentence("a b")
  [window] = features.make_windows([sentence], _encode, ["O"], 6, 4)
  twice = features.Window(0, window.owned + window.owned[:1], window.arrays)
  with pytest.raises(ValueError, match="a word is scored in 1 or 2 windows"):
    features.stitch([twice], np.zeros([1, 6, 1]), [sentence], ["O"])
