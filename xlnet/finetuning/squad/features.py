"""SQuAD 2.0 / 1.1 data for XLNet: questions, windows and feature records
(piece alignment: `squad/alignment.py`; answers from the model's beams:
`squad/predictions.py`).

The steps, in order:
  * `read_squad_examples`: the SQuAD JSON -> paragraphs (original text) and
    questions (training answers as character spans of the original text).
  * `squad_alignment.tokenize_paragraph`: a paragraph -> SentencePiece
    ids plus, for every piece, the span of original characters it stands
    for. Each paragraph is tokenized once however many questions it has.
  * `FeatureConverter`: question + paragraph -> one feature per doc-stride
    window, in the fine-tuning layout `P <sep> Q <sep> <cls>` + padding.
  * `squad_predictions.get_predictions`: the model's beam over each
    window -> n-best answer texts cut from the original paragraph, and the
    null score.

The layout of one feature (`max_seq_length` positions, right padding):

  position   0 .. l-1     l      l+1 .. l+q   l+q+1   l+q+2   rest
  piece      paragraph    <sep>  question     <sep>   <cls>   padding (id 0)
  segment    0            0      1            1       2       3
  p_mask     0            1      1            1       0       1
  input_mask 0            0      0            0       0       1

`p_mask` is 1 where an answer cannot start or end; `<cls>` stays open
because it is the answer of an impossible question. Records hold the
release's types: `input_mask`, `p_mask` and `is_impossible` float32, the
rest int64.
"""
import collections
import json

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet.data import prepro_utils
from xlnet.finetuning import qa_records
from xlnet.finetuning.squad import alignment as squad_alignment

SEG_PARAGRAPH, SEG_QUESTION, SEG_CLS, SEG_PAD = 0, 1, 2, 3

SquadExample = collections.namedtuple("SquadExample", [
    "qas_id",           # str, the question id
    "question_text",    # str
    "paragraph_index",  # int, index into the paragraph list
    "start_char",       # int or None: answer span [start_char, end_char)
    "end_char",         # int or None   of the original paragraph text
    "is_impossible",    # bool
    "raw_end_char",     # int or None: end_char before trimming whitespace
], defaults=(None,))


# Where one window of a paragraph sits in a feature; kept in memory at
# prediction time to map the model's positions back to the paragraph.
Window = collections.namedtuple("Window", [
    "unique_id", "example_index", "doc_start", "doc_len", "max_context"])


def feature_spec(max_seq_length, is_training):
  """Record layout for `qa_records.make_input_fn`: name -> (width, dtype)."""
  spec = {
      "unique_ids": (1, tf.int32),
      "input_ids": (max_seq_length, tf.int32),
      "input_mask": (max_seq_length, tf.float32),
      "segment_ids": (max_seq_length, tf.int32),
      "p_mask": (max_seq_length, tf.float32),
      "cls_index": (1, tf.int32),
  }
  if is_training:
    spec.update(start_positions=(1, tf.int32), end_positions=(1, tf.int32),
                is_impossible=(1, tf.float32))
  return spec


# ----------------------------------------------------------------------------
# Reading the SQuAD JSON.
# ----------------------------------------------------------------------------
def load_squad_json(path, flag_name):
  """The `data` list of a SQuAD JSON file; ValueError names the flag/path."""
  try:
    with tf.io.gfile.GFile(path, "r") as f:
      content = json.load(f)
  except tf.errors.NotFoundError:
    raise ValueError(f"--{flag_name}={path}: file not found") from None
  except (json.JSONDecodeError, UnicodeDecodeError) as e:
    raise ValueError(f"--{flag_name}={path}: not valid JSON ({e})") from None
  if not isinstance(content, dict) or not isinstance(content.get("data"),
                                                     list):
    raise ValueError(f"--{flag_name}={path}: expected a SQuAD JSON object "
                     "with a 'data' list of articles")
  return content["data"]


def _get(obj, key, kind, where):
  """obj[key] checked to be of type `kind`; ValueError says where."""
  if not isinstance(obj, dict) or key not in obj:
    raise ValueError(f"{where}: missing '{key}'")
  value = obj[key]
  if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
    raise ValueError(f"{where}: '{key}' must be a {kind.__name__}, got "
                     f"{type(value).__name__}")
  return value


def _answer_span(context, answer, where):
  """Character span of an answer: (start, end, raw end), the span [start,
  end) with outer whitespace trimmed; raw end keeps trailing whitespace.

  Returns None when the text is not at `answer_start` in the context.
  """
  text = _get(answer, "text", str, where)
  start = _get(answer, "answer_start", int, where)
  if start < 0 or context[start:start + len(text)] != text or not text.strip():
    return None
  lead = len(text) - len(text.lstrip())
  return start + lead, start + len(text.rstrip()), start + len(text)


def read_squad_examples(path, is_training, flag_name="train_file"):
  """Reads SQuAD 2.0 / 1.1 questions.

  Training questions keep their first answer as a character span of the
  original paragraph; an answer whose text is not at its `answer_start` is
  skipped (counted and reported in one warning). Prediction questions keep
  no answer (the evaluation reads the file itself).

  Args:
    path: SQuAD JSON file (local or a tf.io.gfile URL).
    is_training: read answers.
    flag_name: flag named in error messages.

  Returns:
    (paragraphs: list of str, examples: list of SquadExample,
     skipped: list of the question ids whose answer was skipped).

  Raises:
    ValueError: on a malformed file (naming the file and the question id),
      duplicate question ids, or a file without questions.
  """
  articles = load_squad_json(path, flag_name)
  paragraphs, examples, skipped, seen = [], [], [], set()
  for a, article in enumerate(articles):
    for p, para in enumerate(_get(article, "paragraphs", list,
                                  f"{path}: data[{a}]")):
      where = f"{path}: data[{a}].paragraphs[{p}]"
      context = _get(para, "context", str, where)
      qas = _get(para, "qas", list, where)
      paragraph_index = len(paragraphs)
      paragraphs.append(context)
      for q, qa in enumerate(qas):
        qid = qa.get("id") if isinstance(qa, dict) else None
        if not isinstance(qid, (str, int)) or isinstance(qid, bool):
          raise ValueError(f"{where}.qas[{q}]: missing 'id'")
        qid = str(qid)
        where_q = f"{path}: question {qid}"
        if qid in seen:
          raise ValueError(f"{where_q}: duplicate question id")
        seen.add(qid)
        question = _get(qa, "question", str, where_q)
        impossible = (_get(qa, "is_impossible", bool, where_q)
                      if "is_impossible" in qa else False)
        span = (None, None, None)
        if is_training and not impossible:
          answers = _get(qa, "answers", list, where_q)
          if not answers:
            raise ValueError(f"{where_q}: no answers and is_impossible is "
                             "not true")
          span = _answer_span(context, answers[0], where_q)
          if span is None:
            skipped.append(qid)
            continue
        examples.append(SquadExample(qid, question, paragraph_index,
                                     span[0], span[1], impossible, span[2]))
  if not examples and not skipped:
    raise ValueError(f"--{flag_name}={path}: no questions found")
  if skipped:
    logging.warning(
        "%s: skipped %d of %d questions whose answer text is not at its "
        "answer_start in the context (first ids: %s)", path, len(skipped),
        len(skipped) + len(examples), ", ".join(skipped[:5]))
  return paragraphs, examples, skipped


# ----------------------------------------------------------------------------
# Windows and features.
# ----------------------------------------------------------------------------
def doc_windows(num_pieces, max_pieces, doc_stride):
  """Doc-stride windows over a paragraph.

  Each window holds at most `max_pieces` pieces and the next one starts
  `min(length, doc_stride)` pieces later, until the paragraph's end is in
  a window. An empty paragraph gets one empty window.

  Returns:
    list of (start, length).
  """
  windows, start = [], 0
  while True:
    length = min(num_pieces - start, max_pieces)
    windows.append((start, length))
    if start + length >= num_pieces:
      return windows
    start += min(length, doc_stride)


def max_context_masks(windows, num_pieces):
  """For each window, which of its pieces have their best context there.

  A piece's context in a window is min(pieces left of it, pieces right of
  it) + 0.01 * window length; the first window with the highest score wins.

  Returns:
    list of bool arrays, one `[length]` per window.
  """
  best = np.full(num_pieces, -1.0)
  owner = np.zeros(num_pieces, np.int64)
  for w, (start, length) in enumerate(windows):
    pos = np.arange(start, start + length)
    score = np.minimum(pos - start, start + length - 1 - pos) + 0.01 * length
    better = score > best[pos]
    best[pos[better]] = score[better]
    owner[pos[better]] = w
  return [owner[s:s + n] == w for w, (s, n) in enumerate(windows)]


def window_features(paragraph, question_ids, windows, max_seq_length):
  """Model inputs of every window of one question.

  Args:
    paragraph: TokenizedParagraph.
    question_ids: int array of the (truncated) question's piece ids.
    windows: list of (start, length) from `doc_windows`.
    max_seq_length: int L.

  Returns:
    dict of arrays (W = len(windows)), as the release stores them:
    `input_ids, segment_ids` int64 and `input_mask, p_mask` float32
    `[W, L]`; `cls_index` int64 `[W, 1]`.
  """
  num_w, num_q = len(windows), len(question_ids)
  input_ids = np.zeros([num_w, max_seq_length], np.int64)
  input_mask = np.ones([num_w, max_seq_length], np.float32)
  segment_ids = np.full([num_w, max_seq_length], SEG_PAD, np.int64)
  p_mask = np.ones([num_w, max_seq_length], np.float32)
  cls_index = np.zeros([num_w, 1], np.int64)
  for w, (start, length) in enumerate(windows):
    cls = length + num_q + 2
    input_ids[w, :length] = paragraph.ids[start:start + length]
    input_ids[w, length] = prepro_utils.SEP_ID
    input_ids[w, length + 1:cls - 1] = question_ids
    input_ids[w, cls - 1] = prepro_utils.SEP_ID
    input_ids[w, cls] = prepro_utils.CLS_ID
    input_mask[w, :cls + 1] = 0
    segment_ids[w, :length + 1] = SEG_PARAGRAPH
    segment_ids[w, length + 1:cls] = SEG_QUESTION
    segment_ids[w, cls] = SEG_CLS
    p_mask[w, :length] = 0
    p_mask[w, cls] = 0
    cls_index[w, 0] = cls
  return dict(input_ids=input_ids, input_mask=input_mask,
              segment_ids=segment_ids, p_mask=p_mask, cls_index=cls_index)


def window_targets(answer, windows, cls_index):
  """Training targets of every window of one question.

  Args:
    answer: (first, last) piece of the answer in the paragraph, or None for
      an impossible question.
    windows: list of (start, length).
    cls_index: int array `[W, 1]`.

  Returns:
    dict of `[W, 1]` arrays `start_positions, end_positions` (int64) and
    `is_impossible` (float32): the answer's window positions when the whole
    answer is inside the window, else `<cls>` twice and is_impossible 1.
  """
  start_pos = cls_index.copy()
  end_pos = cls_index.copy()
  impossible = np.ones(cls_index.shape, np.float32)
  if answer is not None:
    for w, (start, length) in enumerate(windows):
      if start <= answer[0] and answer[1] < start + length:
        start_pos[w, 0] = answer[0] - start
        end_pos[w, 0] = answer[1] - start
        impossible[w, 0] = 0
  return dict(start_positions=start_pos, end_positions=end_pos,
              is_impossible=impossible)


class FeatureConverter:
  """Turns questions into window features, tokenizing each paragraph once.

  Training targets follow the release unless asked otherwise:
    * an answer whose text ends in whitespace ends on the next piece (the
      release mapped the trailing space to the '▁' of the next word);
      `trim_answer_whitespace` ends it on its last word instead;
    * the questions of a paragraph the release could not align
      (`release_aligns`) are dropped, at training and prediction time (such
      a question then gets no window, and `get_predictions` the release's
      empty answer); `keep_unaligned` keeps them.

  Attributes:
    unmappable: question ids whose answer covers no piece (skipped).
    unaligned: question ids dropped as the release did.
    windows: the Window of every feature made so far (prediction only).
  """

  def __init__(self, sp_model, paragraphs, max_seq_length, max_query_length,
               doc_stride, uncased, is_training, trim_answer_whitespace=False,
               keep_unaligned=False):
    self.sp_model = sp_model
    self.paragraphs = paragraphs
    self.max_seq_length = max_seq_length
    self.max_query_length = max_query_length
    self.doc_stride = doc_stride
    self.uncased = uncased
    self.is_training = is_training
    self.trim_answer_whitespace = trim_answer_whitespace
    self.keep_unaligned = keep_unaligned
    self.tokenized = {}
    self.aligned = {}
    self.unmappable = []
    self.unaligned = []
    self.windows = []
    self.next_unique_id = 0
    self.vocab = None

  def _vocab(self):
    """The `piece_vocab`, built on first use."""
    if self.vocab is None:
      self.vocab = squad_alignment.piece_vocab(self.sp_model)
    return self.vocab

  def paragraph(self, index):
    """TokenizedParagraph of paragraph `index` (cached; unless
    `keep_unaligned`, also whether the release could align it)."""
    if index not in self.tokenized:
      text = self.paragraphs[index]
      pieces, self.tokenized[index] = squad_alignment.tokenize_with_pieces(
          self.sp_model, self._vocab(), text, self.uncased)
      if not self.keep_unaligned:
        self.aligned[index] = squad_alignment.release_aligns(
            text, pieces, self.uncased)
    return self.tokenized[index]

  def gold_pieces(self, paragraph, example):
    """(first, last) piece of a training answer, or None if it covers no
    piece; the last is the piece after the answer when its text ends in
    whitespace (unless `trim_answer_whitespace`)."""
    answer = squad_alignment.char_span_to_pieces(paragraph, example.start_char,
                                 example.end_char)
    raw_end = example.raw_end_char or example.end_char
    if answer is None or self.trim_answer_whitespace or (
        raw_end <= example.end_char):
      return answer
    return answer[0], min(answer[1] + 1, len(paragraph.ids) - 1)

  def convert(self, example_index, example):
    """Features of one question: dict of arrays `[W, ...]` (see
    `window_features`, `window_targets`), or None when the question is
    dropped (a training answer on no piece, or a paragraph the release
    could not align)."""
    paragraph = self.paragraph(example.paragraph_index)
    if not self.aligned.get(example.paragraph_index, True):
      self.unaligned.append(example.qas_id)
      return None
    answer = None
    if self.is_training and not example.is_impossible:
      answer = self.gold_pieces(paragraph, example)
      if answer is None:
        self.unmappable.append(example.qas_id)
        return None
    _, question_ids = squad_alignment.encode(self.sp_model, self._vocab(),
                             example.question_text, self.uncased)
    question_ids = question_ids[:self.max_query_length]
    windows = doc_windows(len(paragraph.ids),
                          self.max_seq_length - len(question_ids) - 3,
                          self.doc_stride)
    features = window_features(paragraph, question_ids, windows,
                               self.max_seq_length)
    num_w = len(windows)
    unique_ids = np.arange(self.next_unique_id, self.next_unique_id + num_w)
    self.next_unique_id += num_w
    features["unique_ids"] = unique_ids[:, None]
    if self.is_training:
      features.update(window_targets(answer, windows, features["cls_index"]))
    else:
      masks = max_context_masks(windows, len(paragraph.ids))
      self.windows.extend(
          Window(int(uid), example_index, start, length, mask)
          for uid, (start, length), mask in zip(unique_ids, windows, masks))
    return features

  def iter_features(self, examples, what="SQuAD features"):
    """Yields the feature dicts of `examples` in order, logging progress."""
    progress = qa_records.ProgressLog(what, len(examples))
    for index, example in enumerate(examples):
      features = self.convert(index, example)
      if features is not None:
        yield features
      progress.update(index + 1,
                      f", {self.next_unique_id} features")
    if self.unmappable:
      logging.warning(
          "skipped %d questions whose answer covers no SentencePiece piece "
          "(first ids: %s)", len(self.unmappable),
          ", ".join(self.unmappable[:5]))
    if self.unaligned:
      logging.warning(
          "dropped %d %s questions whose paragraph the release could not "
          "align, as it did (--keep_unaligned keeps them; first ids: %s)",
          len(self.unaligned), "training" if self.is_training else
          "prediction", ", ".join(self.unaligned[:5]))
