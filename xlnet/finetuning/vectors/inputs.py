"""Texts -> the model's inputs, each kept piece with its place: its string,
its span of the original text's characters and where it sits in the
windows (no TensorFlow).

A text is laid out as the classifier lays it out (`classifier/features.py`:
`A <sep> [B <sep>] <cls>`, left-padded, a pair truncated by its longer
side) or, read as windows (`--long_documents=windows` or `memory`), cut
into `long_documents/windows.py`'s windows. Either way a text's inputs are
[W', L] arrays (W' = 1 when truncated) and `window_mask` [W'].
"""
import dataclasses
import os

import numpy as np

from xlnet import io_utils
from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.classifier import processors as classifier_processors
from xlnet.finetuning.long_documents import windows
from xlnet.finetuning.squad import alignment
from xlnet.finetuning.vectors import config as config_lib


@dataclasses.dataclass(frozen=True)
class Piece:
  """One piece of a text as the model read it.

  Attributes:
    segment: 0 (the text, or a pair's first) or 1 (a pair's second).
    piece: its SentencePiece string ('▁' marks a space before it).
    start, end: its span of the original text's characters ([start, end);
      empty for a piece that covers none, `alignment.align_pieces`).
    window, position: where its state is: the window and the position in
      it.
  """
  segment: int
  piece: str
  start: int
  end: int
  window: int
  position: int


def read_texts(config):
  """The texts of `config.input_file`, in order.

  Returns:
    list of (text_a, text_b or None).

  Raises:
    ValueError: one line naming the file (and line) that cannot be read.
  """
  if (io_utils.is_local(config.input_file)
      and os.path.isdir(config.input_file)):  # either layout
    raise ValueError(f"--input_file={config.input_file}: cannot read it "
                     "(Is a directory)")
  if config.input_format == "lines":
    try:
      lines = io_utils.read_file(config.input_file).splitlines()
    except FileNotFoundError:
      raise ValueError(f"--input_file={config.input_file} not found") from None
    except OSError as e:
      raise ValueError(f"--input_file={config.input_file}: cannot read it "
                       f"({e.strerror or e})") from None
    except UnicodeDecodeError as e:
      raise ValueError(f"--input_file={config.input_file} is not UTF-8 text "
                       f"({e.reason} at byte {e.start})") from None
    return [tuple(line.split(config_lib.LINE_PAIR_SEPARATOR, 1))
            if config_lib.LINE_PAIR_SEPARATOR in line else (line, None)
            for line in lines]
  return _read_table(config)


def _read_table(config):
  """`read_texts` of a TSV file: its columns by index or header name."""
  path = config.input_file
  if not io_utils.exists(path):
    raise ValueError(f"--input_file={path} not found")
  if not config.text_a_column:
    raise ValueError("--text_a_column='': expected a column index or name")
  columns = [classifier_processors.parse_column(value, name)
             for value, name in ((config.text_a_column, "text_a_column"),
                                 (config.text_b_column, "text_b_column"))
             if value]
  header = (any(isinstance(c, str) for c in columns)
            or bool(config.contains_header))
  rows = classifier_processors.read_rows(path, "\t", quoting=False)
  if header:
    first = next(rows, (None, []))[1]
    names = [h.strip() for h in first]
    for i, column in enumerate(columns):
      if isinstance(column, str):
        if column not in names:
          raise ValueError(f"{path}: no column named {column!r} in the "
                           f"header row {names}")
        columns[i] = names.index(column)
  texts = []
  for number, fields in rows:
    if max(columns) >= len(fields):
      raise ValueError(f"{path} line {number}: {len(fields)} columns, "
                       f"column {max(columns)} asked")
    values = [fields[c] for c in columns]
    texts.append((values[0], values[1] if len(values) > 1 else None))
  return texts


class Encoder:
  """Turns texts into the model's inputs and their pieces' places.

  Args:
    sp_model: the model's SentencePiece model.
    uncased: lower-case the text.
    max_seq_length: L.
    settings: a `long_documents.settings.LongDocuments`.
  """

  def __init__(self, sp_model, uncased, max_seq_length, settings):
    self._sp_model = sp_model
    self._vocab = alignment.piece_vocab(sp_model)
    self._uncased = uncased
    self._length = max_seq_length
    self._settings = settings

  @property
  def windows_per_text(self):
    """W': the windows of every text's inputs."""
    return self._settings.max_windows if self._settings.in_windows else 1

  def _tokenize(self, text):
    """(pieces, TokenizedParagraph) of `text` (ids and character spans)."""
    return alignment.tokenize_with_pieces(self._sp_model, self._vocab, text,
                                          self._uncased)

  def encode(self, text_a, text_b=None):
    """A text's inputs and pieces.

    Returns:
      (dict of NumPy arrays: `input_ids`, `segment_ids` int32 [W', L],
      `input_mask` float32 [W', L], `window_mask` float32 [W'];
      list of the kept `Piece`s, a pair's first text's before the
      second's).
    """
    tokens = [self._tokenize(text_a)]
    if text_b is not None:
      tokens.append(self._tokenize(text_b))
    if self._settings.in_windows:
      return self._windows(*tokens[0])
    ids = [list(t.ids) for _, t in tokens] + [[]]
    row = classifier_features.sequence_layout(ids[0], ids[1], self._length)
    places = []
    for segment, ((pieces, spans), kept) in enumerate(zip(tokens, ids)):
      positions = windows.piece_positions(row[2], len(kept), segment)
      places += _pieces(segment, pieces, spans, range(len(kept)), 0,
                        positions)
    arrays = {"input_ids": np.array([row[0]], np.int32),
              "input_mask": np.array([row[1]], np.float32),
              "segment_ids": np.array([row[2]], np.int32),
              "window_mask": np.ones([1], np.float32)}
    return arrays, places

  def _windows(self, pieces, spans):
    """`encode` of a single text cut into windows."""
    arrays = windows.document_windows(list(spans.ids), self._length,
                                      self._settings.max_windows)
    places, first = [], 0
    for w, kept in enumerate(windows.cut(list(spans.ids), self._length,
                                         self._settings.max_windows)):
      positions = windows.piece_positions(arrays["segment_ids"][w],
                                          len(kept), 0)
      places += _pieces(0, pieces, spans, range(first, first + len(kept)),
                        w, positions)
      first += len(kept)
    return arrays, places


def _pieces(segment, pieces, spans, indices, window, positions):
  """The `Piece`s of `indices` (into a text's pieces) at `positions` of
  `window`."""
  return [Piece(segment, pieces[i], int(spans.starts[i]), int(spans.ends[i]),
                window, int(p)) for i, p in zip(indices, positions)]
