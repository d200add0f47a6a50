"""Flags shared by `run_squad.py` and `run_race.py`.

`define_common_flags` holds the flags every fine-tuning program has (model
configuration, initial checkpoint, optimizer, training loop, devices) with
the released names. It stands in for the project-wide fine-tuning flags and
is meant to be replaced by them as one unit; each program then sets its own
defaults (the paper's settings) with `set_defaults`.
"""
from absl import flags


# ------------------------- common fine-tuning flags -------------------------
def define_common_flags(flag_values):
  """Defines the flags common to every fine-tuning program.

  Args:
    flag_values: an `absl.flags.FlagValues`.
  """
  fv = dict(flag_values=flag_values)
  # Model.
  flags.DEFINE_string("model_config_path", None,
                      "XLNetConfig json of the model (xlnet_config.json of "
                      "the released checkpoints).", **fv)
  flags.DEFINE_float("dropout", 0.1, "Dropout rate.", **fv)
  flags.DEFINE_float("dropatt", 0.1, "Attention dropout rate.", **fv)
  flags.DEFINE_integer("clamp_len", -1, "Clamp length (-1 = no clamping).",
                       **fv)
  flags.DEFINE_enum("summary_type", "last", ["last", "first", "mean", "attn"],
                    "Sequence summary of the classification heads.", **fv)
  flags.DEFINE_bool("use_summ_proj", True,
                    "Dense tanh projection of the sequence summary.", **fv)
  flags.DEFINE_bool("use_bfloat16", False, "bfloat16 activations.", **fv)
  flags.DEFINE_enum("init", "normal", ["normal", "uniform"],
                    "Initialization of new variables.", **fv)
  flags.DEFINE_float("init_std", 0.02, "Stddev of the normal initializer.",
                     **fv)
  flags.DEFINE_float("init_range", 0.1, "Range of the uniform initializer.",
                     **fv)
  # Checkpoints and data.
  flags.DEFINE_string("init_checkpoint", None,
                      "Checkpoint to start from (e.g. the released "
                      "xlnet_model.ckpt).", **fv)
  flags.DEFINE_bool("init_global_vars", False,
                    "Also restore non-trainable variables from "
                    "init_checkpoint.", **fv)
  flags.DEFINE_string("model_dir", None,
                      "Fine-tuning checkpoints and summaries.", **fv)
  flags.DEFINE_string("output_dir", None,
                      "Directory of the cached feature records.", **fv)
  flags.DEFINE_string("spiece_model_file", None,
                      "SentencePiece model (spiece.model of the released "
                      "checkpoints).", **fv)
  flags.DEFINE_bool("uncased", False, "Lower-case the text (uncased "
                    "models).", **fv)
  flags.DEFINE_integer("max_seq_length", 512,
                       "Pieces per sequence, padding included.", **fv)
  flags.DEFINE_integer("shuffle_buffer", 2048,
                       "Training records in the shuffle buffer.", **fv)
  # Optimizer.
  flags.DEFINE_float("learning_rate", 2e-5, "Peak learning rate.", **fv)
  flags.DEFINE_float("min_lr_ratio", 0.0,
                     "Final learning rate as a fraction of the peak.", **fv)
  flags.DEFINE_float("lr_layer_decay_rate", 1.0,
                     "Layer l's gradients are scaled by "
                     "rate^(n_layer-1-l).", **fv)
  flags.DEFINE_float("clip", 1.0, "Gradient clipping (global norm).", **fv)
  flags.DEFINE_integer("warmup_steps", 0, "Linear warmup steps.", **fv)
  flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon.", **fv)
  flags.DEFINE_enum("decay_method", "poly", ["poly", "cos"],
                    "Learning-rate decay after warmup.", **fv)
  flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay.", **fv)
  # Training loop.
  flags.DEFINE_bool("do_train", False, "Fine-tune.", **fv)
  flags.DEFINE_integer("train_steps", 1000, "Training steps.", **fv)
  flags.DEFINE_integer("train_batch_size", 8, "Training batch size.", **fv)
  flags.DEFINE_integer("iterations", 1000,
                       "Steps between log lines / per TPU loop.", **fv)
  flags.DEFINE_integer("save_steps", None,
                       "Steps between checkpoints; None = only at the end.",
                       **fv)
  flags.DEFINE_integer("max_save", 5, "Checkpoints to keep.", **fv)
  # Devices.
  flags.DEFINE_bool("use_tpu", False, "Run on TPU (TPUEstimator).", **fv)
  flags.DEFINE_integer("num_hosts", 1, "Number of TPU hosts.", **fv)
  flags.DEFINE_integer("num_core_per_host", 8,
                       "Cores per host: GPUs or TPU cores.", **fv)
  flags.DEFINE_string("tpu_job_name", None, "TPU worker job name.", **fv)
  flags.DEFINE_string("tpu", None, "TPU name or grpc://ip:port.", **fv)
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.", **fv)
  flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.", **fv)
  flags.DEFINE_string("master", None, "TensorFlow master URL.", **fv)
# ----------------------- end of common fine-tuning flags ---------------------


def set_defaults(flag_values, **defaults):
  """Sets a program's defaults (e.g. the paper's settings) on defined flags."""
  for name, value in defaults.items():
    flag_values.set_default(name, value)


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
