"""RACE for XLNet: reading the RACE directory, packing the four options.

RACE lives in `{data_dir}/{train,dev,test}/{middle,high}/*.txt`; each file is
one JSON object: `article` (str), `questions` (list of str), `options` (one
list of four str per question), `answers` (one letter A-D per question).

Each question becomes one record of four sequences, one per option, each
`max_seq_length` long and laid out as

  [padding] context <sep> qa <sep> <cls>
  segments: 4 ...   0 ... 0  1 .. 1  2       (input_mask 1 on padding)

where qa is the question with its blank "_" replaced by the option, or the
question and the option joined by a space when there is no blank. qa keeps
its last `max_qa_length` pieces, the context its first
`max_seq_length - 3 - len(qa)`. Every option is built from its own copy of
the context (the released code let earlier options leak into later ones).
"""
import collections
import hashlib
import json
import os

import numpy as np
import tensorflow as tf

from xlnet.data import prepro_utils
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning import qa_records
from xlnet.finetuning import record_cache
from xlnet.finetuning.race import head as race_head

LEVELS = ("middle", "high")
NUM_CHOICES = race_head.NUM_CHOICES  # the options of a question
SEG_CONTEXT, SEG_QA, SEG_CLS, SEG_PAD = 0, 1, 2, 4

RaceExample = collections.namedtuple("RaceExample", [
    "example_id",     # str, "{level}/{file name}/{question number}"
    "article_index",  # int, index into the article list
    "question",       # str
    "options",        # tuple of NUM_CHOICES str
    "label",          # int 0..3
    "level",          # "middle" or "high"
])


def feature_spec(max_seq_length):
  """Record layout for `qa_records.make_input_fn`: name -> (width, dtype)."""
  width = NUM_CHOICES * max_seq_length
  return {"input_ids": (width, tf.int32),
          "input_mask": (width, tf.float32),
          "segment_ids": (width, tf.int32),
          "label_ids": (1, tf.int32)}


def race_levels(high_only, middle_only):
  """The levels to read under `--high_only` / `--middle_only`."""
  finetune_config.check_levels(high_only, middle_only)
  if high_only:
    return ("high",)
  if middle_only:
    return ("middle",)
  return LEVELS


def _read_file(path):
  """The JSON object of one RACE file; ValueError names the file."""
  try:
    with tf.io.gfile.GFile(path, "r") as f:
      content = json.load(f)
  except (json.JSONDecodeError, UnicodeDecodeError) as e:
    raise ValueError(f"{path}: not valid JSON ({e})") from None
  if not isinstance(content, dict):
    raise ValueError(f"{path}: expected a JSON object")
  for key, kind in (("article", str), ("questions", list), ("options", list),
                    ("answers", list)):
    if not isinstance(content.get(key), kind):
      raise ValueError(f"{path}: missing '{key}' ({kind.__name__})")
  counts = {k: len(content[k]) for k in ("questions", "options", "answers")}
  if len(set(counts.values())) != 1:
    raise ValueError(f"{path}: questions, options and answers differ in "
                     f"length: {counts}")
  return content


def _question(path, content, number):
  """(question, options, label) of question `number`, checked."""
  question = content["questions"][number]
  options = content["options"][number]
  answer = content["answers"][number]
  where = f"{path}: question {number}"
  if not isinstance(question, str):
    raise ValueError(f"{where}: the question must be a string")
  if (not isinstance(options, list) or len(options) != NUM_CHOICES
      or not all(isinstance(o, str) for o in options)):
    got = len(options) if isinstance(options, list) else type(options).__name__
    raise ValueError(f"{where}: expected {NUM_CHOICES} option strings, "
                     f"got {got}")
  letters = "ABCD"[:NUM_CHOICES]
  if not isinstance(answer, str) or answer not in letters:
    raise ValueError(f"{where}: the answer must be one of {list(letters)}, "
                     f"got {answer!r}")
  return question, tuple(options), letters.index(answer)


def read_race_examples(data_dir, split, levels):
  """Reads the questions of one RACE split.

  Args:
    data_dir: the RACE directory (local or a tf.io.gfile URL).
    split: "train", "dev" or "test".
    levels: levels to read (see `race_levels`).

  Returns:
    (articles: list of str, examples: list of RaceExample), files in sorted
    order.

  Raises:
    ValueError: for a level directory without files or a malformed file
      (naming the file and the question number).
  """
  articles, examples = [], []
  for level, path in split_files(data_dir, split, levels):
    content = _read_file(path)
    article_index = len(articles)
    articles.append(content["article"])
    name = os.path.basename(path)
    for number in range(len(content["questions"])):
      question, options, label = _question(path, content, number)
      examples.append(RaceExample(f"{level}/{name}/{number}", article_index,
                                  question, options, label, level))
  return articles, examples


def split_files(data_dir, split, levels):
  """[(level, path)] of the files of one split, levels in the given order,
  files sorted by name.

  Raises:
    ValueError: for a level directory without files.
  """
  files = []
  for level in levels:
    pattern = os.path.join(data_dir, split, level, "*.txt")
    paths = sorted(tf.io.gfile.glob(pattern))
    if not paths:
      raise ValueError(f"--data_dir={data_dir}: no files match {pattern} "
                       "(expected the RACE layout {train,dev,test}/"
                       "{middle,high}/*.txt)")
    files.extend((level, path) for path in paths)
  return files


def source_signature(data_dir, split, levels):
  """A digest of the files of one split: sha1 over every file's level, name
  and bytes, in read order; any edit, even one that keeps a file's size,
  changes it.

  Returns:
    str, `{n} files, sha1 {hex}`.
  """
  files = split_files(data_dir, split, levels)
  hasher = hashlib.sha1()
  for level, path in files:
    hasher.update(f"{level}/{os.path.basename(path)}\0".encode())
    record_cache.update_digest(hasher, path)
    hasher.update(b"\0")
  return f"{len(files)} files, sha1 {hasher.hexdigest()}"


def option_qa_text(question, option):
  """The question with its blank filled by the option (or the option
  appended after a space when there is no blank "_")."""
  if "_" in question:
    return question.replace("_", option)
  return question + " " + option


def option_sequence(context_ids, qa_ids, max_seq_length, max_qa_length):
  """One option's ids, input mask and segments, left-padded.

  Args:
    context_ids: list of int, the article's pieces (not modified).
    qa_ids: list of int, the question-with-option pieces.
    max_seq_length, max_qa_length: ints.

  Returns:
    (input_ids, input_mask, segment_ids) `[max_seq_length]`: int64, float32
    (1 on padding), int64.
  """
  qa_ids = qa_ids[-max_qa_length:]
  context_ids = context_ids[:max_seq_length - 3 - len(qa_ids)]
  ids = (list(context_ids) + [prepro_utils.SEP_ID] + list(qa_ids) +
         [prepro_utils.SEP_ID, prepro_utils.CLS_ID])
  segments = ([SEG_CONTEXT] * (len(context_ids) + 1) +
              [SEG_QA] * (len(qa_ids) + 1) + [SEG_CLS])
  pad = max_seq_length - len(ids)
  input_ids = np.array([0] * pad + ids, np.int64)
  input_mask = np.array([1] * pad + [0] * len(ids), np.float32)
  segment_ids = np.array([SEG_PAD] * pad + segments, np.int64)
  return input_ids, input_mask, segment_ids


class FeatureConverter:
  """Packs RACE questions into records, tokenizing each article once."""

  def __init__(self, sp_model, articles, max_seq_length, max_qa_length,
               uncased):
    self.sp_model = sp_model
    self.articles = articles
    self.max_seq_length = max_seq_length
    self.max_qa_length = max_qa_length
    self.uncased = uncased
    self.tokenized = {}

  def _encode(self, text):
    """Piece ids of normalized `text`."""
    return prepro_utils.encode_ids(
        self.sp_model, prepro_utils.preprocess_text(text, lower=self.uncased))

  def convert(self, example):
    """One question's features in the release's record format: dict of
    arrays `[1, ...]`, `input_mask` float32, the others int64
    (`is_real_example` always 1: nothing is padded)."""
    if example.article_index not in self.tokenized:
      self.tokenized[example.article_index] = self._encode(
          self.articles[example.article_index])
    context_ids = self.tokenized[example.article_index]
    columns = zip(*(option_sequence(
        context_ids, self._encode(option_qa_text(example.question, option)),
        self.max_seq_length, self.max_qa_length)
                    for option in example.options))
    input_ids, input_mask, segment_ids = (np.concatenate(c)[None]
                                          for c in columns)
    return dict(input_ids=input_ids, input_mask=input_mask,
                segment_ids=segment_ids,
                label_ids=np.array([[example.label]], np.int64),
                is_real_example=np.ones([1, 1], np.int64))

  def iter_features(self, examples, what="RACE features"):
    """Yields the feature dicts of `examples` in order, logging progress."""
    progress = qa_records.ProgressLog(what, len(examples))
    for index, example in enumerate(examples):
      yield self.convert(example)
      progress.update(index + 1)


def accuracy_by_level(examples, results):
  """Accuracy of the predicted option on middle, high and all questions.

  Args:
    examples: list of RaceExample (the evaluated split).
    results: list of dicts with `logits [4]`, one per record, in record
      order (= the order of `examples`).

  Returns:
    dict: `accuracy_{level}` and `num_{level}` for each level present, and
    `accuracy` / `num_examples` over all of them.

  Raises:
    ValueError: if an example has no result.
  """
  if len(results) != len(examples):
    raise ValueError(f"the model returned results for {len(results)} of "
                     f"{len(examples)} questions")
  correct = {i: int(np.argmax(r["logits"])) == e.label
             for i, (e, r) in enumerate(zip(examples, results))}
  out = {}
  for level in LEVELS:
    hits = [correct[i] for i, e in enumerate(examples) if e.level == level]
    if hits:
      out[f"accuracy_{level}"] = float(np.mean(hits))
      out[f"num_{level}"] = len(hits)
  out["accuracy"] = float(np.mean(list(correct.values())))
  out["num_examples"] = len(correct)
  return out
