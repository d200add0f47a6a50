"""The command-line flags shared by the pretraining entry points.

One place defines every flag of `train_gpu.py` and `train_tpu.py`, with the
released code's names, so the original README's commands work verbatim.

Defaults follow the paper's XLNet-Large recipe (docs/training.md) where
the release shipped toy values: a 24-layer 1024-wide gelu model with untied
relative biases, dropout 0.1, attention dropout 0.1, Adam epsilon 1e-6, 40K
warmup steps, linear ("poly") decay over 500K steps, weight decay 0.01,
mem_len 384. The data flags (`seq_len`, `reuse_len`, `uncased`, `bi_data`,
`mask_alpha`, `mask_beta`, `num_predict`, `train_batch_size`) default to
None: they are read from the records' `corpus_info.json`, and when given
they are checked against it by `resolve_flags`.
"""
import os

from absl import flags
import tensorflow as tf

from xlnet.data import record_format
from xlnet import flag_rules
from xlnet import model as model_lib
from xlnet.training import config as train_config_lib
from xlnet.training import model_utils

# Flags that must equal the corresponding corpus_info.json entries.
DATA_FLAGS = ("seq_len", "reuse_len", "uncased", "bi_data", "mask_alpha",
              "mask_beta", "num_predict")


def define_flags(flag_values=flags.FLAGS, tpu_defaults=False):
  """Defines all pretraining flags on `flag_values` (no-op if already there).

  Args:
    flag_values: an `absl.flags.FlagValues`; the global `FLAGS` by default.
    tpu_defaults: the TPU trainer's defaults, as in the release's train.py:
      `--use_tpu=True`, `--num_core_per_host=8`.
  """
  if "record_info_dir" in flag_values:
    return
  fv = dict(flag_values=flag_values)

  # Model configuration (XLNetConfig).
  flags.DEFINE_string("model_config_path", None,
                      "XLNetConfig json; when given it overrides the model "
                      "flags below.", **fv)
  flags.DEFINE_integer("n_layer", 24, "Number of layers.", **fv)
  flags.DEFINE_integer("d_model", 1024, "Hidden size.", **fv)
  flags.DEFINE_integer("d_embed", None,
                       "Embedding size; accepted for the original commands, "
                       "must equal d_model.", **fv)
  flags.DEFINE_integer("n_head", 16, "Number of attention heads.", **fv)
  flags.DEFINE_integer("d_head", 64, "Dimension of each attention head.", **fv)
  flags.DEFINE_integer("d_inner", 4096, "Feed-forward inner size.", **fv)
  flags.DEFINE_enum("ff_activation", "gelu", ["relu", "gelu"],
                    "Feed-forward activation.", **fv)
  flags.DEFINE_enum("summary_type", "last", ["last", "first", "mean", "attn"],
                    "Sequence summary for fine-tuning heads; accepted for "
                    "the original commands, unused in pretraining.", **fv)
  flags.DEFINE_bool("untie_r", True, "Untie relative biases across layers.",
                    **fv)
  flags.DEFINE_integer("n_token", 0,
                       "Vocabulary size; 0 = the data's vocab_size from "
                       "corpus_info.json.", **fv)

  # Run configuration (RunConfig).
  flags.DEFINE_bool("use_tpu", tpu_defaults, "Run on TPU (train_tpu.py).",
                    **fv)
  flags.DEFINE_bool("use_bfloat16", False, "Use bfloat16 activations.", **fv)
  flags.DEFINE_bool("use_fp16", False,
                    "Compute activations in float16 (GPUs; variables, "
                    "softmax, LayerNorm statistics and the loss stay "
                    "float32) with dynamic loss scaling.", **fv)
  flags.DEFINE_float("loss_scale", 2.0 ** 15,
                     "--use_fp16: the first loss scale; it halves after a "
                     "step whose gradients overflow (the update is "
                     "skipped) and doubles after 2000 finite steps.", **fv)
  flags.DEFINE_float("dropout", 0.1, "Dropout rate.", **fv)
  flags.DEFINE_float("dropatt", 0.1, "Attention dropout rate.", **fv)
  flags.DEFINE_enum("init", "normal", ["normal", "uniform"],
                    "Initialization method.", **fv)
  flags.DEFINE_float("init_std", 0.02, "Stddev of the normal initializer.",
                     **fv)
  flags.DEFINE_float("init_range", 0.1, "Range of the uniform initializer.",
                     **fv)
  flags.DEFINE_integer("mem_len", 384, "Number of steps to cache (memory).",
                       **fv)
  flags.DEFINE_bool("same_length", False, "Same length attention.", **fv)
  flags.DEFINE_integer("clamp_len", -1, "Clamp length (-1 = no clamping).",
                       **fv)

  # Data (must agree with corpus_info.json; None = take the data's value).
  flags.DEFINE_string("record_info_dir", None,
                      "Directory (or comma-separated directories) with the "
                      "record_info-*.json files, e.g. $DATA/tfrecords.", **fv)
  flags.DEFINE_string("corpus_info_path", None,
                      "corpus_info.json written by data_utils.py (as in the "
                      "released README's command); None = the one next to "
                      "the first --record_info_dir directory.", **fv)
  flags.DEFINE_integer("train_batch_size", None,
                       "Global batch size (= bsz_per_host * num_hosts); "
                       "None = from corpus_info.json.", **fv)
  flags.DEFINE_integer("seq_len", None, "Sequence length.", **fv)
  flags.DEFINE_integer("reuse_len", None,
                       "Tokens of each sequence that become memory.", **fv)
  flags.DEFINE_integer("perm_size", None,
                       "Permutation block size; None = reuse_len. Must "
                       "divide and not exceed reuse_len and "
                       "seq_len-reuse_len.", **fv)
  flags.DEFINE_bool("bi_data", None, "Bidirectional data.", **fv)
  flags.DEFINE_integer("mask_alpha", None, "Span-masking context factor.",
                       **fv)
  flags.DEFINE_integer("mask_beta", None, "Span-masking span factor.", **fv)
  flags.DEFINE_integer("num_predict", None,
                       "Number of tokens to predict per sequence.", **fv)
  flags.DEFINE_bool("uncased", None, "Uncased data.", **fv)
  flags.DEFINE_integer("num_passes", None,
                       "Use at most this many data passes (None = all).", **fv)

  # Optimizer.
  flags.DEFINE_float("learning_rate", 4e-4, "Peak learning rate.", **fv)
  flags.DEFINE_float("clip", 1.0, "Gradient clipping (global norm).", **fv)
  flags.DEFINE_float("min_lr_ratio", 0.0,
                     "Final learning rate as a fraction of the peak.", **fv)
  flags.DEFINE_integer("warmup_steps", 40000, "Linear warmup steps.", **fv)
  flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon.", **fv)
  flags.DEFINE_enum("decay_method", "poly", ["poly", "cos"],
                    "Learning rate decay after warmup.", **fv)
  flags.DEFINE_float("weight_decay", 0.01, "Decoupled weight decay.", **fv)
  flags.DEFINE_float("lr_layer_decay_rate", 1.0,
                     "Layer l's gradients are scaled by "
                     "rate^(n_layer-1-l).", **fv)

  # Training loop.
  flags.DEFINE_integer("train_steps", 500000, "Number of training steps.",
                       **fv)
  flags.DEFINE_integer("iterations", 1000,
                       "Steps between log lines (GPU) / per TPU loop.", **fv)
  flags.DEFINE_integer("save_steps", None,
                       "Steps between checkpoints; None = only at the end.",
                       **fv)
  flags.DEFINE_integer("max_save", 100000, "Max checkpoints to keep.", **fv)
  flags.DEFINE_string("model_dir", None,
                      "Checkpoints, summaries; training resumes from the "
                      "latest checkpoint found here.", **fv)
  flags.DEFINE_string("init_checkpoint", None,
                      "Checkpoint to initialize the model from (e.g. the "
                      "released weights); ignored when resuming.", **fv)
  flags.DEFINE_integer("seed", model_utils.DEFAULT_SEED,
                       "Random seed of the initial weights, the input order, "
                       "the factorization orders and dropout.", **fv)
  flags.DEFINE_bool("track_mean", False,
                    "Accepted for the original train.py's commands; "
                    "unused.", **fv)

  flags.DEFINE_integer("accum_steps", 1,
                       "Micro-batches accumulated per optimizer step: each "
                       "step averages the gradients of accum_steps "
                       "consecutive per-core batches (memories advance from "
                       "one to the next); global_step, the schedule and the "
                       "log count optimizer steps.", **fv)
  flags.DEFINE_bool("use_xla", False,
                    "Jit-compile the training step with XLA.", **fv)

  # Held-out evaluation (train_gpu.py --eval_steps, eval_pretrain.py).
  flags.DEFINE_integer("eval_steps", 0,
                       "Evaluate on the held-out split every this many "
                       "steps and at the end (0: never).", **fv)
  flags.DEFINE_string("eval_split", "valid",
                      "Split name of the held-out records (data_utils.py "
                      "--split).", **fv)
  flags.DEFINE_string("eval_record_info_dir", None,
                      "Directory of the held-out record infos (default: "
                      "--record_info_dir).", **fv)
  flags.DEFINE_integer("eval_batches", None,
                       "Held-out host batches per evaluation (default: one "
                       "pass over the held-out records).", **fv)
  flags.DEFINE_string("eval_ckpt", None,
                      "eval_pretrain.py: the checkpoint to evaluate "
                      "(default: the latest in --model_dir).", **fv)

  # Devices.
  flags.DEFINE_integer("num_hosts", 1,
                       "Number of hosts (TPU hosts; for train_gpu.py the "
                       "number of workers, which --worker_hosts/TF_CONFIG "
                       "determine).", **fv)
  flags.DEFINE_integer("num_core_per_host", 8 if tpu_defaults else 1,
                       "Cores per host: GPUs (or logical CPU devices) / TPU "
                       "cores.", **fv)
  flags.DEFINE_string("worker_hosts", None,
                      "Multi-host GPU training: comma-separated host:port "
                      "of every worker (the same list on every host); "
                      "builds TF_CONFIG. A TF_CONFIG in the environment "
                      "works as well.", **fv)
  flags.DEFINE_integer("task_index", 0,
                       "This host's index in --worker_hosts (0 = chief: "
                       "writes checkpoints and summaries).", **fv)
  flags.DEFINE_string("master", None, "TensorFlow master URL.", **fv)
  flags.DEFINE_string("tpu", None, "TPU name or grpc://ip:port.", **fv)
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.", **fv)
  flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.", **fv)
  flags.DEFINE_string("tpu_job_name", None, "TPU worker job name.", **fv)
  flags.DEFINE_enum("tpu_engine", "auto", ["auto", "estimator", "strategy"],
                    "train_tpu.py: TPUEstimator (the release's trainer; "
                    "TensorFlow 2.15 only) or the shared tf.distribute "
                    "engine on a TPUStrategy; auto = TPUEstimator where it "
                    "exists.", **fv)


def parse_flags(argv, tpu_defaults=False):
  """Returns a fresh, parsed `FlagValues` holding every pretraining flag.

  Args:
    argv: list of strings, e.g. `["prog", "--n_layer=2"]` (argv[0] ignored).
    tpu_defaults: see `define_flags`.

  Returns:
    an `absl.flags.FlagValues` independent of the global `FLAGS`.
  """
  flag_values = flags.FlagValues()
  define_flags(flag_values, tpu_defaults)
  flag_values(list(argv))
  return flag_values


def model_config_to_flags(FLAGS):
  """Copies `FLAGS.model_config_path`'s XLNetConfig into the model flags.

  Afterwards the model flags (`n_layer`, `d_model`, ... used e.g. for the
  memories) always describe the model that is built.

  Raises:
    ValueError: when the file is missing or lacks a key.
  """
  if not FLAGS.model_config_path:
    return
  try:
    config = model_lib.XLNetConfig(json_path=FLAGS.model_config_path)
  except ValueError as e:
    raise ValueError(f"--model_config_path={FLAGS.model_config_path}: cannot "
                     f"read an XLNetConfig ({e})") from None
  for key in model_lib.XLNetConfig.keys:  # they are also flag names
    setattr(FLAGS, key, getattr(config, key))


def corpus_info_path(record_info_dir):
  """Path of the corpus_info.json next to the first record directory."""
  first = record_info_dir.split(",")[0].rstrip("/")
  # No os.path.normpath: it would turn "gs://b/x" into "gs:/b/x".
  return os.path.join(os.path.dirname(first), "corpus_info.json")


def _corpus_info_location(FLAGS):
  """The corpus_info.json in use: `--corpus_info_path` or the default."""
  return (getattr(FLAGS, "corpus_info_path", None) or
          corpus_info_path(FLAGS.record_info_dir))


def load_corpus_info(FLAGS):
  """Reads the corpus_info.json that belongs to `FLAGS.record_info_dir`
  (`FLAGS.corpus_info_path` when given). Local and gs:// paths both work.

  Raises:
    ValueError: when the flag is unset, a directory is missing, or there is
      no corpus_info.json next to the records (or at --corpus_info_path).
  """
  if not FLAGS.record_info_dir:
    raise ValueError("--record_info_dir is required: the tfrecords directory "
                     "written by data_utils.py (e.g. $DATA/tfrecords)")
  for directory in FLAGS.record_info_dir.split(","):
    if not tf.io.gfile.isdir(directory):
      raise ValueError(f"--record_info_dir: directory {directory} does not "
                       "exist")
  path = _corpus_info_location(FLAGS)
  info = record_format.load_corpus_info(path)
  if info is not None:
    return info
  if getattr(FLAGS, "corpus_info_path", None):
    raise ValueError(f"--corpus_info_path={path} does not exist (the "
                     "corpus_info.json written by data_utils.py)")
  raise ValueError(f"--record_info_dir={FLAGS.record_info_dir}: expected "
                   f"{path} (written by data_utils.py next to tfrecords/)")


def resolve_flags(FLAGS, corpus_info):
  """Fills unset data flags from the data and checks every training flag
  (the rules shared with the other programs: `flag_rules`).

  Args:
    FLAGS: flag values (modified in place: None data flags, `n_token` 0 and
      `train_batch_size` None are filled in; `perm_size` is checked by the
      input function).
    corpus_info: dict read from corpus_info.json.

  Raises:
    ValueError: with a one-line message naming the flag, the value given and
      the expected value.
  """
  flag_rules.check_all(FLAGS)
  where = _corpus_info_location(FLAGS)
  for name in DATA_FLAGS:
    data_value = corpus_info[name]
    given = getattr(FLAGS, name)
    if given is None:
      setattr(FLAGS, name, data_value)
    elif given != data_value:
      raise ValueError(
          f"--{name}={given} does not match the data: {where} has "
          f"{name}={data_value} (drop the flag to use the data's value, or "
          f"point --record_info_dir at records made with {name}={given})")

  data_bsz = corpus_info["bsz_per_host"] * FLAGS.num_hosts
  if FLAGS.train_batch_size is None:
    FLAGS.train_batch_size = data_bsz
  elif FLAGS.train_batch_size != data_bsz:
    raise ValueError(
        f"--train_batch_size={FLAGS.train_batch_size} does not match the "
        f"data: {where} has bsz_per_host={corpus_info['bsz_per_host']}, so "
        f"with --num_hosts={FLAGS.num_hosts} it must be {data_bsz}")

  vocab_size = corpus_info["vocab_size"]
  if not FLAGS.n_token:
    FLAGS.n_token = vocab_size
  elif FLAGS.n_token < vocab_size:
    raise ValueError(
        f"n_token={FLAGS.n_token} (--n_token or --model_config_path) is "
        f"smaller than the data's vocabulary: {where} has "
        f"vocab_size={vocab_size}")
  if FLAGS.d_embed is not None and FLAGS.d_embed != FLAGS.d_model:
    raise ValueError(
        f"--d_embed={FLAGS.d_embed} must equal d_model={FLAGS.d_model} "
        "(XLNet has no separate embedding size)")

  n_cores = FLAGS.num_hosts * FLAGS.num_core_per_host
  if FLAGS.train_batch_size % n_cores:
    raise ValueError(
        f"--train_batch_size={FLAGS.train_batch_size} is not divisible by the "
        f"number of cores num_hosts*num_core_per_host={n_cores}")
  if FLAGS.use_fp16 and FLAGS.use_bfloat16:
    raise ValueError("--use_fp16 and --use_bfloat16 exclude each other")


def resolve_all(FLAGS):
  """Resolves the pretraining flags once: reads `--model_config_path` into
  the model flags, fills and checks the data flags against the corpus info.

  Returns:
    (the model's `XLNetConfig`, built once and passed down; the corpus info
    dict the data flags were resolved from).

  Raises:
    ValueError: one line naming the flag or file.
  """
  model_config_to_flags(FLAGS)
  corpus_info = load_corpus_info(FLAGS)
  resolve_flags(FLAGS, corpus_info)
  return model_lib.XLNetConfig(FLAGS=FLAGS), corpus_info


def bsz_per_host(FLAGS):
  """Rows one host (worker) reads per step: train_batch_size / num_hosts."""
  return FLAGS.train_batch_size // FLAGS.num_hosts


def bsz_per_core(FLAGS):
  """Rows one core (replica, GPU tower, TPU core) trains on per step."""
  return bsz_per_host(FLAGS) // FLAGS.num_core_per_host


def optimizer_config(FLAGS, n_layer=None):  # pylint: disable=invalid-name
  """The run's `OptimizerConfig` from the optimizer flags."""
  return train_config_lib.OptimizerConfig(
      learning_rate=FLAGS.learning_rate, train_steps=FLAGS.train_steps,
      warmup_steps=FLAGS.warmup_steps, decay_method=FLAGS.decay_method,
      min_lr_ratio=FLAGS.min_lr_ratio, adam_epsilon=FLAGS.adam_epsilon,
      weight_decay=FLAGS.weight_decay, clip=FLAGS.clip,
      lr_layer_decay_rate=getattr(FLAGS, "lr_layer_decay_rate", 1.0),
      n_layer=n_layer)


def train_config(FLAGS):  # pylint: disable=invalid-name
  """The run's `TrainConfig` from the loop flags."""
  return train_config_lib.TrainConfig(
      iterations=FLAGS.iterations, seed=FLAGS.seed,
      use_xla=getattr(FLAGS, "use_xla", False),
      use_fp16=getattr(FLAGS, "use_fp16", False),
      loss_scale=getattr(FLAGS, "loss_scale",
                         train_config_lib.INITIAL_LOSS_SCALE))
