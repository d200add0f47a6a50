"""Tag schemes and conlleval's figures against hand-worked examples: the
chunks of IOB1, IOB2 and IOBES tags (an I- without a B-, a type change
inside a run of I-, IOBES's S- and E-), the scheme a file is written in,
conversions between schemes, and precision, recall, F1 and accuracy,
overall and per type, counted by hand below."""
import pytest

from xlnet.finetuning.tagging import schemes

pytestmark = pytest.mark.quick


@pytest.mark.parametrize("tags,expected", [
    # IOB2: B- starts every chunk.
    ("B-PER I-PER O B-LOC", [("PER", 0, 2), ("LOC", 3, 4)]),
    # IOB1: an I- after O starts a chunk; B- splits two adjacent chunks.
    ("I-PER I-PER B-PER O I-LOC", [("PER", 0, 2), ("PER", 2, 3),
                                   ("LOC", 4, 5)]),
    # conlleval: a new type ends the chunk and starts another, B- or not.
    ("B-PER I-LOC I-LOC", [("PER", 0, 1), ("LOC", 1, 3)]),
    ("I-ORG I-MISC", [("ORG", 0, 1), ("MISC", 1, 2)]),
    # I- without a B- at the sentence's start.
    ("I-LOC", [("LOC", 0, 1)]),
    # IOBES: S- is a chunk of one; E- ends; E- after O starts one.
    ("S-PER S-PER B-LOC E-LOC B-LOC E-LOC O", [
        ("PER", 0, 1), ("PER", 1, 2), ("LOC", 2, 4), ("LOC", 4, 6)]),
    ("O E-PER O", [("PER", 1, 2)]),
    ("B-PER I-PER", [("PER", 0, 2)]),
    ("E-PER I-PER", [("PER", 0, 1), ("PER", 1, 2)]),
    ("S-PER I-PER E-PER", [("PER", 0, 1), ("PER", 1, 3)]),
    ("B-PER S-PER", [("PER", 0, 1), ("PER", 1, 2)]),
    ("B-PER E-PER B-PER", [("PER", 0, 2), ("PER", 2, 3)]),
    ("O O", []),
])
def test_chunks(tags, expected):
  assert schemes.chunks(tags.split()) == expected


@pytest.mark.parametrize("sentences,scheme", [
    (["B-PER I-PER O", "O B-LOC"], "iob2"),
    (["B-PER I-PER O", "O I-LOC"], "iob1"),
    (["I-PER B-PER"], "iob1"),
    (["B-PER E-PER", "O"], "iobes"),
    (["S-PER"], "iobes"),
    (["NN VB DT"], "none"),
    (["O O"], "none"),
    (["B-PER X"], "none"),
])
def test_detect(sentences, scheme):
  assert schemes.detect(s.split() for s in sentences) == scheme


@pytest.mark.parametrize("tags,scheme,expected", [
    ("B-PER I-PER B-PER O B-LOC", "iob1", "I-PER I-PER B-PER O I-LOC"),
    ("B-PER I-PER B-PER O B-LOC", "iobes", "B-PER E-PER S-PER O S-LOC"),
    ("I-PER I-PER B-PER O I-LOC", "iob2", "B-PER I-PER B-PER O B-LOC"),
    ("B-PER I-LOC I-LOC", "iob2", "B-PER B-LOC I-LOC"),
    ("S-PER B-ORG I-ORG E-ORG", "iob1", "I-PER I-ORG I-ORG I-ORG"),
    # An I- with no B- (after O) is written as the scheme writes a start.
    ("O I-MISC I-MISC", "iobes", "O B-MISC E-MISC"),
    ("NN VB", "none", "NN VB"),
])
def test_convert(tags, scheme, expected):
  assert schemes.convert(tags.split(), scheme) == expected.split()


@pytest.mark.parametrize("labels,scheme", [
    (["B-LOC", "B-PER", "I-LOC", "I-PER", "O"], "iob2"),
    (["I-LOC", "O"], "iob2"),  # IOB1's tags read the same chunks
    (["B-X", "E-X", "I-X", "O", "S-X"], "iobes"),
    (["ADJ", "NOUN", "O"], "none"), (["O"], "none")])
def test_scheme_of_labels(labels, scheme):
  assert schemes.scheme_of_labels(labels) == scheme


def test_check_tags_names_the_place():
  schemes.check_tags(["B-PER", "I-PER", "O"], "iob2", ["f:1", "f:2", "f:3"])
  schemes.check_tags(["NN", "B-X"], "none", ["f:1", "f:2"])
  with pytest.raises(ValueError, match=r"^f:2: tag 'S-PER' is not of the "
                     r"iob2 scheme \(O or B-TYPE, I-TYPE\); give "
                     r"--tag_scheme$"):
    schemes.check_tags(["B-PER", "S-PER"], "iob2", ["f:1", "f:2"])
  with pytest.raises(ValueError, match=r"^f:1: tag 'PER' is not of the "
                     r"iobes scheme"):
    schemes.check_tags(["PER"], "iobes", ["f:1"])


def test_score_by_hand():
  gold = ["B-PER I-PER O B-LOC".split(), "I-ORG O I-LOC I-LOC".split()]
  pred = ["B-PER I-PER O B-ORG".split(), "B-ORG O B-LOC I-LOC".split()]
  got = schemes.score(gold, pred, "iob2")
  # Gold chunks: PER 0-2, LOC 3; ORG 0, LOC 2-4 (I- starts a chunk).
  # Predicted: PER 0-2, ORG 3; ORG 0, LOC 2-4. Correct: PER, ORG, LOC 2-4.
  assert (got["num_gold"], got["num_predicted"], got["num_correct"]) == (
      4, 4, 3)
  assert got["precision"] == got["recall"] == got["f1"] == 0.75
  # Tokens with the gold string: 3 of 4, then O and I-LOC: 5 of 8.
  assert got["accuracy"] == 5 / 8 and got["num_tokens"] == 8
  assert got["per_type"] == {
      "LOC": dict(precision=1.0, recall=0.5, f1=2 / 3, num_gold=2,
                  num_predicted=1),
      "ORG": dict(precision=0.5, recall=1.0, f1=2 / 3, num_gold=1,
                  num_predicted=2),
      "PER": dict(precision=1.0, recall=1.0, f1=1.0, num_gold=1,
                  num_predicted=1)}


def test_score_across_schemes_compares_entities():
  """Gold in IOB1 and a prediction in IOBES name the same chunks: F1 1;
  the tag strings differ, so accuracy counts the O alone until the
  prediction is written in the gold's scheme."""
  gold = ["I-PER I-PER O I-LOC".split()]
  pred = ["B-PER E-PER O S-LOC".split()]
  got = schemes.score(gold, pred, "iob1")
  assert got["f1"] == 1.0 and got["accuracy"] == 0.25
  written = [schemes.convert(p, "iob1") for p in pred]
  assert schemes.score(gold, written, "iob1")["accuracy"] == 1.0


def test_score_without_chunks_is_accuracy_alone():
  got = schemes.score([["NN", "VB", "DT"]], [["NN", "NN", "DT"]], "none")
  assert got == {"accuracy": 2 / 3, "num_tokens": 3}


def test_no_chunks_anywhere_scores_zero():
  got = schemes.score([["O", "O"]], [["O", "O"]], "iob2")
  assert got["precision"] == got["recall"] == got["f1"] == 0.0
  assert got["accuracy"] == 1.0 and got["per_type"] == {}
