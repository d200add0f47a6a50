"""Feature conversion, feature records and the input function.

The conversion examples are worked out by hand: a fake tokenizer maps the
text "11 12 13" to the ids [11, 12, 13], so every expected list below can
be read off the layout `A <sep> [B <sep>] <cls>` (<sep> = 4, <cls> = 3),
left padding with id 0 (segment 4, mask 1).
"""
import hashlib
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import data_helpers
from xlnet.data import prepro_utils
from xlnet.finetuning.classifier import datasets as cd
from xlnet.finetuning.classifier import features as cu
from xlnet.finetuning.classifier import processors as cp


def fake_tokenize(text):
  return [int(w) for w in text.split()]


def convert(text_a, text_b, max_seq_length, label="1", label_list=("0", "1")):
  example = cp.InputExample("g", text_a, text_b, label)
  labels = None if label_list is None else list(label_list)
  return cu.convert_single_example(9, example, labels, max_seq_length,
                                   fake_tokenize)


@pytest.mark.quick
def test_single_text_left_padded():
  f = convert("11 12 13", None, 8)
  assert f.input_ids == [0, 0, 0, 11, 12, 13, 4, 3]
  assert f.segment_ids == [4, 4, 4, 0, 0, 0, 0, 2]
  assert f.input_mask == [1, 1, 1, 0, 0, 0, 0, 0]
  assert f.label_id == 1 and f.is_real_example


@pytest.mark.quick
def test_pair_segments():
  f = convert("11 12", "21 22 23", 10)
  assert f.input_ids == [0, 0, 11, 12, 4, 21, 22, 23, 4, 3]
  assert f.segment_ids == [4, 4, 0, 0, 0, 1, 1, 1, 1, 2]
  assert f.input_mask == [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]


@pytest.mark.quick
def test_pair_truncates_the_longer_side_first():
  # Budget 7 - 3 = 4: (5, 2) -> (4, 2) -> (3, 2) -> (2, 2).
  f = convert("11 12 13 14 15", "21 22", 7)
  assert f.input_ids == [11, 12, 4, 21, 22, 4, 3]
  assert f.segment_ids == [0, 0, 0, 1, 1, 1, 2]
  assert f.input_mask == [0] * 7
  # Budget 3: (1, 5) -> ... -> (1, 2): B loses its last pieces.
  f = convert("11", "21 22 23 24 25", 6)
  assert f.input_ids == [11, 4, 21, 22, 4, 3]


def test_pair_tie_pops_b():
  # Budget 5: (3, 3) is a tie -> B loses one -> (3, 2).
  f = convert("11 12 13", "21 22 23", 8)
  assert f.input_ids == [11, 12, 13, 4, 21, 22, 4, 3]
  assert f.segment_ids == [0, 0, 0, 0, 1, 1, 1, 2]


def test_single_text_keeps_its_first_pieces():
  f = convert("11 12 13 14 15 16", None, 5)
  assert f.input_ids == [11, 12, 13, 4, 3]
  assert f.segment_ids == [0, 0, 0, 0, 2]


def test_empty_second_text_is_a_single_text():
  assert convert("11", "", 5).input_ids == [0, 0, 11, 4, 3]


def test_labels():
  assert convert("11", None, 4, label="0").label_id == 0
  assert convert("11", None, 4, label=None).label_id == 0  # test split
  assert convert("11", None, 4, label="3.8", label_list=None).label_id == 3.8
  assert convert("11", None, 4, label=None, label_list=None).label_id == 0.0


def test_padding_example():
  f = cu.padding_features(4, is_regression=False)
  assert (f.input_ids, f.input_mask, f.segment_ids, f.label_id,
          f.is_real_example) == ([0] * 4, [1] * 4, [0] * 4, 0, False)
  assert cu.num_padding(10, 4) == 2 and cu.num_padding(8, 4) == 0


def test_real_tokenizer_normalizes_like_pretraining():
  sp = prepro_utils.load_sp_model(data_helpers.train_tiny_spm(),
                                  "--spiece_model_file")
  text = "  The  ``Botchan''   story, 1906,  é "
  want = prepro_utils.encode_ids(
      sp, prepro_utils.preprocess_text(text, lower=True))
  assert cu.make_tokenize_fn(sp, uncased=True)(text) == want
  assert want == prepro_utils.encode_ids(sp, 'the "botchan" story, 1906, e')


################################################################################
# Records and the input function.
################################################################################
EXAMPLES = [cp.InputExample(str(i), " ".join(str(10 + i + k)
                                             for k in range(i + 1)), None,
                            str(i % 2)) for i in range(5)]


def write(tmp_path, examples=EXAMPLES, label_list=("0", "1"), length=6):
  path = str(tmp_path / "x.tf_record")
  labels = None if label_list is None else list(label_list)
  cu.write_records(examples, labels, length, fake_tokenize, path)
  return path


@pytest.mark.quick
@pytest.mark.tf_version
def test_eval_input_every_real_example_once_then_marked_fakes(tmp_path):
  path = write(tmp_path)
  got = data_helpers.all_batches(cu.input_fn_builder(
      path, 6, False, False, num_examples=5, pad_to_multiple=4), 2)
  # 5 real + 3 fake = 8, whole batches of 2.
  assert got["is_real_example"].tolist() == [1] * 5 + [0] * 3
  assert got["label_ids"].tolist() == [0, 1, 0, 1, 0, 0, 0, 0]
  for i, example in enumerate(EXAMPLES):
    want = cu.convert_single_example(i, example, ["0", "1"], 6,
                                     fake_tokenize)
    assert got["input_ids"][i].tolist() == want.input_ids
    assert got["segment_ids"][i].tolist() == want.segment_ids
    assert got["input_mask"][i].tolist() == want.input_mask
  assert got["input_ids"][4].tolist() == [14, 15, 16, 17, 4, 3]  # truncated
  assert (got["input_ids"][5:] == 0).all()
  assert (got["input_mask"][5:] == 1).all()
  assert (got["segment_ids"][5:] == 0).all()
  assert got["input_ids"].dtype == np.int32
  assert got["input_mask"].dtype == np.float32


def test_eval_input_pads_to_the_batch_by_default(tmp_path):
  path = write(tmp_path)
  with tf.Graph().as_default():
    batches = data_helpers.batches_of(cu.input_fn_builder(path, 6, False, False,
                                          num_examples=5)({"batch_size": 5}))
  assert [b["is_real_example"].tolist() for b in batches] == [[1] * 5]
  with tf.Graph().as_default(), pytest.raises(ValueError, match="multiple"):
    cu.input_fn_builder(path, 6, False, False, num_examples=5,
                        pad_to_multiple=3)({"batch_size": 2})


def test_regression_labels_are_float(tmp_path):
  examples = [cp.InputExample("0", "11", None, "3.25"),
              cp.InputExample("1", "12", "13", "0.5")]
  path = write(tmp_path, examples, label_list=None)
  with tf.Graph().as_default():
    (batch,) = data_helpers.batches_of(cu.input_fn_builder(path, 6, False, True,
                                           num_examples=2)({"batch_size": 2}))
  assert batch["label_ids"].dtype == np.float32
  assert batch["label_ids"].tolist() == [3.25, 0.5]
  assert batch["segment_ids"][1].tolist() == [4, 0, 0, 1, 1, 2]


@pytest.mark.quick
@pytest.mark.tf_version
def test_train_input_shuffles_and_repeats_full_batches(tmp_path):
  path = write(tmp_path)
  with tf.Graph().as_default():
    dataset = cu.input_fn_builder(path, 6, True, False, shuffle_buffer=100,
                                  seed=3)({"batch_size": 2})
    batch = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    with tf.compat.v1.Session() as sess:
      batches = [sess.run(batch) for _ in range(20)]
  assert all(b["input_ids"].shape == (2, 6) for b in batches)
  firsts = [tuple(row) for b in batches for row in b["input_ids"]]
  assert len(set(firsts)) == 5  # every example comes back
  order = [row[-3] for row in firsts[:5]]
  assert order != sorted(order)  # not in file order


################################################################################
# Cached records.
################################################################################
def sst2_dir(tmp_path, rows=("a good movie\t1", "a bad movie\t0")):
  data = tmp_path / "SST-2"
  data.mkdir(exist_ok=True)
  (data / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
  return str(data)


def prepare(tmp_path, data_dir, **kwargs):
  sp_path = data_helpers.train_tiny_spm()
  args = dict(output_dir=str(tmp_path / "records"), max_seq_length=16,
              sp_model=prepro_utils.load_sp_model(
                  sp_path, "--spiece_model_file"),
              spiece_model_file=sp_path, uncased=False)
  args.update(kwargs)
  return cu.prepare_records(cd.make_processor("sst-2"), data_dir, "train",
                            **args)


def test_records_written_once_then_reused(tmp_path, monkeypatch):
  data_dir = sst2_dir(tmp_path)
  path, n = prepare(tmp_path, data_dir)
  with open(data_helpers.train_tiny_spm(), "rb") as f:
    digest = hashlib.sha1(f.read()).hexdigest()
  assert os.path.basename(path) == (
      f"sst-2.train.len-16.spiece-1000-{digest[:8]}.tf_record")
  assert n == 2 and os.path.exists(path)
  meta = json.loads(open(path + ".json").read())
  assert meta["num_examples"] == 2
  assert meta["key"]["options"] == {"labels": ["0", "1"]}

  # A killed run's temporary file is cleaned up, and nothing is rewritten.
  stale = f"{path}.tmp-{data_helpers.dead_pid()}-deadbeef"
  open(stale, "w").close()
  monkeypatch.setattr(cu, "write_records", lambda *a: pytest.fail("rewrote"))
  assert prepare(tmp_path, data_dir) == (path, 2)
  assert not os.path.exists(stale)

  # Other settings: another file, written anew.
  monkeypatch.undo()
  other, _ = prepare(tmp_path, data_dir, uncased=True, max_seq_length=8)
  assert other != path and ".len-8." in other and other.endswith(
      ".uncased.tf_record")


def test_records_rewritten_when_data_changes_or_asked(tmp_path, monkeypatch):
  data_dir = sst2_dir(tmp_path)
  path, _ = prepare(tmp_path, data_dir)
  calls = []
  write_records = cu.write_records
  monkeypatch.setattr(cu, "write_records",
                      lambda *a: calls.append(1) or write_records(*a))
  prepare(tmp_path, data_dir, overwrite=True)
  assert len(calls) == 1
  sst2_dir(tmp_path, rows=("a good movie\t1", "a bad movie\t0",
                           "so so\t1"))
  assert prepare(tmp_path, data_dir) == (path, 3)
  assert len(calls) == 2


def read_back(path):
  """[(input_ids tuple, label)] of every record of a record file."""
  out = []
  for data in tf.compat.v1.io.tf_record_iterator(path):
    feature = tf.train.Example.FromString(data).features.feature
    out.append((tuple(feature["input_ids"].int64_list.value),
                feature["label_ids"].int64_list.value[0]))
  return out


def test_same_size_edit_rebuilds_the_records(tmp_path):
  data_dir = sst2_dir(tmp_path)
  path, _ = prepare(tmp_path, data_dir)
  before = read_back(path)
  assert [label for _, label in before] == [1, 0]
  # A corrected label: same bytes count, other content.
  size = os.path.getsize(os.path.join(data_dir, "train.tsv"))
  sst2_dir(tmp_path, rows=("a good movie\t0", "a bad movie\t0"))
  assert os.path.getsize(os.path.join(data_dir, "train.tsv")) == size
  assert prepare(tmp_path, data_dir) == (path, 2)
  assert read_back(path) == [(before[0][0], 0), before[1]]


def test_training_records_are_a_seeded_permutation(tmp_path, monkeypatch):
  """Sorted by label in the file; the training records hold the examples in
  the order of `np.random.RandomState(seed).permutation` (documented), the
  inference records in file order."""
  rows = [f"movie number {i}\t{int(i >= 6)}" for i in range(12)]
  data_dir = sst2_dir(tmp_path, rows=rows)
  in_order, _ = prepare(tmp_path, data_dir)
  file_order = read_back(in_order)
  assert [label for _, label in file_order] == [0] * 6 + [1] * 6
  assert len(set(file_order)) == 12

  path, n = prepare(tmp_path, data_dir, shuffle_seed=3)
  assert n == 12 and path != in_order and path.endswith(".shuffled.tf_record")
  got = read_back(path)
  assert got == [file_order[i] for i in np.random.RandomState(3).permutation(
      12)]
  assert sorted(got) == sorted(file_order) and got != file_order

  # The same seed: the records are reused (and would be the same bytes).
  monkeypatch.setattr(cu, "write_records", lambda *a: pytest.fail("rewrote"))
  assert prepare(tmp_path, data_dir, shuffle_seed=3) == (path, 12)
  monkeypatch.undo()
  with open(path, "rb") as f:
    first_bytes = f.read()
  prepare(tmp_path, data_dir, shuffle_seed=3, overwrite=True)
  with open(path, "rb") as f:
    assert f.read() == first_bytes
  # Another seed rewrites the same file in another order.
  assert prepare(tmp_path, data_dir, shuffle_seed=4) == (path, 12)
  other = read_back(path)
  assert sorted(other) == sorted(file_order) and other not in (got,
                                                               file_order)
  assert json.loads(open(path + ".json").read())["key"]["shuffle_seed"] == 4


def test_failed_conversion_leaves_no_records(tmp_path, monkeypatch):
  records = tmp_path / "records"
  data_dir = sst2_dir(tmp_path, rows=("fine\t1", "broken line"))
  with pytest.raises(ValueError, match=r"train.tsv line 3: expected at least "
                     r"2 tab-separated fields"):
    prepare(tmp_path, data_dir)
  assert not records.exists() or os.listdir(records) == []
  # A failure while writing: no final file, no temporary file, no metadata.
  data_dir = sst2_dir(tmp_path, rows=("fine\t1", "also fine\t0"))
  serialize = cu.serialize_features
  calls = []

  def fail_second(*args):
    calls.append(1)
    if len(calls) == 2:
      raise RuntimeError("boom")
    return serialize(*args)

  monkeypatch.setattr(cu, "serialize_features", fail_second)
  with pytest.raises(RuntimeError, match="boom"):
    prepare(tmp_path, data_dir)
  assert os.listdir(records) == []
