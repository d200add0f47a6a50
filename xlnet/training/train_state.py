"""A trainer's state in checkpoints: one shard per worker, merged by the chief.

The chief writes the model, the optimizer state and the step; every worker
writes the memories of its replicas (`mems/replica_{r}/layer_{i}`), so a
resumed run continues each replica's memories. Checkpoints are written by
name and atomically (`checkpoint_io`), and only at step boundaries.
`check_batch_layout` keeps a resumed run on the batch layout its data
position was counted in (`check_run_record`: any such settings).
"""
import json
import os

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet import io_utils
from xlnet.training import checkpoint_io
from xlnet.training import run_lock
from xlnet.training import strategies

MEM_NAME = "mems/replica_{replica}/layer_{layer}"


LAYOUT_FILE = "batch_layout.json"
_LAYOUT_WHY = ("a resumed run continues the data where it stopped only with "
               "the same batch layout")
FROZEN_FILE = "frozen_layers.json"
_FROZEN_WHY = ("its checkpoints hold the optimizer slots of the variables it "
               "trained, and a resumed run keeps the frozen ones frozen")


def read_run_record(path):
  """The settings dict recorded at `path`, or None when there is none.

  Raises:
    ValueError: one line when the file is not valid JSON.
  """
  if not tf.io.gfile.exists(path):
    return None
  try:
    with tf.io.gfile.GFile(path) as f:
      return json.load(f)
  except ValueError as e:
    raise ValueError(f"{path} is not valid JSON ({e})") from None


def write_run_record(path, record):
  """Writes a settings dict where `read_run_record` reads it, atomically."""
  io_utils.atomic_write(path, json.dumps(record, sort_keys=True) + "\n")


def compare_run_record(path, record, model_dir, why):
  """Raises unless every setting of `record` that `path` also records has
  the recorded value (nothing recorded: nothing to compare).

  Args:
    path: the record file in `model_dir`.
    record: dict flag name -> value of this run.
    model_dir: named in the message.
    why: why the recorded value must be kept (ends the message).

  Raises:
    ValueError: one line naming the first flag whose value differs.
  """
  saved = read_run_record(path) or {}
  for name, value in record.items():
    if name in saved and saved[name] != value:
      raise ValueError(
          f"--{name}={value} but {model_dir} was trained with "
          f"--{name}={saved[name]} ({path}): {why}; rerun with "
          f"--{name}={saved[name]} or use another --model_dir")


def check_run_record(model_dir, file_name, record, resuming, why):
  """Records settings of a run in `model_dir/file_name`; refuses to resume
  with other values of them.

  Args:
    model_dir: the run's directory (the caller holds its run lock).
    file_name: the record's file.
    record: dict flag name -> JSON value.
    resuming: whether the run resumes from a checkpoint of `model_dir` (a
      fresh start records its own settings).
    why: see `compare_run_record`.
  """
  path = os.path.join(model_dir, file_name)
  if resuming:
    compare_run_record(path, record, model_dir, why)
  write_run_record(path, record)


def check_batch_layout(model_dir, layout, resuming):
  """Records the batch layout of a run in `model_dir`; refuses to resume
  with another one (the data position of a resumed run is counted in steps
  of that layout).

  Args:
    model_dir: the run's directory (the caller holds its run lock).
    layout: `BatchLayout.record()`: dict flag name -> int (train_batch_size,
      num_hosts, num_core_per_host, accum_steps).
    resuming: whether the run resumes from a checkpoint of `model_dir`.

  Raises:
    ValueError: one line naming the first flag whose value differs from
      the recorded one.
  """
  check_run_record(model_dir, LAYOUT_FILE, layout, resuming, _LAYOUT_WHY)


def check_frozen_layers(model_dir, freeze_layers, resuming):
  """Records `--freeze_layers` of a run in `model_dir` (`FROZEN_FILE`,
  written when it freezes layers or the file exists: a directory without
  one trained with 0); refuses to resume with another value.

  Raises:
    ValueError: one line naming the flag and the recorded value.
  """
  path = os.path.join(model_dir, FROZEN_FILE)
  recorded = tf.io.gfile.exists(path)
  if resuming:
    saved = (read_run_record(path) or {}).get("freeze_layers", 0)
    if saved != freeze_layers:
      raise ValueError(
          f"--freeze_layers={freeze_layers} but {model_dir} was trained "
          f"with --freeze_layers={saved} "
          f"({path if recorded else f'no {FROZEN_FILE}'}): {_FROZEN_WHY}; "
          f"rerun with --freeze_layers={saved} or use another --model_dir")
  if freeze_layers or recorded:
    write_run_record(path, {"freeze_layers": freeze_layers})


class ShardedState:
  """Saves and restores a trainer's variables by checkpoint name.

  Args:
    strategy: the run's strategy.
    model_dir: where checkpoints are written.
    variables: {checkpoint name: (mirrored) variable} of the model, the
      optimizer and the step; the chief writes them.
    mem_vars: per-replica (ON_READ) memory variables, one per layer, each
      `[mem_len, bsz, d_model]`; every worker writes its replicas'.
    local_replica_ids: global replica ids of this worker's replicas.
  """

  def __init__(self, strategy, model_dir, variables, mem_vars,
               local_replica_ids):
    self.strategy = strategy
    self.model_dir = model_dir
    self.variables = variables
    self.mem_vars = list(mem_vars)
    self.local_replica_ids = local_replica_ids
    self.chief = strategies.is_chief(strategy)
    self.worker = strategies.worker_index(strategy)

  def _local_memories(self, var):
    """(replica id, component) of this worker's replicas of `var`."""
    return zip(self.local_replica_ids,
               self.strategy.experimental_local_results(var))

  def save(self, step, max_save=None):
    """Writes `model.ckpt-{step}` atomically; every worker must call it.

    Returns:
      the checkpoint prefix.

    Raises:
      io_utils.ResourceError: no space, file too large, read-only,
        permission (the failed save's files removed first).
      run_lock.LockLost: the chief's run lock of model_dir was removed or
        taken over (nothing is written).
    """
    if self.chief:
      run_lock.check_held(self.model_dir)
    final = checkpoint_io.checkpoint_prefix(self.model_dir, step)
    values = {}
    if self.chief:
      values = {name: var.read_value()
                for name, var in self.variables.items()}
    for layer, var in enumerate(self.mem_vars):
      for replica, value in self._local_memories(var):
        values[MEM_NAME.format(replica=replica, layer=layer)] = value
    writers = strategies.num_workers(self.strategy) if self.mem_vars else 1
    attempt = f"{step}"
    try:
      if values:
        checkpoint_io.save_shard(
            checkpoint_io.shard_prefix(final, self.worker, attempt), values)
      strategies.barrier(self.strategy)
      if self.chief:
        checkpoint_io.publish(
            final, [checkpoint_io.shard_prefix(final, w, attempt)
                    for w in range(writers)], self.model_dir, max_save)
        logging.info("Saved checkpoint %s", final)
    except (tf.errors.OpError, OSError) as e:
      raise checkpoint_io.save_failure(final, e) from None
    strategies.barrier(self.strategy)
    return final

  def restore(self, prefix):
    """Loads every variable from `prefix` (memories of this worker's
    replicas; zeros with a warning when the checkpoint has none for them).

    Raises:
      checkpoint_io.CheckpointError: when a variable is missing or the
        checkpoint cannot be read.
    """
    values = checkpoint_io.read_tensors(prefix, list(self.variables))
    self.load_values(values, source=prefix)
    self._restore_memories(prefix)

  def load_values(self, values, source="values"):
    """Assigns {checkpoint name: array} to the named variables (model,
    optimizer state, step); names not in `values` keep their value."""
    for name, value in values.items():
      var = self.variables[name]
      if tuple(np.shape(value)) != tuple(var.shape):
        raise checkpoint_io.CheckpointError(
            f"{source}: {name} has shape {list(np.shape(value))}, the "
            f"model needs {var.shape.as_list()} (another model config?)")
      var.assign(value)

  def values(self):
    """{checkpoint name: np.ndarray} of the model, optimizer and step."""
    return {name: var.numpy() for name, var in self.variables.items()}

  def replica_memories(self):
    """{replica id: [np.ndarray per layer]} of this worker's replicas."""
    out = {r: [] for r in self.local_replica_ids}
    for var in self.mem_vars:
      for replica, value in self._local_memories(var):
        out[replica].append(value.numpy())
    return out

  def _restore_memories(self, prefix):
    """Each local replica reads `mems/replica_{r}/layer_{i}`."""
    if not self.mem_vars:
      return
    names = [MEM_NAME.format(replica=r, layer=i)
             for i in range(len(self.mem_vars))
             for r in self.local_replica_ids]
    shapes = dict(tf.train.list_variables(prefix))
    want = self.mem_vars[0].shape.as_list()
    if any(list(shapes.get(n, [])) != want for n in names):
      logging.warning(
          "%s has no memories for replicas %s with shape %s (saved with "
          "another device layout or batch?): they start from zeros.", prefix,
          self.local_replica_ids, want)
      return
    values = checkpoint_io.read_tensors(prefix, names)
    for layer, var in enumerate(self.mem_vars):
      for replica, component in self._local_memories(var):
        component.assign(values[MEM_NAME.format(replica=replica,
                                                layer=layer)])
