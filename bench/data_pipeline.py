"""Benchmark of the XLNet data pipeline: record writing and the input function.

On a multi-MB corpus with the released README's settings (bsz_per_host 32,
16 cores, seq 512, reuse 256, bi_data, 85 targets), in one run it prints:
  1. the encoding floor: bare SentencePiece encoding of the same lines
     (batch API, on one thread and on all cores), no normalization, no
     examples;
  2. record writing (`create_data`) with --num_workers=1 and with the
     default workers (one per CPU), each run interleaved with the floor's,
     medians and spread, and their ratio to the floor (one worker: to the
     one-thread floor); the stages of the one-worker run (encode,
     examples, serialize+write);
  3. the released tool's per-token Python loops (re-written here from the
     data format) against our example code on the same rows;
  4. the input function's examples/s at the paper's settings (perm_size
     256, per-core batch --bsz_per_core), and, given the step times of a
     model (--step_s), the examples/s that model's training consumes.

The corpus (--corpus): `mixed` (default) is text from several sources, many
files of short lines and documents: the licenses and copyright files that
Debian packages ship, the docstrings of Python's standard library and the
demo novel, with a vocabulary trained on it; `novel` is the demo novel
alone, documents shuffled and repeated. Its composition is printed.

Usage: python bench/data_pipeline.py [--corpus=mixed] [--mb=6]
           [--vocab_size=8000] [--step_s=base:0.5,large:1.2]
"""
import ast
import collections
import glob
import os
import random
import resource
import statistics
import sys
import sysconfig
import time

from absl import app
from absl import flags
import numpy as np
import sentencepiece as spm
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import scratch  # noqa: E402
from xlnet.demo import demo_corpus  # noqa: E402
from xlnet.data import example_proto  # noqa: E402
from xlnet.data import input_pipeline  # noqa: E402
from xlnet.data import pretrain_examples  # noqa: E402
from xlnet.data import record_writer  # noqa: E402
from xlnet.data import spm_train  # noqa: E402
from xlnet.data import token_stream  # noqa: E402
from xlnet.data import worker_pool  # noqa: E402
from xlnet.data.prepro_utils import CLS_ID, SEP_ID  # noqa: E402
from xlnet.training import config as train_config  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_enum("corpus", "mixed", ["mixed", "novel"], "The corpus: text "
                  "of several sources, or the demo novel repeated.")
flags.DEFINE_float("mb", 6.0, "Corpus size in MB.")
flags.DEFINE_integer("files", 0, "Files of the mixed corpus (0: 10 per MB).")
flags.DEFINE_integer("vocab_size", 8000, "SentencePiece vocabulary size "
                     "(trained on the corpus, or on the novel for "
                     "--corpus=novel).")
flags.DEFINE_integer("repeats", 3, "Timed runs of each writer setting and of "
                     "the floor, interleaved; medians and spread printed.")
flags.DEFINE_integer("baseline_offsets", 6, "Row offsets run by the loop "
                     "baseline (each is bsz_per_host examples).")
flags.DEFINE_integer("input_batches", 30, "Per-core batches timed in the "
                     "input-function benchmark.")
flags.DEFINE_integer("bsz_per_core", 16, "Per-core batch of the input "
                     "function benchmark and of the consumption estimate.")
flags.DEFINE_string("step_s", "", "Seconds per training step of the models "
                    "to compare with, e.g. 'base:0.45,large:1.3' (from "
                    "bench/model_step.py or the trainer's log), each core "
                    "taking --bsz_per_core examples per step.")
flags.DEFINE_integer("cores_per_host", 8, "Cores (GPUs/TPU cores) one host "
                     "feeds, for the consumption estimate.")
flags.DEFINE_bool("extras", True, "Also the stages, the release's loops "
                  "and the input function.")
flags.DEFINE_string("work_dir", None,
                    "Scratch dir, kept (default: a temp dir, removed at exit).")

README = dict(bsz_per_host=32, num_core_per_host=16, seq_len=512,
              reuse_len=256, bi_data=True, mask_alpha=6, mask_beta=1,
              num_predict=85)


def novel_corpus(work_dir, mb, num_files=4):
  """Writes ~mb MB of shuffled demo-novel documents into num_files files."""
  text = open(demo_corpus.get_demo_corpus(), encoding="utf-8").read()
  return _write_corpus(work_dir, {"novel": demo_corpus.documents(text)}, mb,
                       num_files)


def mixed_sources():
  """The texts of the mixed corpus by source, each text once.

  Each text (a license, a package's copyright file, a docstring, a part of
  the novel) keeps its lines; its blank lines end documents.

  Returns:
    dict source -> list of str.
  """
  seen, out = set(), {}

  def add(source, text):
    text = text.strip("\n")
    if text.strip() and text not in seen:
      seen.add(text)
      out.setdefault(source, []).append(text)

  for pattern, source in (("/usr/share/common-licenses/*", "licenses"),
                          ("/usr/share/doc/*/copyright", "copyright files")):
    for path in sorted(glob.glob(pattern)):
      if os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as f:
          add(source, f.read())
  for path in sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"],
                                            "*.py"))):
    with open(path, encoding="utf-8", errors="replace") as f:
      try:
        tree = ast.parse(f.read())
      except (SyntaxError, ValueError):
        continue
    for node in ast.walk(tree):
      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                           ast.AsyncFunctionDef)):
        add("python docstrings", ast.get_docstring(node) or "")
  text = open(demo_corpus.get_demo_corpus(), encoding="utf-8").read()
  for doc in demo_corpus.documents(text):
    add("novel", doc)
  return out


def _write_corpus(work_dir, sources, mb, num_files):
  """Writes ~mb MB of the sources' texts, shuffled together and repeated
  as needed, round-robin into num_files files, a blank line between texts.

  Returns:
    (paths, bytes written, composition: printable lines).
  """
  texts = [(source, t) for source, ts in sources.items() for t in ts]
  rnd = random.Random(0)
  out, size = [], 0
  while size < mb * 1e6:
    rnd.shuffle(texts)
    for item in texts:
      out.append(item)
      size += len(item[1].encode()) + 2
      if size >= mb * 1e6:
        break
  paths = []
  for k in range(num_files):
    path = os.path.join(work_dir, f"corpus-{k:03d}.txt")
    with open(path, "w", encoding="utf-8") as f:
      f.write("\n\n".join(t for _, t in out[k::num_files]) + "\n")
    paths.append(path)
  return paths, size, _composition(out, num_files)


def _composition(texts, num_files):
  """Printable lines: documents, lines and MB of each source, line shapes."""
  rows = collections.defaultdict(lambda: [0, 0, 0, 0])
  lines = []
  for source, text in texts:
    row = rows[source]
    row[0] += 1
    row[1] += sum(1 for d in text.split("\n\n") if d.strip())
    text_lines = [line for line in text.split("\n") if line.strip()]
    row[2] += len(text_lines)
    row[3] += len(text.encode())
    lines += text_lines
  out = [f"  {source}: {n} texts ({docs} documents), {nl:,} lines, "
         f"{b / 1e6:.2f} MB" for source, (n, docs, nl, b) in rows.items()]
  lens = np.array([len(line) for line in lines])
  out.append(f"  {num_files} files, {len(lines):,} text lines: characters "
             f"per line median {np.median(lens):.0f}, mean {lens.mean():.0f};"
             f" {sum(not line.isascii() for line in lines) / len(lines):.1%}"
             " of lines not ASCII")
  return out


def make_corpus(work_dir, kind, mb):
  """(paths, bytes, composition lines) of the `--corpus` kind."""
  if kind == "novel":
    return novel_corpus(work_dir, mb)
  return _write_corpus(work_dir, mixed_sources(), mb,
                       num_files=FLAGS.files or max(1, int(mb * 10)))


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
        feature = {"input": _int64_feature(cat.tolist()),
                   "is_masked": _int64_feature(
                       np.concatenate([m0, m1]).astype(int).tolist()),
                   "target": _int64_feature(tgt.tolist()),
                   "seg_id": _int64_feature(seg),
                   "label": _int64_feature([label])}
        writer.write(tf.train.Example(features=tf.train.Features(
            feature=feature)).SerializeToString())
        count += 1
  return count


# ----------------------------------------------------------------------------
# Benchmarks.
# ----------------------------------------------------------------------------
def corpus_lines(paths):
  """The corpus' non-blank lines, as the floor encodes them."""
  return [line for p in paths
          for line in open(p, encoding="utf-8").read().split("\n")
          if line.strip()]


def _cpu_seconds():
  """CPU seconds of this process and of its ended worker processes."""
  children = resource.getrusage(resource.RUSAGE_CHILDREN)
  return time.process_time() + children.ru_utime + children.ru_stime


def encode_floor(sp, lines, threads):
  """(wall, CPU) seconds SentencePiece alone needs for the lines on
  `threads` threads."""
  start, cpu = time.time(), _cpu_seconds()
  sp.encode(lines, out_type=int, num_threads=threads)
  return time.time() - start, _cpu_seconds() - cpu


def time_writer(paths, sp_path, save_dir, num_workers):
  """(wall, CPU) seconds of one create_data run into a fresh save_dir."""
  corpus_glob = os.path.join(os.path.dirname(paths[0]), "corpus-*.txt")
  start, cpu = time.time(), _cpu_seconds()
  record_writer.create_data(corpus_glob, sp_path, save_dir,
                            num_workers=num_workers, **README)
  return time.time() - start, _cpu_seconds() - cpu


def _spread(times):
  """'median s (min-max)' of a list of seconds."""
  return (f"{statistics.median(times):.2f}s ({min(times):.2f}-"
          f"{max(times):.2f})")


def writer_stages(paths, sp_path):
  """Seconds of each stage of a one-process writer run.

  Returns:
    dict stage -> seconds, the rows and the word-start table.
  """
  with open(sp_path, "rb") as f:
    encoder = token_stream.LineEncoder(f.read(), False, True)
  cfg = dict(README, use_eod=True)
  rng = np.random.RandomState([0, 0, 1])
  start = time.time()
  with worker_pool.worker_processes(1, encoder) as workers:
    data, sent = record_writer.build_stream(paths, workers, True, rng)
  rows, sent_rows = token_stream.batchify(data, sent, 32, 16, True)
  t_encode = time.time() - start
  is_start = pretrain_examples.word_start_table(encoder.sp_model)
  start = time.time()
  batches = list(record_writer._batches(  # pylint: disable=protected-access
      rows, sent_rows, cfg, is_start, rng))
  t_examples = time.time() - start
  start = time.time()
  with tf.io.TFRecordWriter(os.devnull) as writer:
    for batch in batches:
      for record in example_proto.serialize_examples(batch):
        writer.write(record)
  t_serialize = time.time() - start
  return ({"encode": t_encode, "examples": t_examples,
           "serialize+write": t_serialize, "batches": len(batches)},
          rows, sent_rows, is_start)


def bench_loop_baseline(sp, rows, sent_rows, is_start, work):
  """Examples/s of the released loops and of ours on the same rows."""
  cfg = dict(README)
  k = FLAGS.baseline_offsets
  rng = np.random.RandomState(0)
  bounds = [pretrain_examples.boundaries(s) for s in sent_rows]
  start = time.time()
  for offset in range(k):
    example_proto.serialize_examples(pretrain_examples.make_batch(
        rows, bounds, offset * cfg["reuse_len"], cfg, is_start, rng))
  ours = k * rows.shape[0] / (time.time() - start)
  random.seed(0)
  np.random.seed(0)
  start = time.time()
  n_loop = loop_write(os.path.join(work, "loop.tfrecords"), sp, rows,
                      sent_rows, cfg, k)
  return ours, n_loop / (time.time() - start)


def bench_input_fn(record_dir, n_batches):
  """Examples/s of the input function at the paper's settings."""
  bsz = FLAGS.bsz_per_core
  fn, _ = input_pipeline.get_input_fn(
      record_dir, "train", README["bsz_per_host"], README["seq_len"],
      README["reuse_len"], True, num_core_per_host=README["bsz_per_host"] //
      bsz, perm_size=256, num_predict=README["num_predict"],
      seed=train_config.DEFAULT_SEED)
  with tf.Graph().as_default():
    nxt = tf.compat.v1.data.make_one_shot_iterator(
        fn({"batch_size": bsz})).get_next()
    with tf.compat.v1.Session() as sess:
      for _ in range(3):
        sess.run(nxt)
      start = time.time()
      for _ in range(n_batches):
        sess.run(nxt)
      return n_batches * bsz / (time.time() - start)


def main(_):
  tf.compat.v1.disable_eager_execution()
  work = scratch.scratch_dir(FLAGS.work_dir, "xlnet-bench-")
  paths, size, composition = make_corpus(work, FLAGS.corpus, FLAGS.mb)
  sp_path = spm_train.train_spm(
      demo_corpus.get_demo_corpus() if FLAGS.corpus == "novel"
      else ",".join(paths), os.path.join(work, "spiece"),
      vocab_size=FLAGS.vocab_size)
  sp = spm.SentencePieceProcessor(model_file=sp_path)
  cpus = os.cpu_count()
  lines = corpus_lines(paths)
  num_tokens = sum(map(len, sp.encode(lines, out_type=int,
                                      num_threads=cpus)))
  print(f"corpus {FLAGS.corpus}: {size / 1e6:.1f} MB, {num_tokens:,} "
        f"tokens (vocab {sp.get_piece_size()} trained on it), {cpus} CPUs, "
        f"settings {README}", *composition, sep="\n", flush=True)

  # 1-2. Encoding floor and record writing, interleaved run by run.
  times = collections.defaultdict(list)  # name -> [(wall, CPU) seconds]
  for k in range(FLAGS.repeats):
    times["floor1"].append(encode_floor(sp, lines, 1))
    times["writer1"].append(time_writer(
        paths, sp_path, os.path.join(work, f"records-1-{k}"), 1))
    times["floor"].append(encode_floor(sp, lines, cpus))
    save_dir = os.path.join(work, f"records-default-{k}")
    times["writer"].append(time_writer(paths, sp_path, save_dir, None))
  wall = {key: [w for w, _ in t] for key, t in times.items()}
  cpu = {key: statistics.median(c for _, c in t) for key, t in times.items()}
  med = {key: statistics.median(t) for key, t in wall.items()}
  print(f"median (min-max) of {FLAGS.repeats} interleaved runs each; CPU: "
        "seconds of all the run's processes (steadier on a shared machine):")
  for key, what in (("floor1", "encode floor, 1 thread"),
                    ("floor", f"encode floor, {cpus} threads"),
                    ("writer1", "record writing, --num_workers=1"),
                    ("writer", f"record writing, default workers ({cpus})")):
    print(f"  {what}: {_spread(wall[key])} = "
          f"{num_tokens / med[key] / 1e3:,.0f}k tokens/s; CPU "
          f"{cpu[key]:.2f}s")
  print(f"  wall: --num_workers=1 {med['writer1'] / med['floor1']:.2f}x the "
        f"one-thread floor; default workers "
        f"{med['writer'] / med['floor']:.2f}x the {cpus}-thread floor")
  print(f"  CPU: --num_workers=1 {cpu['writer1'] / cpu['floor1']:.2f}x the "
        f"one-thread floor; default workers {cpu['writer'] / cpu['floor']:.2f}x"
        f" the {cpus}-thread floor")
  written = {open(f, "rb").read() for f in glob.glob(
      os.path.join(work, "records-*", "tfrecords", "*.tfrecords"))}
  print(f"  record files of all runs identical: {len(written) == 1}")
  if not FLAGS.extras:
    return
  stages, rows, sent_rows, is_start = writer_stages(paths, sp_path)
  print("one-process stages: " + ", ".join(
      f"{k} {v:.2f}s" for k, v in stages.items() if k != "batches") +
        f" ({stages['batches']} batches of 32)")

  # 3. Released per-token loops on the same rows.
  ours, loop = bench_loop_baseline(sp, rows, sent_rows, is_start, work)
  print(f"example loop: ours {ours:,.0f} examples/s, the release's loops "
        f"{loop:,.1f} examples/s: {ours / loop:.0f}x")

  # 4. Input function.
  rate = bench_input_fn(os.path.join(save_dir, "tfrecords"),
                        FLAGS.input_batches)
  print(f"input_fn: {rate:,.0f} examples/s on {cpus} CPUs (seq 512, reuse "
        f"256, perm_size 256, 85 targets, bi_data, per-core batch "
        f"{FLAGS.bsz_per_core})")
  for item in filter(None, FLAGS.step_s.split(",")):
    name, step_s = item.split(":")
    need = FLAGS.bsz_per_core * FLAGS.cores_per_host / float(step_s)
    print(f"  {name}: {FLAGS.cores_per_host} cores x {FLAGS.bsz_per_core} "
          f"examples / {float(step_s):.2f}s per step = {need:,.0f} examples/s "
          f"per host; the input function gives {rate / need:.1f}x that")


if __name__ == "__main__":
  app.run(main)
