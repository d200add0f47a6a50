"""Benchmark of the XLNet data pipeline.

Measures, on a multi-MB corpus (the demo novel, documents shuffled and
repeated):
  1. record creation (tokens/s) with the released README's settings;
  2. a per-token Python-loop implementation of the masking and of the whole
     example loop (as the released tool does it, written here from SPEC.md)
     against ours on the same rows, in the same run;
  3. the input function (examples/s) at seq_len 512;
  4. --num_task scaling: one process vs two processes in parallel.

Usage: python bench/data_pipeline.py [--mb=5] [--vocab_size=4000]
"""
import os
import random
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags
import numpy as np
import sentencepiece as spm
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from xlnet import data_utils  # noqa: E402
from xlnet import demo_corpus  # noqa: E402
from xlnet import spm_train  # noqa: E402
from xlnet.prepro_utils import CLS_ID, SEP_ID  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_float("mb", 5.0, "Corpus size in MB.")
flags.DEFINE_integer("vocab_size", 4000, "SentencePiece vocabulary size.")
flags.DEFINE_integer("baseline_offsets", 6, "Row offsets run by the loop "
                     "baseline (each is bsz_per_host examples).")
flags.DEFINE_integer("input_batches", 30, "Per-core batches timed in the "
                     "input-function benchmark.")
flags.DEFINE_string("work_dir", None, "Scratch dir (default: a temp dir).")

README = dict(bsz_per_host=32, num_core_per_host=16, seq_len=512,
              reuse_len=256, bi_data=True, mask_alpha=6, mask_beta=1,
              num_predict=85)


def make_corpus(work_dir, mb, num_files=4):
  """Writes ~mb MB of shuffled demo-corpus documents into num_files files."""
  text = open(demo_corpus.get_demo_corpus(), encoding="utf-8").read()
  docs = [d for d in text.split("\n\n") if d.strip()]
  rnd = random.Random(0)
  out, size = [], 0
  while size < mb * 1e6:
    rnd.shuffle(docs)
    for d in docs:
      out.append(d)
      size += len(d.encode()) + 2
  paths = []
  for k in range(num_files):
    path = os.path.join(work_dir, f"corpus-{k}.txt")
    with open(path, "w", encoding="utf-8") as f:
      f.write("\n\n".join(out[k::num_files]) + "\n")
    paths.append(path)
  return paths, size


# ----------------------------------------------------------------------------
# Per-token Python-loop baseline (the released tool's structure).
# ----------------------------------------------------------------------------
_PUNCT = set('!"#$%&()*+,-./:;?@[\\]^_`{|}~')


def _is_start_piece(piece):
  return piece.startswith("\u2581") or piece.startswith("<") or piece in _PUNCT


def loop_sample_mask(sp, seg, reverse, goal, alpha, beta):
  """Span masking with per-token loops and per-token IdToPiece calls."""
  seg_len = len(seg)
  mask = np.zeros(seg_len, dtype=bool)
  ngrams = np.arange(1, 6)
  pvals = 1.0 / ngrams
  pvals /= pvals.sum()
  if reverse:
    seg = np.flip(seg, 0)
  num, cur = 0, 0
  while cur < seg_len and num < goal:
    n = min(int(np.random.choice(ngrams, p=pvals)), goal - num)
    ctx = n * alpha // beta
    l_ctx = np.random.choice(ctx)
    beg = cur + l_ctx
    while beg < seg_len and not _is_start_piece(sp.IdToPiece(int(seg[beg]))):
      beg += 1
    if beg >= seg_len:
      break
    end = beg + 1
    cnt = 1
    while end < seg_len:
      cnt += 1
      if cnt > n:
        break
      end += 1
    if end >= seg_len:
      break
    mask[beg:end] = True
    num += end - beg
    cur = end + ctx - l_ctx
  while num < goal:
    i = np.random.randint(seg_len)
    if not mask[i]:
      mask[i] = True
      num += 1
  return np.flip(mask, 0) if reverse else mask


def loop_split(data, sent_ids, begin, tot_len):
  """A/B split with a per-token scan for sentence boundaries."""
  data_len = len(data)
  if begin + tot_len >= data_len:
    return None
  end = begin + 1
  cuts = []
  while end < data_len:
    if sent_ids[end] != sent_ids[end - 1]:
      if end - begin >= tot_len:
        break
      cuts.append(end)
    end += 1
  if not cuts or random.random() < 0.5:
    label = 0
    a_end = random.choice(cuts) if cuts else end
    b_len = max(1, tot_len - (a_end - begin))
    b_begin = random.randint(0, data_len - 1 - b_len)
    b_end = b_begin + b_len
    while b_begin > 0 and sent_ids[b_begin - 1] == sent_ids[b_begin]:
      b_begin -= 1
    while b_end < data_len - 1 and sent_ids[b_end - 1] == sent_ids[b_end]:
      b_end += 1
  else:
    label = 1
    a_end = random.choice(cuts)
    b_begin, b_end = a_end, end
  while a_end - begin + b_end - b_begin > tot_len:
    if a_end - begin > b_end - b_begin:
      a_end -= 1
    else:
      b_end -= 1
  if a_end >= data_len or b_end >= data_len:
    return None
  return (data[begin:a_end], data[b_begin:b_end], label,
          data[begin + 1:a_end + 1], data[b_begin + 1:b_end + 1])


def _int64_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def loop_write(path, sp, rows, sent_rows, cfg, num_offsets):
  """The released example loop: per-token split/mask, tf.train.Example."""
  bsz = rows.shape[0]
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  bsz_per_core = bsz // cfg["num_core_per_host"]
  np0 = cfg["num_predict"] - cfg["num_predict"] // 2
  np1 = cfg["num_predict"] // 2
  sep, cls = np.array([SEP_ID]), np.array([CLS_ID])
  count = 0
  with tf.io.TFRecordWriter(path) as writer:
    for k in range(num_offsets):
      i = k * reuse_len
      for idx in range(bsz):
        inp = rows[idx, i:i + reuse_len]
        tgt = rows[idx, i + 1:i + reuse_len + 1]
        a, b, label, a_tgt, b_tgt = loop_split(
            rows[idx], sent_rows[idx], i + reuse_len, seq_len - reuse_len - 3)
        reverse = (idx % bsz_per_core) >= bsz_per_core // 2
        m0 = loop_sample_mask(sp, inp, reverse, np0, cfg["mask_alpha"],
                              cfg["mask_beta"])
        m1 = loop_sample_mask(sp, np.concatenate([a, sep, b, sep, cls]),
                              reverse, np1, cfg["mask_alpha"], cfg["mask_beta"])
        cat = np.concatenate([inp, a, sep, b, sep, cls])
        seg = [0] * (reuse_len + len(a) + 1) + [1] * (len(b) + 1) + [2]
        tgt = np.concatenate([tgt, a_tgt, b[:1], b_tgt, cls, cls])
        feature = {"input": _int64_feature(cat),
                   "is_masked": _int64_feature(
                       np.concatenate([m0, m1]).astype(np.int64)),
                   "target": _int64_feature(tgt),
                   "seg_id": _int64_feature(seg),
                   "label": _int64_feature([label])}
        writer.write(tf.train.Example(features=tf.train.Features(
            feature=feature)).SerializeToString())
        count += 1
  return count


# ----------------------------------------------------------------------------
# Benchmarks.
# ----------------------------------------------------------------------------
def bench_masking(sp, rows, cfg, table, n_parts=512, chunk=64):
  """Masks the same parts with both implementations; returns parts/s.

  Ours masks `chunk` parts per call, as the record writer does (the reuse
  and the rest parts of all bsz_per_host rows of one offset).
  """
  n_slots = rows.shape[1] // 256
  parts = np.stack([
      rows[k % len(rows), (k % n_slots) * 256:(k % n_slots + 1) * 256]
      for k in range(n_parts)])
  goal = cfg["num_predict"] // 2
  rng = np.random.RandomState(0)
  t = time.time()
  for k in range(0, n_parts, chunk):
    data_utils.sample_masks(parts[k:k + chunk], table, goal, 6, 1, rng)
  ours = n_parts / (time.time() - t)
  np.random.seed(0)
  t = time.time()
  for p in parts:
    loop_sample_mask(sp, p, False, goal, 6, 1)
  loop = n_parts / (time.time() - t)
  return ours, loop


def bench_input_fn(record_dir, cfg, n_batches):
  """Examples/s of the input function (per-core batch of 16 at seq 512)."""
  fn, _ = data_utils.get_input_fn(
      record_dir, "train", cfg["bsz_per_host"], cfg["seq_len"],
      cfg["reuse_len"], True, num_core_per_host=2, perm_size=256,
      num_predict=85)
  bsz = cfg["bsz_per_host"] // 2
  with tf.Graph().as_default():
    nxt = tf.compat.v1.data.make_one_shot_iterator(
        fn({"batch_size": bsz})).get_next()
    with tf.compat.v1.Session() as sess:
      for _ in range(3):
        sess.run(nxt)
      t = time.time()
      for _ in range(n_batches):
        sess.run(nxt)
      return n_batches * bsz / (time.time() - t)


def run_cli(paths, sp_path, save_dir, num_task):
  """Runs data_utils.py with num_task processes in parallel; wall seconds."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  env = dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="3")
  args = [f"--{k}={v}" for k, v in README.items()]
  glob_ = ",".join(paths)
  t = time.time()
  procs = [subprocess.Popen(
      [sys.executable, os.path.join(root, "data_utils.py"), *args,
       f"--input_glob={glob_}", f"--sp_path={sp_path}",
       f"--save_dir={save_dir}", f"--num_task={num_task}", f"--task={k}"],
      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
           for k in range(num_task)]
  assert all(p.wait() == 0 for p in procs)
  return time.time() - t


def main(_):
  tf.compat.v1.disable_eager_execution()
  work = FLAGS.work_dir or tempfile.mkdtemp(prefix="xlnet-bench-")
  paths, size = make_corpus(work, FLAGS.mb)
  sp_path = spm_train.train_spm(demo_corpus.get_demo_corpus(),
                                os.path.join(work, "spiece"),
                                vocab_size=FLAGS.vocab_size)
  sp = spm.SentencePieceProcessor(model_file=sp_path)
  print(f"corpus: {size / 1e6:.1f} MB in {len(paths)} files, vocab "
        f"{sp.get_piece_size()}, settings {README}")

  # 1. Record creation, in process (encode + examples).
  cfg = dict(README, uncased=False, use_eod=True, task=0, num_task=1)
  t = time.time()
  data, sent = data_utils.build_stream(paths, sp, False, True, True,
                                       np.random.RandomState(0))
  t_encode = time.time() - t
  rows, sent_rows = data_utils.batchify(data, sent, 32, 16, True)
  table = data_utils.word_start_table(sp)
  t = time.time()
  n_batch = data_utils.write_records(os.path.join(work, "ours.tfrecords"),
                                     rows, sent_rows, cfg, table,
                                     np.random.RandomState(0))
  t_write = time.time() - t
  n_ex = n_batch * 32
  print(f"encode: {len(data)} tokens in {t_encode:.1f}s = "
        f"{len(data) / t_encode:,.0f} tokens/s")
  print(f"examples: {n_ex} in {t_write:.1f}s = {n_ex / t_write:,.1f} "
        f"examples/s = {n_batch * 16 * 256 / t_write:,.0f} stream tokens/s")
  print(f"record creation total: {len(data) / (t_encode + t_write):,.0f} "
        "stream tokens/s")

  # 2. Per-token loop baseline on the same rows.
  ours_m, loop_m = bench_masking(sp, rows, cfg, table)
  print(f"masking (256-token parts, 42 targets, ours 64 parts per call): "
        f"ours {ours_m:,.0f} parts/s, "
        f"loop {loop_m:,.0f} parts/s, speedup {ours_m / loop_m:.1f}x")
  random.seed(0)
  np.random.seed(0)
  k = FLAGS.baseline_offsets
  t = time.time()
  n_loop = loop_write(os.path.join(work, "loop.tfrecords"), sp, rows,
                      sent_rows, cfg, k)
  loop_rate = n_loop / (time.time() - t)
  print(f"example loop: ours {n_ex / t_write:,.1f} examples/s, loop "
        f"{loop_rate:,.1f} examples/s ({n_loop} examples), speedup "
        f"{n_ex / t_write / loop_rate:.1f}x")

  # 3. Input function.
  save = os.path.join(work, "proc1")
  t1 = run_cli(paths, sp_path, save, 1)
  rate = bench_input_fn(os.path.join(save, "tfrecords"), cfg,
                        FLAGS.input_batches)
  print(f"input_fn: {rate:,.1f} examples/s (seq 512, perm_size 256, "
        "num_predict 85, per-core batch 16)")

  # 4. num_task scaling (CLI, includes interpreter + TensorFlow start-up).
  t2 = run_cli(paths, sp_path, os.path.join(work, "proc2"), 2)
  print(f"CLI wall time: num_task=1 {t1:.1f}s, num_task=2 (2 processes) "
        f"{t2:.1f}s, speedup {t1 / t2:.2f}x on {os.cpu_count()} CPUs")


if __name__ == "__main__":
  app.run(main)
