"""Tests of xlnet.data.example_proto: its bytes equal those of the protobuf
library's `tf.train.Example(...).SerializeToString(deterministic=True)` for
every varint width, float32 lists and mixed features."""
import numpy as np
import pytest
import tensorflow as tf

from xlnet.data import example_proto

pytestmark = pytest.mark.tf_version


def protobuf_bytes(features, i):
  """Example i of `features` built with the protobuf classes."""
  feature = {}
  for name, values in features.items():
    row = np.asarray(values)[i]
    if row.dtype.kind == "f":
      feature[name] = tf.train.Feature(float_list=tf.train.FloatList(
          value=[float(x) for x in row.astype(np.float32)]))
    else:
      feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(
          value=[int(x) for x in row]))
  return tf.train.Example(features=tf.train.Features(
      feature=feature)).SerializeToString(deterministic=True)


@pytest.mark.parametrize("high", [2, 2**14, 2**21 + 5, 2**62])
@pytest.mark.quick
def test_serialized_examples_equal_protobuf_bytes(high):
  rng = np.random.RandomState(0)
  feats = {"input": rng.randint(0, high, size=(3, 50), dtype=np.int64),
           "is_masked": rng.randint(0, 2, size=(3, 50)).astype(bool),
           "seg_id": rng.randint(0, 3, size=(3, 50)).astype(np.int32),
           "label": np.array([[0], [1], [127]])}
  edges = np.array([0, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**35,
                    2**63 - 1])
  feats["input"][0, :len(edges)] = np.minimum(edges, high - 1)
  for i, raw in enumerate(example_proto.serialize_examples(feats)):
    expected = tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(int64_list=tf.train.Int64List(
            value=[int(x) for x in v[i]]))
        for k, v in feats.items()}))
    assert raw == expected.SerializeToString(deterministic=True)
  with pytest.raises(ValueError, match="must be >= 0"):
    example_proto.serialize_examples({"input": np.array([[1, -1]])})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_lists_equal_protobuf_bytes(dtype):
  rng = np.random.RandomState(1)
  feats = {"target_mask": rng.uniform(-3, 3, size=(4, 7)).astype(dtype),
           "input": rng.randint(0, 32000, size=(4, 7)),
           "zeros": np.zeros((4, 3), dtype)}
  feats["target_mask"][0, :3] = [0.0, -0.0, 1e-40]  # signed zero, denormal
  serialized = example_proto.serialize_examples(feats)
  assert len(serialized) == 4
  for i, raw in enumerate(serialized):
    assert raw == protobuf_bytes(feats, i)
    parsed = tf.train.Example.FromString(raw).features.feature
    np.testing.assert_array_equal(
        parsed["target_mask"].float_list.value,
        feats["target_mask"][i].astype(np.float32))


@pytest.mark.parametrize("width", [1, 4, 9])
def test_every_varint_width_in_one_row(width):
  """Values of 1 to `width` varint bytes in one packed list (the one-byte,
  four-byte and general encoders)."""
  top = min(2**(7 * width) - 1, 2**63 - 1)
  values = sorted({0, 1, 127, 128, 300, 2**14, 2**21, 2**28 - 1, 2**28,
                   2**35, 2**56, 2**63 - 1})
  row = [v for v in values if v <= top]
  feats = {"ids": np.array([row, row[::-1]], dtype=np.int64)}
  for i, raw in enumerate(example_proto.serialize_examples(feats)):
    assert raw == protobuf_bytes(feats, i)
