"""Typed configurations built from parsed flags, shared by every program,
and the rules of `xlnet/validation.py` applied to the flags."""
import xlnet
from xlnet import validation
from xlnet.training import config as train_config_lib

# The RunConfig of the model flags every program defines (the release's
# `xlnet.create_run_config`, with pretraining's resolved data flags as
# keyword arguments).
run_config = xlnet.create_run_config


def check_rules(FLAGS):  # pylint: disable=invalid-name
  """Checks every flag the program defines by the rule of its name (the
  rules the configs built from them follow, `validation.check_all`); warns
  about a run that ends during warm-up.

  Raises:
    ValueError: one line naming the first flag that breaks its rule.
  """
  validation.check_all(FLAGS)
  if hasattr(FLAGS, "warmup_steps") and hasattr(FLAGS, "train_steps"):
    validation.warn_long_warmup(FLAGS.warmup_steps, FLAGS.train_steps)


def optimizer_config(FLAGS, n_layer=None):  # pylint: disable=invalid-name
  """The run's `OptimizerConfig` from the optimizer flags."""
  return train_config_lib.OptimizerConfig(
      learning_rate=FLAGS.learning_rate, train_steps=FLAGS.train_steps,
      warmup_steps=FLAGS.warmup_steps, decay_method=FLAGS.decay_method,
      min_lr_ratio=FLAGS.min_lr_ratio, adam_epsilon=FLAGS.adam_epsilon,
      weight_decay=FLAGS.weight_decay, clip=FLAGS.clip,
      lr_layer_decay_rate=FLAGS.lr_layer_decay_rate,
      n_layer=n_layer)


def train_config(FLAGS):  # pylint: disable=invalid-name
  """The run's `TrainConfig` from the loop flags."""
  return train_config_lib.TrainConfig(
      iterations=FLAGS.iterations, seed=FLAGS.seed,
      use_xla=FLAGS.use_xla, use_fp16=FLAGS.use_fp16,
      loss_scale=FLAGS.loss_scale)


def checkpoint_config(FLAGS):  # pylint: disable=invalid-name
  """The run's `CheckpointConfig` from `--model_dir` and the saving flags.

  Raises:
    ValueError: no `--model_dir`, or a bad `--save_steps`/`--max_save`.
  """
  return train_config_lib.CheckpointConfig(
      model_dir=FLAGS.model_dir, init_checkpoint=FLAGS.init_checkpoint,
      save_steps=FLAGS.save_steps, max_save=FLAGS.max_save)


def device_config(FLAGS):  # pylint: disable=invalid-name
  """The pretraining programs' `DeviceConfig` (TPU address, GPU workers)."""
  return train_config_lib.DeviceConfig(
      use_tpu=FLAGS.use_tpu, tpu=FLAGS.tpu, tpu_zone=FLAGS.tpu_zone,
      gcp_project=FLAGS.gcp_project, master=FLAGS.master,
      tpu_job_name=FLAGS.tpu_job_name, worker_hosts=FLAGS.worker_hosts,
      task_index=FLAGS.task_index, cluster_timeout=FLAGS.cluster_timeout,
      tpu_engine=FLAGS.tpu_engine, data_service=FLAGS.data_service,
      data_service_timeout=FLAGS.data_service_timeout)
