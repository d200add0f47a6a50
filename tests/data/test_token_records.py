"""Tests of token records (data_utils.py --record_kind=tokens): the rows
written once, and the input function that samples their examples online."""
import glob
import json
import os

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf
from tensorflow.python.eager import context

from tests import data_helpers
from tests.data.test_record_layout import check_example, check_masks
from tests.data_reference import CLS, SEP, ref_rows, ref_stream, runs_of
from xlnet import errors
from xlnet.data import input_pipeline
from xlnet.data import online_examples
from xlnet.data import pretrain_examples
from xlnet.data import record_format
from xlnet.data import record_writer

pytestmark = pytest.mark.tf_version

NUM_LINES = 150
CFG = data_helpers.TINY_CONFIG


@pytest.fixture(scope="module")
def token_dir(tmp_path_factory):
  save_dir = str(tmp_path_factory.mktemp("tokens"))
  return data_helpers.make_records(save_dir, num_lines=NUM_LINES,
                                   record_kind="tokens")


def spec_batch_count(rows):
  """Offsets (from 0, step reuse_len) at which no draw can fail, by the
  rule: A+B must end before the row's end, and a row with a cut point must
  have a sentence boundary at or past begin + tot_len."""
  seq_len, reuse_len = CFG["seq_len"], CFG["reuse_len"]
  tot_len, num = seq_len - reuse_len - 3, 0
  row_len = len(rows[0][0])
  while num * reuse_len + seq_len <= row_len:
    begin = num * reuse_len + reuse_len
    if begin + tot_len >= row_len:
      return num
    for _, sent in rows:
      bounds = [k for k in range(1, row_len) if sent[k] != sent[k - 1]]
      if any(begin < k for k in bounds) and not any(
          k >= begin + tot_len for k in bounds):
        return num
    num += 1
  return num


def test_token_records_hold_the_rows(token_dir, tmp_path):
  sp = spm.SentencePieceProcessor(model_file=data_helpers.train_tiny_spm())
  ids, sids = ref_stream([data_helpers.corpus_slice(NUM_LINES)], sp)
  rows = ref_rows(ids, sids, CFG["bsz_per_host"], CFG["num_core_per_host"],
                  CFG["bi_data"])
  records = data_helpers.read_records(token_dir)
  assert [sorted(r) for r in records] == [["sent_id", "tokens"]] * len(rows)
  for record, (row, sent) in zip(records, rows):
    assert record["tokens"].tolist() == row
    assert record["sent_id"].tolist() == [int(s) for s in sent]
  (info_path,) = glob.glob(os.path.join(token_dir, "record_info-*.json"))
  with open(info_path) as f:
    info = json.load(f)
  assert info["record_kind"] == "tokens"
  assert info["num_batch"] == spec_batch_count(rows) > 10
  # The offline writer stops at the first offset whose draws fail: never
  # before the count of token records.
  offline = data_helpers.make_records(str(tmp_path), num_lines=NUM_LINES)
  (offline_info,) = glob.glob(os.path.join(offline, "record_info-*.json"))
  with open(offline_info) as f:
    assert json.load(f)["num_batch"] >= info["num_batch"]
  with open(os.path.join(os.path.dirname(token_dir),
                         record_format.CORPUS_INFO)) as f:
    assert json.load(f)["record_kind"] == "tokens"
  assert record_format.verify_record_dirs([token_dir]) == (1, [])
  # The largest id, recorded at write time and scanned by --verify: an id
  # equal to the vocabulary size is beyond it, one below is not.
  top = max(max(row) for row, _ in rows)
  assert info["max_token_id"] == top
  (path,) = glob.glob(os.path.join(token_dir, "*.tfrecords"))
  assert record_format.verify_records([path], vocab_sizes={path: top}) == [
      (path, f"holds token id {top}, beyond the {top} pieces of the corpus "
             "info's SentencePiece model (written with another model?)")]
  assert record_format.verify_records([path],
                                      vocab_sizes={path: top + 1}) == []


def test_long_rows_are_split_into_records_and_read_back_whole(
    token_dir, tmp_path, monkeypatch):
  # A chunk of 50 pieces stands in for the 2**24 of real rows; 51 is not a
  # divisor of the row length, so every row ends in a shorter record.
  whole = data_helpers.read_records(token_dir)
  row_len = len(whole[0]["tokens"])
  assert row_len % 51 and row_len > 3 * 51
  monkeypatch.setattr(record_writer, "ROW_CHUNK", 51)
  chunked_dir = data_helpers.make_records(str(tmp_path), num_lines=NUM_LINES,
                                          record_kind="tokens")
  chunks = -(-row_len // 51)
  records = data_helpers.read_records(chunked_dir)
  assert len(records) == len(whole) * chunks
  assert max(len(r["tokens"]) for r in records) == 51
  for row, record in enumerate(whole):  # row after row, in order
    for name in ("tokens", "sent_id"):
      joined = np.concatenate([r[name] for r in
                               records[row * chunks:(row + 1) * chunks]])
      np.testing.assert_array_equal(joined, record[name])
  (info_path,) = glob.glob(os.path.join(chunked_dir, "record_info-*.json"))
  with open(info_path) as f:
    assert json.load(f)["row_chunks"] == chunks
  assert record_format.verify_record_dirs([chunked_dir]) == (1, [])
  # The input function joins the records back into the same rows: the same
  # batches bit for bit as from one record per row.
  _, want = online_batches(token_dir, 4)
  _, got = online_batches(chunked_dir, 4)
  for g, w in zip(got, want):
    for name in w:
      np.testing.assert_array_equal(g[name], w[name], err_msg=name)
  # A file that lost a record (its count no longer bsz * row_chunks) is bad.
  (path,) = glob.glob(os.path.join(chunked_dir, "*.tfrecords"))
  raw = list(tf.compat.v1.io.tf_record_iterator(path))
  with tf.io.TFRecordWriter(path) as writer:
    for record in raw[:-1]:
      writer.write(record)
  with open(info_path) as f:
    info = json.load(f)
  info["file_bytes"] = {os.path.basename(path): os.path.getsize(path)}
  with open(info_path, "w") as f:
    json.dump(info, f)
  _, bad = record_format.verify_record_dirs([chunked_dir])
  assert [error for _, error in bad] == [
      f"{len(raw) - 1} records, its record info says {len(raw)}"]


def online_batches(token_dir, n, start=0, seed=5):
  input_fn, info = input_pipeline.get_input_fn(
      token_dir, "train", CFG["bsz_per_host"], CFG["seq_len"],
      CFG["reuse_len"], CFG["bi_data"], num_predict=CFG["num_predict"],
      seed=seed)
  return info, data_helpers.take_batches(
      input_fn, n, batch_size=CFG["bsz_per_host"], start_host_batch=start)


@pytest.mark.quick
def test_online_batches_read_the_rows_at_their_offsets(token_dir):
  # Host batch b (counted across epochs) begins with the reuse part of
  # every row at offset (b mod epoch) * reuse_len, from a start or resumed
  # anywhere. (A stream that is off by a batch everywhere resumes
  # consistently with itself; only the rows can tell.)
  sp = spm.SentencePieceProcessor(model_file=data_helpers.train_tiny_spm())
  rows = ref_rows(*ref_stream([data_helpers.corpus_slice(NUM_LINES)], sp),
                  CFG["bsz_per_host"], CFG["num_core_per_host"],
                  CFG["bi_data"])
  reuse_len = CFG["reuse_len"]
  with open(glob.glob(os.path.join(token_dir, "record_info-*.json"))[0]) as f:
    epoch = json.load(f)["num_batch"]
  for start in (0, epoch - 1):  # the second crosses the epoch's end
    _, batches = online_batches(token_dir, 2, start=start)
    for b, batch in enumerate(batches, start):
      offset = b % epoch * reuse_len
      want = [row[offset:offset + reuse_len] for row, _ in rows]
      assert batch["input_k"][:, :reuse_len].tolist() == want, (start, b)


def test_online_input_fn_resumes_exactly_and_draws_anew_each_epoch(
    token_dir):
  with open(glob.glob(os.path.join(token_dir, "record_info-*.json"))[0]) as f:
    epoch = json.load(f)["num_batch"]
  info, stream = online_batches(token_dir, epoch + 3)
  assert info["num_batch"] == epoch
  for batch in stream:
    assert (batch["input_k"][:, -2:] == [SEP, CLS]).all()
    assert (batch["seg_id"][:, -1] == 2).all()
    kept = batch["target_mask"].sum(1)
    assert ((kept <= CFG["num_predict"])
            & (kept >= CFG["num_predict"] - 3)).all()  # <sep>,<sep>,<cls>
  # A resumed stream (mid-epoch, and across the epoch's end) continues
  # the uninterrupted one bit for bit.
  for start in (2, epoch - 1):
    _, resumed = online_batches(token_dir, 3, start=start)
    for got, want in zip(resumed, stream[start:]):
      for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
  # The next epoch reads the same rows with new draws.
  first, again = stream[0], stream[epoch]
  assert (first["input_k"][:, :CFG["reuse_len"]]
          == again["input_k"][:, :CFG["reuse_len"]]).all()
  assert not np.array_equal(first["target_mapping"], again["target_mapping"])
  _, other_seed = online_batches(token_dir, 1, seed=6)
  assert not np.array_equal(first["target_mapping"],
                            other_seed[0]["target_mapping"])


def test_the_reader_sets_the_sampling_of_token_records(token_dir):
  """Token records' file names carry the writer's mask settings, but the
  masks are drawn at run time: another num_predict and span size are read
  from the same files; values no example can hold are refused."""
  num_predict = CFG["num_predict"] // 2
  assert num_predict != CFG["num_predict"]
  input_fn, _ = input_pipeline.get_input_fn(
      token_dir, "train", CFG["bsz_per_host"], CFG["seq_len"],
      CFG["reuse_len"], CFG["bi_data"], num_predict=num_predict,
      mask_alpha=2, mask_beta=1)
  for batch in data_helpers.take_batches(input_fn, 3,
                                         batch_size=CFG["bsz_per_host"]):
    assert batch["target_mapping"].shape == (
        CFG["bsz_per_host"], num_predict, CFG["seq_len"])
    kept = batch["target_mask"].sum(1)  # less <sep>, <sep>, <cls>
    assert ((kept <= num_predict) & (kept >= num_predict - 3)).all()
  too_many = 2 * (CFG["seq_len"] - CFG["reuse_len"]) + 2
  with pytest.raises(ValueError, match=rf"--num_predict={too_many} needs "
                     r".* in the reuse part \(--reuse_len="):
    input_pipeline.get_input_fn(
        token_dir, "train", CFG["bsz_per_host"], CFG["seq_len"],
        CFG["reuse_len"], CFG["bi_data"], num_predict=too_many,
        flag_names={k: f"--{k}" for k in ("num_predict", "reuse_len")})
  with pytest.raises(ValueError, match="mask_alpha=1 must be >= "
                     "mask_beta=2 > 0"):
    input_pipeline.get_input_fn(
        token_dir, "train", CFG["bsz_per_host"], CFG["seq_len"],
        CFG["reuse_len"], CFG["bi_data"], mask_alpha=1, mask_beta=2)


def test_online_examples_in_a_graph_pass_the_record_checks(token_dir):
  """The sampler built in a tf.compat.v1 graph (as the input function and
  TPUEstimator build it) gives examples the record checks accept."""
  records = data_helpers.read_records(token_dir)
  rows = np.array([r["tokens"] for r in records], np.int32)
  sent = np.array([r["sent_id"] for r in records]) != 0
  sp = spm.SentencePieceProcessor(model_file=data_helpers.train_tiny_spm())
  cfg = dict(CFG)
  offset = tf.compat.v1.placeholder(tf.int32, [])
  batch, valid = online_examples.make_batch(
      rows, online_examples.padded_bounds(sent), offset, cfg,
      pretrain_examples.word_start_table(sp), tf.constant([3, 4], tf.int64))
  labels = []
  with tf.compat.v1.Session() as sess:
    for n in range(0, 12):
      got, ok = sess.run([batch, valid], {offset: n * 7 * CFG["reuse_len"]})
      assert ok
      for r in range(len(rows)):
        ex = {name: value[r] for name, value in got.items()}
        labels.append(check_example(
            ex, rows[r].tolist(), pretrain_examples.boundaries(sent[r]),
            n * 7 * CFG["reuse_len"], cfg))
        check_masks(ex, cfg)
  assert set(labels) == {0, 1}


def test_rows_regrouped_for_another_core_count(token_dir):
  """Token records written for one core, read by two: each core's batch
  holds a forward row and its backward copy, as with example records."""
  records = data_helpers.read_records(token_dir)  # [f0, f1, b0, b1]
  input_fn, _ = input_pipeline.get_input_fn(
      token_dir, "train", CFG["bsz_per_host"], CFG["seq_len"],
      CFG["reuse_len"], CFG["bi_data"], num_core_per_host=2,
      num_predict=CFG["num_predict"], seed=5)
  core_0, core_1 = data_helpers.take_batches(input_fn, 2, batch_size=2)
  reuse = CFG["reuse_len"]
  for batch, rows in ((core_0, (0, 2)), (core_1, (1, 3))):
    for k, r in enumerate(rows):
      assert batch["input_k"][k, :reuse].tolist() == (
          records[r]["tokens"][:reuse].tolist())


def test_token_spans_start_anywhere_word_spans_at_word_starts(token_dir):
  """sample_strategy: the spans (runs of >= 2 targets) of forward rows
  begin at a word start with word_span (all but top-up merges), much less
  often with token_span."""
  sp = spm.SentencePieceProcessor(model_file=data_helpers.train_tiny_spm())
  is_start = pretrain_examples.word_start_table(sp)
  rates = {}
  for strategy in input_pipeline.SAMPLE_STRATEGIES:
    input_fn, _ = input_pipeline.get_input_fn(
        token_dir, "train", CFG["bsz_per_host"], CFG["seq_len"],
        CFG["reuse_len"], CFG["bi_data"], num_predict=CFG["num_predict"],
        seed=5, sample_strategy=strategy)
    starts = []
    for batch in data_helpers.take_batches(input_fn, 40,
                                           batch_size=CFG["bsz_per_host"]):
      for row in (0, 1):  # the forward rows
        for s, n in runs_of(batch["input_q"][row] > 0):
          if n >= 2:
            starts.append(is_start[batch["input_k"][row, s]])
    rates[strategy] = np.mean(starts)
  assert rates["word_span"] > 0.85, rates
  assert rates["token_span"] < rates["word_span"] - 0.15, rates
  with pytest.raises(ValueError, match="sample_strategy=whole_word"):
    input_pipeline.get_input_fn(
        token_dir, "train", CFG["bsz_per_host"], CFG["seq_len"],
        CFG["reuse_len"], CFG["bi_data"], num_predict=CFG["num_predict"],
        sample_strategy="whole_word")


def test_a_save_dir_holds_one_record_kind(tmp_path):
  data_helpers.make_records(str(tmp_path), num_lines=NUM_LINES)
  with pytest.raises(ValueError,
                     match=r"--record_kind=tokens \(it has examples\)"):
    data_helpers.make_records(str(tmp_path), num_lines=NUM_LINES,
                              record_kind="tokens", pass_id=1)
  with pytest.raises(ValueError, match=r"--record_kind=words: value should "
                     r"be one of <examples\|tokens>"):
    data_helpers.make_records(str(tmp_path / "other"), num_lines=NUM_LINES,
                              record_kind="words")


def test_a_negative_token_id_is_found_by_verify_and_by_the_input_check(
    token_dir, tmp_path):
  """A record holding id -3 (a damaged record): data_utils.py --verify's
  scan names it whether or not the vocabulary is known, and the check the
  input pipeline runs on a batch fails with BAD_TOKEN_ID (an embedding
  lookup would fail, or read another row on a GPU)."""
  (source,) = glob.glob(os.path.join(token_dir, "*.tfrecords"))
  path = str(tmp_path / os.path.basename(source))
  with context.eager_mode():
    records = list(tf.data.TFRecordDataset(source).as_numpy_iterator())
    example = tf.train.Example.FromString(records[1])
    example.features.feature["tokens"].int64_list.value[2] = -3
    records[1] = example.SerializeToString()
    with tf.io.TFRecordWriter(path) as writer:
      for record in records:
        writer.write(record)
    for ids in ([[4, 0, -1]], [[4, 0, 7]]):
      with pytest.raises(tf.errors.InvalidArgumentError,
                         match=errors.BAD_TOKEN_ID):
        record_format.checked_ids([tf.constant(ids)], 7)
    assert record_format.checked_ids([tf.constant([[0, 6]])], 7)[0].shape == (
        1, 2)
  for vocab_sizes in (None, {path: 10**6}):
    assert record_format.verify_records([path], vocab_sizes=vocab_sizes) == [
        (path, "holds token id -3, below 0 (a damaged record?)")]
  assert record_format.verify_records([source]) == []
