"""Fine-tuning flags checked and resolved once, with one-line messages
naming the flag, into the typed settings of `xlnet/finetuning/config.py`:

  resolve_classifier / resolve_squad / resolve_race / resolve_ner (flags)
  -> the keyword arguments of `xlnet.finetuning.api.run_classifier /
  run_squad / run_race / run_ner`.

Batch sizes are resolved here, once: a batch flag is the global batch with
--use_tpu and the batch of one GPU otherwise (as the release).
"""
import dataclasses
import os

from absl import logging
import tensorflow as tf

from xlnet import model as model_lib
from xlnet import task_kinds
from xlnet import validation
from xlnet.data import prepro_utils
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning.classifier import tasks as classifier_tasks
from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.tagging import config as tagging_config
from xlnet.flags import configs as config_flags
from xlnet.reproduce import config as reproduce_config
from xlnet.reproduce import memory_plan
from xlnet.training import checkpoint_io
from xlnet.training import config as train_config_lib
from xlnet.training import strategies


def global_batch_size(flag_values, per_device):
  """Examples per step for a batch-size flag value.

  With `use_tpu` the flag is the global batch; otherwise it is per GPU (as
  in the released GPU command), so a step takes `per_device *
  num_core_per_host` examples.
  """
  if flag_values.use_tpu:
    return per_device
  return per_device * flag_values.num_core_per_host


def _require(flag_values, name, why):
  """Raises unless flag `name` is set; `why` says what it is for."""
  if not getattr(flag_values, name):
    raise ValueError(f"--{name} is required ({why})")


def _same_dir(a, b):
  """Whether two directory paths name the same directory."""
  return os.path.abspath(a).rstrip("/") == os.path.abspath(b).rstrip("/")


def pretrained_config(flag_values):
  """The model's XLNetConfig: `--model_config_path`, else the config beside
  the model's checkpoint (`finetune_config.CONFIG_FILES` in
  --init_checkpoint's directory, then in --model_dir), named in a log line.

  Returns:
    (the XLNetConfig, the path it was read from).

  Raises:
    ValueError: one line naming the flag when none is found or it cannot
      be read.
  """
  path = flag_values.model_config_path
  if not path:
    dirs = [flag_values.model_dir] if flag_values.model_dir else []
    if flag_values.init_checkpoint:
      dirs.insert(0, os.path.dirname(checkpoint_io.resolve_checkpoint(
          flag_values.init_checkpoint, "--init_checkpoint")) or ".")
    found = [os.path.join(d, name) for d in dirs
             for name in finetune_config.CONFIG_FILES
             if tf.io.gfile.exists(os.path.join(d, name))]
    if not found:
      raise ValueError(
          "--model_config_path is required (the pretrained model's config "
          f"json): no {' or '.join(finetune_config.CONFIG_FILES)} beside "
          "--init_checkpoint or in --model_dir")
    path = found[0]
    logging.info("The model's sizes: %s (--model_config_path not given)",
                 path)
  try:
    return model_lib.XLNetConfig(json_path=path), path
  except ValueError as e:
    raise ValueError(f"--model_config_path={path}: {e}") from None


def check_common_flags(flag_values):
  """Validates the common flags; raises a one-line ValueError naming one.

  Checks: the model config and SentencePiece model are given (and the
  config readable), model_dir is given and differs from the
  init_checkpoint's directory (fine-tuning checkpoints would otherwise mix
  with, and resume from, the pretrained one), the init_checkpoint exists,
  and the numbers are in range (the steps, batch sizes, `max_save`,
  dropout, ...: by the rules every program and config shares,
  `config_flags.check_rules`), the precision possible.

  Returns:
    (the XLNetConfig, its path): `pretrained_config`.
  """
  _require(flag_values, "spiece_model_file", "the pretrained model's "
           "SentencePiece model")
  _require(flag_values, "model_dir", "fine-tuning checkpoints and results")
  config, config_path = pretrained_config(flag_values)
  if flag_values.init_checkpoint:
    prefix = checkpoint_io.resolve_checkpoint(flag_values.init_checkpoint,
                                              "--init_checkpoint")
    if _same_dir(flag_values.model_dir, os.path.dirname(prefix) or "."):
      raise ValueError(
          f"--model_dir={flag_values.model_dir} is the directory of "
          f"--init_checkpoint={flag_values.init_checkpoint}; give "
          "fine-tuning its own model_dir (it would resume from, and save "
          "beside, the pretrained checkpoint)")
  config_flags.check_rules(flag_values)
  validation.check_precision(flag_values.use_tpu, flag_values.use_bfloat16,
                             flag_values.use_fp16)
  return config, config_path


def require(flag_values, *names, why):
  """Raises ValueError naming the first unset flag of `names`."""
  for name in names:
    if getattr(flag_values, name) in (None, ""):
      raise ValueError(f"--{name} is required {why}")


################################################################################
# Typed settings shared by the programs.
################################################################################
def batch_layout(flag_values):
  """The training `BatchLayout`: --train_batch_size is the global batch
  with --use_tpu, else the batch of each of the num_hosts *
  num_core_per_host replicas (the hosts: the TPU's, or the workers of
  --worker_hosts/TF_CONFIG)."""
  hosts = strategies.num_hosts(flag_values, flag_values.use_tpu)
  per_step = flag_values.train_batch_size
  if not flag_values.use_tpu:
    per_step *= hosts * flag_values.num_core_per_host
  return train_config_lib.BatchLayout(
      train_batch_size=per_step, num_hosts=hosts,
      num_core_per_host=flag_values.num_core_per_host,
      accum_steps=flag_values.accum_steps)


def engine_config(flag_values):
  """The run's `EngineConfig` (checkpoints, optimizer, layout, loop,
  devices)."""
  return finetune_config.EngineConfig(
      checkpoint=config_flags.checkpoint_config(flag_values),
      optimizer=config_flags.optimizer_config(flag_values),
      layout=batch_layout(flag_values),
      train=config_flags.train_config(flag_values),
      device=config_flags.device_config(flag_values))


def memory_planned(flag_values, engine, xlnet_config, task_kind):
  """`engine` with its batch layout split for --device_memory_gb: the
  examples of each optimizer step (--train_batch_size x --accum_steps per
  device) in the fewest micro-batches that fit the device
  (`memory_plan.plan_accumulation`, held to --memory_calibration or the
  published GPU measurements, with --recompute and --freeze_layers). Logs
  the plan, its source first.

  Raises:
    ValueError: one line naming the flag and what would fit when even one
      example per device does not, or --memory_calibration is given alone
      or unreadable (a --device_memory_gb not > 0 is refused by its rule
      before: `config_flags.check_rules`).
  """
  gib = flag_values.device_memory_gb
  calibration = flag_values.memory_calibration
  if gib is None:
    if calibration:
      raise ValueError(f"--memory_calibration={calibration} needs "
                       "--device_memory_gb (the memory it plans for)")
    return engine
  layout = engine.layout
  replicas = layout.num_hosts * layout.num_core_per_host
  # (A bad calibration file is its own line: the advice below is not for it.)
  terms = memory_plan.device_terms(calibration, strategies.device_name())
  try:
    plan = memory_plan.plan_accumulation(
        xlnet_config, task_kind, flag_values.max_seq_length,
        layout.train_batch_size * layout.accum_steps, replicas,
        memory_plan.precision_of(flag_values.use_tpu, flag_values.use_bfloat16,
                                 flag_values.use_fp16),
        gib, terms, recompute=flag_values.recompute,
        freeze_layers=flag_values.freeze_layers)
  except ValueError as e:
    raise ValueError(f"--device_memory_gb={gib:g}: {e}") from None
  logging.info("Memory plan (%s): %s", plan.source, plan.summary())
  return dataclasses.replace(engine, layout=dataclasses.replace(
      layout, train_batch_size=plan.micro_batch * replicas,
      accum_steps=plan.accum_steps))


def from_flags(config_class, flag_values, **resolved):
  """A `config_class` (a dataclass of `xlnet/finetuning/config.py`) whose
  fields are the flags of their names, but for those given in `resolved`
  (field name -> value: batch sizes made global, loaded configs, ...)."""
  values = {field.name: getattr(flag_values, field.name)
            for field in dataclasses.fields(config_class)
            if field.name not in resolved}
  return config_class(**values, **resolved)


def model_config(flag_values, xlnet_config):
  """The run's `ModelConfig` around the loaded `xlnet_config`."""
  return finetune_config.ModelConfig(
      xlnet_config, config_flags.run_config(True, True, flag_values),
      flag_values.summary_type, flag_values.use_summ_proj)


################################################################################
# run_classifier.py
################################################################################
def check_classifier_flags(flag_values):
  """Validates the task flags; raises a one-line ValueError naming one."""
  if not (flag_values.do_train or flag_values.do_eval or
          flag_values.do_predict):
    raise ValueError("nothing to do: set --do_train, --do_eval and/or "
                     "--do_predict")
  if not flag_values.task_name:
    raise ValueError("--task_name is required (one of "
                     f"{', '.join(classifier_tasks.NAMES)})")
  for name, why in (("data_dir", "the task's data"),
                    ("output_dir", "where the feature records are cached")):
    _require(flag_values, name, why)
  if not tf.io.gfile.isdir(flag_values.data_dir):
    raise ValueError(f"--data_dir={flag_values.data_dir} is not a directory")
  if flag_values.do_predict and not flag_values.predict_dir:
    raise ValueError("--predict_dir is required with --do_predict")
  finetune_config.check_classifier(flag_values)
  if flag_values.long_documents != "truncate" and (
      flag_values.device_memory_gb is not None):
    raise ValueError(
        f"--device_memory_gb plans one sequence per example, but "
        f"--long_documents={flag_values.long_documents} reads "
        f"--max_windows={flag_values.max_windows} windows: give "
        "--train_batch_size and --accum_steps yourself")
  if (flag_values.recompute and flag_values.long_documents == "memory" and
      flag_values.bptt_windows > 1):
    raise ValueError(
        f"--recompute passes no gradient into the memory, which "
        f"--bptt_windows={flag_values.bptt_windows} asks for: use "
        "--bptt_windows=1 or leave out --recompute")
  if flag_values.max_seq_length > classifier_features.PRETRAIN_SEQ_LENGTH:
    logging.warning(
        "--max_seq_length=%d exceeds the released models' pretraining "
        "length %d: relative distances beyond that were never trained",
        flag_values.max_seq_length, classifier_features.PRETRAIN_SEQ_LENGTH)


def _check_vocabulary(flag_values, xlnet_config, config_path):
  """Raises unless the SentencePiece model fits the model's vocabulary
  (that of the config at `config_path`)."""
  sp_model = prepro_utils.load_sp_model(flag_values.spiece_model_file,
                                        "--spiece_model_file")
  if sp_model.get_piece_size() > xlnet_config.n_token:
    raise ValueError(
        f"--spiece_model_file={flag_values.spiece_model_file} has "
        f"{sp_model.get_piece_size()} pieces but --model_config_path="
        f"{config_path} has n_token={xlnet_config.n_token}: "
        "they belong to different models")


def resolve_classifier(flag_values):
  """run_classifier.py's flags, checked, as the keyword arguments of
  `api.run_classifier`."""
  check_classifier_flags(flag_values)
  return _labelled_task(finetune_config.ClassifierConfig, flag_values,
                        task_kinds.CLASSIFIER.name)


def _labelled_task(config_class, flag_values, task_kind):
  """The keyword arguments of `api.run_classifier` or `api.run_ner`: the
  task's settings (`config_class`, its label list from --label_list), the
  model and the engine (planned for `task_kind`), the steps."""
  xlnet_config, config_path = check_common_flags(flag_values)
  _check_vocabulary(flag_values, xlnet_config, config_path)
  task = from_flags(
      config_class, flag_values,
      eval_batch_size=global_batch_size(flag_values,
                                        flag_values.eval_batch_size),
      predict_batch_size=global_batch_size(flag_values,
                                           flag_values.predict_batch_size),
      label_list=None
      if flag_values.label_list is None else tuple(flag_values.label_list))
  return dict(
      task=task, model=model_config(flag_values, xlnet_config),
      engine=memory_planned(flag_values, engine_config(flag_values),
                            xlnet_config, task_kind),
      do_train=flag_values.do_train, do_eval=flag_values.do_eval,
      do_predict=flag_values.do_predict)


################################################################################
# run_squad.py
################################################################################
def check_squad_flags(flag_values):
  """Raises ValueError (naming the flag) on a setting that cannot work."""
  if not (flag_values.do_prepro or flag_values.do_train or
          flag_values.do_predict):
    raise ValueError("nothing to do: set --do_prepro, --do_train and/or "
                     "--do_predict")
  require(flag_values, "spiece_model_file", "output_dir",
          why="(the SentencePiece model and the records directory)")
  if flag_values.do_prepro or flag_values.do_train:
    require(flag_values, "train_file", why="with --do_prepro/--do_train")
  if flag_values.do_train or flag_values.do_predict:
    require(flag_values, "model_dir", why="with --do_train/--do_predict")
  if flag_values.do_predict:
    require(flag_values, "predict_file", why="with --do_predict")
  finetune_config.check_squad(flag_values)
  config_flags.check_rules(flag_values)


def resolve_squad(flag_values):
  """run_squad.py's flags, checked, as the keyword arguments of
  `api.run_squad` (no model nor engine with --do_prepro alone)."""
  check_squad_flags(flag_values)
  task = from_flags(finetune_config.SquadConfig, flag_values,
                    predict_batch_size=global_batch_size(
                        flag_values, flag_values.predict_batch_size))
  model = engine = None
  if flag_values.do_train or flag_values.do_predict:
    model = model_config(flag_values, pretrained_config(flag_values)[0])
    engine = memory_planned(flag_values, engine_config(flag_values),
                            model.xlnet_config, task_kinds.SQUAD.name)
  return dict(task=task, model=model, engine=engine,
              do_prepro=flag_values.do_prepro, do_train=flag_values.do_train,
              do_predict=flag_values.do_predict,
              seed=flag_values.seed if engine is None else None)


################################################################################
# run_race.py
################################################################################
def check_race_flags(flag_values):
  """Raises ValueError (naming the flag) on a setting that cannot work."""
  if not (flag_values.do_train or flag_values.do_eval):
    raise ValueError("nothing to do: set --do_train and/or --do_eval")
  require(flag_values, "data_dir", "spiece_model_file", "output_dir",
          "model_dir",
          why="(RACE data, SentencePiece model, records directory and "
          "checkpoint directory)")
  finetune_config.check_race(flag_values)
  config_flags.check_rules(flag_values)


def resolve_race(flag_values):
  """run_race.py's flags, checked, as the keyword arguments of
  `api.run_race`."""
  check_race_flags(flag_values)
  task = from_flags(finetune_config.RaceConfig, flag_values,
                    eval_batch_size=global_batch_size(
                        flag_values, flag_values.eval_batch_size))
  model = model_config(flag_values, pretrained_config(flag_values)[0])
  engine = memory_planned(flag_values, engine_config(flag_values),
                          model.xlnet_config, task_kinds.RACE.name)
  return dict(task=task, model=model, engine=engine,
              do_train=flag_values.do_train, do_eval=flag_values.do_eval)


################################################################################
# run_ner.py
################################################################################
def check_ner_flags(flag_values):
  """Raises ValueError (naming the flag) on a setting that cannot work."""
  if not (flag_values.do_train or flag_values.do_eval or
          flag_values.do_predict):
    raise ValueError("nothing to do: set --do_train, --do_eval and/or "
                     "--do_predict")
  require(flag_values, "spiece_model_file", "output_dir", "model_dir",
          why="(SentencePiece model, records directory and checkpoint "
          "directory)")
  if flag_values.do_train:
    require(flag_values, "train_file", why="with --do_train")
  if flag_values.do_eval:
    require(flag_values, "eval_file", why="with --do_eval")
  if flag_values.do_predict:
    require(flag_values, "predict_dir", why="with --do_predict")
    if not (flag_values.predict_file or flag_values.eval_file):
      raise ValueError("--predict_file (or --eval_file) is required with "
                       "--do_predict")
  for name in ("train_file", "eval_file", "predict_file"):
    path = getattr(flag_values, name)
    if path and not tf.io.gfile.exists(path):
      raise ValueError(f"--{name}={path}: no such file")
  tagging_config.check_tagging(flag_values)
  config_flags.check_rules(flag_values)


def resolve_ner(flag_values):
  """run_ner.py's flags, checked, as the keyword arguments of
  `api.run_ner`."""
  check_ner_flags(flag_values)
  return _labelled_task(tagging_config.TaggingConfig, flag_values,
                        task_kinds.TAGGING.name)


################################################################################
# reproduce.py
################################################################################
def resolve_reproduce(flag_values):
  """reproduce.py's flags as a `ReproduceConfig` (each field from the flag
  of its name; `reproduce.check_settings` checks them)."""
  return from_flags(
      reproduce_config.ReproduceConfig, flag_values,
      tasks=None if flag_values.tasks is None else tuple(flag_values.tasks))
