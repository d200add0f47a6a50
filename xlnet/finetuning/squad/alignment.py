"""SQuAD text and SentencePiece pieces: every piece's span of original
characters (`align_pieces`), the release's alignment test
(`release_aligns`), tokenizing a paragraph once (`tokenize_paragraph`) and
the way back from pieces to answer text (`piece_span_text`).

Part of the SQuAD data path (`squad/features.py` reads questions and makes the
window features, `squad/predictions.py` turns beams into answers).
"""
import collections
import re
import unicodedata

import numpy as np

from xlnet.data import prepro_utils

TokenizedParagraph = collections.namedtuple("TokenizedParagraph", [
    "ids",     # int32 [n]: piece ids
    "starts",  # int64 [n]: first original character of each piece
    "ends",    # int64 [n]: one past its last character (== start if empty)
])


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
  return tokenize_with_pieces(sp_model, vocab, text, uncased)[1]


def tokenize_with_pieces(sp_model, vocab, text, uncased):
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
