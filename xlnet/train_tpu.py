"""XLNet pretraining with TPUEstimator (TensorFlow <= 2.15).

`iterations_per_loop = --iterations`, `num_shards = num_hosts *
num_core_per_host`, per-host input (PER_HOST_V2: per-core batches).
The memories live in non-trainable variables `mems/layer_{i}`
`[mem_len, per_core_bsz, d_model]` assigned after every step, so they carry
from step to step and across `iterations_per_loop` boundaries (the release
refilled them with zeros at the start of every loop) and are checkpointed.
Scalar summaries `train/total_loss`, `train/lr`, `train/gnorm` (averaged over
cores) are written every 100 steps through a host call.

With `--use_tpu=False` it runs on the CPU with one "core" that gets the
whole `train_batch_size`, memories included.
"""
import os
import sys

from absl import app
from absl import flags
from absl import logging
import tensorflow as tf

from xlnet import flags as flags_lib
from xlnet import function_builder
from xlnet import model_utils

SUMMARY_EVERY = 100


def tpu_estimator_module():
  """`tf.compat.v1.estimator.tpu`, or None when TensorFlow >= 2.16."""
  estimator = getattr(tf.compat.v1, "estimator", None)
  return getattr(estimator, "tpu", None)


def missing_estimator_message():
  """One line saying TPUEstimator is gone and how to get the right env."""
  return (f"train_tpu.py needs TPUEstimator, which was removed in TensorFlow "
          f"2.16 (this is TensorFlow {tf.__version__}); use the reference "
          "environment: `bash scripts/setup_env.sh reference`, then "
          "`.venvs/reference/bin/python train_tpu.py ...`")


def make_host_call(model_dir):
  """A host call writing the cores' mean scalars every `SUMMARY_EVERY` steps.

  Returns:
    host_call_fn(global_step [n], total_loss [n], lr [n], gnorm [n]) where
    n is the number of cores (each core sends one value).
  """

  def host_call_fn(global_step, total_loss, lr, gnorm):
    step = global_step[0]
    writer = tf.compat.v2.summary.create_file_writer(model_dir)
    with writer.as_default(), tf.compat.v2.summary.record_if(
        tf.equal(step % SUMMARY_EVERY, 0)):
      tf.compat.v2.summary.scalar("train/total_loss",
                                  tf.reduce_mean(total_loss), step=step)
      tf.compat.v2.summary.scalar("train/lr", tf.reduce_mean(lr), step=step)
      tf.compat.v2.summary.scalar("train/gnorm", tf.reduce_mean(gnorm),
                                  step=step)
      return tf.compat.v1.summary.all_v2_summary_ops()

  return host_call_fn


def get_model_fn(FLAGS):
  """The TPUEstimator model function of XLNet pretraining."""

  def model_fn(features, labels, mode, params):
    """Builds the loss, the update and the memory assignment."""
    del params
    tpu = tpu_estimator_module()
    bsz = features["input_k"].shape[0]
    mem_vars = (function_builder.create_mem_vars(FLAGS, bsz)
                if FLAGS.mem_len else None)
    mems = [v.read_value() for v in mem_vars] if mem_vars else None
    total_loss, new_mems, _ = function_builder.get_loss(
        FLAGS, features, labels, mems, is_training=True)

    scaffold_fn = model_utils.init_from_checkpoint(FLAGS)
    train_op, learning_rate, gnorm = model_utils.get_train_op(FLAGS,
                                                              total_loss)
    with tf.control_dependencies([train_op]):
      assigns = [v.assign(m) for v, m in zip(mem_vars or [], new_mems or [])]
    train_op = tf.group(train_op, *assigns)

    global_step = tf.compat.v1.train.get_global_step()
    host_call = (make_host_call(FLAGS.model_dir), [
        tf.reshape(global_step, [1]), tf.reshape(total_loss, [1]),
        tf.reshape(learning_rate, [1]), tf.reshape(gnorm, [1])])
    return tpu.TPUEstimatorSpec(mode=mode, loss=total_loss,
                                train_op=train_op, host_call=host_call,
                                scaffold_fn=scaffold_fn)

  return model_fn


def run(FLAGS):
  """Checks the flags against the data and trains to `FLAGS.train_steps`.

  Raises:
    ValueError: on bad flags or data.
    RuntimeError: without TPUEstimator (TensorFlow >= 2.16).
  """
  tpu = tpu_estimator_module()
  if tpu is None:
    raise RuntimeError(missing_estimator_message())
  if not FLAGS.model_dir:
    raise ValueError("--model_dir is required (checkpoints and summaries)")
  flags_lib.model_config_to_flags(FLAGS)
  flags_lib.resolve_flags(FLAGS, flags_lib.load_corpus_info(FLAGS))
  if not FLAGS.use_tpu and FLAGS.num_hosts != 1:
    raise ValueError(f"--num_hosts={FLAGS.num_hosts} needs --use_tpu=True")
  function_builder.save_xlnet_config(FLAGS)
  # One core per host on CPU.
  input_fn, _ = function_builder.get_input_fn(
      FLAGS, FLAGS.num_core_per_host if FLAGS.use_tpu else 1)
  estimator = tpu.TPUEstimator(
      model_fn=get_model_fn(FLAGS),
      config=model_utils.configure_tpu(FLAGS),
      use_tpu=FLAGS.use_tpu,
      train_batch_size=FLAGS.train_batch_size)
  estimator.train(input_fn=input_fn, max_steps=FLAGS.train_steps)


def _program():
  """The script's name for messages: `train_tpu.py`, or `train.py` (the
  release's name of this trainer, which the original README runs)."""
  name = os.path.basename(sys.argv[0]) if sys.argv else ""
  return name if name in ("train.py", "train_tpu.py") else "train_tpu.py"


def main(unused_argv):
  logging.set_verbosity(logging.INFO)
  try:
    run(flags.FLAGS)
  except (ValueError, RuntimeError) as e:
    print(f"{_program()}: error: {e}", file=sys.stderr)
    sys.exit(2)


def entry_point():
  """`python train_tpu.py ...` (or `python train.py ...`): stops early
  without TPUEstimator."""
  if tpu_estimator_module() is None:
    print(f"{_program()}: error: {missing_estimator_message()}",
          file=sys.stderr)
    sys.exit(2)
  flags_lib.define_flags()
  app.run(main)
