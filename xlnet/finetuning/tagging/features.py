"""Words -> pieces -> windows of pieces, and the windows' predictions
stitched back into one tag per word (NumPy; no TensorFlow).

Each word is encoded by itself (`prepro_utils.encode_ids` of the
normalized word: its first piece carries SentencePiece's word-initial
mark, as in running text), so an entity's boundary is a word boundary and
no piece spans two words. A word that encodes to nothing (a control
character) is one `<unk>` piece. A word's label sits on its first piece;
its other pieces, `<sep>`, `<cls>` and the padding carry weight 0, so the
loss and the metrics see each word once.

A sentence becomes one or more windows of at most `max_seq_length - 2`
pieces, laid out as the classifier's single text:

  [padding] pieces <sep> <cls>     segments 4 .. 0 .. 0 2, input_mask 1
                                   on the padding (XLNet pads on the left)

Windows cut between words: the first starts at the sentence's first word,
the next at the first word at least `window_stride` pieces after the
previous start, until a window reaches the last word (a word longer than a
window keeps its first pieces). Each word is scored in one window, the one
where it has the most context (the most pieces on its shorter side, the
earlier window on ties: SQuAD's rule), so stitching the windows'
predictions gives every word exactly one tag. The room a window leaves is
filled with context: the words around it, one at a time on each side,
from its own sentence, or with `document_context` from the sentences of
its document; context pieces are read, never scored.
"""
import dataclasses
from typing import Tuple

import numpy as np

from xlnet.data import prepro_utils

# The classifier's single-text layout: the text and its <sep>, <cls>, the
# padding.
SEG_TEXT, SEG_CLS, SEG_PAD = 0, 2, 4
PAD_ID = 0
# The smallest max_seq_length: one piece, <sep> and <cls>.
MIN_SEQ_LENGTH = 3
# The features of a window's record, each [max_seq_length].
RECORD_FEATURES = ("input_ids", "input_mask", "segment_ids", "label_ids",
                   "label_weights")


@dataclasses.dataclass(frozen=True)
class Window:
  """One window of one sentence.

  Attributes:
    sentence: the sentence's index in its file.
    owned: (position in the sequence, word index) of each word scored in
      this window: its first piece.
    arrays: the record: `input_ids`, `segment_ids`, `label_ids` int64,
      `input_mask`, `label_weights` float32, each `[max_seq_length]`.
  """
  sentence: int
  owned: Tuple[Tuple[int, int], ...]
  arrays: dict


class Encoder:
  """Words -> piece ids, each distinct word encoded once."""

  def __init__(self, sp_model, uncased):
    self.sp_model = sp_model
    self.uncased = uncased
    self._cache = {}

  def __call__(self, word):
    ids = self._cache.get(word)
    if ids is None:
      ids = prepro_utils.encode_ids(
          self.sp_model, prepro_utils.preprocess_text(word,
                                                      lower=self.uncased))
      ids = self._cache[word] = tuple(ids) or (prepro_utils.UNK_ID,)
    return ids


def window_spans(lengths, room, stride):
  """The windows over words of `lengths` pieces (each <= room).

  Args:
    lengths: list of ints >= 1.
    room: pieces a window holds.
    stride: pieces between two windows' starts, at least (one word).

  Returns:
    list of (first word, last word + 1), covering every word.
  """
  offsets = np.concatenate([[0], np.cumsum(lengths)])
  spans, first = [], 0
  while True:
    last = first
    while last < len(lengths) and offsets[last + 1] - offsets[first] <= room:
      last += 1
    spans.append((first, last))
    if last == len(lengths):
      return spans
    nxt = first + 1
    while nxt < last and offsets[nxt] - offsets[first] < stride:
      nxt += 1
    first = nxt


def owners(spans, lengths):
  """The window that scores each word: where its shorter side holds the
  most pieces (the earlier window on ties).

  Returns:
    list, per word, of an index into `spans`.
  """
  offsets = np.concatenate([[0], np.cumsum(lengths)])
  best = [(-1, None)] * len(lengths)
  for index, (first, last) in enumerate(spans):
    for word in range(first, last):
      room = min(offsets[word] - offsets[first],
                 offsets[last] - offsets[word + 1])
      if room > best[word][0]:
        best[word] = (room, index)
  return [index for _, index in best]


def _with_context(stream, lengths, first, last, room):
  """Stream indices [left, right) of the window [first, last) grown by
  whole context words, one at a time on each side (right first), while
  they fit `room` pieces."""
  used = sum(lengths[first:last])
  left, right = first, last
  grow = True
  while grow:
    grow = False
    if right < len(stream) and used + lengths[right] <= room:
      used += lengths[right]
      right += 1
      grow = True
    if left > 0 and used + lengths[left - 1] <= room:
      used += lengths[left - 1]
      left -= 1
      grow = True
  return left, right


def _arrays(pieces, labels, max_seq_length):
  """A window's record from its pieces and their (label id, weight)."""
  pad = max_seq_length - len(pieces) - 2
  ids = [PAD_ID] * pad + list(pieces) + [prepro_utils.SEP_ID,
                                         prepro_utils.CLS_ID]
  label_ids = np.zeros(max_seq_length, np.int64)
  weights = np.zeros(max_seq_length, np.float32)
  for position, (label, weight) in labels.items():
    label_ids[pad + position] = label
    weights[pad + position] = weight
  return {
      "input_ids": np.array(ids, np.int64),
      "input_mask": np.array([1.0] * pad + [0.0] * (len(pieces) + 2),
                             np.float32),
      "segment_ids": np.array([SEG_PAD] * pad + [SEG_TEXT] * (len(pieces) + 1)
                              + [SEG_CLS], np.int64),
      "label_ids": label_ids,
      "label_weights": weights}


def _streams(sentences, document_context):
  """Each sentence's context stream: the (sentence, word) pairs read around
  it (its document's, or its own), and where the sentence starts in it."""
  groups = {}
  for index, sentence in enumerate(sentences):
    key = (sentence.document if document_context
           and sentence.document is not None else ("alone", index))
    groups.setdefault(key, []).append(index)
  out = {}
  for members in groups.values():
    stream = [(s, w) for s in members
              for w in range(len(sentences[s].words))]
    start = 0
    for s in members:
      out[s] = (stream, start)
      start += len(sentences[s].words)
  return out


def make_windows(sentences, encode, label_list, max_seq_length,
                 window_stride, document_context=False):
  """The windows of every sentence, in sentence order.

  Args:
    sentences: list of `layouts.Sentence`.
    encode: word -> tuple of piece ids (`Encoder`).
    label_list: the model's tags; a word whose tag is not among them (or
      has none) is scored at weight 0.
    max_seq_length: L >= MIN_SEQ_LENGTH.
    window_stride: pieces between two windows' starts, at least.
    document_context: fill windows with the document's other sentences.

  Returns:
    list of `Window`.
  """
  room = max_seq_length - 2
  label_index = {tag: i for i, tag in enumerate(label_list)}
  pieces = [[encode(w)[:room] for w in s.words] for s in sentences]
  windows = []
  for s, (stream, start) in sorted(_streams(sentences,
                                            document_context).items()):
    sentence = sentences[s]
    lengths = [len(p) for p in pieces[s]]
    spans = window_spans(lengths, room, window_stride)
    owner = owners(spans, lengths)
    stream_lengths = [len(pieces[t][w]) for t, w in stream]
    for index, (first, last) in enumerate(spans):
      left, right = _with_context(stream, stream_lengths, start + first,
                                  start + last, room)
      window_pieces, labels, owned = [], {}, []
      for t, w in stream[left:right]:
        if t == s and owner[w] == index:
          tag = sentence.tags[w] if sentence.tags else None
          labels[len(window_pieces)] = (label_index.get(tag, 0),
                                        float(tag in label_index))
          owned.append((len(window_pieces), w))
        window_pieces.extend(pieces[t][w])
      arrays = _arrays(window_pieces, labels, max_seq_length)
      pad = max_seq_length - len(window_pieces) - 2
      windows.append(Window(s, tuple((pad + p, w) for p, w in owned),
                            arrays))
  return windows


def stacked(windows):
  """The windows' records as one batch: name -> `[n, max_seq_length]`."""
  return {name: np.stack([w.arrays[name] for w in windows])
          for name in RECORD_FEATURES}


def stitch(windows, logits, sentences, label_list):
  """Each word's predicted tag, from the window that scores it.

  Args:
    windows: `make_windows`' output.
    logits: float `[len(windows), max_seq_length, n_class]`, in order.
    sentences: the sentences the windows were made of.
    label_list: the model's tags (the classes' names).

  Returns:
    (tags, word_logits): per sentence, a list of tags and a float32
    `[words, n_class]` array of their logits.

  Raises:
    ValueError: if a word is scored in no window or in two.
  """
  if len(logits) != len(windows):
    raise ValueError(f"{len(logits)} windows predicted, {len(windows)} "
                     "made")
  n_class = len(label_list)
  word_logits = [np.full((len(s.words), n_class), np.nan, np.float32)
                 for s in sentences]
  seen = [np.zeros(len(s.words), np.int64) for s in sentences]
  for window, values in zip(windows, logits):
    for position, word in window.owned:
      word_logits[window.sentence][word] = values[position]
      seen[window.sentence][word] += 1
  for s, counts in enumerate(seen):
    if counts.size and (counts.min() != 1 or counts.max() != 1):
      raise ValueError(f"sentence {s}: a word is scored in "
                       f"{int(counts.min())} or {int(counts.max())} windows,"
                       " not one")
  tags = [[label_list[i] for i in np.argmax(values, axis=-1)]
          for values in word_logits]
  return tags, word_logits
