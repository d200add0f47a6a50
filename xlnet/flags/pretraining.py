"""Pretraining flags resolved once against the data into typed configs
(`PretrainConfigs`): `--model_config_path` or the model flags into the
XLNetConfig, the data flags filled from and checked against the records'
corpus_info.json, the batch layout. No flag is written.

`for_train_gpu`, `for_train_tpu` and `for_eval_pretrain` are the three
programs' resolutions (their own checks first, then `resolve`)."""
import dataclasses
import os

from absl import logging
import tensorflow as tf

from xlnet.training import checkpoint_io
from xlnet import model as model_lib
from xlnet import validation
from xlnet.data import record_format
from xlnet.flags import configs as config_flags
from xlnet.pretraining import config as pretrain_config
from xlnet.pretraining import pretrain as pretrain_lib
from xlnet.training import config as train_config_lib
from xlnet.training import strategies
from xlnet.training import tpu_estimator

# Flags that must equal the corresponding corpus_info.json entries.
DATA_FLAGS = pretrain_config.CORPUS_FIELDS


def model_values(FLAGS, model_config_path=None):
  """The model's sizes: the XLNetConfig file `model_config_path` (default
  `--model_config_path`), which wins over the model flags, or those flags.

  Returns:
    dict with exactly `XLNetConfig.keys` (`n_token` may still be 0: taken
    from the data).

  Raises:
    ValueError: when the file is missing or lacks a key.
  """
  path = model_config_path or FLAGS.model_config_path
  if not path:
    return {key: getattr(FLAGS, key) for key in model_lib.XLNetConfig.keys}
  try:
    return model_lib.XLNetConfig(json_path=path).to_dict()
  except ValueError as e:
    raise ValueError(f"--model_config_path={path}: cannot read an "
                     f"XLNetConfig ({e})") from None


def corpus_info_path(record_info_dir):
  """Path of the corpus_info.json next to the first record directory."""
  first = record_info_dir.split(",")[0].rstrip("/")
  # No os.path.normpath: it would turn "gs://b/x" into "gs:/b/x".
  return os.path.join(os.path.dirname(first), "corpus_info.json")


def _corpus_info_location(FLAGS):
  """The corpus_info.json in use: `--corpus_info_path` or the default."""
  return FLAGS.corpus_info_path or corpus_info_path(FLAGS.record_info_dir)


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
  if FLAGS.corpus_info_path:
    raise ValueError(f"--corpus_info_path={path} does not exist (the "
                     "corpus_info.json written by data_utils.py)")
  raise ValueError(f"--record_info_dir={FLAGS.record_info_dir}: expected "
                   f"{path} (written by data_utils.py next to tfrecords/)")


def resolve_flags(FLAGS, corpus_info, model=None, num_hosts=None):
  """Resolves the data flags against the data and checks every training
  flag (the rules shared with the other programs and the configs:
  `config_flags.check_rules`); writes no
  flag.

  Args:
    FLAGS: flag values.
    corpus_info: dict read from corpus_info.json.
    model: the model's sizes (`model_values`; default: from FLAGS).
    num_hosts: hosts reading the data (default `--num_hosts`).

  Returns:
    dict of the resolved values: the DATA_FLAGS (unset ones from the
    data), `train_batch_size` (unset: the data's) and `n_token` (0: the
    data's vocabulary size).

  Raises:
    ValueError: with a one-line message naming the flag, the value given and
      the expected value.
  """
  model = model_values(FLAGS) if model is None else model
  num_hosts = FLAGS.num_hosts if num_hosts is None else num_hosts
  config_flags.check_rules(FLAGS)
  where = _corpus_info_location(FLAGS)
  values = {}
  # Token records draw their span masks at run time: any valid values.
  free = (record_format.SAMPLING_KEYS
          if record_format.is_token_info(corpus_info) else ())
  for name in DATA_FLAGS:
    data_value = corpus_info[name]
    given = getattr(FLAGS, name)
    if given is not None and name in free:
      data_value = given
    elif given is not None and given != data_value:
      raise ValueError(
          f"--{name}={given} does not match the data: {where} has "
          f"{name}={data_value} (drop the flag to use the data's value, or "
          f"point --record_info_dir at records made with {name}={given})")
    values[name] = data_value

  data_bsz = corpus_info["bsz_per_host"] * num_hosts
  if FLAGS.train_batch_size is not None:
    pretrain_config.check_batch(FLAGS.train_batch_size, num_hosts,
                                corpus_info, where)
  values["train_batch_size"] = data_bsz
  pretrain_config.check_vocabulary(model["n_token"], corpus_info, where)
  values["n_token"] = model["n_token"] or corpus_info["vocab_size"]
  if FLAGS.d_embed is not None and FLAGS.d_embed != model["d_model"]:
    raise ValueError(
        f"--d_embed={FLAGS.d_embed} must equal d_model={model['d_model']} "
        "(XLNet has no separate embedding size)")
  return values


def resolve(FLAGS, num_hosts=None, num_core_per_host=None,
            model_config_path=None, checkpoint=None, held_out=None):
  """Resolves the pretraining flags once into typed configs: the model
  config (`--model_config_path`, or the model flags), the data flags filled
  from and checked against the corpus info, the batch layout. Writes no
  flag.

  Args:
    FLAGS: parsed flags (`catalog.define_flags`).
    num_hosts: hosts (workers) of the run (default `--num_hosts`).
    num_core_per_host: replicas per host (default `--num_core_per_host`).
    model_config_path: the model's config file (default
      `--model_config_path`).
    checkpoint: the `CheckpointConfig` (default: from the flags; None when
      there is no `--model_dir`).
    held_out: the `HeldOut` (default: from the flags).

  Returns:
    a `PretrainConfigs`.

  Raises:
    ValueError: one line naming the flag or file.
  """
  num_hosts = FLAGS.num_hosts if num_hosts is None else num_hosts
  cores = (FLAGS.num_core_per_host if num_core_per_host is None
           else num_core_per_host)
  model = model_values(FLAGS, model_config_path)
  corpus_info = load_corpus_info(FLAGS)
  values = resolve_flags(FLAGS, corpus_info, model, num_hosts)
  batch = train_config_lib.BatchLayout(
      train_batch_size=values["train_batch_size"], num_hosts=num_hosts,
      num_core_per_host=cores, accum_steps=FLAGS.accum_steps)
  validation.check_precision(FLAGS.use_tpu, FLAGS.use_bfloat16,
                             FLAGS.use_fp16)
  xlnet_config = model_lib.XLNetConfig.from_dict(
      dict(model, n_token=values["n_token"]), source="flags")
  # resolve_flags checked the data flags against the corpus info (token
  # records: the sampling flags are the run's own).
  data = pretrain_config.PretrainData.from_corpus_info(
      dict(corpus_info, **{k: values[k] for k in DATA_FLAGS}),
      FLAGS.record_info_dir, perm_size=FLAGS.perm_size,
      num_passes=FLAGS.num_passes, sample_strategy=FLAGS.sample_strategy)
  if checkpoint is None and FLAGS.model_dir:
    checkpoint = config_flags.checkpoint_config(FLAGS)
  return pretrain_config.PretrainConfigs(
      model=xlnet_config,
      run=config_flags.run_config(True, False, FLAGS, reuse_len=data.reuse_len,
                                  bi_data=data.bi_data),
      data=data, batch=batch,
      optimizer=config_flags.optimizer_config(FLAGS, xlnet_config.n_layer),
      checkpoint=checkpoint,
      train=config_flags.train_config(FLAGS),
      device=config_flags.device_config(FLAGS),
      held_out=held_out or held_out_config(FLAGS))


def held_out_config(FLAGS, eval_ckpt=None):
  """The `HeldOut` of the `--eval_*` flags (`eval_ckpt`: the checkpoint
  found for `--eval_ckpt`/`--model_dir`)."""
  return pretrain_config.HeldOut(
      eval_steps=FLAGS.eval_steps, eval_split=FLAGS.eval_split,
      eval_record_info_dir=FLAGS.eval_record_info_dir,
      eval_batches=FLAGS.eval_batches,
      eval_ckpt=eval_ckpt or FLAGS.eval_ckpt)


def _engine_checks(FLAGS, on_tpu):
  """The engine path's checks, in order: `--model_dir`, then `--num_hosts`
  against the cluster (GPU/CPU workers: `--worker_hosts` or TF_CONFIG).

  Returns:
    (the `CheckpointConfig`, the number of hosts).
  """
  checkpoint = config_flags.checkpoint_config(FLAGS)
  pretrain_lib.check_model_dir(checkpoint.model_dir)
  return checkpoint, strategies.num_hosts(FLAGS, on_tpu)


def _with_engine(configs, tpu_engine):
  """`configs` with `device.tpu_engine` set ("estimator" or "strategy")."""
  return dataclasses.replace(configs, device=dataclasses.replace(
      configs.device, tpu_engine=tpu_engine))


def for_train_gpu(FLAGS):
  """train_gpu.py's configs: the engine on GPUs/CPUs, this cluster's
  workers.

  Raises:
    ValueError: one line (`--use_tpu`, `--model_dir`, `--num_hosts` against
      the cluster, then `resolve`'s checks).
  """
  if FLAGS.use_tpu:
    raise ValueError("--use_tpu=True: train_gpu.py runs on GPUs/CPUs; use "
                     "train_tpu.py for TPUs")
  checkpoint, num_hosts = _engine_checks(FLAGS, on_tpu=False)
  return _with_engine(resolve(FLAGS, num_hosts=num_hosts,
                              checkpoint=checkpoint), "strategy")


def for_train_tpu(FLAGS):
  """train_tpu.py's configs: `--num_hosts` TPU hosts, or one CPU core with
  `--use_tpu=False`; `device.tpu_engine` resolved to "estimator" or
  "strategy".

  Raises:
    ValueError: one line.
  """
  validation.check_precision(FLAGS.use_tpu, FLAGS.use_bfloat16,
                             FLAGS.use_fp16)
  cores = None
  if not FLAGS.use_tpu:
    if FLAGS.num_hosts != 1:
      raise ValueError(f"--num_hosts={FLAGS.num_hosts} needs --use_tpu=True")
    cores = 1  # on the CPU the TPU trainer runs one core
  if tpu_estimator.chosen(FLAGS.tpu_engine):
    configs = resolve(FLAGS, num_core_per_host=cores,
                      checkpoint=config_flags.checkpoint_config(FLAGS))
    return _with_engine(configs, "estimator")
  checkpoint, num_hosts = _engine_checks(FLAGS, on_tpu=FLAGS.use_tpu)
  return _with_engine(resolve(FLAGS, num_hosts=num_hosts,
                              num_core_per_host=cores,
                              checkpoint=checkpoint), "strategy")


def for_eval_pretrain(FLAGS):
  """eval_pretrain.py's configs: the checkpoint `--eval_ckpt` (default: the
  newest of `--model_dir`) in `held_out.eval_ckpt`, the model config next
  to it unless `--model_config_path` is given.

  Raises:
    ValueError: one line.
  """
  if not FLAGS.model_dir and not FLAGS.eval_ckpt:
    raise ValueError("--model_dir or --eval_ckpt is required (the "
                     "checkpoint to evaluate)")
  prefix = checkpoint_io.resolve_checkpoint(
      FLAGS.eval_ckpt or FLAGS.model_dir, "--eval_ckpt")
  config_path = FLAGS.model_config_path
  if not config_path:
    beside = os.path.join(os.path.dirname(prefix), "config.json")
    config_path = beside if tf.io.gfile.exists(beside) else None
  configs = resolve(FLAGS, model_config_path=config_path,
                    held_out=held_out_config(FLAGS, eval_ckpt=prefix))
  return with_recorded_settings(configs, FLAGS, os.path.dirname(prefix))


def _warn_unrecorded(source, exists, recorded, current, FLAGS):
  """Logs one line naming the settings the loss depends on that the
  training run did not record (`source`, its objective.json, is missing:
  a run of an older version, downloaded checkpoints) and that no flag
  gives: they are the flags' defaults, which may not be the training
  run's (mem_len 384 where it had 16: another loss)."""
  guessed = {name: value for name, value in current.items()
             if name not in recorded and not FLAGS[name].present}
  if guessed:
    logging.warning(
        "%s %s: evaluating with the flags' defaults %s; give the training "
        "run's values where they differ (they change the loss)", source,
        "records no " + ", ".join(sorted(guessed)) if exists
        else "is missing",
        " ".join(f"{name}={value}" for name, value in sorted(guessed.items())))


def with_recorded_settings(configs, FLAGS, model_dir):
  """`configs` evaluated as the training run in `model_dir` evaluated: each
  setting it recorded (`pretrain.recorded_settings`: mem_len, clamp_len,
  same_length, perm_size, seed; the span masks' settings on token records)
  whose
  flag is not given takes the recorded value. Logs one line of what was
  taken, and one per given flag that differs from the record.
  """
  held_out_dir = (configs.held_out.eval_record_info_dir
                  or configs.data.record_info_dir).split(",")[0]
  info = record_format.load_corpus_info(held_out_dir) or {}
  recorded = pretrain_lib.recorded_settings(
      model_dir, record_format.is_token_info(info))
  # The config each setting lives in (the others: PretrainData).
  owners = {name: part for part, names in (
      ("run", pretrain_lib.RUN_SETTINGS),
      ("train", pretrain_lib.TRAIN_SETTINGS)) for name in names}
  source = os.path.join(model_dir, pretrain_lib.OBJECTIVE_FILE)
  exists = tf.io.gfile.exists(source)
  # (The span masks' settings are the run's own unless it was trained on
  # token records too.)
  names = {*recorded, *owners, *pretrain_lib.DATA_SETTINGS, *(
      pretrain_lib.SAMPLING_SETTINGS if record_format.is_token_info(info)
      and not exists else ())}
  current = {name: getattr(getattr(configs, owners.get(name, "data")), name)
             for name in names}
  current["perm_size"] = configs.data.perm_size or configs.data.reuse_len
  _warn_unrecorded(source, exists, recorded, current, FLAGS)
  taken = {}
  for name, value in recorded.items():
    if not FLAGS[name].present:
      taken[name] = value
    elif current[name] != value:
      logging.warning("--%s=%s: the training run used %s (%s); evaluating "
                      "with %s", name, current[name], value, source,
                      current[name])
  if taken:
    logging.info("Settings of the training run (%s): %s", source, " ".join(
        f"{name}={value}" for name, value in sorted(taken.items())))
  parts = {}
  for name, value in taken.items():
    parts.setdefault(owners.get(name, "data"), {})[name] = value
  return dataclasses.replace(configs, **{
      part: dataclasses.replace(getattr(configs, part), **values)
      for part, values in parts.items()})
