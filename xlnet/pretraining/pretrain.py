"""XLNet pretraining on the shared engine (`xlnet/training/trainer.py`), on a
`tf.distribute` strategy: `num_core_per_host` replicas on this host (GPUs,
or logical CPU devices without a GPU), several hosts with
`worker_hosts`/`task_index` or `TF_CONFIG` (MultiWorkerMirroredStrategy), or
the cores of a TPU (TPUStrategy). Every replica reads its own per-core batch
(with `bi_data`: forward rows then backward rows), keeps its own memories,
and the gradients are averaged over replicas. `accum_steps=k` accumulates k
per-core batches per optimizer step.

Resume is exact: the input pipeline's randomness is a function of the
position in the data stream, dropout is seeded from the step, and a resumed
run skips the batches already consumed.
"""
import functools
import math
import os

from absl import logging
import tensorflow as tf

from xlnet import settings_files
from xlnet import validation
from xlnet.training import data_service
from xlnet.training import train_state
from xlnet.training import trainer as trainer_lib
from xlnet import pretraining_loss
from xlnet.data import record_format
from xlnet.pretraining import held_out as held_out_lib
from xlnet.pretraining import inputs


def perplexity(loss):
  """exp(loss); inf (not OverflowError) for a diverged loss."""
  try:
    return math.exp(loss)
  except OverflowError:
    return float("inf")


def format_log_line(step, gnorm, lr, loss):
  """The release's log line; `bpc` is loss/ln 2, i.e. bits per token."""
  return (f"[{step}] | gnorm {gnorm:.2f} lr {lr:8.6f} | loss {loss:.2f} | "
          f"pplx {perplexity(loss):>7.2f}, bpc {loss / math.log(2):>7.4f}")


def log_line(step, mean_loss, out):
  """The pretraining log line and its TensorBoard scalars (`StepLogger`)."""
  return (format_log_line(step, out["gnorm"], out["lr"], mean_loss),
          {"loss": mean_loss, "lr": out["lr"], "gnorm": out["gnorm"],
           "pplx": perplexity(mean_loss)})


def check_model_dir(model_dir):
  """Raises a one-line ValueError when `model_dir` exists as a file."""
  if tf.io.gfile.exists(model_dir) and not tf.io.gfile.isdir(model_dir):
    raise ValueError(f"--model_dir={model_dir} exists and is not a "
                     "directory")


def save_xlnet_config(xlnet_config, model_dir):
  """Writes the model's XLNetConfig to `{model_dir}/config.json`, as the
  released trainers did, so a checkpoint always comes with its config.

  Returns:
    the path written.
  """
  path = os.path.join(model_dir, "config.json")
  xlnet_config.to_json(path)
  return path


OBJECTIVE_FILE = "objective.json"
_OBJECTIVE_WHY = ("a resumed run keeps the objective it was trained with "
                  "(how its examples' span masks and factorization orders "
                  "are made)")
_KIND_NAMES = {"tokens": "token records (data_utils.py --record_kind=tokens)",
               "examples": "example records"}
# What the loss depends on besides the weights and the records' sizes, kept
# with the run so that eval_pretrain.py evaluates as training did
# (`recorded_settings`). The config each lives in:
RUN_SETTINGS = ("mem_len", "clamp_len", "same_length")  # RunConfig
DATA_SETTINGS = ("perm_size",)                           # PretrainData
TRAIN_SETTINGS = ("seed",)  # TrainConfig: keys the factorization orders
# Token records only (example records hold their span masks): PretrainData.
SAMPLING_SETTINGS = ("sample_strategy", "num_predict", "mask_alpha",
                     "mask_beta")
# Those a resumed run must keep: the objective (the others only change how
# a step computes it).
RESUME_SETTINGS = SAMPLING_SETTINGS + DATA_SETTINGS
# What each setting of objective.json holds (`settings_files.read`).
_INTEGER = settings_files.INTEGER
OBJECTIVE_KINDS = {
    "record_kind": settings_files.one_of(*validation.CHOICES["record_kind"]),
    "sample_strategy": settings_files.or_null(settings_files.one_of(
        *validation.CHOICES["sample_strategy"])),
    "num_predict": _INTEGER, "mask_alpha": _INTEGER, "mask_beta": _INTEGER,
    "perm_size": _INTEGER, "seed": _INTEGER,
    "mem_len": settings_files.or_null(_INTEGER), "clamp_len": _INTEGER,
    "same_length": settings_files.BOOLEAN}


def read_objective(model_dir):
  """(the path of `model_dir`'s objective.json, the settings it records:
  None when there is none).

  Raises:
    ValueError: one line naming the file and, where a value is not of its
      kind (`OBJECTIVE_KINDS`), the setting and what was expected.
  """
  path = os.path.join(model_dir, OBJECTIVE_FILE)
  return path, train_state.read_run_record(path, OBJECTIVE_KINDS)


def objective_record(configs, sampling):
  """The dict `objective.json` holds: `sampling` (`inputs.training_input_fn`'s
  record_info["sampling"]: the record kind and the span masks' settings),
  the factorization-order block length in effect, the seed the orders are
  drawn with and the attention's memory settings."""
  return dict(sampling,
              perm_size=configs.data.perm_size or configs.data.reuse_len,
              seed=configs.train.seed,
              **{name: getattr(configs.run, name) for name in RUN_SETTINGS})


def check_objective(configs, sampling, resuming):
  """Records how a run's examples are made and evaluated in
  `model_dir/objective.json` and refuses to resume with another objective:
  the records' kind, the span masks' settings (token records draw them at
  run time, so any flags would do and a resumed run would change its
  objective without a word) and the factorization-order blocks.

  Args:
    configs: the run's `PretrainConfigs` (its `checkpoint.model_dir`: the
      run's directory, whose run lock the caller holds).
    sampling: `inputs.training_input_fn`'s record_info["sampling"].
    resuming: whether the run resumes from a checkpoint of `model_dir`.

  Raises:
    ValueError: one line naming the records or the first flag that differs
      from the record.
  """
  model_dir = configs.checkpoint.model_dir
  record_dir = configs.data.record_info_dir
  record = objective_record(configs, sampling)
  path, saved = os.path.join(model_dir, OBJECTIVE_FILE), {}
  if resuming:
    saved = read_objective(model_dir)[1]
    _warn_unchecked(path, saved, record)
    saved = saved or {}
  kind = saved.get("record_kind", sampling["record_kind"])
  if kind != sampling["record_kind"]:
    raise ValueError(
        f"--record_info_dir={record_dir} holds "
        f"{_KIND_NAMES[sampling['record_kind']]} but {model_dir} was trained "
        f"on {_KIND_NAMES[kind]} ({path}): {_OBJECTIVE_WHY}; give "
        f"--record_info_dir {kind[:-1]} records or use another --model_dir")
  if resuming:  # the flags of the objective (the kind is no flag)
    train_state.compare_run_record(
        path, {name: record[name] for name in RESUME_SETTINGS}, model_dir,
        _OBJECTIVE_WHY)
  train_state.write_run_record(path, record)


def _warn_unchecked(path, saved, record):
  """Logs one line naming the settings of the objective that a resumed
  run's objective.json (`saved`, None when it is gone) does not record:
  they cannot be checked, and the run goes on with this command's
  (`record`), recorded there from now on."""
  unchecked = [name for name in ("record_kind", *RESUME_SETTINGS)
               if name not in (saved or {})]
  if not unchecked:
    return
  what = (f"records no {', '.join(unchecked)}: these settings of the "
          "objective cannot be checked" if saved is not None else
          "is missing (removed, or the run is of an older version): the "
          "objective this run was trained with cannot be checked")
  given = " ".join(f"{name}={record[name]}" for name in unchecked
                   if record[name] is not None)
  logging.warning("%s %s; resuming with this command's %s, recorded there "
                  "now", path, what, given)


def recorded_settings(model_dir, token_records):
  """The settings of `RUN_SETTINGS`, `DATA_SETTINGS`, `TRAIN_SETTINGS` and
  (when both the
  training and `token_records` are token records) `SAMPLING_SETTINGS` that
  the run in `model_dir` recorded; {} when it recorded none (a run of an
  older version, or a directory of downloaded checkpoints).

  Raises:
    ValueError: one line when the record is not a valid one
      (`read_objective`).
  """
  saved = read_objective(model_dir)[1] or {}
  names = RUN_SETTINGS + DATA_SETTINGS + TRAIN_SETTINGS
  if token_records and saved.get("record_kind") == "tokens":
    names += SAMPLING_SETTINGS
  return {name: saved[name] for name in names if name in saved}


def dataset_fn_at(configs, input_fn):
  """`trainer_lib.fit`'s `dataset_fn_at`: the per-worker dataset of
  per-core batches, positioned after the data a resumed run consumed (the
  stream's randomness is keyed by position, so the batches that follow are
  exactly those of an uninterrupted run); with `device.data_service` made
  on tf.data service workers (`data_service.distribute`: the same batches,
  in chunks of steps in no fixed order).

  Args:
    configs: the run's `PretrainConfigs`.
    input_fn: `inputs.training_input_fn(configs)`'s.
  """
  layout, service = configs.batch, configs.device.data_service

  def at(start_step):
    def dataset_fn(input_context):
      host = input_context.input_pipeline_id

      def batches_at(step):
        return input_fn({"batch_size": layout.bsz_per_core, "host": host,
                         "start_host_batch": step * layout.accum_steps})

      if not service:
        return batches_at(start_step)
      return data_service.distribute(
          batches_at, start_step,
          layout.num_core_per_host * layout.accum_steps, service,
          data_service.job_name(configs.checkpoint.model_dir, host,
                                start_step))
    return dataset_fn

  return at


def make_trainer(configs, strategy):
  """The engine `Trainer` of the pretraining loss of `configs`."""
  model, layout, mem_len = configs.model, configs.batch, configs.run.mem_len
  memory = (trainer_lib.MemoryConfig(model.n_layer, mem_len,
                                     layout.bsz_per_core, model.d_model)
            if mem_len else None)
  return trainer_lib.Trainer(
      strategy, pretraining_loss.pretrain_loss_fn(model, configs.run),
      configs.optimizer, configs.checkpoint.model_dir, memory=memory,
      accum_steps=layout.accum_steps, train=configs.train)


def train(configs, strategy, held_out=None):
  """Trains from the newest checkpoint of `model_dir` (or from scratch /
  `init_checkpoint`) to `train_steps`, evaluating on `held_out` (an
  `inputs.HeldOutInput`) every `eval_steps`.

  Returns:
    list of (step, loss) of every step of this run.
  """
  trainer = make_trainer(configs, strategy)
  input_fn, record_info = inputs.training_input_fn(configs)
  host_files = record_info["host_filenames"][trainer.worker]
  layout, model_dir = configs.batch, configs.checkpoint.model_dir

  def prepare(resuming):
    train_state.check_batch_layout(model_dir, layout.record(), resuming)
    check_objective(configs, record_info["sampling"], resuming)
    save_xlnet_config(configs.model, model_dir)

  on_step = None
  if held_out is not None:
    on_step = lambda logger, writer: held_out_hook(
        configs.held_out.eval_steps, configs.optimizer.train_steps, trainer,
        held_out, logger, writer)
  return trainer_lib.fit(
      trainer, dataset_fn_at(configs, input_fn), configs.optimizer,
      configs.checkpoint, configs.train.iterations,
      layout.train_batch_size * configs.data.seq_len * layout.accum_steps,
      "tokens", log_line, same_run=dict(
          model_dir=os.path.normpath(model_dir),
          train_steps=configs.optimizer.train_steps, **layout.record()),
      prepare=prepare, on_step=on_step,
      on_corrupt_data=lambda e: record_format.data_loss_message(
          host_files, record_info["vocab_size"], e),
      input_lost=(data_service.LOST_ERRORS, functools.partial(
          data_service.lost_message, configs.device.data_service))
      if configs.device.data_service else None,
      step_watch=data_service.StepWatch(
          configs.device.data_service, configs.device.data_service_timeout)
      if configs.device.data_service else None)


def held_out_hook(eval_steps, train_steps, trainer, held_out, logger,
                  writer):
  """`on_step` that logs, then evaluates on the held-out records every
  `eval_steps` steps and at the end (on the chief)."""
  evaluator = held_out_lib.Evaluator(
      trainer.template, held_out.mem_shape,
      trainer.memory.n_layer if trainer.memory else 0)

  def on_step(step, out):
    logger(step, out)
    if trainer.chief and (step % eval_steps == 0 or step == train_steps):
      with held_out.bad_data_named():
        results = evaluator.run(held_out.dataset(), held_out.num_batches)
      held_out_lib.log_results(results, step, writer)

  return on_step
