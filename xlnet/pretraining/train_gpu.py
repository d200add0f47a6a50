"""XLNet pretraining on GPUs, CPUs and several hosts (`python train_gpu.py`).

The training loop is the shared engine (`xlnet/training/trainer.py`) on a
`tf.distribute` strategy: `--num_core_per_host` replicas on this host (GPUs,
or logical CPU devices without a GPU), and several hosts with
`--worker_hosts`/`--task_index` or `TF_CONFIG` (MultiWorkerMirroredStrategy).
Every replica reads its own per-core batch (with `bi_data`: forward rows then
backward rows), keeps its own memories, and the gradients are averaged over
replicas. `--accum_steps=k` accumulates k per-core batches per optimizer
step.

Resume is exact: the input pipeline's randomness is a function of the
position in the data stream, dropout is seeded from the step, and a resumed
run skips the batches already consumed.
"""
import math

from absl import logging
import tensorflow as tf

from xlnet.flags import catalog as flag_catalog
from xlnet.flags import configs as config_flags
from xlnet.flags import pretraining as pretrain_flags
from xlnet.training import checkpoint_io
from xlnet import cli
from xlnet.data import record_format
from xlnet.pretraining import function_builder
from xlnet.pretraining import pretrain_eval
from xlnet.training import run_lock
from xlnet.training import progress
from xlnet.training import strategies
from xlnet.training import train_state
from xlnet.training import trainer as trainer_lib


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


def dataset_fn_for(FLAGS, corpus_info, start_host_batch):
  """The per-worker dataset of per-core batches, positioned after the data a
  resumed run already consumed.

  Args:
    FLAGS: resolved flags (`num_hosts` workers of `num_core_per_host`
      replicas each).
    corpus_info: the dict the data flags were resolved from.
    start_host_batch: host batches of this worker's stream already consumed
      (the stream's randomness is keyed by position, so the batches that
      follow are exactly those of an uninterrupted run).

  Returns:
    (dataset_fn(input_context), record_info).
  """
  input_fn, record_info = function_builder.get_input_fn(
      FLAGS, FLAGS.num_core_per_host, corpus_info)

  class _Host:  # the `params["context"]` of TPUEstimator input functions
    def __init__(self, host):
      self.current_host = host

  def dataset_fn(input_context):
    return input_fn({"batch_size": pretrain_flags.bsz_per_core(FLAGS),
                     "context": _Host(input_context.input_pipeline_id),
                     "start_host_batch": start_host_batch})

  return dataset_fn, record_info


def run(FLAGS, tpu=False):
  """Checks the flags against the data, then trains (or resumes) holding the
  run lock of `--model_dir` (the chief; `xlnet/training/run_lock.py`).

  Args:
    FLAGS: the parsed flags (`xlnet/flags/catalog.py`).
    tpu: called by train_tpu.py: with `--use_tpu` the strategy is a
      TPUStrategy on `--tpu` and `--num_hosts` TPU hosts.

  Returns:
    list of (step, loss) of every step of this run.

  Raises:
    ValueError: bad flags or data (one line).
    run_lock.Locked: another trainer uses `--model_dir`.
    progress.StopTraining: stopped early after saving (signal, divergence,
      corrupted input).
  """
  if FLAGS.use_tpu and not tpu:
    raise ValueError("--use_tpu=True: train_gpu.py runs on GPUs/CPUs; use "
                     "train_tpu.py for TPUs")
  if not FLAGS.model_dir:
    raise ValueError("--model_dir is required (checkpoints and summaries)")
  if tf.io.gfile.exists(FLAGS.model_dir) and not tf.io.gfile.isdir(
      FLAGS.model_dir):
    raise ValueError(f"--model_dir={FLAGS.model_dir} exists and is not a "
                     "directory")
  on_tpu = tpu and FLAGS.use_tpu
  num_hosts = (FLAGS.num_hosts if on_tpu else
               strategies.cluster_workers(FLAGS.worker_hosts))
  if FLAGS.num_hosts not in (1, num_hosts):
    raise ValueError(f"--num_hosts={FLAGS.num_hosts} but the cluster has "
                     f"{num_hosts} worker(s) (--worker_hosts or TF_CONFIG)")
  FLAGS.num_hosts = num_hosts
  xlnet_config, corpus_info = pretrain_flags.resolve_all(FLAGS)
  evaluation = None
  if FLAGS.eval_steps:
    input_fn, num_batch = pretrain_eval.eval_input_fn(FLAGS)
    evaluation = (input_fn, FLAGS.eval_batches or num_batch)
  strategy = create_strategy(FLAGS, on_tpu)
  with run_lock.hold(FLAGS.model_dir, strategies.is_chief(strategy)):
    return train(FLAGS, strategy, xlnet_config, corpus_info, evaluation)


def create_strategy(FLAGS, on_tpu):
  """The run's strategy, checked against `--num_core_per_host`."""
  if on_tpu:
    strategy = strategies.create_strategy(
        use_tpu=True, tpu=FLAGS.tpu, tpu_zone=FLAGS.tpu_zone,
        gcp_project=FLAGS.gcp_project)
  else:
    strategy = strategies.create_strategy(
        FLAGS.num_core_per_host, FLAGS.worker_hosts, FLAGS.task_index)
  local_cores = strategy.num_replicas_in_sync // FLAGS.num_hosts
  if local_cores != FLAGS.num_core_per_host:
    raise ValueError(f"--num_core_per_host={FLAGS.num_core_per_host} but "
                     f"each {'TPU host' if on_tpu else 'worker'} has "
                     f"{local_cores} device(s)")
  return strategy


def batch_layout(FLAGS):
  """The flags a resumed pretraining run must keep (`check_batch_layout`)."""
  return {name: getattr(FLAGS, name) for name in (
      "train_batch_size", "num_hosts", "num_core_per_host", "accum_steps")}


def train(FLAGS, strategy, xlnet_config, corpus_info, evaluation):
  """Trains from the newest checkpoint of `--model_dir` (or from scratch /
  `--init_checkpoint`) to `--train_steps`; see `run`."""
  resume = checkpoint_io.find_resume_checkpoint(FLAGS.model_dir)
  start_step = checkpoint_io.step_of(resume) if resume else 0
  memory = (trainer_lib.MemoryConfig(xlnet_config.n_layer, FLAGS.mem_len,
                                     pretrain_flags.bsz_per_core(FLAGS),
                                     xlnet_config.d_model)
            if FLAGS.mem_len else None)
  trainer = trainer_lib.Trainer(
      strategy, function_builder.pretrain_loss_fn(xlnet_config, FLAGS),
      config_flags.optimizer_config(FLAGS, xlnet_config.n_layer),
      FLAGS.model_dir, memory=memory, accum_steps=FLAGS.accum_steps,
      train=config_flags.train_config(FLAGS))
  if trainer.chief:
    train_state.check_batch_layout(FLAGS.model_dir, batch_layout(FLAGS),
                                   resume is not None)
  dataset_fn, record_info = dataset_fn_for(FLAGS, corpus_info,
                                          start_step * FLAGS.accum_steps)
  dist_dataset = trainer.distribute(dataset_fn)
  trainer.build(dataset_fn(tf.distribute.InputContext()).element_spec)
  if resume:
    trainer.restore(resume)
    logging.info("Resumed from %s at step %d", resume, start_step)
  elif FLAGS.init_checkpoint:
    trainer.init_from_checkpoint(FLAGS.init_checkpoint)

  writer = None
  if trainer.chief:
    checkpoint_io.clean_model_dir(FLAGS.model_dir)
    function_builder.save_xlnet_config(xlnet_config, FLAGS.model_dir)
    writer = tf.summary.create_file_writer(FLAGS.model_dir)
  logger = progress.StepLogger(
      FLAGS.iterations, FLAGS.train_steps, start_step,
      FLAGS.train_batch_size * FLAGS.seq_len * FLAGS.accum_steps, "tokens",
      writer, log_line)
  on_step = logger
  if evaluation is not None:
    on_step = held_out_hook(FLAGS, trainer, evaluation, logger, writer)
  host_files = record_info["host_filenames"][trainer.worker]
  trainer.train(dist_dataset, FLAGS.train_steps, FLAGS.save_steps,
                FLAGS.max_save, on_step=on_step,
                on_corrupt_data=lambda e: record_format.data_loss_message(
                    host_files))
  return logger.history


def held_out_hook(FLAGS, trainer, evaluation, logger, writer):
  """`on_step` that logs, then evaluates on the held-out split every
  `--eval_steps` steps and at the end (on the chief)."""
  input_fn, num_batches = evaluation
  bsz = pretrain_flags.bsz_per_host(FLAGS)
  mem_shape = ([FLAGS.mem_len, bsz, trainer.memory.d_model]
               if trainer.memory else None)
  evaluator = pretrain_eval.Evaluator(trainer.template, mem_shape,
                                      trainer.memory.n_layer
                                      if trainer.memory else 0)

  def on_step(step, out):
    logger(step, out)
    if trainer.chief and (step % FLAGS.eval_steps == 0 or
                          step == FLAGS.train_steps):
      pretrain_eval.log_results(evaluator.run(
          input_fn({"batch_size": bsz}), num_batches), step, writer)

  return on_step


def main(unused_argv):
  from absl import flags  # pylint: disable=g-import-not-at-top
  run(flags.FLAGS)


def entry_point():
  """`python train_gpu.py ...`."""
  cli.run(main, flag_catalog.define_flags)
