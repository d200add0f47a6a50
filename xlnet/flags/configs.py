"""Typed configurations built from parsed flags, shared by every program,
and the rules of `xlnet/validation.py` applied to the flags."""
import dataclasses

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
  f = flag_values
  return train_config_lib.OptimizerConfig(
      learning_rate=f.learning_rate, train_steps=f.train_steps,
      warmup_steps=f.warmup_steps, decay_method=f.decay_method,
      min_lr_ratio=f.min_lr_ratio, adam_epsilon=f.adam_epsilon,
      weight_decay=f.weight_decay, clip=f.clip,
      lr_layer_decay_rate=f.lr_layer_decay_rate, n_layer=n_layer,
      freeze_layers=f.freeze_layers)


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
      save_steps=flag_values.save_steps, max_save=flag_values.max_save)


def device_config(flag_values):
  """The run's `DeviceConfig` from the device flags the program defines (the
  TPU's address, the GPU workers; the fine-tuning programs lack
  pretraining's --tpu_engine and --data_service*, which keep their
  defaults)."""
  return train_config_lib.DeviceConfig(**{
      field.name: getattr(flag_values, field.name)
      for field in dataclasses.fields(train_config_lib.DeviceConfig)
      if hasattr(flag_values, field.name)})
