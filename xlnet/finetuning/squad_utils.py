"""SQuAD 2.0 / 1.1 data for XLNet: questions, piece alignment, windows,
feature records and answer spans.

The steps, in order:
  * `read_squad_examples`: the SQuAD JSON -> paragraphs (original text) and
    questions (training answers as character spans of the original text).
  * `tokenize_paragraph`: a paragraph -> SentencePiece ids plus, for every
    piece, the span of original characters it stands for (`align_pieces`).
    Each paragraph is tokenized once however many questions it has.
  * `FeatureConverter`: question + paragraph -> one feature per doc-stride
    window, in the fine-tuning layout `P <sep> Q <sep> <cls>` + padding.
  * `get_predictions`: the model's beam over each window -> n-best answer
    texts cut from the original paragraph, and the null score.

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
import re
import unicodedata

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet.data import prepro_utils
from xlnet.finetuning import qa_records

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

TokenizedParagraph = collections.namedtuple("TokenizedParagraph", [
    "ids",     # int32 [n]: piece ids
    "starts",  # int64 [n]: first original character of each piece
    "ends",    # int64 [n]: one past its last character (== start if empty)
])

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
# Character alignment of pieces and the original text.
# ----------------------------------------------------------------------------
# Units of the original text, in order of preference: printable ASCII words
# with single spaces (left unchanged by the normalization), whitespace runs
# (one space inside the text, nothing at its ends), the quote pairs `` and ''
# (one '"'), and any other single character.
_UNIT_RE = re.compile(r"([!-&(-_a-~]+(?: [!-&(-_a-~]+)*)|(\s+)|(``|'')|(.)",
                      re.DOTALL)
_IDENTITY, _SPACE = 1, 2
# Characters that must agree after a mismatch before the alignment trusts
# the two texts to be in step again, and how far it looks for that.
_ANCHOR = 3
_MAX_RESYNC = 256


def _char_keys(text, lower):
  """The text as SentencePiece sees it, with each character's origin.

  Each unit of `text` is normalized on its own, the way `preprocess_text`
  and SentencePiece's NFKC normalize the whole text (accents dropped,
  compatibility forms and quote pairs rewritten, whitespace collapsed).

  Returns:
    key: str, the normalized text.
    src_start, src_end: int64 `[len(key)]`, the span of original characters
      each key character comes from.
  """
  keys, starts, ends, identity = [], [], [], []
  for m in _UNIT_RE.finditer(text):
    start, end = m.span()
    unit = m.group()
    if m.lastindex == _IDENTITY:
      key = unit.lower() if lower else unit
    elif m.lastindex == _SPACE:
      key = " " if 0 < start and end < len(text) else ""
    else:
      key = unicodedata.normalize(
          "NFKC", prepro_utils.preprocess_text(unit, lower=lower))
    keys.append(key)
    starts.append(start)
    ends.append(end)
    identity.append(m.lastindex == _IDENTITY)
  lens = np.array([len(k) for k in keys], np.int64)
  within = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
  is_identity = np.repeat(np.array(identity, bool), lens)
  src_start = np.repeat(np.array(starts, np.int64), lens)
  src_start = np.where(is_identity, src_start + within, src_start)
  src_end = np.where(is_identity, src_start + 1,
                     np.repeat(np.array(ends, np.int64), lens))
  return "".join(keys), src_start, src_end


def _common_prefix_len(a, i, b, j):
  """Length of the common prefix of a[i:] and b[j:] (binary search)."""
  hi = min(len(a) - i, len(b) - j)
  if a[i:i + hi] == b[j:j + hi]:
    return hi
  lo = 0  # a[i:i+lo] == b[j:j+lo] and the first hi characters differ
  while hi - lo > 1:
    mid = (lo + hi) // 2
    if a[i:i + mid] == b[j:j + mid]:
      lo = mid
    else:
      hi = mid
  return lo


def _anchored(a, i, b, j):
  """True if a[i:] and b[j:] agree on their next `_ANCHOR` characters (or
  on everything left, near the ends)."""
  rest_a, rest_b = len(a) - i, len(b) - j
  if rest_a < _ANCHOR or rest_b < _ANCHOR:
    return rest_a == rest_b and a[i:] == b[j:]
  return a[i:i + _ANCHOR] == b[j:j + _ANCHOR]


def _resync(a, i, b, j):
  """Smallest skip (di, dj), di + dj >= 1, after which a and b agree again.

  Returns everything that is left when no agreement is found within
  `_MAX_RESYNC` characters.
  """
  rest_a, rest_b = len(a) - i, len(b) - j
  for total in range(1, min(rest_a + rest_b, _MAX_RESYNC) + 1):
    for di in range(max(0, total - rest_b), min(total, rest_a) + 1):
      if _anchored(a, i + di, b, j + total - di):
        return di, total - di
  return rest_a, rest_b


def _align(src, dst):
  """Monotonic character alignment of two nearly equal strings.

  Equal stretches map one to one; a stretch where they differ maps its dst
  characters proportionally onto the differing src characters (an empty
  range when dst has extra characters there).

  Returns:
    lo, hi: int64 `[len(dst)]`; dst[k] stands for src[lo[k]:hi[k]].
  """
  lo = np.zeros(len(dst), np.int64)
  hi = np.zeros(len(dst), np.int64)
  i = j = 0
  while True:
    n = _common_prefix_len(src, i, dst, j)
    lo[j:j + n] = np.arange(i, i + n)
    hi[j:j + n] = lo[j:j + n] + 1
    i, j = i + n, j + n
    if i == len(src) and j == len(dst):
      return lo, hi
    di, dj = _resync(src, i, dst, j)
    k = np.arange(dj)
    lo[j:j + dj] = i + (k * di) // dj if dj else 0
    hi[j:j + dj] = i - (-(k + 1) * di // dj) if dj else 0
    i, j = i + di, j + dj


def align_pieces(text, pieces, lower):
  """The span of original characters behind every piece.

  SentencePiece sees `preprocess_text(text)`: whitespace collapsed, accents
  and combining marks dropped, `` and '' turned into ", compatibility
  characters rewritten, maybe lower-cased; its pieces mark spaces with '▁'.
  The pieces' text is aligned character by character with that normalized
  view of `text`, whose characters remember where they came from.

  Args:
    text: the original paragraph.
    pieces: its pieces (`encode_pieces(preprocess_text(text, lower))`).
    lower: whether the text was lower-cased.

  Returns:
    starts, ends: int64 `[len(pieces)]`. A piece that covers no original
    character (e.g. a lone '▁') gets the empty span at the start of the next
    piece that does.
  """
  num = len(pieces)
  key, src_start, src_end = _char_keys(text, lower)
  dst = "".join(pieces).replace(prepro_utils.SPIECE_UNDERLINE, " ")
  if not num or not key:
    return np.zeros(num, np.int64), np.zeros(num, np.int64)
  lo, hi = _align(key, dst)
  is_space = np.frombuffer(dst.encode("utf-32-le"), np.uint32) == ord(" ")
  mapped = (hi > lo) & ~is_space
  char_start = np.where(mapped, src_start[np.minimum(lo, len(key) - 1)],
                        len(text) + 1)
  char_end = np.where(mapped, src_end[np.maximum(hi - 1, 0)], -1)
  offsets = np.cumsum([0] + [len(p) for p in pieces[:-1]])
  starts = np.minimum.reduceat(char_start, offsets)
  ends = np.maximum.reduceat(char_end, offsets)
  real = np.flatnonzero(ends >= 0)
  if not len(real):
    return np.zeros(num, np.int64), np.zeros(num, np.int64)
  # Empty pieces sit where the next real piece starts (or after the last).
  nxt = np.searchsorted(real, np.arange(num))
  fill = np.where(nxt < len(real), starts[real[np.minimum(nxt, len(real) - 1)]],
                  ends[real[-1]])
  empty = ends < 0
  starts = np.where(empty, fill, starts)
  ends = np.where(empty, fill, ends)
  return starts.astype(np.int64), ends.astype(np.int64)


def lcs_length(a, b):
  """Length of the longest common subsequence of two sequences.

  Bit-parallel (Allison and Dix): bit j of `v` is 0 where b[j] is the last
  element of a longest common subsequence found so far; each element of `a`
  updates all of b at once with integer arithmetic.

  Args:
    a, b: sequences of hashable items (e.g. str).

  Returns:
    int.
  """
  masks = {}
  for j, item in enumerate(b):
    masks[item] = masks.get(item, 0) | (1 << j)
  full = (1 << len(b)) - 1
  v = full
  for item in a:
    u = v & masks.get(item, 0)
    v = ((v + u) | (v - u)) & full
  return len(b) - bin(v).count("1")


# Share of a paragraph's characters the release had to match in the pieces.
_RELEASE_MIN_MATCH = 0.8


def release_aligns(text, pieces, lower):
  """Whether the release's preprocessing could align a paragraph.

  The release matched the original characters, each normalized alone
  (`preprocess_text(c, remove_space=False)`), against the pieces' text
  ('▁' as a space) with a banded longest common subsequence and dropped the
  paragraph's training questions ("MISMATCH DETECTED") when fewer than 80%
  of the characters matched. This is the same test with the exact LCS
  (which the band can only lower).

  Args:
    text: the original paragraph.
    pieces: its pieces.
    lower: whether the text was lower-cased.

  Returns:
    bool.
  """
  norm = {c: prepro_utils.preprocess_text(c, lower=lower, remove_space=False)
          for c in set(text)}
  dst = "".join(pieces).replace(prepro_utils.SPIECE_UNDERLINE, " ")
  matched = lcs_length([norm[c] for c in text], dst)
  return matched > 0 and matched >= _RELEASE_MIN_MATCH * len(text)


def piece_vocab(sp_model):
  """Dict piece -> id of the whole vocabulary.

  Looking pieces up in a dict is many times cheaper than one SentencePiece
  call per piece; pieces outside the vocabulary get `<unk>`, as in
  SentencePiece.
  """
  return {sp_model.id_to_piece(i): i for i in range(sp_model.get_piece_size())}


def encode(sp_model, vocab, text, uncased):
  """Pieces and ids of `text`, normalized as for pretraining.

  Args:
    sp_model: sentencepiece.SentencePieceProcessor.
    vocab: its `piece_vocab`.
    text: str.
    uncased: lower-case (uncased models).

  Returns:
    (list of str pieces, list of int ids).
  """
  pieces = prepro_utils.encode_pieces(
      sp_model, prepro_utils.preprocess_text(text, lower=uncased))
  return pieces, [vocab.get(p, prepro_utils.UNK_ID) for p in pieces]


def tokenize_paragraph(sp_model, vocab, text, uncased):
  """Piece ids of a paragraph and the original span of every piece.

  Args:
    sp_model: sentencepiece.SentencePieceProcessor.
    vocab: its `piece_vocab`.
    text: original paragraph text.
    uncased: lower-case (uncased models).

  Returns:
    TokenizedParagraph.
  """
  return _tokenize(sp_model, vocab, text, uncased)[1]


def _tokenize(sp_model, vocab, text, uncased):
  """(pieces, TokenizedParagraph) of a paragraph (see tokenize_paragraph)."""
  pieces, ids = encode(sp_model, vocab, text, uncased)
  starts, ends = align_pieces(text, pieces, uncased)
  return pieces, TokenizedParagraph(np.array(ids, np.int32), starts, ends)


def char_span_to_pieces(paragraph, start_char, end_char):
  """First and last piece overlapping original characters [start, end).

  Args:
    paragraph: TokenizedParagraph.
    start_char, end_char: int character span.

  Returns:
    (first, last) piece indices, or None if no piece covers the span.
  """
  real = np.flatnonzero(paragraph.ends > paragraph.starts)
  first = np.searchsorted(paragraph.ends[real], start_char, side="right")
  last = np.searchsorted(paragraph.starts[real], end_char, side="left") - 1
  if first >= len(real) or last < first:
    return None
  return int(real[first]), int(real[last])


def piece_span_text(text, paragraph, first, last):
  """The original text of pieces first..last.

  A span ending on an empty piece (which sits at the next piece's start)
  would end in whitespace: it is trimmed.

  Returns:
    (answer text, start char, end char).
  """
  start, end = int(paragraph.starts[first]), int(paragraph.ends[last])
  end = start + len(text[start:end].rstrip())
  return text[start:end], start, end


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
      self.vocab = piece_vocab(self.sp_model)
    return self.vocab

  def paragraph(self, index):
    """TokenizedParagraph of paragraph `index` (cached; unless
    `keep_unaligned`, also whether the release could align it)."""
    if index not in self.tokenized:
      text = self.paragraphs[index]
      pieces, self.tokenized[index] = _tokenize(
          self.sp_model, self._vocab(), text, self.uncased)
      if not self.keep_unaligned:
        self.aligned[index] = release_aligns(text, pieces, self.uncased)
    return self.tokenized[index]

  def gold_pieces(self, paragraph, example):
    """(first, last) piece of a training answer, or None if it covers no
    piece; the last is the piece after the answer when its text ends in
    whitespace (unless `trim_answer_whitespace`)."""
    answer = char_span_to_pieces(paragraph, example.start_char,
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
    _, question_ids = encode(self.sp_model, self._vocab(),
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


# ----------------------------------------------------------------------------
# Predictions.
# ----------------------------------------------------------------------------
# The release's null score of a question without windows: "large and
# positive", so that the best threshold takes it as unanswerable.
NULL_SCORE_WITHOUT_WINDOWS = 1e6


def _window_candidates(window, result, answer_on_last_piece):
  """(score, start log-prob, end log-prob, first, last) of a window's beam.

  Keeps spans inside the paragraph, start <= end, starting at a piece whose
  best context is this window; positions are made paragraph-relative. As in
  the release, the window's last paragraph piece is neither a start nor an
  end, unless `answer_on_last_piece`.
  """
  doc_end = window.doc_len if answer_on_last_piece else window.doc_len - 1
  start_index = np.asarray(result["start_top_index"])
  start_log = np.asarray(result["start_top_log_probs"])
  end_index = np.asarray(result["end_top_index"]).reshape(len(start_index),
                                                          -1)
  end_log = np.asarray(result["end_top_log_probs"]).reshape(end_index.shape)
  out = []
  for i, start in enumerate(start_index.tolist()):
    if start >= doc_end or not window.max_context[start]:
      continue
    for end, end_lp in zip(end_index[i].tolist(), end_log[i].tolist()):
      if start <= end < doc_end:
        out.append((float(start_log[i]) + end_lp, float(start_log[i]),
                    end_lp, window.doc_start + start, window.doc_start + end))
  return out


def get_predictions(examples, paragraphs, converter, results, n_best_size,
                    max_answer_length, answer_on_last_piece=False,
                    skip_empty_answers=False):
  """n-best answers, best answer and null score of every question.

  Args:
    examples: list of SquadExample (prediction set).
    paragraphs: list of original paragraph texts.
    converter: the FeatureConverter that made the prediction features (its
      `windows` and tokenized paragraphs).
    results: iterable of dicts of NumPy values, one per feature:
      `unique_ids`, `start_top_log_probs [K]`, `start_top_index [K]`,
      `end_top_log_probs [K*E]`, `end_top_index [K*E]`, `cls_logits`.
    n_best_size: answers kept per question.
    max_answer_length: longest answer, in pieces.
    answer_on_last_piece: let a window's last paragraph piece start or end
      an answer (the release never does).
    skip_empty_answers: skip spans whose text is empty (e.g. a lone '▁'
      piece); the release keeps them, so its best answer can be "".

  Returns:
    predictions: qas_id -> the best answer's text ("" if none).
    nbest: qas_id -> list of dicts (text, probability, start_log_prob,
      end_log_prob, start_char, end_char), best first.
    null_odds: qas_id -> the lowest `cls_logits` over the question's
      windows; `NULL_SCORE_WITHOUT_WINDOWS` for a question without any (its
      paragraph dropped by the alignment test), whose answer is then "".

  Raises:
    ValueError: if a feature has no result.
  """
  by_id = {int(np.asarray(r["unique_ids"]).reshape(())): r for r in results}
  missing = [w.unique_id for w in converter.windows if w.unique_id not in by_id]
  if missing:
    raise ValueError(f"the model returned no result for {len(missing)} of "
                     f"{len(converter.windows)} features (first unique id "
                     f"{missing[0]})")
  windows_of = collections.defaultdict(list)
  for window in converter.windows:
    windows_of[window.example_index].append(window)

  predictions, nbest, null_odds = {}, {}, {}
  for index, example in enumerate(examples):
    text = paragraphs[example.paragraph_index]
    paragraph = converter.paragraph(example.paragraph_index)
    candidates = []
    null_score = NULL_SCORE_WITHOUT_WINDOWS
    for window in windows_of[index]:
      result = by_id[window.unique_id]
      null_score = min(null_score,
                       float(np.asarray(result["cls_logits"]).reshape(())))
      candidates.extend(_window_candidates(window, result,
                                           answer_on_last_piece))
    candidates.sort(key=lambda c: -c[0])
    entries, seen = [], set()
    for score, start_lp, end_lp, first, last in candidates:
      if len(entries) >= n_best_size:
        break
      if last - first + 1 > max_answer_length:
        continue
      answer, start, end = piece_span_text(text, paragraph, first, last)
      if (skip_empty_answers and not answer) or answer in seen:
        continue
      seen.add(answer)
      entries.append(dict(text=answer, score=score, start_log_prob=start_lp,
                          end_log_prob=end_lp, start_char=start,
                          end_char=end))
    if not entries:
      entries.append(dict(text="", score=-1e6, start_log_prob=-1e6,
                          end_log_prob=-1e6, start_char=-1, end_char=-1))
    scores = np.array([e.pop("score") for e in entries])
    probs = np.exp(scores - scores.max())
    probs /= probs.sum()
    for entry, prob in zip(entries, probs.tolist()):
      entry["probability"] = prob
    predictions[example.qas_id] = entries[0]["text"]
    nbest[example.qas_id] = entries
    null_odds[example.qas_id] = null_score
  return predictions, nbest, null_odds
