"""Tokens/s of the pretraining step vs sequence length, memory and depth.

The step of bench/model_step.py (forward + backward + SGD update, base width:
d_model 768, 12 heads, d_inner 3072, 32000 tokens; batch 2, bi_data,
dropout 0.1, targets 85/512 of the sequence) at every sequence length x
memory length of the grid with `--n_layer` layers, and at seq 512, memory
384 with each depth of `--depths`. All shapes are built first, then run
round-robin (`--rounds` rounds of `--steps` steps each), so that a shared
machine slows them alike; each figure is the median over its timed steps.

Usage (from the repository root):
  .venvs/reference/bin/python bench/step_scaling.py [--variant=fp32]
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_step  # noqa: E402  (its flags: --rounds, --steps, --dropout)

flags.DEFINE_list("seq_lens", ["128", "256", "512"], "Sequence lengths.")
flags.DEFINE_list("mem_lens", ["0", "192", "384"], "Memory lengths.")
flags.DEFINE_list("depths", ["1", "4"], "Extra layer counts at seq 512, "
                  "memory 384.")
flags.DEFINE_integer("n_layer", 2, "Layers of the seq x memory grid.")
flags.DEFINE_string("variant", "fp32", "A bench/model_step.py variant.")
FLAGS = flags.FLAGS
BSZ = 2


def shapes():
  """(n_layer, seq_len, mem_len) of every measured point."""
  grid = [(FLAGS.n_layer, int(s), int(m)) for s in FLAGS.seq_lens
          for m in FLAGS.mem_lens]
  return grid + [(int(n), 512, 384) for n in FLAGS.depths
                 if (int(n), 512, 384) not in grid]


def main(_):
  tf.compat.v1.disable_eager_execution()
  points = {}
  for n_layer, seq_len, mem_len in shapes():
    sizes = dict(model_step.CONFIGS["base2"]["sizes"], n_layer=n_layer)
    num_predict = max(1, seq_len * 85 // 512)
    inputs = model_step.random_inputs(
        np.random.default_rng(0), seq_len, BSZ, num_predict, sizes["n_token"],
        sizes["d_model"], n_layer, mem_len)
    variant = model_step.Variant(FLAGS.variant, sizes, inputs)
    for _ in range(FLAGS.warmup):
      variant.run(timed=False)
    flops = 3 * model_step.forward_flops(sizes, seq_len, mem_len, BSZ,
                                         num_predict,
                                         BSZ if FLAGS.dropout else 2)
    points[n_layer, seq_len, mem_len] = (variant, flops)
    print(f"built {n_layer} layers, seq {seq_len}, mem {mem_len}", flush=True)
  for r in range(FLAGS.rounds):
    start = time.time()
    for variant, _ in points.values():
      for _ in range(FLAGS.steps):
        variant.run(timed=True)
    print(f"round {r + 1}/{FLAGS.rounds}: {time.time() - start:.0f}s",
          flush=True)
  print(f"{FLAGS.variant}, batch {BSZ}, base width: | layers | seq | mem | "
        "median ms/step (min-max) | process CPU ms/step | tokens/s (batch x "
        "seq) | GFLOP/step (matmuls, fwd+bwd est.) | GFLOP/s |")
  for (n_layer, seq_len, mem_len), (variant, flops) in points.items():
    times = np.array(variant.times)
    med = float(np.median(times))
    print(f"| {n_layer} | {seq_len} | {mem_len} | {med * 1e3:.0f} "
          f"({times.min() * 1e3:.0f}-{times.max() * 1e3:.0f}) | "
          f"{np.median(variant.cpu_times) * 1e3:.0f} | "
          f"{BSZ * seq_len / med:,.0f} | {flops / 1e9:.1f} | "
          f"{flops / med / 1e9:.1f} |")
  for variant, _ in points.values():
    variant.sess.close()


if __name__ == "__main__":
  app.run(main)
