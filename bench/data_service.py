"""Benchmark of the pretraining input pipeline alone, in the trainer and on
tf.data service (`--data_service`) on loopback, in one run.

Records of the demo novel at seq 512, reuse 256, 85 targets (perm_size 256,
no bi_data, one core); the trainer's input function read for --batches
per-core batches of --bsz_per_core rows after a warm-up, (1) as the
trainer reads it without the service, (2) through a dispatcher and
--workers workers started in this process on 127.0.0.1 (their threads
share this machine's CPUs with the reader: the figure is the service's
overhead, serialization, compression and gRPC, not a scale-out), the
median of --repeats interleaved runs each.

Usage: python bench/data_service.py [--workers=2] [--batches=200]
"""
import os
import socket
import statistics
import sys
import time

from absl import app
from absl import flags
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import scratch  # noqa: E402
from xlnet.data import input_pipeline  # noqa: E402
from xlnet.data import record_writer  # noqa: E402
from xlnet.data import spm_train  # noqa: E402
from xlnet.demo import demo_corpus  # noqa: E402
from xlnet.training import config as train_config  # noqa: E402
from xlnet.training import data_servers  # noqa: E402
from xlnet.training import data_service  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("workers", 2, "Service workers.")
flags.DEFINE_integer("batches", 200, "Per-core batches timed per run.")
flags.DEFINE_integer("bsz_per_core", 4, "Rows per per-core batch.")
flags.DEFINE_integer("repeats", 3, "Interleaved runs of each.")
flags.DEFINE_string("work_dir", None, "Keep the records here (default: a "
                    "temporary directory, removed).")

SETTINGS = dict(seq_len=512, reuse_len=256, bi_data=False, num_predict=85,
                mask_alpha=6, mask_beta=1, num_core_per_host=1)


def free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def make_records(work):
  """The demo novel's records (a vocabulary of 4000 trained on it)."""
  corpus = demo_corpus.get_demo_corpus()
  sp_path = spm_train.train_spm(corpus, os.path.join(work, "spiece"),
                                vocab_size=4000)
  save_dir = os.path.join(work, "records")
  record_writer.create_data(corpus, sp_path, save_dir,
                            bsz_per_host=FLAGS.bsz_per_core, num_workers=1,
                            **SETTINGS)
  return os.path.join(save_dir, "tfrecords")


def rate(dataset):
  """Examples/s of `dataset` over FLAGS.batches batches after 20."""
  iterator = iter(dataset)
  for _ in range(20):
    next(iterator)
  start = time.perf_counter()
  for _ in range(FLAGS.batches):
    next(iterator)
  return FLAGS.batches * FLAGS.bsz_per_core / (time.perf_counter() - start)


def main(_):
  work = scratch.scratch_dir(FLAGS.work_dir, "xlnet-bench-")
  record_dir = make_records(work)
  input_fn, info = input_pipeline.get_input_fn(
      record_dir, "train", FLAGS.bsz_per_core, SETTINGS["seq_len"],
      SETTINGS["reuse_len"], SETTINGS["bi_data"], perm_size=256,
      num_predict=SETTINGS["num_predict"], seed=train_config.DEFAULT_SEED)

  def batches_at(step):
    return input_fn({"batch_size": FLAGS.bsz_per_core,
                     "start_host_batch": step})

  port = free_port()
  servers = [data_servers.start_dispatcher(port)]
  servers += [data_servers.start_worker(free_port(), f"127.0.0.1:{port}",
                                        "127.0.0.1")
              for _ in range(FLAGS.workers)]
  plain, served = [], []
  for k in range(FLAGS.repeats):
    plain.append(rate(batches_at(0)))
    served.append(rate(data_service.distribute(
        batches_at, 0, 1, f"grpc://127.0.0.1:{port}", f"bench-{k}")))
  print(f"{os.cpu_count()} CPUs; records: seq 512, reuse 256, perm_size "
        f"256, 85 targets, {info['num_batch']} batches of "
        f"{FLAGS.bsz_per_core}; per-core batch {FLAGS.bsz_per_core}; "
        f"median (min-max) of {FLAGS.repeats} interleaved runs of "
        f"{FLAGS.batches} batches")
  for name, rates in (("in the trainer", plain),
                      (f"tf.data service, {FLAGS.workers} workers, "
                       "loopback", served)):
    print(f"  {name}: {statistics.median(rates):,.0f} examples/s "
          f"({min(rates):,.0f}-{max(rates):,.0f})")
  print(f"  service / trainer: "
        f"{statistics.median(served) / statistics.median(plain):.2f}")


if __name__ == "__main__":
  app.run(main)
