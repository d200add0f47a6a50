"""The typed settings of a run (xlnet/training/config.py): the derived batch
sizes, worked out by hand, and the one-line errors naming the flag."""
import re

import pytest

from xlnet.training import config


def _raises(message):
  """pytest.raises(ValueError) matching `message` exactly."""
  return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_batch_layout_splits_the_global_batch_over_hosts_and_cores():
  # 32 examples over 2 hosts of 4 cores: 16 per host, 4 per core.
  layout = config.BatchLayout(32, num_hosts=2, num_core_per_host=4,
                              accum_steps=3)
  assert layout.num_cores == 8
  assert layout.bsz_per_host == 16
  assert layout.bsz_per_core == 4
  # What a resumed run must keep.
  assert layout.record() == {"train_batch_size": 32, "num_hosts": 2,
                             "num_core_per_host": 4, "accum_steps": 3}
  one = config.BatchLayout(6)
  assert (one.num_cores, one.bsz_per_host, one.bsz_per_core) == (1, 6, 6)


def test_memory_shape_is_one_layer_of_one_replica():
  # 32 examples over 2 hosts of 4 cores: 4 rows per core, 16 on one device.
  layout = config.BatchLayout(32, num_hosts=2, num_core_per_host=4)
  assert config.memory_shape(5, 4, 16) == [5, 4, 16]
  assert layout.memory_shape(5, 16) == [5, 4, 16]
  assert layout.on_one_device().memory_shape(5, 16) == [5, 16, 16]
  # No memories: mem_len 0 (the flag) or None (RunConfig's default).
  assert config.memory_shape(0, 4, 16) is None
  assert config.memory_shape(None, 4, 16) is None


def test_batch_layout_refuses_a_batch_the_cores_cannot_share():
  with _raises("--train_batch_size=30 is not divisible by the number of "
               "cores num_hosts*num_core_per_host=8"):
    config.BatchLayout(30, num_hosts=2, num_core_per_host=4)
  # Divisible by the hosts (15 each) is not enough: 4 cores per host.
  with _raises("--train_batch_size=30 is not divisible by the number of "
               "cores num_hosts*num_core_per_host=8"):
    config.BatchLayout(30, num_hosts=2, num_core_per_host=4, accum_steps=2)


@pytest.mark.parametrize("name", ["train_batch_size", "num_hosts",
                                  "num_core_per_host", "accum_steps"])
def test_batch_layout_sizes_must_be_at_least_one(name):
  values = dict(train_batch_size=8, num_hosts=1, num_core_per_host=1,
                accum_steps=1)
  values[name] = 0
  with _raises(f"--{name}=0 must be >= 1"):
    config.BatchLayout(**values)


@pytest.mark.parametrize("field, value, message", [
    # The command line's words (run_classifier.py's; absl's for an enum).
    ("clip", 0.0, "--clip=0.0 must be > 0"),
    ("adam_epsilon", -1e-8, "--adam_epsilon=-1e-08 must be > 0"),
    ("weight_decay", -0.1, "--weight_decay=-0.1 must be >= 0.0"),
    ("learning_rate", -1.0, "--learning_rate=-1.0 must be >= 0.0"),
    ("decay_method", "exp", "--decay_method=exp: value should be one of "
                            "<poly|cos>"),
])
def test_optimizer_config_names_the_bad_flag(field, value, message):
  values = dict(learning_rate=1e-4, train_steps=10)
  values[field] = value
  with _raises(message):
    config.OptimizerConfig(**values)


def test_optimizer_config_defaults_are_the_release_adam():
  opt = config.OptimizerConfig(learning_rate=1e-4, train_steps=10)
  assert (opt.warmup_steps, opt.decay_method, opt.min_lr_ratio) == (
      0, "poly", 0.0)
  assert (opt.weight_decay, opt.clip, opt.lr_layer_decay_rate) == (
      0.0, 1.0, 1.0)
  assert opt.n_layer is None  # the layer decay infers the depth


@pytest.mark.parametrize("kwargs, message", [
    (dict(model_dir=""), "--model_dir is required (checkpoints and "
                         "summaries)"),
    (dict(model_dir="d", save_steps=0), "--save_steps=0 must be >= 1 (leave "
                                        "it unset to save only at the end)"),
    (dict(model_dir="d", max_save=-1), "--max_save=-1 must be >= 0 (0 keeps "
                                       "every checkpoint)"),
])
def test_checkpoint_config_names_the_bad_flag(kwargs, message):
  with _raises(message):
    config.CheckpointConfig(**kwargs)


def test_checkpoint_config_accepts_unset_save_steps_and_keep_all():
  ckpt = config.CheckpointConfig("d", save_steps=None, max_save=0)
  assert (ckpt.save_steps, ckpt.max_save) == (None, 0)


def test_train_config_iterations_and_defaults():
  with _raises("--iterations=0 must be >= 1"):
    config.TrainConfig(iterations=0)
  train = config.TrainConfig()
  assert train.seed == config.DEFAULT_SEED == 1
  assert train.loss_scale == 2.0 ** 15
  assert not (train.use_xla or train.use_fp16)
