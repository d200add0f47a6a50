"""The XLNet step's main operations, plain TensorFlow vs XLA, op by op.

Times each operation (forward only) at the shapes of `bench/model_step.py
--configs base2` (seq 512, mem 384, batch 2, 12 heads of 64, d_model 768,
d_inner 3072, 85 targets), once as TensorFlow ops (oneDNN kernels on the
CPU) and once compiled by XLA (`tf.function(jit_compile=True)`), in float32
and bfloat16. The two versions run interleaved (`--rounds` rounds of
`--reps` runs); the figure is the median time per run, with the process CPU
time per run. It shows where XLA's CPU backend loses to the oneDNN kernels
(matrix products in Eigen, bfloat16 computed in float32) and what it gains
by fusing element-wise work.

Usage (from the repository root):
  .venvs/reference/bin/python bench/xla_ops.py [--ops ffn,scores] \\
      [--rounds 5 --reps 10]
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from xlnet.programs import cli  # noqa: E402

B, N, D, QLEN, KLEN, RLEN, D_MODEL, D_INNER, ROWS = (
    2, 12, 64, 512, 896, 1408, 768, 3072, 597)


def _ffn(x, w1, b1, w2, b2):
  return tf.matmul(tf.nn.gelu(tf.matmul(x, w1) + b1, approximate=True),
                   w2) + b2


def _scores(q, k, kr):
  # The content stream's two score products and their sum (no rel_shift).
  ac = tf.einsum("ibnd,jbnd->bnij", q, k)
  bd = tf.einsum("ibnd,jbnd->bnij", q, kr)
  return ac + bd[..., :KLEN]


def _softmax(score, mask):
  return tf.nn.softmax(
      tf.cast(score - 1e30 * tf.cast(mask, score.dtype), tf.float32))


# name -> (function, input shapes, FLOPs or 0, mask inputs as 0/1).
OPS = {
    "ffn": (_ffn, [[B * ROWS, D_MODEL], [D_MODEL, D_INNER], [D_INNER],
                   [D_INNER, D_MODEL], [D_MODEL]],
            2 * 2 * B * ROWS * D_MODEL * D_INNER),
    "projection": (lambda x, w: tf.einsum("ibh,hnd->ibnd", x, w),
                   [[KLEN, B, D_MODEL], [D_MODEL, N, D]],
                   2 * KLEN * B * D_MODEL * N * D),
    "scores": (_scores, [[QLEN, B, N, D], [KLEN, B, N, D], [RLEN, B, N, D]],
               2 * QLEN * B * N * D * (KLEN + RLEN)),
    "prob_values": (lambda p, v: tf.einsum("bnij,jbnd->ibnd", p, v),
                    [[B, N, QLEN, KLEN], [KLEN, B, N, D]],
                    2 * QLEN * KLEN * B * N * D),
    "masked_softmax": (_softmax, [[B, N, QLEN, KLEN], [B, 1, QLEN, KLEN]], 0),
}
DTYPES = {"fp32": tf.float32, "bf16": tf.bfloat16}

flags.DEFINE_list("ops", list(OPS), f"Operations, some of {list(OPS)}.")
flags.DEFINE_list("dtypes", list(DTYPES), "fp32 and/or bf16.")
flags.DEFINE_integer("rounds", 5, "Interleaved rounds.")
flags.DEFINE_integer("reps", 10, "Runs per version and round.")
FLAGS = flags.FLAGS


class Version:
  """One operation built as plain ops or XLA-compiled, in its own session."""

  def __init__(self, op, dtype, jit):
    fn, shapes, _ = OPS[op]
    rng = np.random.default_rng(0)
    self.graph = tf.Graph()
    with self.graph.as_default():
      inputs = [tf.cast(tf.Variable(rng.normal(0, 1, s).astype(np.float32)),
                        dtype) for s in shapes]
      call = tf.function(fn, jit_compile=True) if jit else fn
      # A scalar fetch: the timing is not a copy of the output to Python.
      self.fetch = tf.reduce_sum(tf.cast(call(*inputs), tf.float32))
      init = tf.compat.v1.global_variables_initializer()
    self.sess = tf.compat.v1.Session(graph=self.graph)
    self.sess.run(init)
    self.sess.run(self.fetch)
    self.wall, self.cpu = [], []

  def time(self, reps):
    start, cpu_start = time.time(), time.process_time()
    for _ in range(reps):
      self.sess.run(self.fetch)
    self.wall.append((time.time() - start) / reps)
    self.cpu.append((time.process_time() - cpu_start) / reps)


def main(_):
  for name in FLAGS.ops:
    if name not in OPS:
      raise ValueError(f"--ops: unknown op {name!r}; expected some of "
                       f"{list(OPS)}")
  for name in FLAGS.dtypes:
    if name not in DTYPES:
      raise ValueError(f"--dtypes: unknown dtype {name!r}; expected some of "
                       f"{list(DTYPES)}")
  tf.compat.v1.disable_eager_execution()
  print(f"TensorFlow {tf.__version__}; {FLAGS.rounds} rounds x {FLAGS.reps} "
        f"runs, medians per run (forward only)", flush=True)
  for op in FLAGS.ops:
    for dtype_name in FLAGS.dtypes:
      versions = {jit: Version(op, DTYPES[dtype_name], jit)
                  for jit in (False, True)}
      for _ in range(FLAGS.rounds):
        for version in versions.values():
          version.time(FLAGS.reps)
      flops = OPS[op][2]
      line = f"{op:15s} {dtype_name}"
      for jit, version in versions.items():
        wall, cpu = np.median(version.wall), np.median(version.cpu)
        speed = f" {flops / wall / 1e9:6.1f} GFLOP/s" if flops else ""
        line += (f" | {'xla' if jit else 'tf '} {wall * 1000:7.2f} ms "
                 f"(cpu {cpu * 1000:7.2f}){speed}")
        version.sess.close()
      print(line, flush=True)


if __name__ == "__main__":
  cli.run(main)
