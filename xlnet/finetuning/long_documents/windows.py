"""A long document's pieces cut into windows (no TensorFlow).

With `max_seq_length` = L, a window holds c = L - 2 pieces of the document
and is laid out as the classifier's single text (`classifier/features.py`):

    window k:  pieces [k c, (k + 1) c) <sep> <cls>, left-padded to L

  * `input_ids`: `[0] * pad + pieces + [<sep>, <cls>]`;
  * `segment_ids`: padding 4, the pieces and `<sep>` 0, `<cls>` 2;
  * `input_mask`: 1 on padding.

The windows follow each other without overlap, so every piece of a document
is in exactly one window, and only the last window of a document can be
short (its padding in front). A document has at least one window (an empty
one is `<sep> <cls>`, as the classifier lays it out) and at most
`max_windows`: the pieces after the first `max_windows` x c are dropped, as
`truncate` drops those after the first c.

A record holds `max_windows` windows: the document's, then absent ones (all
padding: ids 0, mask 1, segment 4) up to `max_windows`, and `window_mask`
`[max_windows]` (1 on the document's windows). Why this layout:

  * each window is exactly the input the release's classifier sees, so
    `windows` is that model applied to every window;
  * in `memory` mode a window's memory is the windows before it, and those
    are full: no padding ever enters a memory (neither our model nor HF's
    masks memory positions: `modeling._build_masks`);
  * the label is read at the document's last window, before the absent
    ones, whose states nothing reads.
"""
import numpy as np

from xlnet.finetuning.classifier import features as classifier_features

# The special pieces of a window: <sep> and <cls>.
SPECIAL_PIECES = 2


def pieces_per_window(max_seq_length):
  """c: the document's pieces in one window of length `max_seq_length`."""
  return max_seq_length - SPECIAL_PIECES


def cut(ids, max_seq_length, max_windows):
  """The document's pieces, window by window.

  Args:
    ids: list of the document's piece ids.
    max_seq_length: L, the window's length (>= 3).
    max_windows: the most windows kept.

  Returns:
    list of 1..max_windows lists of ids: consecutive slices of `ids` of c
    pieces each, the last one maybe shorter (an empty document: one empty
    window).
  """
  per = pieces_per_window(max_seq_length)
  kept = ids[:per * max_windows]
  return [kept[start:start + per]
          for start in range(0, max(len(kept), 1), per)]


def window_inputs(pieces, max_seq_length):
  """One window's model inputs (the classifier's layout of a single text).

  Returns:
    (input_ids list of int, input_mask list of float, segment_ids list of
    int), each of length max_seq_length.
  """
  return classifier_features.sequence_layout(list(pieces), [],
                                             max_seq_length)


def absent_window(max_seq_length):
  """The inputs of a window a document does not have: all padding."""
  length = max_seq_length
  return ([classifier_features.PAD_ID] * length, [1.0] * length,
          [classifier_features.SEG_ID_PAD] * length)


def document_windows(ids, max_seq_length, max_windows):
  """A document's record: its windows and the absent ones.

  Args:
    ids: list of the document's piece ids.
    max_seq_length: L.
    max_windows: W.

  Returns:
    dict of NumPy arrays: `input_ids`, `segment_ids` int32 [W, L],
    `input_mask` float32 [W, L] (1 = padding), `window_mask` float32 [W]
    (1 = a window of the document).
  """
  windows = cut(ids, max_seq_length, max_windows)
  rows = [window_inputs(w, max_seq_length) for w in windows]
  rows += [absent_window(max_seq_length)] * (max_windows - len(windows))
  ids_, mask, seg = (np.array(column) for column in zip(*rows))
  return {"input_ids": ids_.astype(np.int32),
          "input_mask": mask.astype(np.float32),
          "segment_ids": seg.astype(np.int32),
          "window_mask": (np.arange(max_windows) < len(windows)).astype(
              np.float32)}


def piece_positions(segment_ids, count, segment):
  """Where a text's pieces sit in a laid-out sequence.

  Args:
    segment_ids: the sequence's segment ids (list or array [L]).
    count: how many pieces the text kept.
    segment: its segment id (`SEG_ID_A` or `SEG_ID_B`).

  Returns:
    int64 array [count]: the positions of its pieces, in order (its first
    `count` positions of that segment; the one after is its `<sep>`).
  """
  return np.flatnonzero(np.asarray(segment_ids) == segment)[:count]
