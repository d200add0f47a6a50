"""Activation recomputation (`RunConfig.recompute`) on the engine's step:
two-stream pretraining with bi_data and memories, dropout on, gives the
loss, gradients and new memories it gives without recomputation, on two
replicas with accumulation, and under float16 loss scaling in float16 and
bfloat16.

The reference is the same step without recomputation, on the same
variables, batches and dropout seeds: one trainer whose loss function
builds the model with or without recomputation as `_Switch` says when it
is traced, both gradients computed in one function (the step of
`Trainer._replica_step` up to its update: `_accumulated` over the
micro-batches, then the mean over replicas). The heads' gradients and
dropout outside the trainers' stateless blocks: tests/core/test_recompute.py.
"""
import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from tests import train_fixtures as fx
from xlnet import pretraining_loss
from xlnet.flags import configs as config_flags
from xlnet.training import trainer as trainer_lib

pytestmark = pytest.mark.eager


class _Switch:
  """The run config the loss function builds the model with when traced:
  `set(recompute, precision)` before tracing."""

  def __init__(self, run):
    self.base, self.run = run, run

  def set(self, recompute, precision="fp32"):
    self.run = dataclasses.replace(
        self.base, recompute=recompute, use_fp16=precision == "fp16",
        use_bfloat16=precision == "bf16")


def _trainer(FL, replicas, accum_steps):
  """A pretraining trainer (memories, `FL`'s dropout and loss scaling)
  and its `_Switch`."""
  config = fx.xlnet_config_of(FL)
  switch = _Switch(fx.run_config_of(FL))
  strategy = (tf.distribute.get_strategy() if replicas == 1 else
              tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
  memory = trainer_lib.MemoryConfig(
      config.n_layer, FL.mem_len, FL.train_batch_size // replicas,
      config.d_model)
  trainer = trainer_lib.Trainer(
      strategy, lambda features, mems, is_training: pretraining_loss.get_loss(
          config, switch.run, features, None, mems, is_training),
      config_flags.optimizer_config(FL, config.n_layer), "unused",
      memory=memory, accum_steps=accum_steps,
      train=config_flags.train_config(FL))
  return trainer, switch


def _gradients(trainer, switch, settings, host_batches, mems):
  """{setting: (loss, gradients, new memories of the last replica)} of
  one step at step 3 from `mems`, each `settings` entry `(recompute,
  precision)` traced into one function."""
  per_core = fx.per_core_batches(host_batches, trainer.num_replicas)
  trainer.build(fx.batches_dataset(per_core[:1]).element_spec)
  trainer.state.load_values(fx.random_weights(trainer, seed=7))
  iterator = iter(trainer.distribute(lambda _: fx.batches_dataset(per_core)))

  def replica(features):
    ctx = tf.distribute.get_replica_context()
    out = []
    for setting in settings:
      switch.set(*setting)
      loss, grads, new_mems = trainer_lib._accumulated(  # pylint: disable=protected-access
          trainer._forward_backward, features,  # pylint: disable=protected-access
          [tf.constant(m) for m in mems], tf.constant(3, tf.int64),
          trainer.accum_steps, trainer.trainable)
      out.append(ctx.all_reduce("mean", (loss, grads)) + (new_mems,))
    return out

  @tf.function(autograph=False)
  def step():
    return trainer.strategy.run(replica, args=(next(iterator),))

  last = lambda value: trainer.strategy.experimental_local_results(
      value)[-1].numpy()
  return {setting: tf.nest.map_structure(last, out)
          for setting, out in zip(settings, step())}


def _assert_same(got, want, rtol, names):
  (loss, grads, mems), (want_loss, want_grads, want_mems) = got, want
  np.testing.assert_allclose(loss, want_loss, rtol=rtol)
  for name, g, w in zip(names, grads, want_grads):
    assert np.abs(w).max() > 0, name
    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max(),
                               err_msg=name)
  for m, w in zip(mems, want_mems):
    np.testing.assert_allclose(m, w, rtol=rtol, atol=rtol * np.abs(w).max())


def _inputs(FL, steps, replicas):
  """`steps` host batches and a replica's memories, random."""
  rng = np.random.RandomState(0)
  batches = [fx.fake_batch(rng, FL.train_batch_size, FL.seq_len,
                           FL.num_predict, FL.n_token) for _ in range(steps)]
  mems = [rng.normal(size=(FL.mem_len, FL.train_batch_size // replicas,
                           FL.d_model)).astype(np.float32)
          for _ in range(FL.n_layer)]
  return batches, mems


def test_two_replicas_accumulating_get_the_gradients_without_it():
  """Two replicas, two micro-batches each, bi_data, memories, dropout and
  attention dropout 0.1: every gradient (the replicas' mean) within float32
  rounding, the loss and the last micro-batch's new memories too."""
  FL = fx.tiny_flags(bi_data=True, dropout=0.1, dropatt=0.1)
  trainer, switch = _trainer(FL, replicas=2, accum_steps=2)
  batches, mems = _inputs(FL, steps=2, replicas=2)
  out = _gradients(trainer, switch, [(False, "fp32"), (True, "fp32")],
                   batches, mems)
  _assert_same(out[True, "fp32"], out[False, "fp32"], 2e-5, trainer.names)


def test_float16_loss_scaling_and_bfloat16_get_the_gradients_without_it():
  """Under float16 loss scaling (a trainer with --use_fp16), the model in
  float16 and in bfloat16 (one layer: the test above carries the dropout
  counts from layer to layer): the gradients within those formats'
  rounding (2^-10, 2^-7) of those without recomputation."""
  FL = fx.tiny_flags(bi_data=True, dropout=0.1, dropatt=0.1, use_fp16=True,
                     train_batch_size=2, n_layer=1)
  trainer, switch = _trainer(FL, replicas=1, accum_steps=1)
  batches, mems = _inputs(FL, steps=1, replicas=1)
  settings = [(r, p) for p in ("fp16", "bf16") for r in (False, True)]
  out = _gradients(trainer, switch, settings, batches, mems)
  _assert_same(out[True, "fp16"], out[False, "fp16"], 2e-3, trainer.names)
  _assert_same(out[True, "bf16"], out[False, "bf16"], 1.6e-2, trainer.names)
