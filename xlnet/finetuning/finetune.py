"""Fine-tuning and inference, shared by run_classifier.py, run_squad.py,
run_race.py and run_ner.py.

A task gives a loss function and an outputs function built on the model with
`tf.compat.v1.get_variable` (its head's variables keep the release's names);
this module runs them:

* on CPUs/GPUs (`--num_core_per_host` replicas on each host, one host or
  the workers of `--worker_hosts`/TF_CONFIG) and, with `--use_tpu` on
  TensorFlow >= 2.16, on a TPUStrategy, through the shared engine
  (`xlnet/training/trainer.py`): resume from `--model_dir` after a kill or a
  signal (with the batch layout it was trained with), one trainer per
  `--model_dir` (`xlnet/training/run_lock.py`, held by the chief), warm
  start from `--init_checkpoint` by name, NaN guard, atomic checkpoints;
* with `--use_tpu` on TensorFlow 2.15, through TPUEstimator (as released),
  with the same functions and the same optimizer step.

The settings come typed (`xlnet/finetuning/config.py`: an `EngineConfig`),
their batch sizes resolved to the examples of a step over all replicas; the
programs resolve the release's batch flags (global with `--use_tpu`, per
GPU otherwise) into them once (`xlnet/flags/finetuning.py`).

Over several hosts every worker trains; the chief alone writes the feature
records (`records_wait`), evaluates and predicts (`runs_here`, on its own
devices after training) and writes the results (docs/distributed.md).
"""

import contextlib
import os
import shlex
import sys

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet import errors
from xlnet import io_utils
from xlnet.finetuning import config as finetuning_config
from xlnet.training import predictor as predictor_lib
from xlnet.training import progress
from xlnet.training import strategies
from xlnet.training import tpu_estimator
from xlnet.training import train_state
from xlnet.training import trainer as trainer_lib
from xlnet.training import warm_start
from xlnet.training import checkpoint_io
from xlnet.training import checkpoint_resume
from xlnet.training import run_lock

def use_estimator(device):
  """TPUEstimator for a TPU where it exists (TensorFlow 2.15)."""
  return device.use_tpu and tpu_estimator.tpu_estimator() is not None


def is_chief(device):
  """Whether this process is the chief (process 0) of its run, known
  before any strategy exists: it alone writes the feature records, the
  results and the run records; a TPU run has one process."""
  return device.use_tpu or strategies.cluster_task(device.worker_hosts,
                                                   device.task_index)[0] == 0


def records_wait(device, timeout):
  """`record_cache.prepare`'s `wait`: None on the chief, which writes the
  feature records; `timeout` seconds on the other workers, which wait for
  them."""
  return None if is_chief(device) else timeout


def runs_here(device, what):
  """Whether this process runs `what` (evaluation, prediction): every
  process but the non-chief workers of a multi-worker run, which log one
  line and leave it to the chief (it runs it alone, after training, on
  its own devices, inside `chief_alone`)."""
  if is_chief(device):
    return True
  index, count = strategies.cluster_task(device.worker_hosts,
                                         device.task_index)
  logging.info("Process %d of %d: %s left to the chief (process 0), which "
               "runs it alone after training", index, count, what)
  return False


@contextlib.contextmanager
def chief_alone():
  """The block after a multi-worker training: the chief runs it (its
  evaluation and prediction) while the other workers wait, and all leave
  it together, as TensorFlow's coordination service expects (a worker that
  exits early is reported as failed, and the chief's collective runtime
  aborted). An error in the chief's block still releases the others.
  Nothing to wait for when this process trained no multi-worker strategy.

  Raises:
    progress.WorkerLost: on a waiting worker, when the chief died.
  """
  strategy = strategies.cluster_strategy()
  if strategy is None:
    yield
    return
  try:
    yield
  except Exception:
    strategies.barrier(strategy)
    raise
  if not strategies.is_chief(strategy):
    logging.info("Training done; waiting for the chief to finish (the "
                 "workers of a run leave together)")
  try:
    strategies.barrier(strategy)
  except progress.peer_errors() as e:
    raise progress.WorkerLost(
        f"the chief stopped before it finished ({type(e).__name__} in a "
        "collective op; its log says why); the training is complete and "
        "saved") from None


def log_line(step, mean_loss, out):
  """The fine-tuning log line and its TensorBoard scalars (`StepLogger`)."""
  return (f"[{step}] | loss {mean_loss:.4f} | lr {out['lr']:.6f} | gnorm "
          f"{out['gnorm']:.2f}", {"loss": mean_loss, "lr": out["lr"],
                                  "gnorm": out["gnorm"]})


_HEAD_WHY = "its head pools the sequence that way"


def check_head(model_dir, head):
  """Refuses to evaluate or predict with a head that pools the sequence
  otherwise than the one `model_dir` was trained with (its
  `config.HEAD_FILE`).

  Args:
    model_dir: the fine-tuned run's directory.
    head: `ModelConfig.head_record()` of this run, or None (no summary).

  Raises:
    ValueError: one line naming the flag whose value differs.
  """
  if head:
    train_state.compare_run_record(
        os.path.join(model_dir, finetuning_config.HEAD_FILE), head, model_dir,
        _HEAD_WHY)


def warn_if_init_head_differs(init_checkpoint, head):
  """Logs one warning when `init_checkpoint` comes from a directory whose
  head.json records another summary than `head` (e.g. an HF model
  converted with `--to=tf` that pools by "mean"): legitimate for a new
  head, a silent change of function for a loaded one."""
  prefix = checkpoint_io.resolve_checkpoint(init_checkpoint,
                                          "--init_checkpoint")
  recorded = train_state.read_run_record(os.path.join(
      os.path.dirname(prefix), finetuning_config.HEAD_FILE))
  if head and recorded and recorded != head:
    logging.warning(
        "--init_checkpoint=%s was fine-tuned with %s (its %s) but this run "
        "pools with %s", init_checkpoint, recorded,
        finetuning_config.HEAD_FILE, head)


def _record_head(model_dir, head, resuming):
  """Records `head` in model_dir (see `check_head`); a resumed run must
  keep it."""
  if head:
    train_state.check_run_record(model_dir, finetuning_config.HEAD_FILE, head,
                                 resuming, _HEAD_WHY)


def _compare_sizes(path, sizes, model_dir):
  """Refuses to resume `model_dir` with other model sizes than its
  `config.json` (`path`) records (the model's sizes are no flags of the
  fine-tuning programs: they come from --model_config_path).

  Raises:
    ValueError: one line naming the first size that differs.
  """
  saved = train_state.read_run_record(path) or {}
  for name, value in sizes.items():
    if name in saved and saved[name] != value:
      raise ValueError(
          f"--model_config_path gives {name}={value} but {model_dir} was "
          f"trained with {name}={saved[name]} ({path}): its checkpoints "
          "have those sizes; give the config it was trained with or use "
          "another --model_dir")


def _record_model(model_dir, record, resuming):
  """Writes the model's sizes (`ModelRecord.xlnet_config`) to model_dir's
  `config.json` (what `XLNetConfig(json_path=...)`, the export and
  `loaded_model.load` read), the task's settings (`ModelRecord.task`) to
  its `TASK_FILE` and a copy of the SentencePiece model to its
  `SPIECE_FILE`, each atomically. A resumed run must keep the sizes; the
  task's settings are the latest run's (a resumed run may, e.g., read
  longer sequences)."""
  if record is None:
    return
  path = os.path.join(model_dir, finetuning_config.MODEL_CONFIG_FILE)
  if resuming:
    _compare_sizes(path, record.xlnet_config.to_dict(), model_dir)
  record.xlnet_config.to_json(path)
  if record.task is not None:
    train_state.write_run_record(
        os.path.join(model_dir, finetuning_config.TASK_FILE), record.task)
  if record.spiece_model_file:
    with tf.io.gfile.GFile(record.spiece_model_file, "rb") as f:
      io_utils.atomic_write(os.path.join(
          model_dir, finetuning_config.SPIECE_FILE), f.read())


def train(run, input_fn, loss_fn, allow_missing=(), head=None, record=None):
  """Fine-tunes until `run.optimizer.train_steps`, resuming from
  `run.model_dir`.

  Args:
    run: an `EngineConfig` with its optimizer and layout.
    input_fn: `input_fn(params)` -> dataset of batch-major feature dicts,
      `params["batch_size"]` examples each (static: drop the remainder),
      repeating, the same on every worker (each keeps its replicas' share,
      `strategies.worker_share`).
    loss_fn: `loss_fn(features, is_training)` -> float32 scalar loss.
    allow_missing: regular expressions of variables `init_checkpoint` may
      lack (the task's new head).
    head: `ModelConfig.head_record()` of a head that summarizes the
      sequence (recorded in model_dir, kept by a resumed run), or None.
    record: a `config.ModelRecord` (the model's sizes and the task's
      settings, recorded in model_dir, kept by a resumed run), or None.

  Returns:
    list of (step, loss) of the steps this run made.

  Raises:
    ValueError: bad checkpoint or settings (another batch layout than the
      one `model_dir` was trained with included); run_lock.Locked:
      another trainer uses `model_dir`; progress.StopTraining after a
      signal, a divergence or a corrupted record (progress saved first).
  """
  if use_estimator(run.device):
    with run_lock.hold(run.model_dir):
      resuming = bool(checkpoint_io.list_checkpoints(run.model_dir))
      _record_head(run.model_dir, head, resuming)
      _record_model(run.model_dir, record, resuming)
      train_state.check_frozen_layers(
          run.model_dir, run.optimizer.freeze_layers, resuming)
      return _estimator_train(run, input_fn, loss_fn, allow_missing)
  strategy = strategies.for_training(run.device, run.layout)
  with run_lock.hold(run.model_dir, strategies.is_chief(strategy)):
    return _engine_train(run, strategy, input_fn, loss_fn, allow_missing,
                         head, record)


def batch_layout_record(layout, use_tpu):
  """What a resumed fine-tuning run must keep (`train_state.check_batch_layout`),
  the batch named as its flag: global on TPUs, per GPU otherwise (as
  model_dirs trained before store it)."""
  return dict(layout.record(), train_batch_size=(
      layout.train_batch_size if use_tpu else layout.bsz_per_core))


def _engine_train(run, strategy, input_fn, loss_fn, allow_missing, head,
                  record):
  """`train` on the engine (`trainer_lib.fit`), with the run lock held."""
  model_dir, layout = run.model_dir, run.layout
  n = strategy.num_replicas_in_sync
  per_replica, accum = layout.bsz_per_core, layout.accum_steps
  trainer = trainer_lib.Trainer(
      strategy, lambda f, mems, is_training: (loss_fn(f, is_training), None,
                                              {}),
      run.optimizer, model_dir, accum_steps=accum, train=run.train)

  def dataset_fn_at(start):
    def dataset_fn(context):
      local = max(1, n // context.num_input_pipelines)
      dataset = strategies.worker_share(
          input_fn({"batch_size": per_replica}), context, local)
      return dataset.skip(start * accum * local) if start else dataset
    return dataset_fn

  layout_record = batch_layout_record(layout, run.device.use_tpu)

  def prepare(resuming):
    if resuming and is_resplit(model_dir, layout_record):
      logging.warning(
          "Resuming with --train_batch_size=%d --accum_steps=%d, another "
          "split of the same examples per step than %s records",
          layout_record["train_batch_size"], layout_record["accum_steps"],
          train_state.LAYOUT_FILE)
      resuming = False  # records the new split
    train_state.check_batch_layout(model_dir, layout_record, resuming)
    _record_head(model_dir, head, resuming)
    _record_model(model_dir, record, resuming)

  return trainer_lib.fit(
      trainer, dataset_fn_at, run.optimizer, run.checkpoint,
      run.train.iterations, per_replica * n * accum, "examples", log_line,
      allow_missing=allow_missing, same_run=dict(
          model_dir=os.path.normpath(model_dir),
          train_steps=run.optimizer.train_steps, **layout_record),
      prepare=prepare,
      out_of_memory=lambda: out_of_memory_advice(strategy, layout))


def is_resplit(model_dir, record):
  """Whether `record` (`batch_layout_record`) splits each optimizer step's
  examples differently from the layout `model_dir` records, keeping every
  device's examples per step (train_batch_size x accum_steps) and the
  devices: the data stays exact, as each step takes the next train_batch_size
  x accum_steps x devices examples of one stream
  (`strategies.worker_share`) whatever the split; only the dropout masks,
  drawn per micro-batch, differ."""
  old = train_state.read_run_record(
      os.path.join(model_dir, train_state.LAYOUT_FILE))
  if not old or old == record or set(old) != set(record):
    return False
  same = lambda k: old[k] == record[k]  # noqa: E731
  return (all(same(k) for k in record
              if k not in ("train_batch_size", "accum_steps"))
          and old["train_batch_size"] * old["accum_steps"]
          == record["train_batch_size"] * record["accum_steps"])


def safer_split(micro_batch, accum_steps):
  """The next split of a device's micro_batch x accum_steps examples with
  a smaller micro-batch (accum_steps doubled when micro_batch is even), or
  None when the micro-batch is 1."""
  smaller = [d for d in range(micro_batch - 1, 0, -1) if micro_batch % d == 0]
  if not smaller:
    return None
  return smaller[0], accum_steps * micro_batch // smaller[0]


def with_flags(argv, **values):
  """`argv` with each flag of `values` set to its value (appended after
  any earlier form of it is dropped)."""
  out, value_next = [], False
  for arg in argv:
    if value_next:  # the value of a dropped `--flag value`
      value_next = False
      continue
    if arg.startswith("-") and arg.lstrip("-").split("=")[0] in values:
      value_next = "=" not in arg
      continue
    out.append(arg)
  return out + [f"--{k}={v}" for k, v in values.items()]


def _device_names(strategy):
  """The training devices, e.g. `GPU:0 (NVIDIA A100-SXM4-40GB)`."""
  try:
    devices = strategy.extended.worker_devices
  except RuntimeError:  # the default strategy: TensorFlow's default device
    devices = [(tf.config.list_logical_devices("GPU")
                or tf.config.list_logical_devices("CPU"))[0].name]
  names = []
  for device in devices:
    short = device.split("device:")[-1]
    gpus = [g for g in tf.config.list_physical_devices("GPU")
            if g.name.split("physical_device:")[-1] == short]
    detail = (tf.config.experimental.get_device_details(gpus[0]).get(
        "device_name") if gpus else None)
    names.append(f"{short} ({detail})" if detail else short)
  return ", ".join(names)


def out_of_memory_advice(strategy, layout):
  """The part of the out-of-memory line that names the plan, the device
  and the command with the next safer plan."""
  b, accum = layout.bsz_per_core, layout.accum_steps
  plan = (f"the plan --train_batch_size={b} per device x --accum_steps="
          f"{accum} does not fit {_device_names(strategy)}")
  split = safer_split(b, accum)
  if split is None:
    return (f"{plan}, and 1 example per device is the least: use "
            "--use_fp16 or --use_bfloat16, or a shorter --max_seq_length")
  command = shlex.join([os.path.basename(sys.argv[0])] + with_flags(
      sys.argv[1:], train_batch_size=split[0], accum_steps=split[1]))
  return f"{plan}; the same batch, split further: {command}"


@contextlib.contextmanager
def inference_memory(run, doing, flag, global_batch):
  """Turns running out of device memory in the block, the inference of an
  evaluation or a prediction, into one line naming its batch flag:
  training's batch, plan and accumulation, which the top's line names,
  change nothing there.

  Args:
    run: the `EngineConfig`.
    doing: what the block does ("evaluating", "predicting").
    flag: the flag of its batch (eval_batch_size, predict_batch_size).
    global_batch: its examples per step over all devices (the flag's value
      with --use_tpu, else per GPU: `flags/finetuning.global_batch_size`).
  """
  try:
    yield
  except tf.errors.ResourceExhaustedError as e:
    if io_utils.resource_cause(e):
      raise  # a full disk, not memory
    batch = global_batch // (1 if run.device.use_tpu
                             else _replicas_per_host(run))
    cause = errors.op_error_cause(e)[:300]
    advice = (f"a smaller --{flag} fits better (e.g. --{flag}={batch // 2})"
              if batch > 1 else "even 1 example per step does not fit: use "
              "--use_fp16 or --use_bfloat16, or a shorter --max_seq_length")
    raise errors.Stop(
        f"out of device memory while {doing} with --{flag}={batch} "
        f"({cause}): {advice}; the trained checkpoints are kept, and a "
        "rerun trains no step again") from None


def predict(run, checkpoint, input_fn, outputs_fn, global_batch):
  """The outputs of a checkpoint's model for every example of a dataset.

  Args:
    run: an `EngineConfig` (its device and, on GPUs, the replicas of its
      layout).
    checkpoint: a checkpoint prefix (or directory / DIR/latest).
    input_fn: `input_fn(params)` -> finite dataset of batch-major feature
      dicts (any last batch size).
    outputs_fn: `outputs_fn(features, is_training)` -> dict of per-example
      tensors.
    global_batch: examples per step over all replicas.

  Returns:
    dict name -> np.ndarray `[num_examples, ...]` in input order.
  """
  prefix = checkpoint_io.resolve_checkpoint(checkpoint, "checkpoint")
  if use_estimator(run.device):
    return _estimator_predict(run, prefix, input_fn, outputs_fn,
                              global_batch)
  strategy = strategies.for_inference(run.device, _replicas_per_host(run))
  n = strategy.num_replicas_in_sync
  if global_batch % n:
    raise ValueError(f"a batch of {global_batch} cannot be split over {n} "
                     "replicas")
  per_replica = global_batch // n
  predictor = predictor_lib.Predictor(strategy, lambda f: outputs_fn(f, False))
  dataset = input_fn({"batch_size": per_replica})
  spec = predictor_lib.pad_to_full_steps(dataset, per_replica, 1).element_spec
  predictor.restore(prefix, {k: s for k, s in spec.items()
                             if k != predictor_lib.REAL})
  return predictor.predict(dataset, per_replica)


def predict_records(run, input_fn, outputs_fn, global_batch):
  """`predict` with the latest checkpoint of `run.model_dir`, one dict of
  NumPy values per record, in input order.

  Args:
    run, input_fn, outputs_fn, global_batch: as `predict`.
  """
  outputs = predict(run, run.model_dir, input_fn, outputs_fn, global_batch)
  return [dict(zip(outputs, values)) for values in zip(*outputs.values())]


def _replicas_per_host(run):
  """GPU/CPU replicas of the run (1 without a layout)."""
  return run.layout.num_core_per_host if run.layout else 1


################################################################################
# TPUEstimator (TensorFlow 2.15, --use_tpu).
################################################################################
def _estimator(run, model_fn, **batch_sizes):
  """The TPUEstimator of `run` (an `EngineConfig`; its layout gives the TPU
  cores, so it is required here even to predict)."""
  if run.layout is None:
    raise ValueError("EngineConfig.layout is required with use_tpu: its "
                     "num_hosts * num_core_per_host are the TPU cores")
  return tpu_estimator.estimator(
      model_fn, run.device, run.checkpoint, run.layout, run.train.iterations,
      run.optimizer.train_steps if run.optimizer else None, run.train.seed,
      **batch_sizes)


def _estimator_train(run, input_fn, loss_fn, allow_missing):
  """Fine-tunes with TPUEstimator (the release's TPU path)."""
  checkpoint_resume.find_resume_checkpoint(run.model_dir)

  def step_fn(features, labels):
    del labels
    return loss_fn(features, True), None

  def scaffold_fn_of():
    if tf.train.latest_checkpoint(run.model_dir):
      return None
    return warm_start.init_from_checkpoint(
        run.checkpoint.init_checkpoint, use_tpu=True,
        allow_missing=allow_missing)

  model_fn = tpu_estimator.training_model_fn(step_fn, run.optimizer, True,
                                             scaffold_fn_of)

  def estimator_input_fn(params):
    return input_fn({"batch_size": params["batch_size"]})

  tpu_estimator.train(
      _estimator(run, model_fn, train_batch_size=run.layout.train_batch_size),
      estimator_input_fn, run.model_dir, run.optimizer.train_steps,
      run.checkpoint.max_save)
  return []


def _estimator_predict(run, prefix, input_fn, outputs_fn, batch_size):
  """Predicts with TPUEstimator (static batches: padded, then trimmed)."""
  tpu = tpu_estimator.tpu_estimator()

  def model_fn(features, labels, mode, params):
    del labels, params
    features = dict(features)
    real = features.pop(predictor_lib.REAL)
    predictions = dict(outputs_fn(features, False))
    predictions[predictor_lib.REAL] = real
    return tpu.TPUEstimatorSpec(mode=mode, predictions=predictions)

  def estimator_input_fn(params):
    return predictor_lib.pad_to_full_steps(
        input_fn({"batch_size": params["batch_size"]}), params["batch_size"],
        1)

  rows = list(_estimator(run, model_fn, train_batch_size=batch_size,
                         predict_batch_size=batch_size).predict(
                             estimator_input_fn, checkpoint_path=prefix,
                             yield_single_examples=True))
  rows = [r for r in rows if r.pop(predictor_lib.REAL)]
  return {k: np.stack([r[k] for r in rows]) for k in (rows[0] if rows
                                                      else {})}
