"""Forward+backward throughput of the XLNet backbone in pretraining mode.

Builds the two-stream model exactly as pretraining does (perm_mask,
target_mapping with `num_predict` targets, segment ids, `mem_len` memories
fed), differentiates the tied-weight LM loss with respect to every variable,
and times that step. Prints tokens/s, the analytic matmul/einsum FLOP count
(forward x 3 for forward+backward), the achieved FLOP/s, and its ratio to
this machine's float32 matmul peak measured in the same run (a large
`tf.matmul`).

Usage (from the repository root):
  .venvs/reference/bin/python bench/model_step.py --config tiny
  .venvs/reference/bin/python bench/model_step.py --config base2 \
      --seq_len 512 --bsz 2 --steps 3 [--use_xla] [--use_bfloat16]

Configs: tiny = configs/xlnet_tiny.json; base2 = XLNet-Base width (d_model
768, 12 heads of 64, d_inner 3072, 32000 tokens) with 2 layers.
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from xlnet import modeling  # noqa: E402

CONFIGS = {
    "tiny": dict(n_layer=2, d_model=64, n_head=4, d_head=16, d_inner=128,
                 n_token=2000),
    "base2": dict(n_layer=2, d_model=768, n_head=12, d_head=64, d_inner=3072,
                  n_token=32000),
}

flags.DEFINE_enum("config", "tiny", sorted(CONFIGS), "Model size.")
flags.DEFINE_integer("seq_len", 512, "Sequence length (qlen).")
flags.DEFINE_integer("mem_len", 384, "Length of the memories fed.")
flags.DEFINE_integer("num_predict", 85, "Targets per sequence.")
flags.DEFINE_integer("bsz", 4, "Batch size.")
flags.DEFINE_integer("steps", 5, "Timed steps.")
flags.DEFINE_integer("warmup", 2, "Untimed steps first (graph warm-up).")
flags.DEFINE_float("dropout", 0.1, "Dropout (also dropatt).")
flags.DEFINE_bool("bi_data", True, "Forward/backward halves (needs even bsz).")
flags.DEFINE_bool("use_xla", False, "XLA auto-clustering (global jit).")
flags.DEFINE_bool("use_bfloat16", False, "Compute in bfloat16.")
FLAGS = flags.FLAGS


def forward_flops(cfg, qlen, mlen, bsz, num_predict, pos_rows):
  """Analytic matmul/einsum FLOPs (2 per multiply-add) of one forward pass.

  Args:
    cfg: dict of model sizes.
    qlen, mlen, bsz, num_predict: input sizes.
    pos_rows: batch rows of the positional encoding projected by `r`
      (bsz with training dropout, else 1, or 2 with bi_data).

  Returns:
    int FLOPs, counting projections, attention scores, probabilities x
    values, the target-mapping scatter/gather, the feed-forward layers and
    the LM softmax.
  """
  d, inner = cfg["d_model"], cfg["d_inner"]
  hd = cfg["n_head"] * cfg["d_head"]
  klen = mlen + qlen
  rlen = klen + qlen
  proj = 2 * d * hd
  layer = (2 * klen * bsz * proj           # k, v
           + rlen * pos_rows * proj        # r
           + 2 * qlen * bsz * proj         # q, o content stream
           + 2 * num_predict * bsz * proj  # q, o query stream
           + 2 * 2 * num_predict * qlen * bsz * hd  # scatter + gather
           + 2 * 2 * (qlen + num_predict) * bsz * d * inner)  # ffn h, g
  for _ in range(2):  # both streams attend over qlen query rows
    layer += 2 * qlen * bsz * hd * (klen + rlen + klen)  # ac, bd, prob.v
    layer += 2 * qlen * bsz * hd * 2 + 2 * qlen * klen * bsz * cfg[
        "n_head"] * 2  # segment term
  lm = 2 * num_predict * bsz * d * cfg["n_token"]
  return cfg["n_layer"] * layer + lm


def _random_inputs(rng, qlen, bsz, num_predict, cfg, mlen):
  """Pretraining-like time-major inputs (SPEC section 5 masks)."""
  inp_k = rng.integers(0, cfg["n_token"], [qlen, bsz]).astype(np.int32)
  seg_id = (np.arange(qlen)[:, None] >= qlen // 2).astype(np.int32)
  seg_id = np.tile(seg_id, [1, bsz])
  is_target = np.zeros([qlen, bsz], np.float32)
  perm_mask = np.zeros([qlen, qlen, bsz], np.float32)
  target_mapping = np.zeros([num_predict, qlen, bsz], np.float32)
  for b in range(bsz):
    targets = np.sort(rng.choice(qlen, num_predict, replace=False))
    is_target[targets, b] = 1
    order = rng.permutation(qlen)
    sees = (is_target[:, b][:, None] > 0) & (order[None, :] < order[:, None])
    perm_mask[:, :, b] = (is_target[:, b][None, :] > 0) & ~sees
    target_mapping[np.arange(num_predict), targets, b] = 1
  mems = [rng.normal(0, 1, [mlen, bsz, cfg["d_model"]]).astype(np.float32)
          for _ in range(cfg["n_layer"])]
  return inp_k, seg_id, is_target, perm_mask, target_mapping, mems


def build_step(cfg):
  """Graph of one forward+backward+SGD step; returns (step op, loss)."""
  rng = np.random.default_rng(0)
  inp_k, seg_id, inp_q, perm_mask, target_mapping, mems = _random_inputs(
      rng, FLAGS.seq_len, FLAGS.bsz, FLAGS.num_predict, cfg, FLAGS.mem_len)
  targets = rng.integers(0, cfg["n_token"], [FLAGS.num_predict, FLAGS.bsz])
  initializer = tf.compat.v1.initializers.random_normal(stddev=0.02)
  with tf.compat.v1.variable_scope("model"):
    output, _, table = modeling.transformer_xl(
        inp_k=tf.constant(inp_k), seg_id=tf.constant(seg_id),
        inp_q=tf.constant(inp_q), perm_mask=tf.constant(perm_mask),
        target_mapping=tf.constant(target_mapping),
        mems=[tf.constant(m) for m in mems], mem_len=FLAGS.mem_len,
        n_token=cfg["n_token"], n_layer=cfg["n_layer"],
        d_model=cfg["d_model"], n_head=cfg["n_head"], d_head=cfg["d_head"],
        d_inner=cfg["d_inner"], ff_activation="gelu", untie_r=True,
        dropout=FLAGS.dropout, dropatt=FLAGS.dropout, attn_type="bi",
        bi_data=FLAGS.bi_data, initializer=initializer, is_training=True,
        use_tpu=False, use_bfloat16=FLAGS.use_bfloat16)
    loss = modeling.lm_loss(output, tf.constant(targets.astype(np.int32)),
                            cfg["n_token"], cfg["d_model"], initializer,
                            lookup_table=table, tie_weight=True)
  loss = tf.reduce_mean(loss)
  # A plain SGD update: fetching a tf.group of the gradients lets grappler
  # prune them, while the (cheap) variable updates must run.
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(1e-6)
  return optimizer.minimize(loss), loss


def session_config():
  config = tf.compat.v1.ConfigProto()
  if FLAGS.use_xla:
    config.graph_options.optimizer_options.global_jit_level = (
        tf.compat.v1.OptimizerOptions.ON_1)
  return config


def matmul_peak(n=2048, reps=10):
  """Measured float32 FLOP/s of an n x n matmul on the default device."""
  with tf.Graph().as_default():
    a = tf.Variable(tf.random.normal([n, n]))
    b = tf.Variable(tf.random.normal([n, n]))
    prod = tf.reduce_sum(tf.matmul(a, b))
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      sess.run(prod)
      start = time.time()
      for _ in range(reps):
        sess.run(prod)
      return 2.0 * n ** 3 * reps / (time.time() - start)


def main(_):
  cfg = CONFIGS[FLAGS.config]
  if FLAGS.bi_data and FLAGS.bsz % 2:
    raise app.UsageError(f"--bi_data needs an even --bsz, got {FLAGS.bsz}")
  if FLAGS.num_predict > FLAGS.seq_len:
    raise app.UsageError(f"--num_predict ({FLAGS.num_predict}) must be <= "
                         f"--seq_len ({FLAGS.seq_len})")
  tf.compat.v1.disable_eager_execution()
  device = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
  print(f"TensorFlow {tf.__version__} on {device}; config {FLAGS.config} "
        f"{cfg}; seq_len {FLAGS.seq_len} mem_len {FLAGS.mem_len} "
        f"num_predict {FLAGS.num_predict} bsz {FLAGS.bsz} xla "
        f"{FLAGS.use_xla} bf16 {FLAGS.use_bfloat16}", flush=True)
  peak = matmul_peak()
  print(f"fp32 matmul peak (2048^3): {peak / 1e9:.1f} GFLOP/s", flush=True)

  with tf.Graph().as_default():
    step, loss = build_step(cfg)
    with tf.compat.v1.Session(config=session_config()) as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      for _ in range(FLAGS.warmup):
        sess.run(step)
      times = []
      for i in range(FLAGS.steps):
        start = time.time()
        sess.run(step)
        times.append(time.time() - start)
        eta = np.mean(times) * (FLAGS.steps - i - 1)
        print(f"step {i + 1}/{FLAGS.steps}: {times[-1]:.3f}s "
              f"(ETA {eta:.0f}s)", flush=True)
      loss_value = sess.run(loss)

  sec = float(np.median(times))
  pos_rows = FLAGS.bsz if FLAGS.dropout else (2 if FLAGS.bi_data else 1)
  flops = 3 * forward_flops(cfg, FLAGS.seq_len, FLAGS.mem_len, FLAGS.bsz,
                            FLAGS.num_predict, pos_rows)
  tokens = FLAGS.seq_len * FLAGS.bsz
  print(f"loss {loss_value:.3f}")
  print(f"median step {sec * 1000:.1f} ms | {tokens / sec:,.0f} tokens/s | "
        f"{flops / 1e9:.1f} GFLOP/step (fwd+bwd est.) | "
        f"{flops / sec / 1e9:.1f} GFLOP/s | {100 * flops / sec / peak:.1f}% "
        f"of measured fp32 matmul peak")


if __name__ == "__main__":
  app.run(main)
