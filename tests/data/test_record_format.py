"""Tests of the metadata files' errors and of record verification."""
import glob
import os
import re
import shutil

import pytest
import tensorflow as tf

from tests import data_helpers
from tests import in_process
from xlnet.data import input_pipeline
from xlnet.data import record_writer
from xlnet.data import record_format

# The input pipeline's seed (every random draw of the features).
SEED = data_helpers.INPUT_SEED


@pytest.fixture
def records(tmp_path, tiny_data):
  """A private copy of tiny_data's save_dir: (save_dir, record file path)."""
  save_dir = tmp_path / "copy"
  shutil.copytree(os.path.dirname(tiny_data.record_dir), save_dir)
  (path,) = glob.glob(str(save_dir / "tfrecords" / "*.tfrecords"))
  return str(save_dir), path


def flip_byte(path, offset):
  with open(path, "r+b") as f:
    f.seek(offset)
    byte = f.read(1)
    f.seek(offset)
    f.write(bytes([byte[0] ^ 0xFF]))


def input_fn_args(save_dir, cfg):
  return (os.path.join(save_dir, "tfrecords"), "train", cfg["bsz_per_host"],
          cfg["seq_len"], cfg["reuse_len"], cfg["bi_data"])


@pytest.mark.parametrize("content,error", [
    ('{"filenames": ["a.tfrecords"], "num_ba',
     r"Unterminated string .* \(line 1 column 32; truncated\?\)"),
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"filenames": ["x"]}', "it has no 'num_batch'"),
    ('{"filenames": "x", "num_batch": 3}', "'filenames' is 'x'"),
    (b"\xff\xfe", "not UTF-8 text"),
])
def test_malformed_record_info_is_named(records, tiny_data, content, error):
  save_dir, _ = records
  (info_path,) = glob.glob(os.path.join(save_dir, "tfrecords", "*.json"))
  with open(info_path, "wb") as f:
    f.write(content if isinstance(content, bytes) else content.encode())
  match = rf"{info_path} is not a valid record info: {error}"
  with pytest.raises(ValueError, match=match) as e:
    input_pipeline.get_input_fn(*input_fn_args(save_dir, tiny_data.config),
                            perm_size=32, seed=SEED)
  assert "\n" not in str(e.value)
  _, bad = record_format.verify_record_dirs([save_dir])
  assert len(bad) == 1 and bad[0][0] == info_path and error.split()[0] in (
      bad[0][1])


@pytest.mark.parametrize("content,error", [
    ('{"bsz_per_host": 4, "seq', r"Unterminated string .* \(line 1 column 21; "
     r"truncated\?\)"),
    ('{"bsz_per_host": 4}', "it has no 'seq_len'"),
    ('{"bsz_per_host": 4, "num_core_per_host": 1, "seq_len": "64"}',
     "'seq_len' is '64'"),
])
def test_malformed_corpus_info_is_named(records, tiny_data, content, error):
  save_dir, _ = records
  path = os.path.join(save_dir, "corpus_info.json")
  with open(path, "w") as f:
    f.write(content)
  match = rf"{path} is not a valid corpus info: {error}"
  for load in (lambda: record_format.load_corpus_info(save_dir),
               lambda: input_pipeline.get_input_fn(
                   *input_fn_args(save_dir, tiny_data.config), perm_size=32,
                   seed=SEED),
               lambda: record_writer.create_data(
                   tiny_data.corpus, tiny_data.sp_path, save_dir,
                   **tiny_data.config)):
    with pytest.raises(ValueError, match=match):
      load()


def test_wrong_typed_corpus_info_entry(records):
  save_dir, _ = records
  path = os.path.join(save_dir, "corpus_info.json")
  info = dict(data_helpers.TINY_CONFIG, num_core_per_host=1, bi_data="yes")
  with open(path, "w") as f:
    f.write(str(info).replace("'", '"').replace("True", "true").replace(
        "False", "false"))
  with pytest.raises(ValueError, match=rf"{path} is not a valid corpus info: "
                     "'bi_data' is 'yes'"):
    record_format.load_corpus_info(path)


@pytest.mark.tf_version
def test_verify_finds_corrupt_truncated_and_miscounted_files(records,
                                                             tiny_data):
  save_dir, path = records
  assert record_format.verify_records([path]) == []
  size = os.path.getsize(path)
  flip_byte(path, size // 2)  # inside some record's data: bad CRC
  ((bad_path, error),) = record_format.verify_records([path])
  # TensorFlow's cause alone, without the graph's Python stack around it.
  assert bad_path == path and re.fullmatch(r"corrupted record at \d+", error)
  num_files, bad = record_format.verify_record_dirs([save_dir])
  assert num_files == 1 and [p for p, _ in bad] == [path]
  # Truncation is seen from the size, and from the records themselves.
  with open(path, "r+b") as f:
    f.truncate(size - 100)
  _, bad = record_format.verify_record_dirs([save_dir])
  assert bad == [(path, f"truncated or corrupt: {size - 100} bytes, its "
                        f"record info says {size}")]
  ((_, error),) = record_format.verify_records([path])
  assert "truncated" in error.lower() or "corrupt" in error.lower()
  assert record_format.verify_records([path + "x"]) == [(path + "x",
                                                      "file not found")]
  good = data_helpers.read_records(tiny_data.record_dir)
  assert record_format.verify_records(
      [os.path.join(tiny_data.record_dir, os.path.basename(path))],
      {os.path.join(tiny_data.record_dir, os.path.basename(path)): 4}) == [
          (os.path.join(tiny_data.record_dir, os.path.basename(path)),
           f"{len(good)} records, its record info says 4")]


@pytest.mark.tf_version
def test_data_loss_in_training_names_the_file(records, tiny_data):
  save_dir, path = records
  cfg = tiny_data.config
  flip_byte(path, 3000)
  input_fn, info = input_pipeline.get_input_fn(*input_fn_args(save_dir, cfg),
                                           perm_size=32, seed=SEED)
  with tf.Graph().as_default():
    nxt = tf.compat.v1.data.make_one_shot_iterator(
        input_fn({"batch_size": 4})).get_next()
    with tf.compat.v1.Session() as sess:
      with pytest.raises(tf.errors.DataLossError) as e:
        for _ in range(50):
          sess.run(nxt)
  assert path not in e.value.message  # TF names an offset, not the file
  message = record_format.data_loss_message(info["host_filenames"][0])
  assert message.startswith(f"1 of 1 record files are corrupt ({path}: ")
  assert "\n" not in message
  assert "verify cleanly" in record_format.data_loss_message(
      [os.path.join(tiny_data.record_dir, os.path.basename(path))])


def test_verify_command(records, tmp_path):
  save_dir, path = records
  args = ["--verify", f"--save_dir={save_dir},{save_dir}/tfrecords"]
  res = in_process.run_program("data_utils.py", *args)
  assert res.returncode == 0, res.stderr[-1000:]
  assert f"OK: 2 record files under {save_dir}" in res.stdout
  flip_byte(path, os.path.getsize(path) // 3)
  res = in_process.run_program("data_utils.py", *args)
  assert res.returncode == 2
  assert res.stdout.count(f"BAD {path}: ") == 2
  assert res.stderr.strip().splitlines()[-1] == (
      f"data_utils.py: error: 2 of 2 record files under {save_dir},{save_dir}"
      "/tfrecords are bad (listed above)")
  assert "Traceback" not in res.stderr
