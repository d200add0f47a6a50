"""Offline checkpoint tools (`python model_utils.py COMMAND`).

  * `clean_ckpt`: only the model weights of a checkpoint, in a new one.
  * `avg_checkpoints`: the average of a directory's last K checkpoints.
  * `rollback_ckpt`: a training directory resumes from its newest intact
    checkpoint, the newer, damaged files moved aside.
"""
import os
import time

import numpy as np
import tensorflow as tf

from xlnet import errors
from xlnet.training import checkpoint_io
from xlnet.training import checkpoint_resume
from xlnet.training import optimizer
from xlnet.training import run_lock


def _same_directory(a, b):
  """Whether two directory paths name the same directory, after resolving
  symbolic links (local paths) or normalizing trailing slashes (URLs)."""
  if "://" in a or "://" in b:
    return a.rstrip("/") == b.rstrip("/")
  return os.path.realpath(a) == os.path.realpath(b)


def _check_output_dir(output_model_dir, input_dir, flag_name):
  """Refuses an output directory that is the input's (symlinks resolved) or
  that is not a directory."""
  if not output_model_dir:
    raise ValueError(f"--{flag_name} must be set")
  if _same_directory(output_model_dir, input_dir):
    raise ValueError(f"--{flag_name}={output_model_dir} is the input "
                     f"checkpoint's directory {input_dir} (after resolving "
                     "links); choose another one (its `checkpoint` file "
                     "would be overwritten)")
  if tf.io.gfile.exists(output_model_dir) and not tf.io.gfile.isdir(
      output_model_dir):
    raise ValueError(f"--{flag_name}={output_model_dir} exists and is not a "
                     "directory")


def _write_output(values, output_model_dir, flag_name):
  """Writes `{output_model_dir}/model.ckpt`; a write failure is one line."""
  try:
    return checkpoint_io.write_checkpoint(
        os.path.join(output_model_dir, checkpoint_io.CKPT_BASENAME), values)
  except (tf.errors.OpError, OSError) as e:
    raise ValueError(f"--{flag_name}={output_model_dir}: cannot write the "
                     f"checkpoint ({errors.error_text(e)[:200]})") from None


def clean_ckpt(input_ckpt, output_model_dir):
  """Copies only the model weights of a checkpoint into a new checkpoint.

  Optimizer slots (`*/adam_m`, `*/adam_v`, `*/Adam*`, `beta*_power`),
  `global_step` and the memories (`mems/...`) are dropped.

  Args:
    input_ckpt: str, checkpoint prefix, directory or `{dir}/latest`.
    output_model_dir: str, directory of the new checkpoint `model.ckpt`; must
      differ from the input's directory.

  Returns:
    str, the written checkpoint prefix.

  Raises:
    ValueError: when the input is missing or damaged (naming the file) or
      the output is the input's directory.
  """
  input_ckpt = checkpoint_io.resolve_checkpoint(input_ckpt,
                                                "--clean_input_ckpt")
  _check_output_dir(output_model_dir, os.path.dirname(input_ckpt),
                    "clean_output_model_dir")
  names = [n for n, _ in tf.train.list_variables(input_ckpt)
           if not is_model_state(n)]
  values = checkpoint_io.read_tensors(input_ckpt, names)
  for name in sorted(values):
    tf.compat.v1.logging.info("Include %s", name)
  prefix = _write_output(values, output_model_dir, "clean_output_model_dir")
  tf.compat.v1.logging.info("Wrote %d variables to %s", len(values), prefix)
  return prefix


def is_model_state(var_name):
  """Whether `var_name` is training state rather than a weight: optimizer
  slots, step counters and memories."""
  return (optimizer.is_optimizer_variable(var_name) or
          var_name.startswith("mems/"))


def _model_variable_shapes(ckpt):
  """Returns {name: shape tuple} of a checkpoint's model weights."""
  return {n: tuple(s) for n, s in tf.train.list_variables(ckpt)
          if not is_model_state(n)}


def avg_checkpoints(model_dir, output_model_dir, last_k):
  """Averages the model weights of the last `last_k` checkpoints of a dir.

  The checkpoints are the last `last_k` of the directory's
  `all_model_checkpoint_paths`; each model variable (optimizer slots, the
  step and memories are dropped) is averaged in float64 and cast back to its
  dtype.

  Args:
    model_dir: str, training directory with a `checkpoint` state file.
    output_model_dir: str, directory of the new checkpoint `model.ckpt`; must
      differ from `model_dir`.
    last_k: int >= 1.

  Returns:
    str, the written checkpoint prefix.

  Raises:
    ValueError: on a missing directory, fewer than `last_k` checkpoints,
      damaged checkpoints (naming the file) or checkpoints with different
      variables.
  """
  if last_k < 1:
    raise ValueError(f"--avg_num must be >= 1, got {last_k}")
  if not tf.io.gfile.isdir(model_dir):
    raise ValueError(f"--avg_model_dir={model_dir} is not a directory")
  _check_output_dir(output_model_dir, model_dir, "avg_output_model_dir")
  _, paths = checkpoint_io.read_state_file(model_dir)
  if len(paths) < last_k:
    raise ValueError(f"--avg_model_dir={model_dir} lists {len(paths)} "
                     f"checkpoints, fewer than --avg_num={last_k}")
  paths = paths[-last_k:]
  for path in paths:
    checkpoint_io.resolve_checkpoint(path, "--avg_model_dir checkpoint")

  shapes = _model_variable_shapes(paths[0])
  for path in paths[1:]:
    diff = set(shapes.items()) ^ set(_model_variable_shapes(path).items())
    if diff:
      names = checkpoint_io.describe_names(sorted({n for n, _ in diff}))
      raise ValueError(f"checkpoints {paths[0]} and {path} hold different "
                       f"variables or shapes: {names}")

  tf.compat.v1.logging.info("Averaging %d variables over %s", len(shapes),
                            ", ".join(paths))
  totals, start = {}, time.time()
  for i, path in enumerate(paths):
    for name, value in checkpoint_io.read_tensors(path, sorted(shapes)).items():
      if name not in totals:
        totals[name] = (value.astype(np.float64), value.dtype)
      else:
        totals[name] = (totals[name][0] + value, totals[name][1])
    elapsed = time.time() - start
    tf.compat.v1.logging.info(
        "  %d/%d checkpoints read, %.0fs elapsed, ETA %.0fs", i + 1,
        len(paths), elapsed, elapsed * (len(paths) - i - 1) / (i + 1))
  values = {n: (total / last_k).astype(dtype)
            for n, (total, dtype) in totals.items()}
  prefix = _write_output(values, output_model_dir, "avg_output_model_dir")
  tf.compat.v1.logging.info("Wrote %d averaged variables to %s", len(values),
                            prefix)
  return prefix


def rollback_ckpt(model_dir, step=None):
  """Makes a training directory resume from its newest intact checkpoint
  (or from `step`): newer, damaged checkpoint files are moved into
  `{model_dir}/quarantine/` (never deleted) and the state file is rewritten.

  Returns:
    the checkpoint prefix training resumes from.

  Raises:
    ValueError: when `model_dir` holds no intact checkpoint (or none at
      `step`).
    run_lock.Locked: a trainer is running on `model_dir` (nothing moved:
      moving its checkpoints and state file under it would lose its saves).
  """
  if not tf.io.gfile.isdir(model_dir):
    raise ValueError(f"--model_dir={model_dir} is not a directory")
  with run_lock.hold(model_dir):
    keep, moved = checkpoint_resume.rollback(model_dir, step)
  for path in moved:
    tf.compat.v1.logging.info("Moved %s", path)
  tf.compat.v1.logging.info("Training in %s resumes from %s", model_dir, keep)
  return keep
