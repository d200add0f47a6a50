"""Tests of the input function as a pipeline: which records, in which order,
on which core, with which corpus info, and exact resumption."""
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import data_helpers
from xlnet.data import record_format
from xlnet.data import input_pipeline
from xlnet.pretraining import inputs

pytestmark = pytest.mark.tf_version

# The input pipeline's seed (every random draw of the features).
SEED = data_helpers.INPUT_SEED

SMALL = dict(data_helpers.TINY_CONFIG, seq_len=32, reuse_len=16,
             num_predict=6)


class Context:
  """What TPUEstimator passes in params["context"]."""

  def __init__(self, host):
    self.current_host = host


def test_num_passes(tmp_path):
  d = str(tmp_path / "data")
  for pass_id in (0, 1):
    record_dir = data_helpers.make_records(d, num_lines=200, pass_id=pass_id,
                                           **SMALL)
  args = (record_dir, "train", 4, 32, 16, True)
  kw = dict(perm_size=16, num_predict=6, seed=SEED)
  _, info = input_pipeline.get_input_fn(*args, num_passes=1, **kw)
  assert len(info["filenames"]) == 1 and "-0-0." in info["filenames"][0]
  _, info2 = input_pipeline.get_input_fn(*args, num_passes=2, **kw)
  _, info_all = input_pipeline.get_input_fn(*args, **kw)
  assert len(info2["filenames"]) == len(info_all["filenames"]) == 2
  assert info2["num_batch"] > info["num_batch"]


def expected_rows(raw, bsz, data_cores, reader_cores):
  """Per reader core and step: the records it must get, forward then
  backward halves, from the data's per-core [fwd, bwd] layout."""
  data_half = bsz // data_cores // 2
  by_key = {}
  for n, ex in enumerate(raw):
    step, idx = divmod(n, bsz)
    core, w = divmod(idx, 2 * data_half)
    by_key[(step, w >= data_half, core * data_half + w % data_half)] = ex
  per_core = bsz // reader_cores
  half = per_core // 2

  def rows(step, core):
    return [by_key[(step, k >= half, core * half + k % half)]["input"]
            for k in range(per_core)]

  return rows


@pytest.mark.parametrize("reader_cores", [1, 2, 4])
def test_core_layout_regrouping(tmp_path, reader_cores):
  cfg = dict(SMALL, bsz_per_host=8, num_core_per_host=2)
  record_dir = data_helpers.make_records(str(tmp_path), num_lines=400, **cfg)
  rows = expected_rows(data_helpers.read_records(record_dir), 8, 2,
                       reader_cores)
  fn, _ = input_pipeline.get_input_fn(record_dir, "train", 8, 32, 16, True,
                                  num_core_per_host=reader_cores,
                                  perm_size=16, num_predict=6, seed=SEED)
  batches = data_helpers.take_batches(fn, 2 * reader_cores,
                                      batch_size=8 // reader_cores)
  for n, batch in enumerate(batches):
    step, core = divmod(n, reader_cores)
    np.testing.assert_array_equal(batch["input_k"], rows(step, core))


def test_corpus_info_argument_decides_the_core_layout(tmp_path):
  # Records for 2 cores whose corpus_info.json lives elsewhere (as with
  # --corpus_info_path): without it, bi_data cannot tell forward from
  # backward rows and stops; with it, the rows are regrouped for 1 core.
  cfg = dict(SMALL, bsz_per_host=8, num_core_per_host=2)
  save_dir = tmp_path / "data"
  record_dir = data_helpers.make_records(str(save_dir), num_lines=400, **cfg)
  raw = data_helpers.read_records(record_dir)
  moved = tmp_path / "elsewhere.json"
  shutil.move(save_dir / "corpus_info.json", moved)
  args = (record_dir, "train", 8, 32, 16, True)
  with pytest.raises(ValueError, match=(
      r"bi_data: the core layout of the records in .*tfrecords is unknown "
      r".*; give corpus_info_path")) as e:
    input_pipeline.get_input_fn(*args, perm_size=16, seed=SEED)
  assert "\n" not in str(e.value)
  info = record_format.load_corpus_info(str(moved))
  fn, _ = input_pipeline.get_input_fn(*args, perm_size=16, corpus_info=info,
                                      seed=SEED)
  (batch,) = data_helpers.take_batches(fn, 1, batch_size=8)
  np.testing.assert_array_equal(batch["input_k"],
                                expected_rows(raw, 8, 2, 1)(0, 0))
  # A corpus_info.json next to the records that disagrees is not read.
  with open(save_dir / "corpus_info.json", "w") as f:
    json.dump(dict(info, num_core_per_host=4, num_predict=5), f)
  fn, _ = input_pipeline.get_input_fn(*args, perm_size=16, corpus_info=info,
                                      seed=SEED)
  (batch,) = data_helpers.take_batches(fn, 1, batch_size=8)
  np.testing.assert_array_equal(batch["input_k"],
                                expected_rows(raw, 8, 2, 1)(0, 0))
  assert batch["target"].shape == (8, 6)
  # Without bi_data the layout does not matter, but the settings must come
  # from somewhere.
  os.remove(save_dir / "corpus_info.json")
  uni = data_helpers.make_records(str(tmp_path / "uni"), num_lines=200,
                                  **dict(SMALL, bi_data=False))
  os.remove(tmp_path / "uni" / "corpus_info.json")
  with pytest.raises(ValueError, match=r"num_predict is not set and no "
                     r"corpus_info.json was found for .*uni/tfrecords"):
    input_pipeline.get_input_fn(uni, "train", 4, 32, 16, False, perm_size=16,
                            mask_alpha=6, mask_beta=1, seed=SEED)
  input_pipeline.get_input_fn(uni, "train", 4, 32, 16, False, perm_size=16,
                          mask_alpha=6, mask_beta=1, num_predict=6, seed=SEED)


def test_input_fn_errors(tiny_data):
  c = tiny_data.config
  base = (tiny_data.record_dir, "train", c["bsz_per_host"], c["seq_len"],
          c["reuse_len"], True)

  def err(match, args=base, seed=SEED, **kw):
    with pytest.raises(ValueError, match=match) as e:
      input_pipeline.get_input_fn(*args, seed=seed, **kw)
    assert "\n" not in str(e.value)

  # Messages name the arguments, or the flags a program passes for them.
  err(r"^perm_size=64 must be <= and divide both reuse_len=32",
      perm_size=64)
  err(r"^perm_size=12 must be <= and divide", perm_size=12)
  err(r"^bsz_per_host=4 must be a multiple of num_core_per_host=3",
      num_core_per_host=3)
  err(r"^--train_batch_size/--num_hosts=4 must be a multiple of "
      r"--num_core_per_host=3", num_core_per_host=3,
      flag_names=inputs.FLAG_NAMES)
  err(r"^bi_data needs an even per-core batch", num_core_per_host=4)
  err(r"^seed=-1 must be in \[0, 2\*\*63\)", seed=-1)
  err(r"^record_info_dir is empty", args=("",) + base[1:])
  err(r"^--eval_record_info_dir is empty", args=("",) + base[1:],
      flag_names={"record_info_dir": "--eval_record_info_dir"})
  err(r"No record info matches.*record_info-train-0-0\..*differs in "
      r"num_predict=13 \(data: 12\)", num_predict=13)
  err(r"differs in bsz_per_host=8 \(data: 4\), uncased=True",
      args=(tiny_data.record_dir, "train", 8, 64, 32, True), uncased=True)
  err(r"differs in split=dev \(data: train\)",
      args=(tiny_data.record_dir, "dev") + base[2:])
  err(r"differs in --eval_split=dev \(data: train\)",
      args=(tiny_data.record_dir, "dev") + base[2:],
      flag_names={"split": "--eval_split"})
  err(r"differs in pass_id 0 >= num_passes=0", num_passes=0)


def test_missing_or_truncated_record_file_is_named(tmp_path, tiny_data):
  copy = tmp_path / "copy"
  shutil.copytree(os.path.dirname(tiny_data.record_dir), copy)
  c = tiny_data.config
  args = (str(copy / "tfrecords"), "train", c["bsz_per_host"], c["seq_len"],
          c["reuse_len"], True)
  (path,) = [str(p) for p in (copy / "tfrecords").glob("*.tfrecords")]
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) - 100)
  with pytest.raises(ValueError, match=(
      r"train-0-0\.bsz-4.*\.tfrecords: truncated or corrupt: \d+ bytes, its "
      r"record info says \d+")):
    input_pipeline.get_input_fn(*args, perm_size=32, seed=SEED)
  os.remove(path)
  with pytest.raises(ValueError, match=(
      r"train-0-0\.bsz-4.*\.tfrecords: missing \(listed by .*record_info-"
      r"train-0-0\..*\.json\)")):
    input_pipeline.get_input_fn(*args, perm_size=32, seed=SEED)


def test_per_core_batch_size_must_match(tiny_data):
  # Rows must reach the same core at every step (memory, bi_data halves):
  # a per-core batch other than bsz_per_host / num_core_per_host is refused.
  c = tiny_data.config
  fn, _ = input_pipeline.get_input_fn(
      tiny_data.record_dir, "train", c["bsz_per_host"], c["seq_len"],
      c["reuse_len"], True, num_core_per_host=1, perm_size=32, seed=SEED)
  with tf.Graph().as_default():
    for batch_size in (2, 8):
      with pytest.raises(ValueError, match=(
          rf"params\['batch_size'\]={batch_size} must be bsz_per_host / "
          r"num_core_per_host = 4")):
        fn({"batch_size": batch_size})
    fn({"batch_size": 4})
    fn({})


def test_files_hosts_and_read_order(tmp_path):
  # Host h reads files h, h + num_hosts, ... in an order fixed by (seed, h);
  # record_info["host_filenames"] says which and in what order; the records
  # of one file stay consecutive.
  dirs = [data_helpers.make_records(str(tmp_path / f"d{p}"), num_lines=120,
                                    pass_id=p, **SMALL) for p in range(5)]
  raws = {d: data_helpers.read_records(d) for d in dirs}
  fn, info = input_pipeline.get_input_fn(",".join(dirs) + ",", "train", 4, 32,
                                     16, True, num_hosts=2, perm_size=16,
                                     num_predict=6, seed=3)
  assert [os.path.dirname(p) for p in info["filenames"]] == dirs
  assert info["num_batch"] == sum(len(r) for r in raws.values()) // 4
  hosts = info["host_filenames"]
  assert sorted(hosts[0]) == info["filenames"][0::2]
  assert sorted(hosts[1]) == info["filenames"][1::2]
  orders = {tuple(input_pipeline.host_file_order(info["filenames"], 0, 2,
                                                 seed))
            for seed in range(20)}
  assert len(orders) == 6  # all 3! orders occur across seeds
  for host in range(2):
    want = [ex["input"] for path in hosts[host]
            for ex in raws[os.path.dirname(path)]]
    got = data_helpers.take_batches(fn, len(want) // 4, batch_size=4,
                                    context=Context(host))
    np.testing.assert_array_equal(np.concatenate([b["input_k"] for b in got]),
                                  want)


def resume_batches(fn, start, n, per_core, how):
  """Per-core batches [start, start + n) of a fresh pipeline.

  how: "param" (params["start_host_batch"]) or "skip" (Dataset.skip).
  """
  params = dict(batch_size=per_core)
  if how == "param":
    return data_helpers.take_batches(fn, n, start_host_batch=start[0],
                                     **params)

  def skipping(p):
    return fn(p).skip(start[1])

  return data_helpers.take_batches(skipping, n, **params)


@pytest.mark.parametrize("reader_cores", [1, 4])
@pytest.mark.quick
def test_resumed_pipeline_continues_exactly(tmp_path, reader_cores):
  # Batch k of a fresh pipeline that skipped k host batches equals batch k
  # of an uninterrupted one, whatever k, across the end of the first epoch,
  # with bi_data and with row regrouping (data for 2 cores).
  cfg = dict(SMALL, bsz_per_host=8, num_core_per_host=2)
  record_dir = data_helpers.make_records(str(tmp_path), num_lines=20, **cfg)
  fn, info = input_pipeline.get_input_fn(record_dir, "train", 8, 32, 16, True,
                                     num_core_per_host=reader_cores,
                                     perm_size=8, seed=11)
  per_core = 8 // reader_cores
  epoch = info["num_batch"]
  assert 2 <= epoch <= 16, epoch
  total = (epoch + 2) * reader_cores
  full = data_helpers.take_batches(fn, total, batch_size=per_core)
  # The second epoch has the same records, but new orders.
  second = full[epoch * reader_cores]
  np.testing.assert_array_equal(second["input_k"], full[0]["input_k"])
  assert not np.array_equal(second["perm_mask"], full[0]["perm_mask"])
  for k, how in [(1, "param"), (epoch - 1, "skip"), (epoch, "param"),
                 (epoch + 1, "param"), (epoch + 1, "skip")]:
    got = resume_batches(fn, (k, k * reader_cores), reader_cores, per_core,
                         how)
    for j, batch in enumerate(got):
      want = full[k * reader_cores + j]
      for name in want:
        np.testing.assert_array_equal(batch[name], want[name],
                                      err_msg=f"{name} k={k} {how}")
  # The seed and the host change every order.
  other, _ = input_pipeline.get_input_fn(record_dir, "train", 8, 32, 16, True,
                                     num_core_per_host=reader_cores,
                                     perm_size=8, seed=12)
  (batch,) = data_helpers.take_batches(other, 1, batch_size=per_core)
  assert not np.array_equal(batch["perm_mask"], full[0]["perm_mask"])
  two_hosts, _ = input_pipeline.get_input_fn(record_dir, "train", 8, 32, 16,
                                         True, num_hosts=2,
                                         num_core_per_host=reader_cores,
                                         perm_size=8, seed=11)
  batches = [data_helpers.take_batches(two_hosts, 1, batch_size=per_core,
                                       context=Context(host))[0]
             for host in (0, 1)]
  for name in full[0]:  # one file: both hosts read it
    np.testing.assert_array_equal(batches[0][name], full[0][name])
  np.testing.assert_array_equal(batches[1]["input_k"], full[0]["input_k"])
  assert not np.array_equal(batches[1]["perm_mask"], full[0]["perm_mask"])
  with pytest.raises(ValueError, match=r"host 2 is not below num_hosts=2"):
    two_hosts({"batch_size": per_core, "context": Context(2)})
  # The engine names the host with params["host"]: the same stream.
  (by_host,) = data_helpers.take_batches(two_hosts, 1, batch_size=per_core,
                                         host=1)
  for name in full[0]:
    np.testing.assert_array_equal(by_host[name], batches[1][name])
  with pytest.raises(ValueError, match=r"host 2 is not below num_hosts=2"):
    two_hosts({"batch_size": per_core, "host": 2})


def test_resume_with_a_record_info_of_several_files(tmp_path):
  # A record info listing several files (as the release could write) gives
  # no per-file batch counts: the resumed stream skips record by record.
  d = tmp_path / "data"
  for pass_id in (0, 1):
    record_dir = data_helpers.make_records(str(d), num_lines=12,
                                           pass_id=pass_id, **SMALL)
  infos = sorted((d / "tfrecords").glob("record_info-*.json"))
  merged = {"filenames": [], "num_batch": 0, "file_bytes": {}}
  for path in infos:
    with open(path) as f:
      info = json.load(f)
    merged["filenames"] += info["filenames"]
    merged["file_bytes"].update(info["file_bytes"])
    merged["num_batch"] += info["num_batch"]
    os.remove(path)
  with open(infos[0], "w") as f:
    json.dump(merged, f)
  fn, info = input_pipeline.get_input_fn(record_dir, "train", 4, 32, 16, True,
                                     perm_size=8, seed=SEED)
  epoch = info["num_batch"]
  full = data_helpers.take_batches(fn, epoch + 2, batch_size=4)
  (got,) = data_helpers.take_batches(fn, 1, batch_size=4,
                                     start_host_batch=epoch + 1)
  for name in got:
    np.testing.assert_array_equal(got[name], full[epoch + 1][name])
