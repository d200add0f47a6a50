"""Peak memory of one pretraining step (forward + backward + update).

A GPU run reads the peak from `tf.config.experimental.get_memory_info`, which
the CPU does not implement. Here the step runs on the CPU with a full trace
(RunMetadata FULL_TRACE), whose allocation records list every allocation
and deallocation of the step's tensors with its time; replaying them gives
the peak of the bytes live at once during the step. Variables and optimizer
slots live across steps and are added from their sizes. That is the memory
the step's tensors need on any device (a GPU adds its allocator's
fragmentation, cuDNN/cuBLAS workspaces and the CUDA context, about 0.5-1 GB).

The CPU is too slow to run Large at seq 512 often, so the step is measured
at 1 and 2 layers with batches of 2 and 4 sequences (bi_data needs an even
batch), fitted as
  peak(layers L, batch b) = a + c L + b (d + e L)
(c: a layer's gradients and temporaries, e: a layer's activations per
sequence) and extrapolated; --check_layers measures one more depth to show
the error of the extrapolation. The step is the benchmark's (bench/
model_step.py: seq 512, memory 384, 85 targets, bi_data, dropout, SGD);
Adam's two slots are added from the parameter count.

Usage (from the repository root):
  .venvs/reference/bin/python bench/step_memory.py --widths=base,large
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_step  # noqa: E402  (its flags: --dropout, --bi_data, ...)

WIDTHS = {
    "base": dict(n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072,
                 n_token=32000),
    "large": dict(n_layer=24, d_model=1024, n_head=16, d_head=64,
                  d_inner=4096, n_token=32000),
}
flags.DEFINE_list("widths", ["base", "large"], "Model sizes to measure.")
flags.DEFINE_integer("check_layers", 0, "Also measure this many layers at "
                     "batch 1 and print it beside the extrapolation.")
flags.DEFINE_list("gpu_gib", ["16", "40", "80"], "GPU memory sizes (GiB) "
                  "for the largest per-GPU batch.")
FLAGS = flags.FLAGS
GiB = 2.0 ** 30


def traced_peak_bytes(sizes, seq_len, mem_len, bsz, num_predict):
  """Peak live bytes of the step's tensors (variables excluded)."""
  inputs = model_step.random_inputs(
      np.random.default_rng(0), seq_len, bsz, num_predict, sizes["n_token"],
      sizes["d_model"], sizes["n_layer"], mem_len)
  variant = model_step.Variant("fp32", sizes, inputs)
  variant.run(timed=False)
  (trace,) = variant.trace(1)
  variant.sess.close()
  events = []
  for dev_stats in trace.step_stats.dev_stats:
    for node in dev_stats.node_stats:
      for memory in node.memory:
        for record in memory.allocation_records:
          events.append((record.alloc_micros, record.alloc_bytes))
  events.sort()
  live = peak = 0
  for _, delta in events:
    live += delta
    peak = max(peak, live)
  return peak


def param_count(sizes):
  """Variables of the pretraining model (untie_r, segments, LM bias)."""
  d, hd, inner = sizes["d_model"], sizes["n_head"] * sizes["d_head"], \
      sizes["d_inner"]
  layer = 5 * d * hd + 2 * d * inner + inner + d + 4 * d
  per_layer_bias = 3 * hd + 2 * hd  # r_w, r_r, r_s biases, seg_embed
  return (sizes["n_layer"] * (layer + per_layer_bias)
          + sizes["n_token"] * d + d + sizes["n_token"])


def _even(n):
  """The largest even batch <= n (bi_data needs even batches), or 0."""
  return max(int(n) // 2 * 2, 0)


def main(_):
  seq_len, mem_len, num_predict = 512, 384, 85
  for width in FLAGS.widths:
    full = WIDTHS[width]
    peaks = {}
    for n_layer, bsz in ((1, 2), (2, 2), (1, 4), (2, 4)):
      sizes = dict(full, n_layer=n_layer)
      peaks[n_layer, bsz] = traced_peak_bytes(sizes, seq_len, mem_len, bsz,
                                              num_predict)
      print(f"{width} width, {n_layer} layer(s), batch {bsz}: step tensors "
            f"{peaks[n_layer, bsz] / GiB:.3f} GiB", flush=True)
    e = ((peaks[2, 4] - peaks[1, 4]) - (peaks[2, 2] - peaks[1, 2])) / 2
    c = peaks[2, 2] - peaks[1, 2] - 2 * e
    d = (peaks[1, 4] - peaks[1, 2]) / 2 - e
    a = peaks[1, 2] - c - 2 * (d + e)

    def step_bytes(n_layer, bsz):
      return a + c * n_layer + bsz * (d + e * n_layer)

    if FLAGS.check_layers:
      sizes = dict(full, n_layer=FLAGS.check_layers)
      got = traced_peak_bytes(sizes, seq_len, mem_len, 2, num_predict)
      print(f"  check: {FLAGS.check_layers} layers, batch 2 measured "
            f"{got / GiB:.3f} GiB, extrapolated "
            f"{step_bytes(FLAGS.check_layers, 2) / GiB:.3f} GiB")
    params = param_count(full)
    state = params * 4 * 3  # weights and Adam's two slots (float32)
    per_seq = d + e * full["n_layer"]
    print(f"{width}: {params / 1e6:.0f}M parameters; weights + Adam slots "
          f"{state / GiB:.2f} GiB (gradients are step tensors; "
          f"--accum_steps > 1 adds {params * 4 / GiB:.2f} GiB of "
          f"accumulators); per sequence {per_seq / GiB:.2f} GiB")
    for bsz in (2, 4, 8, 16, 32):
      total = state + step_bytes(full["n_layer"], bsz)
      print(f"  seq {seq_len}, mem {mem_len}, {full['n_layer']} layers, "
            f"batch {bsz} per device: {total / GiB:.1f} GiB")
    for gib in map(float, FLAGS.gpu_gib):
      room = gib * GiB - state - step_bytes(full["n_layer"], 0)
      print(f"  {gib:.0f} GiB GPU: at most batch {_even(room / per_seq)} per "
            f"device and step (with --accum_steps: micro-batch "
            f"{_even((room - params * 4) / per_seq)}), before the CUDA "
            "context and workspaces")


if __name__ == "__main__":
  app.run(main)
