"""XLNet pretraining on GPUs (or CPUs): towers, device memories, resume.

`num_core_per_host` towers share the variables; each tower gets its own
per-core batch (with `bi_data`: forward rows then backward rows), its own
memories and its own gradients; loss and gradients are averaged over towers.
The memories live in non-trainable variables `mems/tower_{c}/layer_{i}`
`[mem_len, per_tower_bsz, d_model]` on the tower's device: they are assigned
after every step (no round trip through Python) and saved in checkpoints, so
a resumed run continues with the memories it stopped with.
"""
import math
import os
import sys
import time

from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from xlnet import flags as flags_lib
from xlnet import function_builder
from xlnet import model_utils


def split_towers(host_features, n_towers):
  """Splits a host batch into `n_towers` contiguous tower batches.

  Args:
    host_features: dict of batch-major tensors `[bsz, ...]`, the
      concatenation of `n_towers` per-core batches.
    n_towers: int.

  Returns:
    list of `n_towers` dicts of tensors `[bsz // n_towers, ...]`.
  """
  towers = [dict() for _ in range(n_towers)]
  for key, value in host_features.items():
    for t, part in enumerate(tf.split(value, n_towers, axis=0)):
      towers[t][key] = part
  return towers


def tower_devices(n_towers):
  """One device per tower: the GPUs, or CPU devices when there is no GPU.

  CPU towers need a session config with `device_count={"CPU": n_towers}`
  (see `session_config`).
  """
  n_gpus = len(tf.config.list_physical_devices("GPU"))
  if 0 < n_gpus < n_towers:
    raise ValueError(f"--num_core_per_host={n_towers} towers but only "
                     f"{n_gpus} GPUs are visible; use at most {n_gpus}")
  if n_gpus == 0:
    logging.warning("No GPU visible: the %d tower(s) run on the CPU.",
                    n_towers)
  kind = "GPU" if n_gpus else "CPU"
  return [f"/device:{kind}:{t}" for t in range(n_towers)]


def session_config(n_towers):
  """ConfigProto with `n_towers` logical CPU devices and soft placement."""
  return tf.compat.v1.ConfigProto(
      allow_soft_placement=True, device_count={"CPU": max(1, n_towers)})


def average_grads(tower_grads, tvars):
  """Averages per-tower gradient lists into `[(grad, var)]` (dense grads)."""
  if len(tower_grads) == 1:
    return list(zip(tower_grads[0], tvars))
  scale = 1.0 / len(tower_grads)
  averaged = []
  for grads, var in zip(zip(*tower_grads), tvars):
    grads = [tf.convert_to_tensor(g) for g in grads if g is not None]
    averaged.append((tf.add_n(grads) * scale if grads else None, var))
  return averaged


class TrainStep(object):
  """The ops of one training step over all towers.

  Attributes:
    train_op: runs the update and then stores every tower's new memories.
    loss: float32 scalar, tower-averaged loss.
    learning_rate, gnorm: float32 scalars.
    global_step: int64 scalar, the global step after this step's update.
    mem_vars: list (per tower) of lists (per layer) of memory variables.
  """

  def __init__(self, train_op, loss, learning_rate, gnorm, global_step,
               mem_vars):
    self.train_op = train_op
    self.loss = loss
    self.learning_rate = learning_rate
    self.gnorm = gnorm
    self.global_step = global_step
    self.mem_vars = mem_vars


def build_train_step(FLAGS, host_features, devices):
  """Builds the multi-tower training step.

  Args:
    FLAGS: resolved flags (see `xlnet.flags.resolve_flags`); the model
      config must be in the flags (see `model_config_to_flags`).
    host_features: dict of batch-major tensors `[train_batch_size, ...]`, the
      concatenation of one per-core batch per tower (with `bi_data` each one
      [forward rows, backward rows], as the input function lays them out).
    devices: list of device names, one per tower.

  Returns:
    a `TrainStep`.
  """
  n_towers = len(devices)
  bsz = FLAGS.train_batch_size
  tower_features = split_towers(host_features, n_towers)

  losses, tower_grads, mem_vars, new_mems = [], [], [], []
  tvars = None
  for t, device in enumerate(devices):
    with tf.device(device):
      mvars = (function_builder.create_mem_vars(FLAGS, bsz // n_towers,
                                                f"mems/tower_{t}")
               if FLAGS.mem_len else None)
      with tf.compat.v1.variable_scope(
          tf.compat.v1.get_variable_scope(), reuse=t > 0):
        mems = [v.read_value() for v in mvars] if mvars else None
        loss, tower_new_mems, _ = function_builder.get_loss(
            FLAGS, tower_features[t], None, mems, is_training=True)
      if tvars is None:
        tvars = tf.compat.v1.trainable_variables()
      tower_grads.append(tf.gradients(loss, tvars))
    losses.append(loss)
    mem_vars.append(mvars)
    new_mems.append(tower_new_mems)

  loss = tf.add_n(losses) / n_towers
  train_op, learning_rate, gnorm = model_utils.get_train_op(
      FLAGS, loss, grads_and_vars=average_grads(tower_grads, tvars))

  assigns = []
  with tf.control_dependencies([train_op]):
    for t in range(n_towers):
      for var, new in zip(mem_vars[t] or [], new_mems[t] or []):
        with tf.device(devices[t]):
          assigns.append(var.assign(new))
  step_op = tf.group(train_op, *assigns)
  with tf.control_dependencies([step_op]):
    global_step = tf.identity(
        tf.compat.v1.train.get_global_step().read_value())
  return TrainStep(step_op, loss, learning_rate, gnorm, global_step, mem_vars)


def perplexity(loss):
  """exp(loss); inf (not OverflowError) for a diverged loss."""
  try:
    return math.exp(loss)
  except OverflowError:
    return float("inf")


def format_log_line(step, gnorm, lr, loss):
  """The SPEC section 6 log line; `bpc` is loss/ln 2, i.e. bits per token."""
  return (f"[{step}] | gnorm {gnorm:.2f} lr {lr:8.6f} | loss {loss:.2f} | "
          f"pplx {perplexity(loss):>7.2f}, bpc {loss / math.log(2):>7.4f}")


def format_duration(seconds):
  """`seconds` as e.g. `3d 04:05:06` or `04:05:06`."""
  seconds = int(round(seconds))
  days, seconds = divmod(seconds, 86400)
  hours, seconds = divmod(seconds, 3600)
  text = f"{hours:02d}:{seconds // 60:02d}:{seconds % 60:02d}"
  return f"{days}d {text}" if days else text


def scalar_summary(values):
  """A `Summary` proto with one simple value per `values` entry."""
  return tf.compat.v1.Summary(value=[
      tf.compat.v1.Summary.Value(tag=tag, simple_value=float(v))
      for tag, v in values.items()])


def host_dataset(input_fn, n_towers, per_core_bsz, skip_steps):
  """Host batches: `n_towers` consecutive per-core batches concatenated.

  Args:
    input_fn: callable(params) -> dataset of per-core feature dicts.
    n_towers: int.
    per_core_bsz: int, rows per per-core batch.
    skip_steps: int, host batches to skip (a resumed run's consumed data).

  Returns:
    a dataset of feature dicts `[n_towers * per_core_bsz, ...]`.
  """
  dataset = input_fn({"batch_size": per_core_bsz})
  dataset = dataset.batch(n_towers, drop_remainder=True)

  def merge(features):
    return {k: tf.reshape(v, tf.concat([[-1], tf.shape(v)[2:]], 0))
            for k, v in features.items()}

  dataset = dataset.map(merge)
  if skip_steps:
    dataset = dataset.skip(skip_steps)
  return dataset.prefetch(1)


def train(FLAGS, input_fn, num_batch):
  """Runs (or resumes) pretraining until `FLAGS.train_steps`.

  Args:
    FLAGS: resolved flags.
    input_fn: callable(params) -> dataset of per-core batches (one per tower
      and step, see `build_train_step`).
    num_batch: int, host batches in one pass over the data (a resumed run
      skips `step % num_batch` of them so rows continue where they stopped);
      None = do not skip.

  Returns:
    list of `(step, loss)` for every step run by this call.
  """
  flags_lib.model_config_to_flags(FLAGS)
  function_builder.save_xlnet_config(FLAGS)
  n_towers = FLAGS.num_core_per_host
  devices = tower_devices(n_towers)
  latest = tf.train.latest_checkpoint(FLAGS.model_dir)
  start_step = int(latest.rsplit("-", 1)[1]) if latest else 0
  skip = start_step % num_batch if (num_batch and start_step) else 0

  graph = tf.Graph()
  with graph.as_default():
    if FLAGS.seed is not None:
      tf.compat.v1.set_random_seed(FLAGS.seed)
    with tf.device("/device:CPU:0"):
      dataset = host_dataset(input_fn, n_towers,
                             FLAGS.train_batch_size // n_towers, skip)
      features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    step = build_train_step(FLAGS, features, devices)
    if not latest and FLAGS.init_checkpoint:
      model_utils.init_from_checkpoint(FLAGS)
    saver = tf.compat.v1.train.Saver(max_to_keep=FLAGS.max_save)
    init = tf.compat.v1.global_variables_initializer()

  tokens_per_step = FLAGS.train_batch_size * FLAGS.seq_len
  history = []
  with tf.compat.v1.Session(graph=graph,
                            config=session_config(n_towers)) as sess:
    sess.run(init)
    if latest:
      saver.restore(sess, latest)
      logging.info("Resumed from %s at step %d", latest, start_step)
    writer = tf.compat.v1.summary.FileWriter(FLAGS.model_dir, graph)
    global_step = sess.run(tf.compat.v1.train.get_global_step())
    last_log_step, last_log_time, losses = global_step, time.time(), []
    fetches = [step.global_step, step.loss, step.learning_rate, step.gnorm]
    while global_step < FLAGS.train_steps:
      global_step, loss, lr, gnorm = sess.run(fetches)
      history.append((int(global_step), float(loss)))
      losses.append(loss)
      # Log every `iterations` steps, at the end, and after the first step
      # of this run (quick feedback).
      if (global_step % FLAGS.iterations == 0 or len(history) == 1 or
          global_step == FLAGS.train_steps):
        now = time.time()
        n = global_step - last_log_step
        mean_loss = float(np.mean(losses))
        tok_s = n * tokens_per_step / max(now - last_log_time, 1e-9)
        eta = (FLAGS.train_steps - global_step) * tokens_per_step / tok_s
        logging.info("%s | %.0f tokens/s | ETA %s",
                     format_log_line(global_step, gnorm, lr, mean_loss),
                     tok_s, format_duration(eta))
        writer.add_summary(scalar_summary({
            "loss": mean_loss, "lr": lr, "gnorm": gnorm,
            "pplx": perplexity(mean_loss), "tokens_per_sec": tok_s}),
                           global_step)
        writer.flush()
        last_log_step, last_log_time, losses = global_step, now, []
      if FLAGS.save_steps and global_step % FLAGS.save_steps == 0:
        save(saver, sess, FLAGS.model_dir, global_step)
    if history and (not FLAGS.save_steps or global_step % FLAGS.save_steps):
      save(saver, sess, FLAGS.model_dir, global_step)
    writer.close()
  return history


def save(saver, sess, model_dir, global_step):
  """Writes `model_dir/model.ckpt-{global_step}` and logs it."""
  path = saver.save(sess, os.path.join(model_dir, "model.ckpt"),
                    global_step=global_step)
  logging.info("Saved checkpoint %s", path)
  return path


def run(FLAGS):
  """Checks the flags against the data and trains; see `train`."""
  if FLAGS.num_hosts != 1:
    raise ValueError(f"--num_hosts={FLAGS.num_hosts}: train_gpu.py runs on "
                     "one host (use train_tpu.py for pods)")
  if FLAGS.use_tpu:
    raise ValueError("--use_tpu=True: train_gpu.py runs on GPUs/CPUs; use "
                     "train_tpu.py for TPUs")
  if not FLAGS.model_dir:
    raise ValueError("--model_dir is required (checkpoints and summaries)")
  flags_lib.model_config_to_flags(FLAGS)
  corpus_info = flags_lib.load_corpus_info(FLAGS)
  flags_lib.resolve_flags(FLAGS, corpus_info)
  input_fn, record_info = function_builder.get_input_fn(
      FLAGS, FLAGS.num_core_per_host)
  num_batch = record_info["num_batch"]
  tf.io.gfile.makedirs(FLAGS.model_dir)
  return train(FLAGS, input_fn, num_batch)


def main(unused_argv):
  tf.compat.v1.disable_eager_execution()
  logging.set_verbosity(logging.INFO)
  try:
    run(flags.FLAGS)
  except ValueError as e:
    print(f"train_gpu.py: error: {e}", file=sys.stderr)
    sys.exit(2)


def entry_point():
  """`python train_gpu.py ...`: defines the flags and runs `main`."""
  flags_lib.define_flags()
  app.run(main)
