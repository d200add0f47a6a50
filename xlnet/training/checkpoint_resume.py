"""Which checkpoint a training run resumes from, and the rollback to an
intact one.

A run never silently restarts: a model_dir that says it holds checkpoints
(a state file naming one, or checkpoint files) but whose newest cannot be
read stops the run with one line naming the damaged file and how to
resume from the newest intact checkpoint (`python model_utils.py
rollback_ckpt`, which `rollback` does: the newer, damaged files go into a
quarantine folder).
"""
import os

import tensorflow as tf

from xlnet import gfile_io
from xlnet import signals
from xlnet.training import checkpoint_io as ckpt


def newest_intact(model_dir, below_step):
  """The newest checkpoint older than `below_step` whose tensors all read,
  or None."""
  for step, prefix in reversed(ckpt.list_checkpoints(model_dir)):
    if step < below_step and ckpt.verify(prefix) is None:
      return prefix
  return None


def _rollback_hint(model_dir, bad_step):
  """How to resume from the newest intact checkpoint before `bad_step`."""
  good = newest_intact(model_dir, bad_step)
  if good is None:
    return ("no earlier intact checkpoint exists; to start from scratch, "
            f"move {model_dir} away")
  return (f"to resume from {os.path.basename(good)} (the newest intact "
          f"checkpoint), run `python model_utils.py rollback_ckpt "
          f"--model_dir={model_dir}`, which moves the newer, damaged files "
          "into a quarantine folder")


def find_resume_checkpoint(model_dir):
  """The checkpoint a training run in `model_dir` resumes from.

  Never silently restarts: when `model_dir` says it holds checkpoints (a
  state file listing some, or checkpoint files) but the newest one cannot be
  read, this raises instead of returning None.

  Returns:
    the newest checkpoint prefix, or None for a fresh directory.

  Raises:
    ckpt.CheckpointError: one line naming the damaged file and how to resume
      from an earlier intact checkpoint.
  """
  if not tf.io.gfile.isdir(model_dir):
    return None
  latest_listed, _ = ckpt.read_state_file(model_dir)
  found = ckpt.list_checkpoints(model_dir)
  newest_step = found[-1][0] if found else -1
  listed_step = ckpt.step_of(latest_listed) if latest_listed else None
  if listed_step is not None and listed_step > newest_step:
    raise ckpt.CheckpointError(
        f"{model_dir}/{ckpt.STATE_FILE} names {latest_listed} as the latest "
        f"checkpoint but {latest_listed}.index is missing; "
        + _rollback_hint(model_dir, listed_step))
  if not found:
    if latest_listed:
      raise ckpt.CheckpointError(
          f"{model_dir}/{ckpt.STATE_FILE} names {latest_listed} but no "
          f"checkpoint file exists in {model_dir}; "
          + _rollback_hint(model_dir, 1 << 62))
    return None
  prefix = found[-1][1]
  problem = ckpt.verify(prefix)
  if problem:
    raise ckpt.CheckpointError(f"cannot resume: {problem}; "
                          + _rollback_hint(model_dir, newest_step))
  return prefix


def rollback(model_dir, step=None):
  """Moves checkpoints newer than the newest intact one (or than `step`)
  into `{model_dir}/quarantine/` and rewrites the state file.

  Returns:
    (the prefix training will resume from, list of moved files).

  Raises:
    ckpt.CheckpointError: when nothing intact remains.
  """
  found = ckpt.list_checkpoints(model_dir)
  if step is None:
    keep = newest_intact(model_dir, 1 << 62)
  else:
    keep = dict(found).get(step)
    if keep is None or ckpt.verify(keep):
      raise ckpt.CheckpointError(f"--step={step}: {model_dir} holds no intact "
                            f"model.ckpt-{step}")
  if keep is None:
    raise ckpt.CheckpointError(f"{model_dir} holds no intact checkpoint")
  keep_step = ckpt.step_of(keep)
  quarantine = os.path.join(model_dir, "quarantine")
  moved = []
  listed_latest, _ = ckpt.read_state_file(model_dir)
  newer = [p for s, p in found if s > keep_step]
  if listed_latest and ckpt.step_of(listed_latest) and \
      ckpt.step_of(listed_latest) > keep_step:
    # What is left of it here (a state file written with absolute paths
    # names the directory the checkpoints were first saved in: a copy's
    # rollback must not move the original's files).
    here = os.path.join(model_dir, os.path.basename(listed_latest))
    if here not in newer:
      newer.append(here)
  signals.raise_if_terminated()
  with signals.deferred_signals():  # a signal moves all or nothing
    tf.io.gfile.makedirs(quarantine)
    for prefix in newer:  # index, data and any .meta of the release's Saver
      for path in tf.io.gfile.glob(gfile_io.glob_escape(prefix) + ".*"):
        target = os.path.join(quarantine, os.path.basename(path))
        tf.io.gfile.rename(path, target, overwrite=True)
        moved.append(target)
    kept = [p for s, p in ckpt.list_checkpoints(model_dir)]
    ckpt.write_state_file(model_dir, keep, kept)
  return keep, moved
