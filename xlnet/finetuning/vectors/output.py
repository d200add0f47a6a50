"""The vectors written: JSON lines, or a NumPy array of the pooled ones.

JSON lines, one per text in input order (the layout of BERT's
extract_features.py, whose `linex_index` spelling it keeps):

  pooled (cls, mean)
    {"linex_index": 0, "layers": [{"index": -1, "values": [...]}, ...]}
  per piece (none)
    {"linex_index": 0, "features": [{"token": "▁The", "segment": 0,
     "start": 0, "end": 3, "layers": [{"index": -1, "values": [...]}]},
     ...]}

`index` is the state as --layers names it; `token` a piece's string;
`segment` 0 for the text (a pair's first) and 1 for a pair's second;
`start`/`end` the piece's span of that text's characters. The values are
the float32 vectors' exact values. A `.npy` output holds the pooled
vectors: float32 [texts, len(layers), d_model]. Either file appears only
when complete (`io_utils.atomic_output`).
"""
import contextlib
import json

import numpy as np
import tensorflow as tf

from xlnet import io_utils


def _layers(vectors, layers):
  """[{"index": layer, "values": [...]}] of [S, D] vectors."""
  return [{"index": layer, "values": row.astype(np.float64).tolist()}
          for layer, row in zip(layers, vectors)]


def json_line(index, vectors, places, layers, pooled):
  """One text's JSON line (module docstring).

  Args:
    index: the text's running index.
    vectors: `extractor.pool`'s [S, D] or [pieces, S, D].
    places: the text's kept `inputs.Piece`s.
    layers: the --layers values, in order.
    pooled: whether `vectors` is one text's ([S, D]).
  """
  if pooled:
    return json.dumps({"linex_index": index,
                       "layers": _layers(vectors, layers)})
  return json.dumps({"linex_index": index, "features": [
      {"token": p.piece, "segment": p.segment, "start": p.start,
       "end": p.end, "layers": _layers(v, layers)}
      for p, v in zip(places, vectors)]}, ensure_ascii=False)


@contextlib.contextmanager
def writer(path, layers, pooled, numpy):
  """Yields `write(index, vectors, places)`, which adds one text to
  `path`; the file appears when the block ends without an error.

  Args:
    path: the output file.
    layers: the --layers values.
    pooled: the vectors are pooled ([S, D] per text).
    numpy: write a .npy of the stacked [S, D] vectors (pooled only).
  """
  with io_utils.atomic_output(path) as tmp:
    if numpy:
      rows = []
      yield lambda index, vectors, places: rows.append(vectors)
      with tf.io.gfile.GFile(tmp, "wb") as f:
        np.save(f, np.stack(rows) if rows else np.zeros([0, len(layers), 0],
                                                        np.float32))
      return
    with tf.io.gfile.GFile(tmp, "w") as f:
      f.write("")  # GFile creates the file at its first write: none for no text
      yield lambda index, vectors, places: f.write(
          json_line(index, vectors, places, layers, pooled) + "\n")
