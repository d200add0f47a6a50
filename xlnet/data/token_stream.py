"""Text files to one token stream with sentence ids, cut into parallel rows.

Input text has one sentence per line; an empty line ends a document. Every
line becomes a run of SentencePiece ids sharing one sentence id, and the
sentence id alternates (True, False, True, ...) from line to line, so a
sentence boundary is simply a place where the id changes. An empty line adds
one `<eod>` (with `use_eod`) carrying the previous line's id; the line after
it gets the other id. Files are joined so that the id also changes at every
file boundary. See docs/data.md.

This module does no file I/O and does not import TensorFlow: `LineEncoder`
also runs in the record writer's worker processes.
"""
import itertools

import numpy as np
import sentencepiece as spm

from xlnet.data import prepro_utils
from xlnet.data.prepro_utils import EOD_ID


def split_lines(raw, path):
  r"""Decodes a UTF-8 file's bytes into lines (ValueError names the line).

  Only "\n" ends a line, as when iterating a tf.io.gfile file: U+2028,
  U+2029, \x0b, \x0c, \x1c-\x1e, \x85 and a lone "\r" (which
  `str.splitlines` would also break at) stay inside the line, where the
  normalization treats them as spaces.

  Args:
    raw: bytes of the file.
    path: the file's name, for messages.

  Returns:
    list of str, without their "\n".
  """
  try:
    text = raw.decode("utf-8")
  except UnicodeDecodeError as e:
    line = raw[:e.start].count(b"\n") + 1
    raise ValueError(f"{path} line {line} is not UTF-8 text "
                     f"(byte {raw[e.start]:#x} at offset {e.start})") from None
  lines = text.split("\n")
  if lines[-1] == "":  # the file's final newline starts no line
    lines.pop()
  return lines


class LineEncoder:
  """Encodes non-blank lines to ids, as `prepro_utils.encode_ids` would.

  Raw text is normalized with `prepro_utils.preprocess_text` first; with
  `from_raw_text=False` a line holds space-separated ids, checked against
  the vocabulary. Pickles as the model's bytes, so it can be sent to worker
  processes.
  """

  def __init__(self, sp_proto, uncased, from_raw_text):
    """Loads the model.

    Args:
      sp_proto: bytes of a SentencePiece `.model` file.
      uncased: lowercase raw text.
      from_raw_text: lines are raw text (else space-separated ids).
    """
    self._settings = (sp_proto, uncased, from_raw_text)
    self.uncased, self.from_raw_text = uncased, from_raw_text
    self.sp_model = spm.SentencePieceProcessor()
    self.sp_model.load_from_serialized_proto(sp_proto)
    self._digit_comma = np.asarray(
        prepro_utils.digit_comma_table(self.sp_model), dtype=bool)

  def __reduce__(self):
    return (LineEncoder, self._settings)

  def __call__(self, lines, path):
    """Encodes lines of one file.

    Args:
      lines: list of non-blank str lines.
      path: the file they come from, for messages.

    Returns:
      (ids np.int32 [total], lengths np.int64 [len(lines)]).
    """
    if self.from_raw_text:
      return self._encode_text(lines)
    return self._parse_ids(lines, path)

  def _encode_text(self, lines):
    """Raw text: normalize, encode in one batch, fix digit-comma pieces."""
    texts = [prepro_utils.preprocess_text(line.strip(), lower=self.uncased)
             for line in lines]
    # One SentencePiece thread: parallelism comes from worker processes.
    encoded = self.sp_model.encode(texts, out_type=int, num_threads=1)
    lengths = np.fromiter(map(len, encoded), dtype=np.int64,
                          count=len(encoded))
    flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=np.int32,
                       count=int(lengths.sum()))
    line_of = np.repeat(np.arange(len(texts)), lengths)
    redo = np.unique(line_of[self._digit_comma[flat]])
    if not len(redo):
      return flat, lengths
    # Rare: re-encode the lines holding a piece such as '▁1999,' with the
    # digit-comma rule and splice them back in.
    for j in redo:
      encoded[j] = prepro_utils.encode_ids(self.sp_model, texts[j])
    return self._flatten(encoded)

  @staticmethod
  def _flatten(encoded):
    """list of id lists -> (ids np.int32 [total], lengths np.int64)."""
    lengths = np.fromiter(map(len, encoded), dtype=np.int64,
                          count=len(encoded))
    flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=np.int64,
                       count=int(lengths.sum()))
    return flat.astype(np.int32), lengths

  def _parse_ids(self, lines, path):
    """Lines of space-separated ids, each in [0, vocab size)."""
    try:
      encoded = [[int(t) for t in line.split()] for line in lines]
    except ValueError:
      raise ValueError(f"--from_raw_text=False but {path} holds a line that "
                       "is not space-separated ids") from None
    lengths = np.fromiter(map(len, encoded), dtype=np.int64,
                          count=len(encoded))
    flat = [i for ids in encoded for i in ids]
    vocab_size = self.sp_model.get_piece_size()
    bad = [i for i in flat if not 0 <= i < vocab_size]
    if bad:
      raise ValueError(
          f"--from_raw_text=False but {path} holds id {bad[0]}, outside "
          f"the vocabulary [0, {vocab_size}) of --sp_path")
    return np.asarray(flat, dtype=np.int32), lengths


def text_lines(lines):
  """Which lines hold text.

  Returns:
    (list of the non-blank lines, np.bool_ [len(lines)] is-text flags).
  """
  is_text = np.fromiter((bool(line.strip()) for line in lines), dtype=bool,
                        count=len(lines))
  return [line for line, t in zip(lines, is_text) if t], is_text


def file_stream(is_text, ids, lengths, use_eod):
  """Assembles one file's stream from its encoded text lines.

  Args:
    is_text: np.bool_ [num_lines]: which lines hold text (the others are
      blank and end a document).
    ids: np.int32 [total]: the text lines' ids, concatenated.
    lengths: np.int64 [num_text_lines]: ids per text line.
    use_eod: a blank line adds one <eod> (else it is skipped).

  Returns:
    (ids np.int32 [n], sent_ids np.bool_ [n]): sentence ids start at True
    and flip after every text line; an <eod> carries the previous line's id.
  """
  kinds = is_text if use_eod else is_text[is_text]
  unit_len = np.ones(len(kinds), dtype=np.int64)
  unit_len[kinds] = lengths
  # A text line's id is True after an even number of text lines; an <eod>
  # repeats the id of the line before it (and does not advance the
  # alternation).
  texts_before = np.cumsum(kinds) - kinds
  unit_sid = (texts_before % 2 == 0) == kinds
  out = np.full(int(unit_len.sum()), EOD_ID, dtype=np.int32)
  out[np.repeat(kinds, unit_len)] = ids
  return out, np.repeat(unit_sid, unit_len)


def join_streams(streams):
  """Concatenates per-file streams, flipping ids to change at every join.

  Args:
    streams: list of (ids, sent_ids) in reading order.

  Returns:
    (ids np.int32 [n], sent_ids np.bool_ [n]).
  """
  all_ids, all_sids, prev = [], [], None
  for ids, sids in streams:
    if not len(ids):
      continue
    if prev is not None and sids[0] == prev:
      sids = np.logical_not(sids)
    prev = sids[-1]
    all_ids.append(ids)
    all_sids.append(sids)
  if not all_ids:
    return np.zeros(0, np.int32), np.zeros(0, bool)
  return np.concatenate(all_ids), np.concatenate(all_sids)


def batchify(data, bsz_per_host, sent_ids=None, num_core_per_host=1,
             bi_data=False):
  """Cuts the stream into parallel rows.

  The first three parameters are the release's (`data_utils.batchify` of
  zihangdai/xlnet), so its calls run unchanged. With bi_data,
  bsz_per_host/2 forward rows are made and, within each core's share of
  rows, followed by their reversed copies.

  Args:
    data: np.int32 [n].
    bsz_per_host: number of rows.
    sent_ids: np.bool_ [n], or None.
    num_core_per_host: cores sharing the rows.
    bi_data: add backward rows.

  Returns:
    rows [bsz_per_host, row_len], or (rows, sent_rows [bsz_per_host,
    row_len]) when sent_ids is given (as the release).
  """
  n_fwd = bsz_per_host // 2 if bi_data else bsz_per_host
  row_len = len(data) // n_fwd

  def _rows(x):
    fwd = x[:n_fwd * row_len].reshape(n_fwd, row_len)
    if not bi_data:
      return fwd
    fwd = fwd.reshape(num_core_per_host, 1, -1, row_len)
    both = np.concatenate([fwd, fwd[..., ::-1]], axis=1)
    return both.reshape(bsz_per_host, row_len)

  if sent_ids is None:
    return _rows(data)
  return _rows(data), _rows(sent_ids)
