"""Fine-tuning and inference, shared by run_classifier.py, run_squad.py and
run_race.py.

A task gives a loss function and an outputs function built on the model with
`tf.compat.v1.get_variable` (its head's variables keep the release's names);
this module runs them:

* on CPUs/GPUs (`--num_core_per_host` replicas) and, with `--use_tpu` on
  TensorFlow >= 2.16, on a TPUStrategy, through the shared engine
  (`xlnet/training/trainer.py`): resume from `--model_dir` after a kill or a signal
  (with the batch layout it was trained with), one trainer per
  `--model_dir` (`xlnet/training/run_lock.py`), warm start from `--init_checkpoint`
  by name, NaN guard, atomic checkpoints;
* with `--use_tpu` on TensorFlow 2.15, through TPUEstimator (as released),
  with the same functions and the same optimizer step.

Batch sizes keep the release's meaning: with `--use_tpu` a batch flag is the
global batch; otherwise it is the batch of one GPU (replica).
"""

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet.flags import configs as config_flags
from xlnet.flags import finetuning as finetune_flags
from xlnet.training import checkpoint_io
from xlnet.training import run_lock
from xlnet.training import predictor as predictor_lib
from xlnet.training import progress
from xlnet.training import strategies
from xlnet.training import tpu_estimator
from xlnet.training import train_state
from xlnet.training import trainer as trainer_lib
from xlnet.training import warm_start

_STRATEGIES = {}


def per_replica_batch(FLAGS, flag_value, num_replicas):
  """One replica's batch for a batch-size flag (global on TPUs, per GPU
  otherwise, as in the release)."""
  if not FLAGS.use_tpu:
    return flag_value
  if flag_value % num_replicas:
    raise ValueError(f"a batch of {flag_value} cannot be split over "
                     f"{num_replicas} TPU cores")
  return flag_value // num_replicas


def use_estimator(FLAGS):
  """TPUEstimator for `--use_tpu` where it exists (TensorFlow 2.15)."""
  return bool(FLAGS.use_tpu) and tpu_estimator.tpu_estimator() is not None


def strategy_for(FLAGS):
  """The tf.distribute strategy of the device flags (created once)."""
  key = (bool(FLAGS.use_tpu), FLAGS.num_core_per_host, FLAGS.tpu)
  if key not in _STRATEGIES:
    if FLAGS.use_tpu:
      _STRATEGIES[key] = strategies.create_strategy(
          use_tpu=True, tpu=FLAGS.tpu, tpu_zone=FLAGS.tpu_zone,
          gcp_project=FLAGS.gcp_project)
    else:
      _STRATEGIES[key] = strategies.create_strategy(FLAGS.num_core_per_host)
  return _STRATEGIES[key]


def log_line(step, mean_loss, out):
  """The fine-tuning log line and its TensorBoard scalars (`StepLogger`)."""
  return (f"[{step}] | loss {mean_loss:.4f} | lr {out['lr']:.6f} | gnorm "
          f"{out['gnorm']:.2f}", {"loss": mean_loss, "lr": out["lr"],
                                  "gnorm": out["gnorm"]})


def train(FLAGS, input_fn, loss_fn, allow_missing=()):
  """Fine-tunes until `--train_steps`, resuming from `--model_dir`.

  Args:
    FLAGS: the fine-tuning flags (`xlnet/flags/finetuning.py`).
    input_fn: `input_fn(params)` -> dataset of batch-major feature dicts,
      `params["batch_size"]` examples each (static: drop the remainder),
      repeating; an optional `params["input_context"]` shards the files.
    loss_fn: `loss_fn(features, is_training)` -> float32 scalar loss.
    allow_missing: regular expressions of variables `--init_checkpoint` may
      lack (the task's new head).

  Returns:
    list of (step, loss) of the steps this run made.

  Raises:
    ValueError: bad checkpoint or flags (another batch layout than the
      one `--model_dir` was trained with included); run_lock.Locked:
      another trainer uses `--model_dir`; progress.StopTraining after a
      signal, a divergence or a corrupted record (progress saved first).
  """
  if use_estimator(FLAGS):
    with run_lock.hold(FLAGS.model_dir):
      return _estimator_train(FLAGS, input_fn, loss_fn, allow_missing)
  strategy = strategy_for(FLAGS)
  with run_lock.hold(FLAGS.model_dir, strategies.is_chief(strategy)):
    return _engine_train(FLAGS, strategy, input_fn, loss_fn, allow_missing)


def batch_layout(FLAGS):
  """The flags a resumed fine-tuning run must keep
  (`train_state.check_batch_layout`)."""
  return {"train_batch_size": FLAGS.train_batch_size,
          "num_core_per_host": FLAGS.num_core_per_host,
          "num_hosts": getattr(FLAGS, "num_hosts", 1),
          "accum_steps": getattr(FLAGS, "accum_steps", 1) or 1}


def _engine_train(FLAGS, strategy, input_fn, loss_fn, allow_missing):
  """`train` on the engine, with the run lock held."""
  resume = checkpoint_io.find_resume_checkpoint(FLAGS.model_dir)
  start = checkpoint_io.step_of(resume) if resume else 0
  n = strategy.num_replicas_in_sync
  per_replica = per_replica_batch(FLAGS, FLAGS.train_batch_size, n)
  accum = getattr(FLAGS, "accum_steps", 1) or 1
  trainer = trainer_lib.Trainer(
      strategy, lambda f, mems, is_training: (loss_fn(f, is_training), None,
                                              {}),
      config_flags.optimizer_config(FLAGS, getattr(FLAGS, "n_layer", None)),
      FLAGS.model_dir, accum_steps=accum,
      train=config_flags.train_config(FLAGS))
  if trainer.chief:
    train_state.check_batch_layout(FLAGS.model_dir, batch_layout(FLAGS),
                                   resume is not None)

  def dataset_fn(context):
    dataset = input_fn({"batch_size": per_replica, "input_context": context})
    local = max(1, n // context.num_input_pipelines)
    return dataset.skip(start * accum * local) if start else dataset

  dist = trainer.distribute(dataset_fn)
  trainer.build(dataset_fn(tf.distribute.InputContext()).element_spec)
  if resume:
    trainer.restore(resume)
    logging.info("Resumed from %s at step %d", resume, start)
  elif FLAGS.init_checkpoint:
    trainer.init_from_checkpoint(FLAGS.init_checkpoint, allow_missing)
  writer = None
  if trainer.chief:
    checkpoint_io.clean_model_dir(FLAGS.model_dir)
    writer = tf.summary.create_file_writer(FLAGS.model_dir)
  logger = progress.StepLogger(FLAGS.iterations, FLAGS.train_steps, start,
                               per_replica * n * accum, "examples", writer,
                               log_line)
  trainer.train(dist, FLAGS.train_steps, FLAGS.save_steps,
                FLAGS.max_save or None, on_step=logger)
  return logger.history


def predict(FLAGS, checkpoint, input_fn, outputs_fn, global_batch):
  """The outputs of a checkpoint's model for every example of a dataset.

  Args:
    FLAGS: the fine-tuning flags.
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
  if use_estimator(FLAGS):
    return _estimator_predict(FLAGS, prefix, input_fn, outputs_fn,
                              global_batch)
  strategy = strategy_for(FLAGS)
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


def predict_records(FLAGS, input_fn, outputs_fn, batch_flag):
  """`predict` with the latest checkpoint of `--model_dir`, one dict of
  NumPy values per record, in input order.

  Args:
    FLAGS, input_fn, outputs_fn: as `predict`.
    batch_flag: the value of the program's prediction batch flag (global
      on TPUs, per GPU otherwise).
  """
  outputs = predict(FLAGS, FLAGS.model_dir, input_fn, outputs_fn,
                    finetune_flags.global_batch_size(FLAGS, batch_flag))
  return [dict(zip(outputs, values)) for values in zip(*outputs.values())]


################################################################################
# TPUEstimator (TensorFlow 2.15, --use_tpu).
################################################################################
def _estimator(FLAGS, model_fn, **batches):
  tpu = tpu_estimator.tpu_estimator()
  run_config = tpu_estimator.configure_tpu(
      config_flags.device_config(FLAGS), config_flags.checkpoint_config(FLAGS),
      FLAGS.num_hosts * FLAGS.num_core_per_host, FLAGS.iterations,
      FLAGS.train_steps, FLAGS.seed)
  return tpu.TPUEstimator(model_fn=model_fn, config=run_config,
                          use_tpu=FLAGS.use_tpu, **batches)


def _estimator_train(FLAGS, input_fn, loss_fn, allow_missing):
  """Fine-tunes with TPUEstimator (the release's TPU path)."""
  tpu = tpu_estimator.tpu_estimator()
  checkpoint_io.find_resume_checkpoint(FLAGS.model_dir)

  def model_fn(features, labels, mode, params):
    del labels, params
    loss = loss_fn(features, True)
    scaffold_fn = None
    if not tf.train.latest_checkpoint(FLAGS.model_dir):
      scaffold_fn = warm_start.init_from_checkpoint(
          FLAGS.init_checkpoint, FLAGS.use_tpu, allow_missing=allow_missing)
    train_op, _, _ = tpu_estimator.get_train_op(
        config_flags.optimizer_config(FLAGS), loss, use_tpu=FLAGS.use_tpu)
    return tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op,
                                scaffold_fn=scaffold_fn)

  def estimator_input_fn(params):
    return input_fn({"batch_size": params["batch_size"]})

  with progress.SignalCatcher() as signals:
    _estimator(FLAGS, model_fn, train_batch_size=FLAGS.train_batch_size
               ).train(estimator_input_fn, max_steps=FLAGS.train_steps)
  if signals.signum is not None:
    raise progress.Interrupted("stopped by a signal; rerun to resume",
                               signals.signum)
  return []


def _estimator_predict(FLAGS, prefix, input_fn, outputs_fn, batch_size):
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

  rows = list(_estimator(FLAGS, model_fn, train_batch_size=batch_size,
                         predict_batch_size=batch_size).predict(
                             estimator_input_fn, checkpoint_path=prefix,
                             yield_single_examples=True))
  rows = [r for r in rows if r.pop(predictor_lib.REAL)]
  return {k: np.stack([r[k] for r in rows]) for k in (rows[0] if rows
                                                      else {})}

