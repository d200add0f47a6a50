"""Benchmark: does the input function keep up with the training step? One
run measures, on this machine, the demo's model and data (scripts/demo.sh:
configs/demo.flags, seq 128, reuse 64, batch 8, bi_data, 32 targets; the
demo novel with a 2,000-piece SentencePiece model trained on it):

  1. the input function alone, examples/s, from example records (masks
     written offline) and from token records (span masks sampled online,
     `xlnet/data/online_examples.py`);
  2. the training step fed from a cache (the input costs nothing), ms;
  3. the training step fed by the live input function of each kind, ms.

The step consumes batch / step-time examples/s; the input keeps up where
(1) is above it, and the live step (3) is within noise of the cached one
(2) where it does not slow the step. The three are interleaved --repeats
times on the same trainer, in the same process, and medians printed.
TensorFlow's thread pools are its defaults (every CPU): what train_gpu.py
runs with.

Usage: python bench/input_vs_step.py [--repeats=5] [--steps=50]
"""
import os
import statistics
import sys
import time

from absl import app
from absl import flags
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import record_kinds  # noqa: E402
from bench import scratch  # noqa: E402
from xlnet import configs as shipped  # noqa: E402
from xlnet.data import spm_train  # noqa: E402
from xlnet.demo import demo_corpus  # noqa: E402
from xlnet.flags import catalog as flag_catalog  # noqa: E402
from xlnet.flags import pretraining as pretrain_flags  # noqa: E402
from xlnet.pretraining import inputs  # noqa: E402
from xlnet.pretraining import pretrain as pretrain_lib  # noqa: E402
from xlnet.training import strategies  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("repeats", 5, "Interleaved runs of each measurement.")
flags.DEFINE_integer("steps", 50, "Timed steps (input: batches) per run.")
flags.DEFINE_string("work_dir", None, "Keep the records here (default: a "
                    "temporary directory, removed).")

# scripts/demo.sh's data flags.
DATA = dict(bsz_per_host=8, num_core_per_host=1, seq_len=128, reuse_len=64,
            bi_data=True, num_predict=32, mask_alpha=6, mask_beta=1)
KINDS = record_kinds.KINDS
WARMUP = 10  # steps (batches) before timing; also the cached batches


def make_records(work):
  """{kind: record dir} of the demo novel, both kinds."""
  corpus = demo_corpus.get_demo_corpus()
  sp_path = spm_train.train_spm(corpus, os.path.join(work, "spiece"),
                                vocab_size=2000)
  return record_kinds.write_both(work, corpus, sp_path, DATA)


def demo_configs(record_dir, model_dir):
  """train_gpu.py's configs for the demo's command on `record_dir`."""
  argv = ["bench", f"--flagfile={shipped.resolve('configs/demo.flags')}",
          "--model_config_path="
          f"{shipped.resolve('configs/xlnet_tiny.json')}",
          f"--record_info_dir={record_dir}", f"--model_dir={model_dir}",
          f"--train_batch_size={DATA['bsz_per_host']}",
          *(f"--{k}={DATA[k]}" for k in ("seq_len", "reuse_len", "bi_data",
                                          "num_predict"))]
  return pretrain_flags.for_train_gpu(flag_catalog.parse_flags(argv))


def input_rate(dataset, batch):
  """Examples/s of `dataset` (per-core batches of `batch`) over
  FLAGS.steps batches after WARMUP."""
  iterator = iter(dataset)
  for _ in range(WARMUP):
    next(iterator)
  start = time.perf_counter()
  for _ in range(FLAGS.steps):
    next(iterator)
  return FLAGS.steps * batch / (time.perf_counter() - start)


def step_ms(step_fn, dist_dataset):
  """Milliseconds per training step on `dist_dataset` over FLAGS.steps
  steps after WARMUP."""
  iterator = iter(dist_dataset)
  for _ in range(WARMUP):
    step_fn(iterator, False)
  start = time.perf_counter()
  for _ in range(FLAGS.steps):
    step_fn(iterator, False)
  return (time.perf_counter() - start) / FLAGS.steps * 1e3


def main(_):
  work = scratch.scratch_dir(FLAGS.work_dir, "xlnet-bench-")
  record_dirs = make_records(work)
  configs = {k: demo_configs(d, os.path.join(work, f"model-{k}"))
             for k, d in record_dirs.items()}
  at = {k: pretrain_lib.dataset_fn_at(c, inputs.training_input_fn(c)[0])(0)
        for k, c in configs.items()}
  first = configs[KINDS[0]]
  trainer = pretrain_lib.make_trainer(
      first, strategies.for_training(first.device, first.batch))
  trainer.build(at[KINDS[0]](tf.distribute.InputContext()).element_spec)
  step_fn = trainer.make_train_step()
  batch = first.batch.bsz_per_core
  cached = trainer.distribute(
      lambda ctx: at[KINDS[0]](ctx).take(WARMUP).cache().repeat())

  rates = {k: [] for k in KINDS}
  live = {k: [] for k in KINDS}
  free = []
  for _ in range(FLAGS.repeats):
    free.append(step_ms(step_fn, cached))
    for kind in KINDS:
      rates[kind].append(input_rate(at[kind](tf.distribute.InputContext()),
                                    batch))
      live[kind].append(step_ms(step_fn, trainer.distribute(at[kind])))

  def spread(values, fmt):
    return (f"{fmt.format(statistics.median(values))} "
            f"({fmt.format(min(values))}-{fmt.format(max(values))})")

  free_ms = statistics.median(free)
  print(f"{os.cpu_count()} CPUs, TensorFlow {tf.__version__}; the demo's "
        f"model and data (seq {DATA['seq_len']}, batch {batch}, perm_size "
        f"{first.data.perm_size}, {DATA['num_predict']} targets); median "
        f"(min-max) of {FLAGS.repeats} interleaved runs of {FLAGS.steps} "
        "steps")
  print(f"  step, input cached: {spread(free, '{:.1f}')} ms, consuming "
        f"{batch / free_ms * 1e3:,.0f} examples/s")
  for kind in KINDS:
    live_ms = statistics.median(live[kind])
    print(f"  {kind} records: input alone {spread(rates[kind], '{:,.0f}')} "
          f"examples/s ({statistics.median(rates[kind]) * free_ms / batch / 1e3:.1f}x "
          f"what the step consumes); step fed live "
          f"{spread(live[kind], '{:.1f}')} ms "
          f"({(live_ms / free_ms - 1) * 100:+.1f}% against cached)")


if __name__ == "__main__":
  app.run(main)
