"""Fine-tuning flags checked once, with one-line messages naming the flag;
each program adds its task checks."""
import os

from xlnet import model as model_lib
from xlnet.flags import rules as flag_rules
from xlnet.training import checkpoint_io


def global_batch_size(FLAGS, per_device):  # pylint: disable=invalid-name
  """Examples per step for a batch-size flag value.

  With `use_tpu` the flag is the global batch; otherwise it is per GPU (as
  in the released GPU command), so a step takes `per_device *
  num_core_per_host` examples.
  """
  return per_device if FLAGS.use_tpu else per_device * FLAGS.num_core_per_host


def _require(FLAGS, name, why):  # pylint: disable=invalid-name
  """Raises unless flag `name` is set; `why` says what it is for."""
  if not getattr(FLAGS, name):
    raise ValueError(f"--{name} is required ({why})")


def _same_dir(a, b):
  """Whether two directory paths name the same directory."""
  return os.path.abspath(a).rstrip("/") == os.path.abspath(b).rstrip("/")


def check_common_flags(FLAGS):  # pylint: disable=invalid-name
  """Validates the common flags; raises a one-line ValueError naming one.

  Checks: the model config and SentencePiece model are given (and the
  config readable), model_dir is given and differs from the
  init_checkpoint's directory (fine-tuning checkpoints would otherwise mix
  with, and resume from, the pretrained one), the init_checkpoint exists,
  and the numbers are in range (the steps, batch sizes, `max_save`, ...:
  by the rules every program shares, `flag_rules`).

  Returns:
    the XLNetConfig of `--model_config_path`.
  """
  _require(FLAGS, "model_config_path", "the pretrained model's config json")
  _require(FLAGS, "spiece_model_file", "the pretrained model's "
           "SentencePiece model")
  _require(FLAGS, "model_dir", "fine-tuning checkpoints and results")
  try:
    config = model_lib.XLNetConfig(json_path=FLAGS.model_config_path)
  except ValueError as e:
    raise ValueError(f"--model_config_path={FLAGS.model_config_path}: {e}"
                     ) from None
  if FLAGS.init_checkpoint:
    prefix = checkpoint_io.resolve_checkpoint(FLAGS.init_checkpoint,
                                            "--init_checkpoint")
    if _same_dir(FLAGS.model_dir, os.path.dirname(prefix) or "."):
      raise ValueError(
          f"--model_dir={FLAGS.model_dir} is the directory of "
          f"--init_checkpoint={FLAGS.init_checkpoint}; give fine-tuning its "
          "own model_dir (it would resume from, and save beside, the "
          "pretrained checkpoint)")
  flag_rules.check_all(FLAGS)
  check_positive(FLAGS, "shuffle_buffer")
  for name, low in (("learning_rate", 0.0), ("weight_decay", 0.0),
                    ("dropout", 0.0), ("dropatt", 0.0)):
    if getattr(FLAGS, name) < low:
      raise ValueError(f"--{name}={getattr(FLAGS, name)} must be >= {low}")
  if FLAGS.use_fp16 and (FLAGS.use_bfloat16 or FLAGS.use_tpu):
    raise ValueError("--use_fp16 is for GPUs and excludes --use_bfloat16 "
                     "(TPUs compute in bfloat16)")
  for name in ("dropout", "dropatt"):
    if getattr(FLAGS, name) >= 1.0:
      raise ValueError(f"--{name}={getattr(FLAGS, name)} must be < 1")
  for name in ("clip", "adam_epsilon", "lr_layer_decay_rate"):
    if getattr(FLAGS, name) <= 0:
      raise ValueError(f"--{name}={getattr(FLAGS, name)} must be > 0")
  return config


def require(FLAGS, *names, why):  # pylint: disable=invalid-name
  """Raises ValueError naming the first unset flag of `names`."""
  for name in names:
    if getattr(FLAGS, name) in (None, ""):
      raise ValueError(f"--{name} is required {why}")


def check_positive(FLAGS, *names):  # pylint: disable=invalid-name
  """Raises ValueError naming the first flag of `names` below 1."""
  for name in names:
    value = getattr(FLAGS, name)
    if value is not None and value < 1:
      raise ValueError(f"--{name}={value} must be >= 1")
