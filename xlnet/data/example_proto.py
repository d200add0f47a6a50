"""tf.train.Example bytes of integer (and float32) features, built with NumPy.

The record writer produces millions of examples; building them through the
protobuf classes costs more than all the rest of the example work. An
Example holding only int64 and float lists has a simple wire form, written
here directly (field numbers from
tensorflow/core/example/{example,feature}.proto):

  Example  { 1: Features }
  Features { 1: map entry { 1: key (string), 2: Feature } }  (one per name)
  Feature  { 2: FloatList | 3: Int64List }
  FloatList{ 1: packed little-endian float32 }
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


# _KEEP[k] as little-endian bytes: 1 for each of the first k + 1 bytes.
_KEEP = np.array([0x01, 0x0101, 0x010101, 0x01010101], dtype=np.uint32)
_U = np.uint32


def _packed_varints(values):
  """Packed varints of non-negative ints, one bytes object per row.

  Args:
    values: int array [rows, n], 0 <= values < 2**63.

  Returns:
    list of bytes, one per row.
  """
  v = np.asarray(values)
  if v.size and v.min() < 0:
    raise ValueError("feature values must be >= 0")
  top = int(v.max()) if v.size else 0
  if top < 1 << 7:  # one byte per value
    flat, n = v.astype(np.uint8).tobytes(), v.shape[1]
    return [flat[i * n:(i + 1) * n] for i in range(v.shape[0])]
  if top < 1 << 28:  # token ids: at most 4 bytes, built in uint32 words
    nbytes, flat = _short_varints(v.astype(np.uint32))
  else:
    nbytes, flat = _varint_bytes(v.astype(np.int64))
  ends = np.cumsum(nbytes.sum(axis=1)).tolist()
  return [flat[s:e] for s, e in zip([0] + ends[:-1], ends)]


def _short_varints(v):
  """Varints of values below 2**28, without a per-byte loop.

  Each value's up to 4 varint bytes are assembled in one little-endian
  uint32 word (7 bits per byte, the high bit set on all but the last byte);
  a byte mask keeps the bytes in use.

  Args:
    v: np.uint32 [rows, n], < 2**28.

  Returns:
    (bytes per value int [rows, n], all varints concatenated as bytes).
  """
  more = [v >= 1 << 7, v >= 1 << 14, v >= 1 << 21]
  word = ((v & _U(0x7F)) | ((v << _U(1)) & _U(0x7F00))
          | ((v << _U(2)) & _U(0x7F0000)) | ((v << _U(3)) & _U(0x7F000000))
          | more[0] * _U(0x80) | more[1] * _U(0x8000)
          | more[2] * _U(0x800000))
  extra = more[0].astype(np.intp) + more[1] + more[2]
  keep = _KEEP[extra].view(bool)
  word = word.astype("<u4", copy=False)  # little-endian byte order
  return extra + 1, word.view(np.uint8)[keep].tobytes()


def _varint_bytes(v):
  """Varints of any non-negative int64 values, computed byte by byte.

  Args:
    v: np.int64 [rows, n].

  Returns:
    (bytes per value np.int64 [rows, n], all varints concatenated as bytes).
  """
  flat_v = v.ravel()
  nbytes = np.ones(flat_v.shape, dtype=np.int64)
  k = 1
  while k < 10 and flat_v.max() >= 1 << (7 * k):
    nbytes += flat_v >= 1 << (7 * k)
    k += 1
  ends = np.cumsum(nbytes)
  out = np.empty(int(ends[-1]), dtype=np.uint8)
  starts = ends - nbytes
  for j in range(k):
    sel = nbytes > j if j else slice(None)
    byte = (flat_v[sel] >> (7 * j)) & 0x7F
    more = (nbytes[sel] > j + 1) * 0x80
    out[starts[sel] + j] = byte | more
  return nbytes.reshape(v.shape), out.tobytes()


def _packed_floats(values):
  """Packed float32 values, one bytes object per row of a `[rows, n]` array."""
  flat = np.ascontiguousarray(values, dtype="<f4")
  return [row.tobytes() for row in flat]


# Tags of the Feature fields float_list (2) and int64_list (3).
_FLOAT_LIST, _INT64_LIST = b"\x12", b"\x1a"


@functools.lru_cache(maxsize=4096)
def _entry_prefix(key, packed_len, list_tag=_INT64_LIST):
  """Bytes before the packed values of one Features.feature map entry.

  The entry is {key: Feature{int64_list or float_list: {value: packed}}},
  wrapped as field 1 of Features; everything but the values depends only on
  the key, the list kind and the packed length.
  """
  key = key.encode()
  list_len = 1 + len(_varint(packed_len)) + packed_len  # Int64List
  feature_len = 1 + len(_varint(list_len)) + list_len  # Feature
  entry_len = (1 + len(_varint(len(key))) + len(key)
               + 1 + len(_varint(feature_len)) + feature_len)
  return (b"\x0a" + _varint(entry_len)
          + b"\x0a" + _varint(len(key)) + key
          + b"\x12" + _varint(feature_len)
          + list_tag + _varint(list_len)
          + b"\x0a" + _varint(packed_len))


def serialize_examples(features):
  """Serializes a batch of examples to tf.train.Example bytes.

  Args:
    features: dict name -> int array [batch, n] (all values >= 0), or a
      float array [batch, n] (written as float32).

  Returns:
    list of bytes, one per example (parseable by tf.io.parse_example).
  """
  names = sorted(features)
  is_float = {name: np.asarray(features[name]).dtype.kind == "f"
              for name in names}
  packed = {name: (_packed_floats if is_float[name] else _packed_varints)(
      features[name]) for name in names}
  tags = {name: _FLOAT_LIST if is_float[name] else _INT64_LIST
          for name in names}
  out = []
  for i in range(len(packed[names[0]])):
    body = b"".join(
        _entry_prefix(name, len(packed[name][i]), tags[name])
        + packed[name][i] for name in names)
    out.append(b"\x0a" + _varint(len(body)) + body)
  return out
