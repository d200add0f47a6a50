"""Every task processor on tiny files in its public layout, and bad data.

The files are written here in the official layouts (GLUE's tab-separated
tables with their header rows, aclImdb's directories, the CSV files of
Zhang et al. 2015), with the quirks the processors must handle: unbalanced
quotes in GLUE text, quoted commas and doubled quotes in CSV, literal `\\n`
escapes, `<br />` in IMDB reviews.
"""
import hashlib
import logging

import pytest

from xlnet.finetuning import record_cache
from xlnet.finetuning.classifier import datasets as cd
from xlnet.finetuning.classifier import processors as cp
from xlnet.finetuning.classifier import tasks as ct


def write(path, text):
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(text, encoding="utf-8")


def tsv(*rows):
  return "".join("\t".join(row) + "\n" for row in rows)


def read(task, data_dir, split, **options):
  processor = cd.make_processor(task, **options).resolve(str(data_dir))
  return [(e.guid, e.text_a, e.text_b, e.label)
          for e in processor.get_examples(str(data_dir), split)]


################################################################################
# GLUE.
################################################################################
MNLI_TRAIN_HEAD = ["index", "promptID", "pairID", "genre",
                   "sentence1_binary_parse", "sentence2_binary_parse",
                   "sentence1_parse", "sentence2_parse", "sentence1",
                   "sentence2", "label1", "gold_label"]
MNLI_DEV_HEAD = MNLI_TRAIN_HEAD[:11] + ["label2", "label3", "label4",
                                        "label5", "gold_label"]


def mnli_row(i, s1, s2, labels):
  return [str(i), "31193", "31193n", "government", "( ( x ) )", "( y )",
          "(ROOT x)", "(ROOT y)", s1, s2] + labels


PAIR_HEAD = ["index", "sentence1", "sentence2", "label"]


def pair_files(train, dev, test, head=PAIR_HEAD):
  """The files of QNLI, RTE and WNLI (index, two texts, label; test
  without the label), one row each."""
  return {"train.tsv": tsv(head, train), "dev.tsv": tsv(head, dev),
          "test.tsv": tsv(head[:3], test)}


GLUE_FILES = {
    "cola": {
        "train.tsv": tsv(["gj04", "1", "", "Our friends won't buy this."],
                         ["gj04", "0", "*", "They drank the pub."]),
        "dev.tsv": tsv(["bc01", "1", "", "The sailors rode the breeze."]),
        "test.tsv": tsv(["index", "sentence"], ["0", "Bill whistled."]),
    },
    "sst-2": {
        "train.tsv": tsv(["sentence", "label"],
                         ['hide new " secretions ', "0"]),
        "dev.tsv": tsv(["sentence", "label"], ["it 's charming .", "1"]),
        "test.tsv": tsv(["index", "sentence"], ["0", "uneasy mishmash ."]),
    },
    "mrpc": {
        "train.tsv": tsv(["Quality", "#1 ID", "#2 ID", "#1 String",
                          "#2 String"],
                         ["1", "702876", "702977", "Amrozi accused him .",
                          "Referring to him , he said ."]),
        "dev.tsv": tsv(["Quality", "#1 ID", "#2 ID", "#1 String",
                        "#2 String"], ["0", "1", "2", "A a", "B b"]),
        "test.tsv": tsv(["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                        ["0", "1089874", "1089925", "PCCW 's chief",
                         "Current Chief"]),
    },
    "qqp": {
        "train.tsv": tsv(["id", "qid1", "qid2", "question1", "question2",
                          "is_duplicate"],
                         ["133273", "213221", "213222", "How is life?",
                          "How is the life?", "1"]),
        "dev.tsv": tsv(["id", "qid1", "qid2", "question1", "question2",
                        "is_duplicate"], ["7", "8", "9", "Q1?", "Q2?", "0"]),
        "test.tsv": tsv(["id", "question1", "question2"],
                        ["0", "Why?", "Why not?"]),
    },
    "sts-b": {
        "train.tsv": tsv(["index", "genre", "filename", "year", "old_index",
                          "source1", "source2", "sentence1", "sentence2",
                          "score"],
                         ["0", "main-captions", "MSRvid", "2012test", "0001",
                          "none", "none", "A plane is taking off.",
                          "An air plane is taking off.", "5.000"]),
        "dev.tsv": tsv(["index", "genre", "filename", "year", "old_index",
                        "source1", "source2", "sentence1", "sentence2",
                        "score"],
                       ["0", "g", "f", "y", "o", "s", "s", "A man.",
                        "A woman.", "0.800"]),
        "test.tsv": tsv(["index", "genre", "filename", "year", "old_index",
                         "source1", "source2", "sentence1", "sentence2"],
                        ["0", "g", "f", "y", "o", "s", "s", "A girl.",
                         "A boy."]),
    },
    "mnli_matched": {
        "train.tsv": tsv(MNLI_TRAIN_HEAD,
                         mnli_row(0, "Conceptually cream.", "Product.",
                                  ["neutral", "neutral"])),
        "dev_matched.tsv": tsv(MNLI_DEV_HEAD,
                               mnli_row(0, "The new rights.", "Everyone.",
                                        ["neutral", "entailment", "neutral",
                                         "neutral", "contradiction",
                                         "entailment"])),
        "test_matched.tsv": tsv(MNLI_TRAIN_HEAD[:10],
                                mnli_row(0, "Hierbas.", "Hierbas too.", [])),
    },
    "mnli_mismatched": {
        "train.tsv": tsv(MNLI_TRAIN_HEAD,
                         mnli_row(0, "S1.", "S2.", ["neutral",
                                                    "contradiction"])),
        "dev_mismatched.tsv": tsv(MNLI_DEV_HEAD,
                                  mnli_row(0, "Your gift.", "Hmm.",
                                           ["neutral"] * 5 + ["neutral"])),
        "test_mismatched.tsv": tsv(MNLI_TRAIN_HEAD[:10],
                                   mnli_row(5, "What?", "This.", [])),
    },
    "qnli": pair_files(["0", "When?", "In 1990.", "entailment"],
                       ["0", "Who?", "Nobody.", "not_entailment"],
                       ["0", "What?", "That."],
                       head=["index", "question", "sentence", "label"]),
    "rte": pair_files(["0", "No weapons.", "Weapons found.", "not_entailment"],
                      ["0", "A.", "B.", "entailment"], ["0", "C.", "D."]),
    "wnli": pair_files(["0", "I stuck a pin.", "The pin stuck.", "1"],
                       ["0", "A.", "B.", "0"], ["0", "C.", "D."]),
}

# (guid, text_a, text_b, label) of the first example of each split.
GLUE_EXPECTED = {
    "cola": {"train": ("0", "Our friends won't buy this.", None, "1"),
             "dev": ("0", "The sailors rode the breeze.", None, "1"),
             "test": ("0", "Bill whistled.", None, None)},
    "sst-2": {"train": ("0", 'hide new " secretions ', None, "0"),
              "dev": ("0", "it 's charming .", None, "1"),
              "test": ("0", "uneasy mishmash .", None, None)},
    "mrpc": {"train": ("0", "Amrozi accused him .",
                       "Referring to him , he said .", "1"),
             "dev": ("0", "A a", "B b", "0"),
             "test": ("0", "PCCW 's chief", "Current Chief", None)},
    "qqp": {"train": ("0", "How is life?", "How is the life?", "1"),
            "dev": ("0", "Q1?", "Q2?", "0"),
            "test": ("0", "Why?", "Why not?", None)},
    "sts-b": {"train": ("0", "A plane is taking off.",
                        "An air plane is taking off.", "5.000"),
              "dev": ("0", "A man.", "A woman.", "0.800"),
              "test": ("0", "A girl.", "A boy.", None)},
    "mnli_matched": {
        "train": ("0", "Conceptually cream.", "Product.", "neutral"),
        "dev": ("0", "The new rights.", "Everyone.", "entailment"),
        "test": ("0", "Hierbas.", "Hierbas too.", None)},
    "mnli_mismatched": {
        "train": ("0", "S1.", "S2.", "contradiction"),
        "dev": ("0", "Your gift.", "Hmm.", "neutral"),
        "test": ("5", "What?", "This.", None)},
    "qnli": {"train": ("0", "When?", "In 1990.", "entailment"),
             "dev": ("0", "Who?", "Nobody.", "not_entailment"),
             "test": ("0", "What?", "That.", None)},
    "rte": {"train": ("0", "No weapons.", "Weapons found.", "not_entailment"),
            "dev": ("0", "A.", "B.", "entailment"),
            "test": ("0", "C.", "D.", None)},
    "wnli": {"train": ("0", "I stuck a pin.", "The pin stuck.", "1"),
             "dev": ("0", "A.", "B.", "0"),
             "test": ("0", "C.", "D.", None)},
}


def glue_dir(tmp_path, task):
  for name, text in GLUE_FILES[task].items():
    write(tmp_path / task / name, text)
  return tmp_path / task


@pytest.mark.quick
@pytest.mark.parametrize("task", sorted(GLUE_FILES))
def test_glue_layouts(tmp_path, task):
  data_dir = glue_dir(tmp_path, task)
  for split in ct.SPLITS:
    assert read(task, data_dir, split)[0] == GLUE_EXPECTED[task][split], split
  processor = cd.make_processor(task)
  assert processor.glue_task


def test_glue_metrics_and_labels():
  assert cd.make_processor("CoLA").primary_metric == "mcc"
  assert cd.make_processor("mrpc").metrics == ("accuracy", "f1")
  assert cd.make_processor("qqp").metrics == ("accuracy", "f1")
  stsb = cd.make_processor("STS-B")
  assert stsb.is_regression and stsb.get_labels() is None
  assert stsb.metrics == ("pearsonr", "spearmanr")
  assert cd.make_processor("mnli_matched").get_labels() == [
      "contradiction", "entailment", "neutral"]


def test_cola_train_rows_keep_the_ungrammatical_mark_column(tmp_path):
  examples = read("cola", glue_dir(tmp_path, "cola"), "train")
  assert examples[1] == ("1", "They drank the pub.", None, "0")


def test_qqp_skips_broken_rows_with_a_warning(tmp_path, caplog):
  data = tmp_path / "qqp"
  write(data / "train.tsv", tsv(
      ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
      ["1", "2", "3", "Why is the sky", "Is it?", "0"],
      ['"', "Was Muhammad real?", "0"],
      ["4", "5", "6", "Q?", "R?", "1"]))
  with caplog.at_level(logging.WARNING):
    examples = read("qqp", data, "train")
  assert [e[3] for e in examples] == ["0", "1"]
  assert "train.tsv line 3" in caplog.text


################################################################################
# CSV datasets (Zhang et al. 2015) and IMDB.
################################################################################
def test_yelp5_csv(tmp_path):
  write(tmp_path / "train.csv",
        '"5","great food, \\""friendly\\"" staff.\\nwill return"\n'
        '"1","never \\""again\\"""\n')
  write(tmp_path / "test.csv", '"3","ok"\n')
  assert read("yelp5", tmp_path, "train") == [
      ("0", 'great food, "friendly" staff.\\nwill return', None, "5"),
      ("1", 'never "again"', None, "1")]
  assert read("yelp5", tmp_path, "dev") == [("0", "ok", None, "3")]
  assert read("yelp5", tmp_path, "test") == [("0", "ok", None, "3")]


def csv_field(text):
  """`text` as a quoted CSV field (standard quoting: `"` doubled)."""
  return '"' + text.replace('"', '""') + '"'


# (text after CSV parsing, after the release's cleaning), worked by hand:
# `""` -> `"` first, then `\"` -> `"`.
CLEANED = [('a ""b"" c', 'a "b" c'),
           ('x \\"y\\" z', 'x "y" z'),
           ('\\""', '"'),      # `""` first leaves `\"`, then `"`
           ('"\\"', '""'),     # the other order would give `"`
           ('lit \\n kept', 'lit \\n kept')]


@pytest.mark.quick
@pytest.mark.parametrize("task", ["yelp5", "yelp2", "amazon5", "amazon2",
                                  "dbpedia", "ag_news"])
def test_csv_text_cleaning_as_the_release(tmp_path, task):
  titled = task not in ("yelp5", "yelp2")
  rows = []
  for raw, _ in CLEANED:
    fields = ["1", raw] + ([raw] if titled else [])
    rows.append(",".join(csv_field(f) for f in fields) + "\n")
  write(tmp_path / "train.csv", "".join(rows))
  got = read(task, tmp_path, "train")
  want = [(str(i), clean, clean if titled else None, "1")
          for i, (_, clean) in enumerate(CLEANED)]
  assert got == want


@pytest.mark.parametrize("task,n_class", [("yelp2", 2), ("amazon2", 2),
                                          ("amazon5", 5), ("dbpedia", 14),
                                          ("ag_news", 4)])
def test_csv_tasks_labels_and_titles(tmp_path, task, n_class):
  titled = task != "yelp2"
  row = (f'"{n_class}","Title, with comma","Body text"' if titled
         else f'"{n_class}","Body text"')
  untitled = '"1"," ","Just a body"' if titled else '"1","Just a body"'
  write(tmp_path / "train.csv", row + "\n" + untitled + "\n")
  write(tmp_path / "test.csv", row + "\n")
  processor = cd.make_processor(task)
  assert processor.get_labels() == [str(i) for i in range(1, n_class + 1)]
  got = read(task, tmp_path, "train")
  if titled:
    assert got == [("0", "Title, with comma", "Body text", str(n_class)),
                   ("1", "Just a body", None, "1")]
  else:
    assert got == [("0", "Body text", None, str(n_class)),
                   ("1", "Just a body", None, "1")]
  write(tmp_path / "test.csv", f'"{n_class + 1}","x","y"\n')
  with pytest.raises(ValueError, match=rf"test.csv line 1: label "
                     rf"'{n_class + 1}' is not one of the labels"):
    read(task, tmp_path, "dev")


def imdb_dir(tmp_path):
  root = tmp_path / "aclImdb"
  write(root / "train" / "pos" / "0_9.txt", "Great<br /><br />movie. ")
  write(root / "train" / "pos" / "10_7.txt", "Fine.")
  write(root / "train" / "neg" / "1_2.txt", "Bad.")
  write(root / "train" / "unsup" / "5_0.txt", "Unlabelled.")
  write(root / "test" / "pos" / "3_10.txt", "Wow.")
  write(root / "test" / "neg" / "2_1.txt", "Meh.")
  return root


def test_imdb_layout(tmp_path):
  root = imdb_dir(tmp_path)
  assert read("imdb", root, "train") == [
      ("neg/1_2.txt", "Bad.", None, "neg"),
      ("pos/0_9.txt", "Great  movie.", None, "pos"),
      ("pos/10_7.txt", "Fine.", None, "pos")]
  assert read("imdb", root, "dev") == [("neg/2_1.txt", "Meh.", None, "neg"),
                                       ("pos/3_10.txt", "Wow.", None, "pos")]
  assert read("imdb", root, "test") == read("imdb", root, "dev")


def test_imdb_signature_follows_the_files(tmp_path):
  root = imdb_dir(tmp_path)
  processor = cd.make_processor("imdb")
  before = processor.source_signature(str(root), "train")
  write(root / "train" / "neg" / "7_1.txt", "Awful.")
  added = processor.source_signature(str(root), "train")
  assert added != before
  # A same-size edit of one review, then a same-size rename.
  write(root / "train" / "neg" / "7_1.txt", "Awfully")
  edited = processor.source_signature(str(root), "train")
  assert edited != added
  (root / "train" / "neg" / "7_1.txt").rename(root / "train" / "neg" /
                                              "7_2.txt")
  assert processor.source_signature(str(root), "train") not in (added,
                                                                edited)
  assert processor.source_signature(str(root), "test") == (
      processor.source_signature(str(root), "dev"))


def test_table_signature_is_the_content_digest(tmp_path):
  """sha1 of the file's bytes (hashlib on the whole file as reference)."""
  write(tmp_path / "train.tsv", tsv(["sentence", "label"], ["good", "1"]))
  processor = cd.make_processor("sst-2")
  sha1 = hashlib.sha1((tmp_path / "train.tsv").read_bytes()).hexdigest()
  assert processor.source_signature(str(tmp_path), "train") == (
      f"train.tsv\tsha1 {sha1}")
  # A corrected label keeps the size but not the signature.
  write(tmp_path / "train.tsv", tsv(["sentence", "label"], ["good", "0"]))
  assert processor.source_signature(str(tmp_path), "train") != (
      f"train.tsv\tsha1 {sha1}")


def test_large_file_digest_is_streamed(tmp_path, monkeypatch):
  monkeypatch.setattr(record_cache, "_DIGEST_CHUNK", 7)
  data = bytes(range(256)) * 5
  (tmp_path / "f").write_bytes(data)
  hasher = hashlib.sha1()
  record_cache.update_digest(hasher, str(tmp_path / "f"))
  assert hasher.hexdigest() == hashlib.sha1(data).hexdigest()


@pytest.mark.parametrize("task,split,labelled", [
    ("sst-2", "train", True), ("sst-2", "dev", True), ("sst-2", "test", False),
    ("mnli_matched", "test", False), ("sts-b", "test", False),
    ("imdb", "test", True), ("yelp5", "test", True), ("tsv", "dev", True),
    ("tsv", "test", False)])
def test_which_splits_carry_labels(task, split, labelled):
  assert cd.make_processor(task).labelled(split) is labelled


################################################################################
# Your own TSV / CSV.
################################################################################
def test_user_tsv_columns_by_name(tmp_path):
  write(tmp_path / "train.tsv", tsv(["id", "text_a", "label"],
                                    ["a", "first", "10"], ["b", "second", "2"],
                                    ["c", "third", "10"]))
  write(tmp_path / "test.tsv", tsv(["text_a"], ["unlabelled"]))
  processor = cd.make_processor("tsv").resolve(str(tmp_path))
  assert processor.get_labels() == ["2", "10"]  # numbers sorted by value
  assert read("tsv", tmp_path, "train")[1] == ("1", "second", None, "2")
  assert read("tsv", tmp_path, "test") == [("0", "unlabelled", None, None)]


def test_user_csv_columns_by_index_and_label_list(tmp_path):
  write(tmp_path / "dev.csv", 'x,"a, quoted",pos,"b"\ny,plain,neg,c\n')
  options = dict(label_column="2", text_a_column="1", text_b_column="3",
                 label_list=["neg", "pos"])
  assert read("csv", tmp_path, "dev", **options) == [
      ("0", "a, quoted", "b", "pos"), ("1", "plain", "c", "neg")]
  header = dict(options, contains_header=True)
  assert read("csv", tmp_path, "dev", **header) == [
      ("0", "plain", "c", "neg")]
  with pytest.raises(ValueError, match=r"dev.csv line 2: label 'neg' is not "
                     r"one of the labels \['pos'\]"):
    read("csv", tmp_path, "dev", **dict(options, label_list=["pos"]))


def test_user_regression_and_bad_values(tmp_path):
  write(tmp_path / "train.tsv", tsv(["text_a", "text_b", "label"],
                                    ["a", "b", "0.5"], ["c", "d", "x"]))
  options = dict(text_b_column="text_b", is_regression=True)
  processor = cd.make_processor("tsv", **options)
  assert processor.is_regression and processor.metrics[0] == "pearsonr"
  with pytest.raises(ValueError, match=r"train.tsv line 3: label 'x' is not "
                     r"a finite number"):
    read("tsv", tmp_path, "train", **options)
  with pytest.raises(ValueError, match=r"no column named 'txt' in the header "
                     r"row \['text_a', 'text_b', 'label'\] \(--text_a_column"):
    read("tsv", tmp_path, "train", text_a_column="txt")
  with pytest.raises(ValueError, match="contains_header=False but columns "
                     "are given by name"):
    cd.make_processor("tsv", contains_header=False)


################################################################################
# Errors.
################################################################################
@pytest.mark.quick
def test_every_task_is_a_choice_with_a_processor_of_its_family():
  # One list of tasks (classifier/tasks.py, read by the flags without
  # TensorFlow): --task_name's choices, the datasets by name, then your own
  # files; each task makes a processor of its name, of its family's class.
  assert ct.NAMES == (
      "ag_news", "amazon2", "amazon5", "cola", "dbpedia", "imdb",
      "mnli_matched", "mnli_mismatched", "mrpc", "qnli", "qqp", "rte",
      "sst-2", "sts-b", "wnli", "yelp2", "yelp5", "tsv", "csv")
  assert sorted(t.name for t in ct.TASKS) == sorted(ct.NAMES)
  for name in ct.NAMES:
    options = {"label_list": ["a", "b"]} if name in ct.USER_TASKS else {}
    processor = cd.make_processor(name.upper(), **options)
    assert processor.name == name
    assert type(processor) is cd.PROCESSORS[ct.get(name).family]


@pytest.mark.quick
def test_which_tasks_are_text_pairs():
  # By the public layouts: GLUE's two-sentence tasks, and the CSV sets whose
  # rows hold a title before the text (class, title, text).
  pairs = {"mrpc", "qqp", "sts-b", "mnli_matched", "mnli_mismatched", "qnli",
           "rte", "wnli", "ag_news", "dbpedia", "amazon2", "amazon5"}
  for name in set(ct.NAMES) - set(ct.USER_TASKS):
    assert cd.make_processor(name).pairs == (name in pairs), name
  assert not cd.make_processor("tsv", label_list=["a"]).pairs
  assert cd.make_processor("tsv", label_list=["a"], text_b_column="b").pairs


def test_unknown_task():
  with pytest.raises(ValueError, match=r"--task_name=glue: unknown task; "
                     r"expected one of .*sts-b.*tsv"):
    cd.make_processor("glue")


@pytest.mark.parametrize("task,missing", [
    ("sts-b", "train.tsv"), ("mnli_matched", "train.tsv"),
    ("yelp5", "train.csv"), ("imdb", "train/neg"), ("tsv", "train.tsv")])
def test_data_dir_without_the_task_files(tmp_path, task, missing):
  pattern = (rf"--data_dir={tmp_path}: expected (the directory )?"
             rf"{tmp_path}/{missing} \(.*\), not found")
  with pytest.raises(ValueError, match=pattern):
    read(task, tmp_path, "train")


def test_malformed_line_names_file_and_line(tmp_path):
  write(tmp_path / "train.tsv", tsv(
      ["index", "sentence1", "sentence2", "label"],
      ["0", "a", "b", "entailment"], ["1", "only two"]))
  with pytest.raises(ValueError, match=rf"{tmp_path}/train.tsv line 3: "
                     r"expected at least 4 tab-separated fields \(GLUE RTE.*"
                     r"\), got 2"):
    read("rte", tmp_path, "train")


def test_label_outside_the_task_labels(tmp_path):
  write(tmp_path / "train.tsv", tsv(["sentence", "label"], ["ok", "1"],
                                    ["bad", "positive"]))
  with pytest.raises(ValueError, match=r"train.tsv line 3: label 'positive' "
                     r"is not one of the labels \['0', '1'\] of task sst-2"):
    read("sst-2", tmp_path, "train")


def test_broken_csv_and_encoding(tmp_path):
  write(tmp_path / "train.csv", '"1","unterminated\n')
  with pytest.raises(ValueError, match="train.csv line 1: malformed CSV"):
    read("yelp2", tmp_path, "train")
  (tmp_path / "train.csv").write_bytes(b'"1","caf\xe9"\n')
  with pytest.raises(ValueError, match="train.csv is not UTF-8 text"):
    read("yelp2", tmp_path, "train")
