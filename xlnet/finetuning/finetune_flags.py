"""Flags shared by every fine-tuning program (classification, SQuAD, RACE).

`define_common_flags()` defines the model, checkpoint, optimizer, training
and device flags with the released fine-tuning scripts' names and meanings,
so the original README's commands run verbatim; each program adds its task
flags (`max_seq_length`, batch sizes for eval/predict, data flags, ...).
`check_common_flags()` validates them with one-line messages.

Defaults are the released scripts' defaults, except `adam_epsilon`, which
is the paper's fine-tuning value 1e-6 (the release's flag said 1e-8).
"""
import os

from absl import flags

from xlnet import flag_rules
from xlnet import model as model_lib
from xlnet.training import model_utils


def define_common_flags(flag_values=flags.FLAGS):
  """Defines the common fine-tuning flags (no-op if already defined).

  Args:
    flag_values: an `absl.flags.FlagValues`; the global FLAGS by default.
  """
  if "model_config_path" in flag_values:
    return
  fv = dict(flag_values=flag_values)

  # Model.
  flags.DEFINE_string("model_config_path", None,
                      "XLNetConfig json of the pretrained model (e.g. "
                      "xlnet_config.json of the released checkpoints).", **fv)
  flags.DEFINE_float("dropout", 0.1, "Dropout rate.", **fv)
  flags.DEFINE_float("dropatt", 0.1, "Attention dropout rate.", **fv)
  flags.DEFINE_integer("clamp_len", -1,
                       "Clamp relative distances to this (-1: no clamping).",
                       **fv)
  flags.DEFINE_enum("summary_type", "last", ["last", "first", "mean", "attn"],
                    "How a sequence is pooled into one vector: 'last' is "
                    "the <cls> state.", **fv)
  flags.DEFINE_bool("use_summ_proj", True,
                    "Apply the tanh projection sequnece_summary/summary to "
                    "the pooled vector.", **fv)
  flags.DEFINE_bool("use_bfloat16", False,
                    "Compute activations in bfloat16 (variables stay "
                    "float32).", **fv)
  flags.DEFINE_bool("use_fp16", False,
                    "Compute activations in float16 (GPUs; variables, "
                    "softmax, LayerNorm statistics and the loss stay "
                    "float32) with dynamic loss scaling.", **fv)
  flags.DEFINE_float("loss_scale", 2.0 ** 15,
                     "--use_fp16: the first loss scale; it halves after a "
                     "step whose gradients overflow (the update is "
                     "skipped) and doubles after 2000 finite steps.", **fv)
  flags.DEFINE_enum("init", "normal", ["normal", "uniform"],
                    "Initializer of new variables.", **fv)
  flags.DEFINE_float("init_std", 0.02, "Stddev of the normal initializer.",
                     **fv)
  flags.DEFINE_float("init_range", 0.1, "Range of the uniform initializer.",
                     **fv)

  # Checkpoints and data.
  flags.DEFINE_string("init_checkpoint", None,
                      "Pretrained checkpoint to start from (a prefix such "
                      "as xlnet_model.ckpt, a directory or DIR/latest); "
                      "ignored when model_dir already holds a fine-tuning "
                      "checkpoint.", **fv)
  flags.DEFINE_string("model_dir", None,
                      "Fine-tuning checkpoints, summaries and eval results; "
                      "training resumes from its latest checkpoint.", **fv)
  flags.DEFINE_string("spiece_model_file", None,
                      "SentencePiece model of the pretrained checkpoint.",
                      **fv)
  flags.DEFINE_string("output_dir", None,
                      "Directory of the cached feature records.", **fv)
  flags.DEFINE_bool("overwrite_data", False,
                    "Rewrite the feature records even when valid ones "
                    "exist.", **fv)
  flags.DEFINE_bool("uncased", False,
                    "Lower-case the text (for uncased models).", **fv)

  # Optimizer.
  flags.DEFINE_float("learning_rate", 1e-5, "Peak learning rate.", **fv)
  flags.DEFINE_float("lr_layer_decay_rate", 1.0,
                     "Layer l's gradients are scaled by "
                     "rate^(n_layer-1-l) (1.0: no layer-wise decay).", **fv)
  flags.DEFINE_float("min_lr_ratio", 0.0,
                     "Final learning rate as a fraction of the peak.", **fv)
  flags.DEFINE_float("clip", 1.0, "Gradient clipping (global norm).", **fv)
  flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay.", **fv)
  flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon.", **fv)
  flags.DEFINE_enum("decay_method", "poly", ["poly", "cos"],
                    "Learning rate decay after warmup.", **fv)

  # Training.
  flags.DEFINE_bool("do_train", False, "Fine-tune.", **fv)
  flags.DEFINE_integer("train_batch_size", 8,
                       "Training batch size: PER GPU without --use_tpu (the "
                       "released GPU command trains STS-B with 8 on each of "
                       "4 GPUs, i.e. 32 per step); the global batch over "
                       "all cores with --use_tpu.", **fv)
  flags.DEFINE_integer("train_steps", 1000, "Number of training steps.", **fv)
  flags.DEFINE_integer("warmup_steps", 0, "Linear warmup steps.", **fv)
  flags.DEFINE_integer("iterations", 1000,
                       "Steps between log lines / per TPU loop.", **fv)
  flags.DEFINE_integer("save_steps", None,
                       "Steps between checkpoints; None: only at the end.",
                       **fv)
  flags.DEFINE_integer("max_save", 0,
                       "Checkpoints to keep; 0 keeps all (needed by "
                       "--eval_all_ckpt).", **fv)
  flags.DEFINE_integer("seed", model_utils.DEFAULT_SEED,
                       "Random seed of the new head's initial weights, the "
                       "training example order and dropout.", **fv)
  flags.DEFINE_integer("shuffle_buffer", 2048,
                       "Training examples in the shuffle buffer.", **fv)
  flags.DEFINE_integer("accum_steps", 1,
                       "Batches accumulated per optimizer step (the "
                       "effective batch is accum_steps times larger).", **fv)
  flags.DEFINE_bool("use_xla", False,
                    "Jit-compile the training step with XLA.", **fv)

  # Devices.
  flags.DEFINE_bool("use_tpu", False, "Run on TPU (TensorFlow 2.15).", **fv)
  flags.DEFINE_integer("num_hosts", 1, "Number of TPU hosts.", **fv)
  flags.DEFINE_integer("num_core_per_host", 1,
                       "GPUs (or TPU cores) per host.", **fv)
  flags.DEFINE_string("tpu_job_name", None, "TPU worker job name.", **fv)
  flags.DEFINE_string("tpu", None, "TPU name or grpc://ip:port.", **fv)
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.", **fv)
  flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.", **fv)
  flags.DEFINE_string("master", None, "TensorFlow master URL.", **fv)


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
    prefix = model_utils.resolve_checkpoint(FLAGS.init_checkpoint,
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


def set_defaults(flag_values, **defaults):
  """Sets a program's defaults (e.g. the paper's settings) on defined
  flags."""
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
