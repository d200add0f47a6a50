"""Pretraining flags resolved against the data: `--model_config_path` into
the model flags, the data flags filled from and checked against the records'
corpus_info.json, and the derived batch sizes."""
import os

import tensorflow as tf

from xlnet import model as model_lib
from xlnet.data import record_format
from xlnet.flags import rules as flag_rules

# Flags that must equal the corresponding corpus_info.json entries.
DATA_FLAGS = ("seq_len", "reuse_len", "uncased", "bi_data", "mask_alpha",
              "mask_beta", "num_predict")


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
