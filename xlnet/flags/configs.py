"""Typed configurations built from parsed flags, shared by every program,
and the rules of `xlnet/validation.py` applied to the flags."""
import xlnet
from xlnet import validation
from xlnet.training import config as train_config_lib

# The RunConfig of the model flags every program defines (the release's
# `xlnet.create_run_config`, with pretraining's resolved data flags as
# keyword arguments).
run_config = xlnet.create_run_config


def check_rules(flag_values):
  """Checks every flag the program defines by the rule of its name (the
  rules the configs built from them follow, `validation.check_all`); warns
  about a run that ends during warm-up.

  Raises:
    ValueError: one line naming the first flag that breaks its rule.
  """
  validation.check_all(flag_values)
  if hasattr(flag_values, "warmup_steps") and hasattr(flag_values,
                                                      "train_steps"):
    validation.warn_long_warmup(flag_values.warmup_steps,
                                flag_values.train_steps)


def optimizer_config(flag_values, n_layer=None):
  """The run's `OptimizerConfig` from the optimizer flags."""
  return train_config_lib.OptimizerConfig(
      learning_rate=flag_values.learning_rate,
      train_steps=flag_values.train_steps,
      warmup_steps=flag_values.warmup_steps,
      decay_method=flag_values.decay_method,
      min_lr_ratio=flag_values.min_lr_ratio,
      adam_epsilon=flag_values.adam_epsilon,
      weight_decay=flag_values.weight_decay,
      clip=flag_values.clip,
      lr_layer_decay_rate=flag_values.lr_layer_decay_rate,
      n_layer=n_layer, freeze_layers=flag_values.freeze_layers)


def train_config(flag_values):
  """The run's `TrainConfig` from the loop flags."""
  return train_config_lib.TrainConfig(
      iterations=flag_values.iterations, seed=flag_values.seed,
      use_xla=flag_values.use_xla, use_fp16=flag_values.use_fp16,
      loss_scale=flag_values.loss_scale)


def checkpoint_config(flag_values):
  """The run's `CheckpointConfig` from `--model_dir` and the saving flags.

  Raises:
    ValueError: no `--model_dir`, or a bad `--save_steps`/`--max_save`.
  """
  return train_config_lib.CheckpointConfig(
      model_dir=flag_values.model_dir,
      init_checkpoint=flag_values.init_checkpoint,
      save_steps=flag_values.save_steps,
      max_save=flag_values.max_save)


def device_config(flag_values):
  """The pretraining programs' `DeviceConfig` (TPU address, GPU workers)."""
  return train_config_lib.DeviceConfig(
      use_tpu=flag_values.use_tpu,
      tpu=flag_values.tpu,
      tpu_zone=flag_values.tpu_zone,
      gcp_project=flag_values.gcp_project,
      master=flag_values.master,
      tpu_job_name=flag_values.tpu_job_name,
      worker_hosts=flag_values.worker_hosts,
      task_index=flag_values.task_index,
      cluster_timeout=flag_values.cluster_timeout,
      tpu_engine=flag_values.tpu_engine,
      data_service=flag_values.data_service,
      data_service_timeout=flag_values.data_service_timeout)
