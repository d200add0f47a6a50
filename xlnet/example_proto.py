"""tf.train.Example bytes of integer features, built with NumPy.

The record writer produces millions of examples; building them through the
protobuf classes costs more than all the rest of the example work. An
Example holding only int64 lists has a simple wire form, written here
directly (field numbers from tensorflow/core/example/{example,feature}.proto):

  Example  { 1: Features }
  Features { 1: map entry { 1: key (string), 2: Feature } }  (one per name)
  Feature  { 3: Int64List }
  Int64List{ 1: packed varints }

Map entries are written in sorted key order, as the protobuf library
serializes maps deterministically, so the bytes equal
`tf.train.Example(...).SerializeToString(deterministic=True)`.

This module does not import TensorFlow.
"""
import functools

import numpy as np


def _varint(n):
  """Protobuf varint of one non-negative int, as bytes."""
  out = bytearray()
  while n >= 0x80:
    out.append((n & 0x7F) | 0x80)
    n >>= 7
  out.append(n)
  return bytes(out)


def _packed_varints(values):
  """Packed varints of non-negative ints, one bytes object per row.

  Args:
    values: int array [rows, n], 0 <= values < 2**63.

  Returns:
    list of bytes, one per row.
  """
  v = np.asarray(values, dtype=np.int64)
  if v.size and v.min() < 0:
    raise ValueError("feature values must be >= 0")
  if not v.size or v.max() < 0x80:  # one byte per value
    flat, n = v.astype(np.uint8).tobytes(), v.shape[1]
    return [flat[i * n:(i + 1) * n] for i in range(v.shape[0])]
  shape, v = v.shape, v.ravel()
  nbytes = np.ones(v.shape, dtype=np.int64)
  k = 1
  while k < 10 and v.max() >= 1 << (7 * k):
    nbytes += v >= 1 << (7 * k)
    k += 1
  ends = np.cumsum(nbytes)
  out = np.empty(int(ends[-1]), dtype=np.uint8)
  starts = ends - nbytes
  for j in range(k):
    sel = nbytes > j if j else slice(None)
    byte = (v[sel] >> (7 * j)) & 0x7F
    more = (nbytes[sel] > j + 1) * 0x80
    out[starts[sel] + j] = byte | more
  flat = out.tobytes()
  row_ends = ends.reshape(shape)[:, -1].tolist()
  return [flat[s:e] for s, e in zip([0] + row_ends[:-1], row_ends)]


@functools.lru_cache(maxsize=4096)
def _entry_prefix(key, packed_len):
  """Bytes before the packed values of one Features.feature map entry.

  The entry is {key: Feature{int64_list: Int64List{value: packed}}}, wrapped
  as field 1 of Features; everything but the values depends only on the key
  and the packed length.
  """
  key = key.encode()
  list_len = 1 + len(_varint(packed_len)) + packed_len  # Int64List
  feature_len = 1 + len(_varint(list_len)) + list_len  # Feature
  entry_len = (1 + len(_varint(len(key))) + len(key)
               + 1 + len(_varint(feature_len)) + feature_len)
  return (b"\x0a" + _varint(entry_len)
          + b"\x0a" + _varint(len(key)) + key
          + b"\x12" + _varint(feature_len)
          + b"\x1a" + _varint(list_len)
          + b"\x0a" + _varint(packed_len))


def serialize_examples(features):
  """Serializes a batch of examples to tf.train.Example bytes.

  Args:
    features: dict name -> int array [batch, n] (all values >= 0).

  Returns:
    list of bytes, one per example (parseable by tf.io.parse_example).
  """
  names = sorted(features)
  packed = {name: _packed_varints(features[name]) for name in names}
  out = []
  for i in range(len(packed[names[0]])):
    body = b"".join(_entry_prefix(name, len(packed[name][i])) + packed[name][i]
                    for name in names)
    out.append(b"\x0a" + _varint(len(body)) + body)
  return out
