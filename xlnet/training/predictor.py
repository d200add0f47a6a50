"""Inference on every replica: a model's outputs for every example of a
finite dataset, in input order (`Predictor`), the last step padded with
zero examples that are dropped again (`pad_to_full_steps`).
"""
import numpy as np
import tensorflow as tf

from xlnet import signals
from xlnet.training import template as template_lib

REAL = "_real_example"


def pad_to_full_steps(dataset, per_replica, num_replicas):
  """Re-batches a finite dataset into full steps over every replica.

  Examples keep their order; zero examples (marked `REAL` = 0, real ones 1)
  fill the last step, so every replica gets a full static batch (what XLA
  and TPUs need) and no example is dropped.

  Args:
    dataset: finite dataset of batch-major feature dicts (any batch sizes).
    per_replica: examples per replica batch.
    num_replicas: replicas fed by this dataset.

  Returns:
    a dataset of `[per_replica, ...]` batches whose count is a multiple of
    `num_replicas`.
  """
  examples = dataset.unbatch().map(lambda f: dict(f, **{REAL: 1}))
  zero = {k: tf.zeros(s.shape, s.dtype)
          for k, s in examples.element_spec.items()}
  padding = tf.data.Dataset.from_tensors(zero).repeat(
      per_replica * num_replicas - 1)
  step = per_replica * num_replicas
  # Take whole steps of the real examples plus as much padding as the last
  # step needs (the padded stream is cut at a step boundary).
  return (examples.concatenate(padding)
          .batch(step, drop_remainder=True)
          .unbatch().batch(per_replica, drop_remainder=True))


class Predictor:
  """Runs a model's forward pass over a dataset on every replica.

  Args:
    strategy: from `strategies.for_inference`.
    outputs_fn: `outputs_fn(features)` -> dict of per-example tensors
      (batch-major), built with `tf.compat.v1.get_variable` (it runs inside
      `make_template`).
  """

  def __init__(self, strategy, outputs_fn):
    self.strategy = strategy
    self._template = tf.compat.v1.make_template(
        template_lib.TEMPLATE_SCOPE, outputs_fn)
    self._built = False
    # Traced without autograph, as the trainer's step (`make_train_step`).
    self._step = tf.function(self._distributed_step, autograph=False)

  def _replica_step(self, features):
    """The outputs of one replica's batch, with its real-example mask."""
    features = dict(features)
    real = features.pop(REAL)
    out = dict(self._template(features))
    out[REAL] = real
    return out

  def _distributed_step(self, iterator):
    return self.strategy.run(self._replica_step, args=(next(iterator),))

  def weights(self):
    """dict checkpoint name -> NumPy value of the model's variables (after
    `restore`)."""
    scope = self._template.variable_scope.name
    return {template_lib.checkpoint_name(v, scope): v.numpy()
            for v in self._template.variables}

  def restore(self, prefix, element_spec):
    """Builds the model for `element_spec` (one replica's batch) and loads
    every model variable from `prefix` by name.

    Raises:
      checkpoint_io.CheckpointError: a variable is missing or unreadable.
    """
    if not self._built:
      with self.strategy.scope():
        self._template({k: template_lib.zeros_like_spec(s)
                        for k, s in element_spec.items()})
      self._built = True
    template_lib.load_template_variables(self._template, prefix)

  def predict(self, dataset, per_replica):
    """The outputs of every example of a finite dataset, in input order.

    Args:
      dataset: finite dataset of batch-major feature dicts (this worker's).
      per_replica: examples per replica batch.

    Returns:
      dict name -> np.ndarray `[num_examples, ...]`.
    """
    n = self.strategy.num_replicas_in_sync
    padded = pad_to_full_steps(dataset, per_replica, n)
    dist = self.strategy.distribute_datasets_from_function(lambda _: padded)
    chunks = {}
    iterator = iter(dist)
    while True:
      signals.raise_if_terminated()  # a SIGTERM the step's C++ swallowed
      try:
        out = self._step(iterator)
      except (tf.errors.OutOfRangeError, StopIteration):
        break
      for key, value in out.items():
        # Replica r of a step holds the step's r-th batch (round robin).
        chunks.setdefault(key, []).extend(
            t.numpy() for t in self.strategy.experimental_local_results(value))
    if not chunks:
      return {}
    out = {k: np.concatenate(v) for k, v in chunks.items()}
    real = out.pop(REAL).astype(bool)
    return {k: v[real] for k, v in out.items()}
