"""Held-out evaluation of pretraining.

Records of a held-out split (written by `data_utils.py --split=valid`, or
another pass) are read in order, one host batch at a time on one device,
with the memories carried from batch to batch as in training and dropout
off. Reported: the mean loss per target token, its perplexity exp(loss),
the accuracy of the arg-max predictions of the targets, and the number of
targets. Training with `eval_steps=N` runs it every N steps and at the end
(TensorBoard `eval/loss`, `eval/pplx`, `eval/accuracy`, beside the training
curves); `evaluate_checkpoint` (`eval_pretrain.py`) evaluates one checkpoint
and writes `eval_results_pretrain.json` next to it.
"""
import json
import math
import os

from absl import logging
import tensorflow as tf

from xlnet.training import step_log
from xlnet.training import template as template_lib
from xlnet.training import trainer as trainer_lib
from xlnet import signals
from xlnet import io_utils
from xlnet import pretraining_loss
from xlnet.pretraining import inputs
from xlnet.training import checkpoint_io

RESULTS = "eval_results_pretrain.json"


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
      (loss, new_mems, outputs) of a `trainer_lib.Trainer` (its variables are the
      ones evaluated), or of `make_template` for a checkpoint.
    mem_shape: `[mem_len, bsz, d_model]` of the memories, or None.
    n_layer: layers (one memory each).
  """

  def __init__(self, template, mem_shape, n_layer):
    self.template = template
    self.mem_shape = mem_shape
    self.n_layer = n_layer
    # Traced without autograph, as the trainer's step (`make_train_step`).
    self._step = tf.function(self._eval_step, autograph=False)

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
      signals.raise_if_terminated()
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
    step_log.write_scalars(writer, {f"eval/{k}": results[k]
                                    for k in ("loss", "pplx", "accuracy")},
                           step)


def evaluate_checkpoint(configs):
  """Evaluates the checkpoint `configs.held_out.eval_ckpt` (a prefix or a
  directory: its newest intact checkpoint) on the held-out records and
  writes RESULTS next to it.

  Returns:
    the results dict: `loss`, `pplx`, `accuracy`, `num_targets`,
    `num_batches`, `checkpoint`, `split`.
  """
  prefix = checkpoint_io.resolve_checkpoint(configs.held_out.eval_ckpt,
                                          "--eval_ckpt")
  held_out = inputs.HeldOutInput(configs)
  dataset = held_out.dataset()
  n_layer = configs.model.n_layer
  template = tf.compat.v1.make_template(
      template_lib.TEMPLATE_SCOPE,
      pretraining_loss.pretrain_loss_fn(configs.model, configs.run))
  evaluator = Evaluator(template, held_out.mem_shape, n_layer)
  with held_out.bad_data_named():
    features = next(iter(dataset.take(1)))
  mems = ([tf.zeros(held_out.mem_shape)] * n_layer if held_out.mem_shape
          else None)
  template(features, mems, False)  # creates the variables
  template_lib.load_template_variables(template, prefix)
  with held_out.bad_data_named():
    results = evaluator.run(dataset, held_out.num_batches)
  results["checkpoint"] = prefix
  results["split"] = configs.held_out.eval_split
  step = checkpoint_io.step_of(prefix) or 0
  log_results(results, step)
  io_utils.atomic_write(os.path.join(os.path.dirname(prefix), RESULTS),
                        json.dumps(results, indent=2) + "\n")
  return results
