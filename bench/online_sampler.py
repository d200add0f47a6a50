"""Benchmark of the online sampler against the offline writer's examples.

On the demo novel's rows (a 4,000-piece SentencePiece model trained on it,
the stream repeated to fill the rows) with the released README's settings
(bsz_per_host 32, 16 cores, seq 512, reuse 256, bi_data, 85 targets), in
one run, on one thread each (TensorFlow's intra- and inter-op pools set to
one thread), it prints the examples/s of:
  1. `pretrain_examples.make_batch` (NumPy, what data_utils.py writes);
  2. `online_examples.make_batch` (TF ops, what the input function runs on
     token records), one host batch per call;
  3. the whole input function (parse or sample, permutation with perm_size
     256, target mapping; tf.data on a one-thread pool) on example records
     and on token records written by `create_data` from the same text.
Each is run --repeats times, interleaved; medians.

Usage: python bench/online_sampler.py [--repeats=5] [--offsets=8]
"""
import os
import statistics
import sys
import tempfile
import time

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from bench import record_kinds  # noqa: E402
from xlnet.data import input_pipeline  # noqa: E402
from xlnet.data import online_examples  # noqa: E402
from xlnet.data import prepro_utils  # noqa: E402
from xlnet.data import pretrain_examples  # noqa: E402
from xlnet.data import spm_train  # noqa: E402
from xlnet.data import token_stream  # noqa: E402
from xlnet.demo import demo_corpus  # noqa: E402

flags.DEFINE_integer("repeats", 5, "Timed runs of each sampler.")
flags.DEFINE_integer("offsets", 8, "Row offsets (host batches) per run.")
FLAGS = flags.FLAGS

CFG = dict(bsz_per_host=32, num_core_per_host=16, seq_len=512, reuse_len=256,
           bi_data=True, mask_alpha=6, mask_beta=1, num_predict=85)


def demo_rows(work_dir, offsets):
  """Rows of the demo novel long enough for `offsets` offsets.

  Returns:
    (rows np.int32 [32, row_len], sent_rows np.bool_, word-start table,
    SentencePiece model path, the novel's path).
  """
  corpus = demo_corpus.get_demo_corpus(os.path.join(REPO, "data", "demo"))
  sp_path = spm_train.train_spm(corpus, os.path.join(work_dir, "spiece"),
                                vocab_size=4000)
  sp = prepro_utils.load_sp_model(sp_path, "the benchmark's model")
  ids, sent, sid = [], [], True
  with open(corpus, encoding="utf-8") as f:
    for line in f:
      if line.strip():
        toks = prepro_utils.encode_ids(
            sp, prepro_utils.preprocess_text(line.strip()))
        ids += toks
        sent += [sid] * len(toks)
        sid = not sid
  need = (CFG["bsz_per_host"] // 2) * (offsets * CFG["reuse_len"]
                                       + 2 * CFG["seq_len"])
  reps = -(-need // len(ids))
  rows, sent_rows = token_stream.batchify(
      np.array(ids * reps, np.int32), CFG["bsz_per_host"],
      np.array(sent * reps, bool), CFG["num_core_per_host"], CFG["bi_data"])
  return (rows, sent_rows, pretrain_examples.word_start_table(sp), sp_path,
          corpus)


def input_fn_rate(record_dir, examples):
  """Examples/s of the input function's first `examples` examples (after
  one warm-up batch), tf.data on a one-thread pool."""
  input_fn, _ = input_pipeline.get_input_fn(
      record_dir, "train", CFG["bsz_per_host"], CFG["seq_len"],
      CFG["reuse_len"], CFG["bi_data"], num_core_per_host=16,
      perm_size=256, num_predict=CFG["num_predict"])
  options = tf.data.Options()
  options.threading.private_threadpool_size = 1
  dataset = input_fn({"batch_size": 2}).with_options(options)
  batches = iter(dataset)
  next(batches)
  start = time.perf_counter()
  for _ in range(examples // 2):
    next(batches)
  return examples / (time.perf_counter() - start)


def main(argv):
  del argv
  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  with tempfile.TemporaryDirectory() as work_dir:
    rows, sent_rows, is_start, sp_path, corpus = demo_rows(work_dir,
                                                           FLAGS.offsets)
    dirs = record_kinds.write_both(work_dir, corpus, sp_path, CFG)
    pipeline = {kind: [] for kind in dirs}
    for _ in range(FLAGS.repeats):
      for kind, record_dir in dirs.items():
        pipeline[kind].append(input_fn_rate(record_dir, 512))
  print("input function, perm_size 256, per-core batch 2, one tf.data "
        "thread:")
  for kind, rates in pipeline.items():
    print(f"  {kind + ' records':18s} {statistics.median(rates):8.0f} "
          f"examples/s (min {min(rates):.0f}, max {max(rates):.0f})")
  offsets = [k * CFG["reuse_len"] for k in range(FLAGS.offsets)]
  bounds = [pretrain_examples.boundaries(s) for s in sent_rows]
  padded = online_examples.padded_bounds(sent_rows)
  online = tf.function(lambda offset, key: online_examples.make_batch(
      rows, padded, offset, CFG, is_start, key))
  online(tf.constant(0), tf.constant([0, 0], tf.int64))  # trace once
  rng = np.random.RandomState(0)
  times = {"offline (NumPy)": [], "online (TF ops)": []}
  for rep in range(FLAGS.repeats):
    start = time.perf_counter()
    for offset in offsets:
      assert pretrain_examples.make_batch(rows, bounds, offset, CFG,
                                          is_start, rng) is not None
    times["offline (NumPy)"].append(time.perf_counter() - start)
    start = time.perf_counter()
    for n, offset in enumerate(offsets):
      _, valid = online(tf.constant(offset), tf.constant([rep, n], tf.int64))
      assert valid.numpy()
    times["online (TF ops)"].append(time.perf_counter() - start)
  examples = len(offsets) * CFG["bsz_per_host"]
  print(f"{examples} examples per run (seq_len 512, reuse_len 256, 85 "
        f"targets, bi_data), {FLAGS.repeats} runs, one thread; "
        f"TensorFlow {tf.__version__}")
  for name, runs in times.items():
    rates = [examples / t for t in runs]
    print(f"{name:18s} {statistics.median(rates):8.0f} examples/s "
          f"(min {min(rates):.0f}, max {max(rates):.0f})")


if __name__ == "__main__":
  app.run(main)
