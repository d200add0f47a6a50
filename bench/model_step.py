"""Step time of the XLNet backbone in pretraining mode: fp32, bf16, fp16, XLA.

Builds the two-stream model exactly as pretraining does (perm_mask,
target_mapping with `num_predict` targets, segment ids, bi_data, `mem_len`
memories fed, dropout on), differentiates the tied-weight LM loss with respect
to every variable and applies a plain SGD update: one forward + backward +
update per step.

Every variant is built once, then the variants are run round-robin
(`--rounds` rounds of `--steps` steps each) so that a noisy, shared machine
slows them alike; the figure of a variant is the median over all its timed
steps, with the process CPU time per step (the steadier figure when other
jobs share the cores). Variants (comma-separated in `--variants`):
  fp32       float32 graph
  bf16       `use_bfloat16`: matmuls in bfloat16, softmax/LayerNorm/loss fp32
  fp16       `use_fp16`: the same in float16 (by default only on a GPU or for
             the tiny config: the CPU has no fast float16 matmul)
  fp32+xla   graph-mode XLA auto-clustering (global_jit_level ON_1; on the
             CPU it needs TF_XLA_FLAGS=--tf_xla_cpu_global_jit, set here)
  fp32+jit   the whole step in `tf.function(jit_compile=True)`
  bf16+xla, bf16+jit, ...  the combinations
  release    with `--release_dir` (a clone of github.com/zihangdai/xlnet):
             the release's own modeling.py, unchanged, run through the
             TF 1 stand-ins of bench/release_compat.py: the same step (same
             inputs, sizes, dropout, loss and SGD update) as a plain fp32
             graph, timed in the same rounds; every variant's line then also
             gives its tokens/s relative to it ("x1.52 vs release").
             First, with dropout 0, our variables' values (perturbed off
             their initial values) are loaded into the release's graph by
             name and the per-target losses of the two compared: the run
             stops with exit status 1 if they differ by more than 1e-4
             relative.
Also prints the analytic matmul/einsum FLOP count (forward x 3 for forward +
backward) and the achieved FLOP/s against this machine's float32 matmul peak
measured in the same run.

`--profile` traces `--profile_steps` extra steps of each variant (RunMetadata
FULL_TRACE, after the timed rounds) and prints the op types that took the
most time per step (summed over the op executions, so with parallel ops the
sum can exceed the step); `--timeline_dir` also writes the last trace as a
Chrome trace (chrome://tracing) named `{config}_{variant}.json`.

Usage (from the repository root):
  .venvs/reference/bin/python bench/model_step.py   # base2 and tiny
  .venvs/reference/bin/python bench/model_step.py --configs base2 \
      --variants fp32,bf16 --rounds 5 --steps 2 --profile
  git clone https://github.com/zihangdai/xlnet /tmp/xlnet-release
  .venvs/reference/bin/python bench/model_step.py --configs base2 \
      --variants fp32 --release_dir /tmp/xlnet-release

Configs (each with its own default input sizes; `--seq_len` etc. override):
  base2: XLNet-Base width (d_model 768, 12 heads of 64, d_inner 3072, 32000
         tokens), 2 layers; seq 512, mem 384, batch 2, 85 targets.
  tiny:  configs/xlnet_tiny.json sizes; seq 128, mem 64, batch 8, 20 targets.
"""
import collections
import contextlib
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Without this flag XLA auto-clustering ignores CPU devices, and "+xla" would
# time the plain graph. It only acts on sessions that turn clustering on.
os.environ["TF_XLA_FLAGS"] = (
    os.environ.get("TF_XLA_FLAGS", "") + " --tf_xla_cpu_global_jit").strip()

from absl import flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf import rewriter_config_pb2  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from bench import release_compat  # noqa: E402
from xlnet.programs import cli  # noqa: E402
from xlnet import io_utils  # noqa: E402
from xlnet import modeling  # noqa: E402
from xlnet.training import strategies  # noqa: E402

CONFIGS = {
    "base2": dict(sizes=dict(n_layer=2, d_model=768, n_head=12, d_head=64,
                             d_inner=3072, n_token=32000),
                  inputs=dict(seq_len=512, mem_len=384, bsz=2,
                              num_predict=85)),
    "tiny": dict(sizes=dict(n_layer=2, d_model=64, n_head=4, d_head=16,
                            d_inner=128, n_token=2000),
                 inputs=dict(seq_len=128, mem_len=64, bsz=8, num_predict=20)),
}
PRECISIONS = ("fp32", "bf16", "fp16")
COMPILERS = ("", "xla", "jit")
# The two graphs round differently (einsum vs tensordot, other sum orders):
# about 2e-7 relative on the tiny config. Faults put into the release's
# graph moved its losses far more: its relative shift off by one 1e-2, the
# dense biases or the LayerNorm offsets dropped 7e-2 to 8e-2, a LayerNorm
# epsilon of 1e-3 for 1e-12 2e-3.
RELEASE_RTOL = 1e-4

flags.DEFINE_list("configs", ["base2", "tiny"], "Configs to run, in order.")
flags.DEFINE_list("variants", None,
                  "Variants: precision (fp32|bf16|fp16) with an optional "
                  "'+xla' (auto-clustering) or '+jit' (jit_compile). "
                  "Default: fp32,bf16,fp32+xla,fp32+jit,bf16+jit, plus fp16 "
                  "on a GPU or for the tiny config (on the CPU float16 "
                  "matmuls take a slow generic path).")
flags.DEFINE_integer("seq_len", None, "Sequence length (config default).")
flags.DEFINE_integer("mem_len", None, "Memory length fed (config default).")
flags.DEFINE_integer("num_predict", None, "Targets per sequence.")
flags.DEFINE_integer("bsz", None, "Batch size (config default).")
flags.DEFINE_integer("rounds", 3, "Round-robin rounds over the variants.")
flags.DEFINE_integer("steps", 2, "Timed steps per variant and round.")
flags.DEFINE_integer("warmup", 2, "Untimed steps per variant first.")
flags.DEFINE_float("dropout", 0.1, "Dropout (also dropatt).")
flags.DEFINE_bool("bi_data", True, "Forward/backward halves (needs even bsz).")
flags.DEFINE_bool("profile", False, "Trace one step per variant and print "
                  "the top op types.")
flags.DEFINE_integer("profile_top", 15, "Op types listed by --profile.")
flags.DEFINE_integer("profile_steps", 3, "Traced steps averaged by --profile.")
flags.DEFINE_string("timeline_dir", None, "With --profile, also write Chrome "
                    "traces here.")
flags.DEFINE_integer("intra_op_threads", 0, "0 = TensorFlow's default.")
flags.DEFINE_integer("inter_op_threads", 0, "0 = TensorFlow's default.")
flags.DEFINE_string("release_dir", None, "A checkout of the release "
                    "(github.com/zihangdai/xlnet): adds the variant "
                    "'release', its modeling.py's fp32 step, after checking "
                    "it computes our losses.")
FLAGS = flags.FLAGS


def default_variants(config, on_gpu):
  """The variants run when --variants is not given."""
  variants = ["fp32", "bf16", "fp32+xla", "fp32+jit", "bf16+jit"]
  if on_gpu or config == "tiny":
    variants.insert(2, "fp16")
  return variants


def parse_variant(name):
  """Splits "bf16+jit" into ("bf16", "jit"); raises ValueError if unknown."""
  precision, _, compiler = name.partition("+")
  if precision not in PRECISIONS or compiler not in COMPILERS:
    raise ValueError(f"--variants: unknown variant {name!r}; expected "
                     f"one of {PRECISIONS} with an optional '+xla' or '+jit'")
  return precision, compiler


def forward_flops(cfg, qlen, mlen, bsz, num_predict, pos_rows):
  """Analytic matmul/einsum FLOPs (2 per multiply-add) of one forward pass.

  The query stream attends only for its `num_predict` target rows.

  Args:
    cfg: dict of model sizes.
    qlen, mlen, bsz, num_predict: input sizes.
    pos_rows: batch rows of the positional encoding projected by `r`
      (bsz with training dropout, else 1, or 2 with bi_data).

  Returns:
    int FLOPs, counting projections, attention scores, probabilities x
    values, the feed-forward layers and the LM softmax.
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
           + 2 * 2 * (qlen + num_predict) * bsz * d * inner)  # ffn h, g
  for rows in (qlen, num_predict):  # query rows of the two streams
    layer += 2 * rows * bsz * hd * (klen + rlen + klen)  # ac, bd, prob.v
  lm = 2 * num_predict * bsz * d * cfg["n_token"]
  return cfg["n_layer"] * layer + lm


def random_inputs(rng, qlen, bsz, num_predict, n_token, d_model, n_layer,
                  mlen):
  """Pretraining-like time-major inputs as NumPy arrays.

  Each row has `num_predict` random targets and a random factorization
  order; perm_mask lets a target see the non-targets and the targets before
  it in that order.
  """
  inp_k = rng.integers(0, n_token, [qlen, bsz]).astype(np.int32)
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
  mems = [rng.normal(0, 1, [mlen, bsz, d_model]).astype(np.float32)
          for _ in range(n_layer)]
  labels = rng.integers(0, n_token, [num_predict, bsz]).astype(np.int32)
  return dict(inp_k=inp_k, seg_id=seg_id, inp_q=is_target,
              perm_mask=perm_mask, target_mapping=target_mapping, mems=mems,
              labels=labels)


def model_loss(model, sizes, feeds, mems, initializer, dropout, **precision):
  """Per-target tied-weight LM losses of `model` in variable scope "model".

  Args:
    model: our `xlnet.modeling` or the release's modeling module (both name
      their variables as the released checkpoints: model/transformer/...,
      model/lm_loss/bias).
    sizes: dict of model sizes.
    feeds: dict of time-major Tensors (inp_k, seg_id, inp_q, perm_mask,
      target_mapping, labels), as from `random_inputs`.
    mems: list of n_layer float32 Tensors `[mlen, bsz, d_model]`.
    initializer: initializer of the kernels, embeddings and biases.
    dropout: float, dropout and dropatt rate (training mode either way).
    **precision: `use_bfloat16` / `use_fp16` for our model; none (float32)
      for the release's.

  Returns:
    float32 Tensor `[num_predict, bsz]`.
  """
  with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
    output, _, table = model.transformer_xl(
        inp_k=feeds["inp_k"], seg_id=feeds["seg_id"], inp_q=feeds["inp_q"],
        perm_mask=feeds["perm_mask"], target_mapping=feeds["target_mapping"],
        mems=mems, mem_len=mems[0].shape[0], n_token=sizes["n_token"],
        n_layer=sizes["n_layer"], d_model=sizes["d_model"],
        n_head=sizes["n_head"], d_head=sizes["d_head"],
        d_inner=sizes["d_inner"], ff_activation="gelu", untie_r=True,
        dropout=dropout, dropatt=dropout, attn_type="bi",
        bi_data=FLAGS.bi_data, initializer=initializer, is_training=True,
        use_tpu=False, **precision)
    return model.lm_loss(output, feeds["labels"], sizes["n_token"],
                         sizes["d_model"], initializer, lookup_table=table,
                         tie_weight=True, **precision)


def input_tensors(inputs):
  """(feeds dict, mems list): `random_inputs`' arrays as graph constants."""
  feeds = {k: tf.constant(v) for k, v in inputs.items() if k != "mems"}
  return feeds, [tf.constant(m) for m in inputs["mems"]]


def build_step(sizes, inputs, precision, jit, model=modeling,
               byte_masks=False):
  """One forward + backward + SGD step in the default graph.

  Our model draws its dropout masks as the trainer does: stateless, from a
  seed that changes every step (drawn here by a stateful op, which also
  keeps grappler from folding the masks into constants), with
  `byte_masks` as the trainer sets it on the CPU without XLA.

  Args:
    sizes: dict of model sizes.
    inputs: dict from `random_inputs`.
    precision: "fp32", "bf16" or "fp16" ("fp32" for the release's model).
    jit: if True, the step runs in `tf.function(jit_compile=True)`.
    model: our `xlnet.modeling` or the release's modeling module.
    byte_masks: passed to `modeling.stateless_dropout_seed` (ours only).

  Returns:
    (step op or tensor to run, scalar float32 loss).
  """
  initializer = tf.compat.v1.initializers.random_normal(stddev=0.02)
  feeds, mems = input_tensors(inputs)
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(1e-6)
  # fp32 passes no precision argument: the release's functions take none.
  precision_args = {"bf16": {"use_bfloat16": True},
                    "fp16": {"use_fp16": True}}.get(precision, {})

  def loss_fn():
    masks = contextlib.nullcontext()
    if model is modeling:
      seed = tf.random.uniform([2], maxval=2 ** 31 - 1, dtype=tf.int32)
      masks = modeling.stateless_dropout_seed(seed, byte_masks=byte_masks)
    with masks:
      return tf.reduce_mean(model_loss(model, sizes, feeds, mems, initializer,
                                       FLAGS.dropout, **precision_args))

  def step_fn():
    loss = loss_fn()
    with tf.control_dependencies([optimizer.minimize(loss)]):
      return tf.identity(loss)

  if not jit:
    return step_fn(), None
  loss_fn()  # creates the variables outside the compiled function
  return tf.function(step_fn, jit_compile=True)(), None


def session_config(compiler=""):
  """ConfigProto with the thread flags and the XLA settings of `compiler`.

  "xla" turns on auto-clustering; "jit" turns off grappler's memory
  optimizer, which may rewrite a large gradient sum (AddN) into
  AccumulateNV2 on a TemporaryVariable, an op XLA cannot compile.
  """
  config = tf.compat.v1.ConfigProto(
      intra_op_parallelism_threads=FLAGS.intra_op_threads,
      inter_op_parallelism_threads=FLAGS.inter_op_threads)
  if compiler == "xla":
    config.graph_options.optimizer_options.global_jit_level = (
        tf.compat.v1.OptimizerOptions.ON_1)
  if compiler == "jit":
    config.graph_options.rewrite_options.memory_optimization = (
        rewriter_config_pb2.RewriterConfig.NO_MEM_OPT)
  return config


def matmul_peak(dtype=tf.float32, n=2048, reps=10):
  """Measured FLOP/s of an n x n `dtype` matmul on the default device."""
  with tf.Graph().as_default():
    a = tf.Variable(tf.random.normal([n, n]), dtype=tf.float32)
    b = tf.Variable(tf.random.normal([n, n]), dtype=tf.float32)
    a_c, b_c = tf.cast(a, dtype), tf.cast(b, dtype)
    prod = tf.reduce_sum(tf.cast(tf.matmul(a_c, b_c), tf.float32))
    with tf.compat.v1.Session(config=session_config()) as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      sess.run(prod)
      start = time.time()
      for _ in range(reps):
        sess.run(prod)
      return 2.0 * n ** 3 * reps / (time.time() - start)


class Variant:
  """One built variant: its own graph and session.

  "release" is the release's modeling module (`release`) in a plain fp32
  graph; every other name is ours, as `parse_variant` reads it.
  """

  def __init__(self, name, sizes, inputs, release=None):
    self.name = name
    if name == "release":
      model, (precision, compiler) = release, ("fp32", "")
    else:
      model, (precision, compiler) = modeling, parse_variant(name)
    self.graph = tf.Graph()
    with self.graph.as_default():
      tf.compat.v1.set_random_seed(0)
      # The trainer's choice on the CPU: byte masks unless XLA compiles.
      byte_masks = not compiler and strategies.runs_on_cpu(
          tf.distribute.get_strategy())
      self.step, _ = build_step(sizes, inputs, precision, compiler == "jit",
                                model, byte_masks)
      init = tf.compat.v1.global_variables_initializer()
    self.sess = tf.compat.v1.Session(
        graph=self.graph, config=session_config(compiler))
    self.sess.run(init)
    self.times = []
    self.cpu_times = []

  def run(self, timed):
    """Runs one step; returns the loss; records the wall and process CPU
    time when `timed`."""
    start, cpu_start = time.time(), time.process_time()
    loss = self.sess.run(self.step)
    if timed:
      self.times.append(time.time() - start)
      self.cpu_times.append(time.process_time() - cpu_start)
    return loss

  def trace(self, steps):
    """Runs `steps` traced steps; returns their tf.compat.v1.RunMetadata."""
    return traced_runs(lambda options, metadata: self.sess.run(
        self.step, options=options, run_metadata=metadata), steps)


def traced_runs(run, steps):
  """Calls `run(options, run_metadata)` `steps` times under a full trace;
  returns the steps' tf.compat.v1.RunMetadata."""
  options = tf.compat.v1.RunOptions(
      trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
  traces = []
  for _ in range(steps):
    traces.append(tf.compat.v1.RunMetadata())
    run(options, traces[-1])
  return traces


def no_dropout_losses(model, sizes, inputs, choose_values):
  """Per-target losses of `model` with dropout 0, in a graph of its own.

  Args:
    model: our `xlnet.modeling` or the release's modeling module.
    sizes: dict of model sizes.
    inputs: dict from `random_inputs`.
    choose_values: function from the variables' (seeded) initial values to
      the values loaded into them, both dicts of variable name -> array.

  Returns:
    (float32 array `[num_predict, bsz]`, the dict of values loaded).
  """
  with tf.Graph().as_default():
    tf.compat.v1.set_random_seed(0)
    feeds, mems = input_tensors(inputs)
    loss = model_loss(model, sizes, feeds, mems,
                      tf.compat.v1.initializers.random_normal(stddev=0.02),
                      dropout=0.0)
    variables = {v.op.name: v for v in tf.compat.v1.global_variables()}
    init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(config=session_config()) as sess:
      sess.run(init)
      values = choose_values(sess.run(variables))
      sess.run(*values_loader(variables, values))
      return sess.run(loss), values


def perturbed(values, scale, rng):
  """`values` (dict of name -> float32 array) plus N(0, scale^2) noise."""
  return {name: (value + rng.normal(0, scale, value.shape)).astype(
      value.dtype) for name, value in values.items()}


def values_loader(variables, values):
  """What loads `values` into `variables` (same names and shapes).

  Args:
    variables: dict of variable name -> variable of the default graph.
    values: dict of variable name -> array.

  Returns:
    (list of assign ops, feed dict of their placeholders) for `Session.run`.

  Exits with status 1 if the names or shapes differ: the two models would
  not hold the same parameters.
  """
  shapes = {n: tuple(v.shape.as_list()) for n, v in variables.items()}
  wanted = {n: a.shape for n, a in values.items()}
  if shapes != wanted:
    differ = sorted(set(shapes.items()) ^ set(wanted.items()))
    cli.fail("the release's variables differ from ours (name, shape): "
             f"{differ}", code=1)
  assigns, feed = [], {}
  for name, var in variables.items():
    value = tf.compat.v1.placeholder(var.dtype.base_dtype, var.shape)
    assigns.append(var.assign(value))
    feed[value] = values[name]
  return assigns, feed


def check_release(release, sizes, inputs):
  """Loads our variables' values into the release's model and compares the
  per-target losses (dropout 0) on the same inputs; exits with status 1
  unless they agree within RELEASE_RTOL (relative).

  Args:
    release: the release's modeling module.
    sizes: dict of model sizes.
    inputs: dict from `random_inputs`.
  """
  # At the training init attention is near uniform and the logits near 0
  # (every loss about ln(n_token) whatever the model computes), and the
  # biases, LayerNorm offsets and gains sit at 0 and 1, where a stand-in
  # that dropped them would go unseen. Noise of scale 1/sqrt(d_model) on
  # every variable moves them all and puts the attention scores, the
  # feed-forward and the logits in their non-linear range.
  rng = np.random.default_rng(0)
  ours, values = no_dropout_losses(
      modeling, sizes, inputs,
      lambda start: perturbed(start, sizes["d_model"] ** -0.5, rng))
  theirs, _ = no_dropout_losses(release, sizes, inputs, lambda _: values)
  diff = np.abs(ours - theirs)
  rel = float(np.max(diff / np.abs(theirs)))
  print(f"  release check (dropout 0, our variables in the release's "
        f"graph): mean loss ours {ours.mean():.6f} release "
        f"{theirs.mean():.6f}; per-target max abs diff {diff.max():.2e} "
        f"(relative {rel:.2e})", flush=True)
  if not rel <= RELEASE_RTOL:  # also when NaN
    cli.fail(f"the release's losses differ from ours by {rel:.2e} "
             f"relative (> {RELEASE_RTOL:g})", code=1)


def op_type_times(traces):
  """Mean execution time per step of each op type over traced steps.

  Args:
    traces: list of tf.compat.v1.RunMetadata of FULL_TRACE steps.

  Returns:
    (list of (op type, seconds per step, runs per step) sorted by time,
     descending; seconds per step over all ops).
  """
  totals = collections.defaultdict(float)
  counts = collections.Counter()
  for metadata in traces:
    for dev_stats in metadata.step_stats.dev_stats:
      for node in dev_stats.node_stats:
        # timeline_label reads "name = OpType(inputs)"; it is empty for the
        # executor's bookkeeping nodes.
        label = node.timeline_label
        if " = " not in label:
          continue
        op_type = label.split(" = ", 1)[1].split("(", 1)[0]
        totals[op_type] += node.all_end_rel_micros * 1e-6 / len(traces)
        counts[op_type] += 1
  ranked = sorted(totals.items(), key=lambda kv: -kv[1])
  return ([(k, v, counts[k] // len(traces)) for k, v in ranked],
          sum(totals.values()))


def print_profile(config, variant, traces):
  """Prints the top op types of traced steps (and writes a timeline)."""
  ranked, total = op_type_times(traces)
  print(f"  profile {config} {variant.name}: {total * 1000:.0f} ms of op "
        f"time per traced step ({len(traces)} steps); top op types:")
  for op_type, sec, count in ranked[:FLAGS.profile_top]:
    print(f"    {op_type:<34s} {sec * 1000:8.1f} ms {100 * sec / total:5.1f}% "
          f"({count} runs)")
  if FLAGS.timeline_dir:
    # pylint: disable=g-import-not-at-top
    from tensorflow.python.client import timeline
    trace = timeline.Timeline(
        traces[-1].step_stats).generate_chrome_trace_format()
    path = os.path.join(FLAGS.timeline_dir, f"{config}_{variant.name}.json")
    io_utils.atomic_write(path, trace)
    print(f"    timeline of the last traced step written to {path}")


def vs_release(variants, sec, cpu):
  """The report's column " xA vs release (cpu xB)", or "" without a release.

  A and B are the tokens/s ratios, wall and process CPU time, of a variant
  taking `sec` and `cpu` seconds per step to the release's step.
  """
  release = [v for v in variants if v.name == "release"]
  if not release:
    return ""
  return (f" x{np.median(release[0].times) / sec:.2f} vs release (cpu "
          f"x{np.median(release[0].cpu_times) / cpu:.2f})")


def run_config(config, peak, release=None):
  """Builds, times (round-robin) and reports every variant of `config`
  (and the release's step after checking it, when `release` is given)."""
  cfg = CONFIGS[config]
  sizes = cfg["sizes"]
  shape = {k: getattr(FLAGS, k) if getattr(FLAGS, k) is not None else v
           for k, v in cfg["inputs"].items()}
  if FLAGS.bi_data and shape["bsz"] % 2:
    raise ValueError(f"--bi_data needs an even --bsz, got {shape['bsz']}")
  if shape["num_predict"] > shape["seq_len"]:
    raise ValueError(f"--num_predict ({shape['num_predict']}) must be <= "
                     f"--seq_len ({shape['seq_len']})")
  print(f"\n== {config}: {sizes}; seq_len {shape['seq_len']} mem_len "
        f"{shape['mem_len']} bsz {shape['bsz']} num_predict "
        f"{shape['num_predict']} bi_data {FLAGS.bi_data} dropout "
        f"{FLAGS.dropout}", flush=True)
  inputs = random_inputs(np.random.default_rng(0), shape["seq_len"],
                         shape["bsz"], shape["num_predict"], sizes["n_token"],
                         sizes["d_model"], sizes["n_layer"], shape["mem_len"])
  names = FLAGS.variants or default_variants(
      config, bool(tf.config.list_physical_devices("GPU")))
  if release is not None:
    check_release(release, sizes, inputs)
    names = names + ["release"]
  variants = []
  for name in names:
    start = time.time()
    variant = Variant(name, sizes, inputs, release)
    losses = [variant.run(timed=False) for _ in range(FLAGS.warmup)]
    print(f"  built {name} in {time.time() - start:.1f}s (first loss "
          f"{losses[0] if losses else float('nan'):.4f})", flush=True)
    variants.append(variant)

  total = FLAGS.rounds * len(variants)
  start = time.time()
  for r in range(FLAGS.rounds):
    for i, variant in enumerate(variants):
      for _ in range(FLAGS.steps):
        variant.run(timed=True)
      done = r * len(variants) + i + 1
      eta = (time.time() - start) / done * (total - done)
      print(f"  round {r + 1}/{FLAGS.rounds} {variant.name}: "
            f"{np.median(variant.times[-FLAGS.steps:]) * 1000:.0f} ms "
            f"(ETA {eta:.0f}s)", flush=True)

  pos_rows = shape["bsz"] if FLAGS.dropout else (2 if FLAGS.bi_data else 1)
  flops = 3 * forward_flops(sizes, shape["seq_len"], shape["mem_len"],
                            shape["bsz"], shape["num_predict"], pos_rows)
  tokens = shape["seq_len"] * shape["bsz"]
  base = np.median(variants[0].times)
  base_cpu = np.median(variants[0].cpu_times)
  print(f"  {flops / 1e9:.1f} GFLOP/step (fwd+bwd est.); medians over "
        f"{FLAGS.rounds * FLAGS.steps} steps, interleaved:")
  for variant in variants:
    sec = float(np.median(variant.times))
    cpu = float(np.median(variant.cpu_times))
    print(f"  {config:>5s} {variant.name:<9s} {sec * 1000:8.1f} ms/step "
          f"(cpu {cpu * 1000:7.1f} ms) {tokens / sec:8,.0f} tokens/s "
          f"{flops / sec / 1e9:6.1f} GFLOP/s "
          f"({100 * flops / sec / peak:5.1f}% of fp32 peak) "
          f"x{base / sec:.2f} vs {variants[0].name} "
          f"(cpu x{base_cpu / cpu:.2f}){vs_release(variants, sec, cpu)}",
          flush=True)
  if FLAGS.profile:
    for variant in variants:
      print_profile(config, variant, variant.trace(FLAGS.profile_steps))
  for variant in variants:
    variant.sess.close()


def main(_):
  for name in FLAGS.variants or []:
    parse_variant(name)
  for config in FLAGS.configs:
    if config not in CONFIGS:
      raise ValueError(f"--configs: unknown config {config!r}; expected "
                       f"some of {sorted(CONFIGS)}")
  tf.compat.v1.disable_eager_execution()
  device = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
  print(f"TensorFlow {tf.__version__} on {device}; {FLAGS.rounds} rounds x "
        f"{FLAGS.steps} steps per variant", flush=True)
  release = (release_compat.load_release_modeling(FLAGS.release_dir)
             if FLAGS.release_dir else None)
  peak = matmul_peak()
  print(f"matmul peak (2048^3): fp32 {peak / 1e9:.1f} GFLOP/s, bf16 "
        f"{matmul_peak(tf.bfloat16) / 1e9:.1f} GFLOP/s", flush=True)
  for config in FLAGS.configs:
    run_config(config, peak, release)


if __name__ == "__main__":
  cli.run(main)
