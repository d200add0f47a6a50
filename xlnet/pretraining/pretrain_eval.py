"""Held-out evaluation of pretraining (`python eval_pretrain.py`).

Records of a held-out split (written by `data_utils.py --split=valid`, or
another pass) are read in order, one host batch at a time on one device,
with the memories carried from batch to batch as in training and dropout
off. Reported: the mean loss per target token, its perplexity exp(loss),
the accuracy of the arg-max predictions of the targets, and the number of
targets. `train_gpu.py --eval_steps=N` runs it every N steps and at the end
(TensorBoard `eval/loss`, `eval/pplx`, `eval/accuracy`, beside the training
curves); `eval_pretrain.py` evaluates one checkpoint and writes
`eval_results_pretrain.json` next to it.
"""
import json
import math
import os

from absl import logging
import tensorflow as tf

from xlnet.flags import catalog as flag_catalog
from xlnet.flags import pretraining as pretrain_flags
from xlnet.training import checkpoint_io
from xlnet import cli
from xlnet.pretraining import function_builder
from xlnet import io_utils
from xlnet.training import progress
from xlnet.training import template as template_lib

RESULTS = "eval_results_pretrain.json"


def eval_input_fn(FLAGS, corpus_info=None):
  """The held-out input function (one device reads whole host batches).

  Args:
    FLAGS: resolved flags.
    corpus_info: the corpus info the flags were resolved from (None: the
      one next to the held-out records).

  Returns:
    (input_fn, number of host batches in one pass of the held-out records).
  """
  input_fn, info = function_builder.get_input_fn(
      FLAGS, 1, corpus_info, split=FLAGS.eval_split,
      record_dir=FLAGS.eval_record_info_dir, num_hosts=1)
  return input_fn, info["num_batch"]


def metrics_of(totals):
  """Loss per target token, perplexity and accuracy from summed outputs."""
  n = max(float(totals["num_targets"]), 1.0)
  loss = float(totals["loss_sum"]) / n
  return {"loss": loss, "pplx": math.exp(min(loss, 700.0)),
          "accuracy": float(totals["correct"]) / n,
          "num_targets": int(totals["num_targets"])}


class Evaluator:
  """Evaluates the pretraining loss on held-out batches.

  Args:
    template: the model function `template(features, mems, is_training)` ->
      (loss, new_mems, outputs) of a `trainer.Trainer` (its variables are the
      ones evaluated), or of `make_template` for a checkpoint.
    mem_shape: `[mem_len, bsz, d_model]` of the memories, or None.
    n_layer: layers (one memory each).
  """

  def __init__(self, template, mem_shape, n_layer):
    self.template = template
    self.mem_shape = mem_shape
    self.n_layer = n_layer
    self._step = tf.function(self._eval_step)

  def _eval_step(self, features, mems):
    _, new_mems, outputs = self.template(features, mems, False)
    sums = {k: tf.reduce_sum(v) for k, v in outputs.items()}
    return sums, new_mems

  def run(self, dataset, num_batches):
    """Sums the outputs of `num_batches` consecutive batches.

    Returns:
      the metrics dict of `metrics_of`, plus `num_batches`.
    """
    mems = ([tf.zeros(self.mem_shape)] * self.n_layer
            if self.mem_shape else None)
    totals = {}
    for features in dataset.take(num_batches):
      sums, new_mems = self._step(features, mems)
      mems = list(new_mems) if mems is not None else None
      for key, value in sums.items():
        totals[key] = totals.get(key, 0.0) + float(value)
    results = metrics_of(totals)
    results["num_batches"] = int(num_batches)
    return results


def log_results(results, step, writer=None):
  """Logs one line and writes `eval/*` scalars at `step`."""
  logging.info("[%d] eval | loss %.4f | pplx %.2f | accuracy %.4f | %d "
               "targets", step, results["loss"], results["pplx"],
               results["accuracy"], results["num_targets"])
  if writer is not None:
    progress.write_scalars(writer, {f"eval/{k}": results[k]
                                    for k in ("loss", "pplx", "accuracy")},
                           step)


def evaluate_checkpoint(FLAGS):
  """The standalone command: evaluates `--eval_ckpt` (default: the latest
  checkpoint of `--model_dir`) and writes RESULTS next to it.

  Returns:
    the results dict.
  """
  if not FLAGS.model_dir and not FLAGS.eval_ckpt:
    raise ValueError("--model_dir or --eval_ckpt is required (the "
                     "checkpoint to evaluate)")
  prefix = checkpoint_io.resolve_checkpoint(
      FLAGS.eval_ckpt or FLAGS.model_dir, "--eval_ckpt")
  if not FLAGS.model_config_path:
    config_path = os.path.join(os.path.dirname(prefix), "config.json")
    if tf.io.gfile.exists(config_path):
      FLAGS.model_config_path = config_path
  xlnet_config, _ = pretrain_flags.resolve_all(FLAGS)
  input_fn, num_batch = eval_input_fn(FLAGS)
  num_batches = FLAGS.eval_batches or num_batch
  bsz = pretrain_flags.bsz_per_host(FLAGS)
  dataset = input_fn({"batch_size": bsz})
  template = tf.compat.v1.make_template(
      template_lib.TEMPLATE_SCOPE,
      function_builder.pretrain_loss_fn(xlnet_config, FLAGS))
  mem_shape = ([FLAGS.mem_len, bsz, xlnet_config.d_model] if FLAGS.mem_len
               else None)
  evaluator = Evaluator(template, mem_shape, xlnet_config.n_layer)
  features = next(iter(dataset.take(1)))
  mems = ([tf.zeros(mem_shape)] * xlnet_config.n_layer if mem_shape
          else None)
  template(features, mems, False)  # creates the variables
  template_lib.load_template_variables(template, prefix)
  results = evaluator.run(dataset, num_batches)
  results["checkpoint"] = prefix
  results["split"] = FLAGS.eval_split
  step = checkpoint_io.step_of(prefix) or 0
  log_results(results, step)
  io_utils.atomic_write(os.path.join(os.path.dirname(prefix), RESULTS),
                        json.dumps(results, indent=2) + "\n")
  return results


def main(unused_argv):
  from absl import flags  # pylint: disable=g-import-not-at-top
  evaluate_checkpoint(flags.FLAGS)


def entry_point():
  """`python eval_pretrain.py ...`."""
  cli.run(main, flag_catalog.define_flags)

