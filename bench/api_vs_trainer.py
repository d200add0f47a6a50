"""The release-style API step against the trainer's step, side by side.

Both variants train the same model (same sizes, `RunConfig`, inputs and
optimizer) one pretraining step at a time: forward + backward of the
two-stream model and its tied LM loss, then the guarded Adam update of an
`OptimizerConfig` (clipping at 1, plain Adam as the release's default
weight decay 0 gives). What differs is only who builds the step:

  api      as the release's train_gpu.py did: `xlnet.XLNetModel(xlnet_config,
           run_config, ...)` + `modeling.lm_loss` (masked mean over the
           targets) + the release-style `get_train_op`
           (`xlnet.training.tpu_estimator`), in a `tf.compat.v1` graph run
           by a Session; the inputs from a tf.data iterator, the memories
           fed as arrays and the new ones fetched each step.
  trainer  the pretraining program's engine: `xlnet/training/trainer.py`'s
           `Trainer` over `pretraining_loss.pretrain_loss_fn` (the same
           model), on the default strategy, its step a `tf.function` reading
           the same batch from a tf.data iterator, memories in variables.

Two more variants take the api's and the trainer's step apart:

  api_float_masks  the api step with dropout masks drawn as uniform floats
                   (32 random bits per entry; stateless, seeded per step
                   from a stateful draw): what every float32 mask cost
                   before the byte masks (`modeling._byte_keep_mask`)
                   followed from the device, i.e. when only the trainer
                   asked for them.
  model_step       bench/model_step.py's fp32 step (the same model, byte
                   masks): inputs and memories as graph constants (grappler
                   folds the masks built from them), the mean loss, a
                   plain SGD update with no clipping.

The variants are built once, then run round-robin (`--rounds` rounds of
`--steps` steps each) so that a noisy, shared machine slows them alike;
each variant's figure is the median over all its timed steps, with the
process CPU time per step, and its ratio to the trainer's.

`--profile` traces `--profile_steps` more steps of each graph-mode variant
(all but the trainer's, a tf.function) and prints the op types that took
the most time per step (bench/model_step.py's report).

Usage (from the repository root):
  .venvs/reference/bin/python bench/api_vs_trainer.py     # base2
  .venvs/reference/bin/python bench/api_vs_trainer.py --configs tiny \
      --rounds 3 --steps 2 --profile \
      --api_variants api,trainer,api_float_masks,model_step

Sizes (`--configs`, one of bench/model_step.py's; `--seq_len`, `--mem_len`,
`--bsz`, `--num_predict` override its input sizes):
  base2: XLNet-Base width (d_model 768, 12 heads of 64, d_inner 3072, 32000
         tokens), 2 layers; seq 512, mem 384, batch 2, 85 targets.
  tiny:  configs/xlnet_tiny.json sizes; seq 128, mem 64, batch 8, 20 targets.
Dropout 0.1 (also dropatt, `--dropout`), bi_data on (`--bi_data`).
"""
import contextlib
import os
import sys
import time

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from bench import model_step  # noqa: E402  (its flags are this bench's too)
from bench import scratch  # noqa: E402
from xlnet.programs import cli  # noqa: E402
from xlnet import model as model_lib  # noqa: E402
from xlnet import modeling  # noqa: E402
from xlnet import pretraining_loss  # noqa: E402
from xlnet.training import config as train_config  # noqa: E402
from xlnet.training import tpu_estimator  # noqa: E402
from xlnet.training import trainer as trainer_lib  # noqa: E402

VARIANTS = ("api", "trainer", "api_float_masks", "model_step")
flags.DEFINE_list("api_variants", ["api", "trainer"],
                  f"Variants, in round order: some of {VARIANTS}.")
flags.DEFINE_bool("use_bfloat16", False, "Both variants in bfloat16.")
FLAGS = flags.FLAGS
FLAGS.set_default("configs", ["base2"])

SEED = 0


def batch_features(inputs):
  """The batch-major features of the pretraining input function (as NumPy)
  from `model_step.random_inputs`' time-major arrays (every target real)."""
  return {"input_k": inputs["inp_k"].T, "seg_id": inputs["seg_id"].T,
          "input_q": inputs["inp_q"].T,
          "perm_mask": inputs["perm_mask"].transpose(2, 0, 1),
          "target_mapping": inputs["target_mapping"].transpose(2, 0, 1),
          "target": inputs["labels"].T,
          "target_mask": np.ones(inputs["labels"].T.shape, np.float32)}


def configs(sizes, shape):
  """(XLNetConfig, RunConfig, OptimizerConfig) shared by both variants."""
  xlnet_config = model_lib.XLNetConfig(ff_activation="gelu", untie_r=True,
                                       **sizes)
  run_config = model_lib.RunConfig(
      is_training=True, use_tpu=False, use_bfloat16=FLAGS.use_bfloat16,
      dropout=FLAGS.dropout, dropatt=FLAGS.dropout,
      mem_len=shape["mem_len"], bi_data=FLAGS.bi_data)
  optimizer = train_config.OptimizerConfig(learning_rate=1e-5,
                                           train_steps=10 ** 6)
  return xlnet_config, run_config, optimizer


def dataset(features):
  """The same batch forever."""
  return tf.data.Dataset.from_tensors(features).repeat()


def float_masks():
  """A block in which dropout draws uniform float masks, seeded per step."""
  # Its own op seed: the block is entered before the graph seed is set.
  seed = tf.random.uniform([2], maxval=2 ** 31 - 1, dtype=tf.int32,
                           seed=SEED)
  return modeling.stateless_dropout_seed(seed, byte_masks=False)


class ApiStep:
  """The release-style step in a graph and Session of its own (`name`
  "api_float_masks": with float dropout masks)."""

  def __init__(self, name, sizes, shape, inputs):
    self.name = name
    features, mems = batch_features(inputs), inputs["mems"]
    xlnet_config, run_config, optimizer = configs(sizes, shape)
    self.graph = tf.Graph()
    with self.graph.as_default(), (
        float_masks() if name == "api_float_masks"
        else contextlib.nullcontext()):
      tf.compat.v1.set_random_seed(SEED)
      batch = tf.compat.v1.data.make_one_shot_iterator(
          dataset(features)).get_next()
      self.mems = [tf.compat.v1.placeholder(tf.float32, m.shape)
                   for m in mems]
      tm = {k: tf.transpose(v, [1, 2, 0] if v.shape.rank == 3 else [1, 0])
            for k, v in batch.items()}
      xlnet_model = model_lib.XLNetModel(
          xlnet_config, run_config, input_ids=tm["input_k"],
          seg_ids=tm["seg_id"], input_mask=None, mems=self.mems,
          perm_mask=tm["perm_mask"], target_mapping=tm["target_mapping"],
          inp_q=tm["input_q"])
      with tf.compat.v1.variable_scope("model", reuse=tf.compat.v1.AUTO_REUSE):
        loss = modeling.lm_loss(
            xlnet_model.get_sequence_output(), tm["target"],
            xlnet_config.n_token, xlnet_config.d_model,
            xlnet_model.get_initializer(),
            lookup_table=xlnet_model.get_embedding_table(), tie_weight=True,
            bi_data=run_config.bi_data, use_bfloat16=run_config.use_bfloat16)
      mask = tm["target_mask"]
      total_loss = tf.reduce_sum(loss * mask) / tf.reduce_sum(mask)
      train_op, _, _ = tpu_estimator.get_train_op(optimizer, total_loss)
      self.fetches = [train_op, total_loss, xlnet_model.get_new_memory()]
      init = tf.compat.v1.global_variables_initializer()
    self.sess = tf.compat.v1.Session(graph=self.graph,
                                     config=model_step.session_config())
    self.sess.run(init)
    self.mem_values = mems

  def run(self, options=None, run_metadata=None):
    """One step; returns the loss (the new memories are fed next step)."""
    _, loss, self.mem_values = self.sess.run(
        self.fetches, dict(zip(self.mems, self.mem_values)),
        options=options, run_metadata=run_metadata)
    return loss

  def trace(self, steps):
    """`steps` traced steps' RunMetadata."""
    return model_step.traced_runs(self.run, steps)


class TrainerStep:
  """The pretraining engine's step (`Trainer.make_train_step`), eager."""

  def __init__(self, name, sizes, shape, inputs):
    self.name = name
    features, mems = batch_features(inputs), inputs["mems"]
    xlnet_config, run_config, optimizer = configs(sizes, shape)
    memory = trainer_lib.MemoryConfig(
        sizes["n_layer"], shape["mem_len"], shape["bsz"], sizes["d_model"])
    self.trainer = trainer_lib.Trainer(
        tf.distribute.get_strategy(),
        pretraining_loss.pretrain_loss_fn(xlnet_config, run_config),
        optimizer, scratch.scratch_dir(None, "xlnet-bench-api-"),
        memory=memory, train=train_config.TrainConfig(seed=SEED))
    data = dataset(features)
    self.trainer.build(data.element_spec)
    for var, value in zip(self.trainer.mem_vars, mems):
      var.assign(value)
    self.iterator = iter(data)
    self.step = self.trainer.make_train_step()

  def run(self):
    """One step; returns the loss."""
    return self.step(self.iterator, False)["loss"]


class ModelStep:
  """bench/model_step.py's fp32 step (`model_step.Variant`)."""

  def __init__(self, name, sizes, shape, inputs):
    del shape  # in `inputs`
    self.name = name
    self.variant = model_step.Variant("fp32", sizes, inputs)

  def run(self):
    """One step; returns the loss."""
    return self.variant.run(timed=False)

  def trace(self, steps):
    """`steps` traced steps' RunMetadata."""
    return self.variant.trace(steps)


def timed(variant, times, cpu_times):
  """Runs one step of `variant`, appending its wall and CPU seconds."""
  start, cpu_start = time.time(), time.process_time()
  variant.run()
  times.append(time.time() - start)
  cpu_times.append(time.process_time() - cpu_start)


def main(_):
  config = FLAGS.configs[0]
  if len(FLAGS.configs) != 1 or config not in model_step.CONFIGS:
    raise ValueError(f"--configs: one of {sorted(model_step.CONFIGS)}, got "
                     f"{FLAGS.configs}")
  unknown = set(FLAGS.api_variants) - set(VARIANTS)
  if unknown:
    raise ValueError(f"--api_variants: unknown {sorted(unknown)}; expected "
                     f"some of {VARIANTS}")
  cfg = model_step.CONFIGS[config]
  sizes = cfg["sizes"]
  shape = {k: getattr(FLAGS, k) if getattr(FLAGS, k) is not None else v
           for k, v in cfg["inputs"].items()}
  if FLAGS.bi_data and shape["bsz"] % 2:
    raise ValueError(f"--bi_data needs an even --bsz, got {shape['bsz']}")
  print(f"TensorFlow {tf.__version__}; {config}: {sizes}; {shape}; bi_data "
        f"{FLAGS.bi_data} dropout {FLAGS.dropout} bfloat16 "
        f"{FLAGS.use_bfloat16}; {FLAGS.rounds} rounds x {FLAGS.steps} "
        "steps, interleaved", flush=True)
  inputs = model_step.random_inputs(
      np.random.default_rng(0), shape["seq_len"], shape["bsz"],
      shape["num_predict"], sizes["n_token"], sizes["d_model"],
      sizes["n_layer"], shape["mem_len"])
  kinds = dict.fromkeys(("api", "api_float_masks"), ApiStep)
  kinds.update(trainer=TrainerStep, model_step=ModelStep)
  variants = []
  for name in FLAGS.api_variants:
    start = time.time()
    variant = kinds[name](name, sizes, shape, inputs)
    losses = [float(variant.run()) for _ in range(FLAGS.warmup)]
    print(f"  built {name} in {time.time() - start:.1f}s (losses "
          f"{', '.join(f'{x:.4f}' for x in losses)})", flush=True)
    variants.append((variant, [], []))
  for r in range(FLAGS.rounds):
    for variant, times, cpu_times in variants:
      for _ in range(FLAGS.steps):
        timed(variant, times, cpu_times)
      print(f"  round {r + 1}/{FLAGS.rounds} {variant.name}: "
            f"{np.median(times[-FLAGS.steps:]) * 1000:.0f} ms", flush=True)
  medians = {v.name: (np.median(t), np.median(c)) for v, t, c in variants}
  base = medians.get("trainer")
  for name, (sec, cpu) in medians.items():
    vs = (f"; x{sec / base[0]:.3f} the trainer's (cpu x{cpu / base[1]:.3f})"
          if base else "")
    print(f"  {config} {name:<15s} {sec * 1000:8.1f} ms/step (cpu "
          f"{cpu * 1000:8.1f} ms){vs}", flush=True)
  if FLAGS.profile:
    for variant, _, _ in variants:
      if hasattr(variant, "trace"):
        model_step.print_profile(config, variant,
                                 variant.trace(FLAGS.profile_steps))


if __name__ == "__main__":
  app.run(main)
