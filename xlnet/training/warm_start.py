"""Warm start: a model's variables loaded by name from another run's
checkpoint (`--init_checkpoint`), the optimizer state starting fresh.

  * `init_from_checkpoint`: the graph's variables (TPUEstimator, graphs).
  * `init_template_from_checkpoint`: a `make_template` model's variables
    (the tf.distribute trainer).
Both map names with `get_assignment_map_from_checkpoint`, which refuses a
checkpoint that lacks a model variable or holds it with another shape.
"""
import re

from absl import logging
import tensorflow as tf

from xlnet.training import checkpoint_io
from xlnet.training import optimizer
from xlnet.training import template as template_lib


def get_assignment_map_from_checkpoint(tvars, init_checkpoint,
                                       allow_missing=()):
  """Maps the graph's variables onto same-named checkpoint variables.

  Args:
    tvars: list of variables to initialize.
    init_checkpoint: str, checkpoint prefix.
    allow_missing: iterable of regular expressions; variables matching one of
      them may be absent from the checkpoint (e.g. a new fine-tuning head).

  Returns:
    (assignment_map, initialized_names): dict checkpoint name -> variable, and
    the sorted names of the variables that will be initialized.

  Raises:
    ValueError: when a model variable is missing from the checkpoint or has
      another shape there. Optimizer slots and step counters may be missing.
  """
  ckpt_shapes = dict(tf.train.list_variables(init_checkpoint))
  assignment_map, missing, mismatched = {}, [], []
  for var in tvars:
    name = checkpoint_io.variable_name(var)
    if name not in ckpt_shapes:
      if not (optimizer.is_optimizer_variable(name) or
              any(re.search(p, name) for p in allow_missing)):
        missing.append(name)
      continue
    shape = var.shape.as_list()
    if list(ckpt_shapes[name]) != shape:
      mismatched.append(f"{name} {shape} vs {list(ckpt_shapes[name])}")
      continue
    assignment_map[name] = var
  if missing:
    raise ValueError(f"init_checkpoint={init_checkpoint} lacks "
                     f"{checkpoint_io.describe_names(missing)} model variables")
  if mismatched:
    raise ValueError(f"init_checkpoint={init_checkpoint}: shape mismatch "
                     "(model vs checkpoint) for "
                     f"{checkpoint_io.describe_names(mismatched)} variables")
  return assignment_map, sorted(assignment_map)


def init_from_checkpoint(init_checkpoint, use_tpu=False, global_vars=False,
                         allow_missing=()):
  """Warm-starts the graph's variables from `init_checkpoint` by name.

  Args:
    init_checkpoint: None/"" = do nothing; a prefix, a directory or
      `{dir}/latest`.
    use_tpu: bool, see Returns.
    global_vars: bool, initialize all global variables (optimizer slots and
      the step too, where the checkpoint has them) instead of only the
      trainable ones.
    allow_missing: iterable of regular expressions naming variables that may
      be absent from the checkpoint.

  Returns:
    With `use_tpu`, a `tpu_scaffold` function for
    `TPUEstimatorSpec(scaffold_fn=...)` that performs the initialization;
    otherwise None (the initialization is already set up).

  Raises:
    ValueError: when the checkpoint does not exist or does not cover the model.
  """
  if not init_checkpoint:
    return None
  init_checkpoint = checkpoint_io.resolve_checkpoint(init_checkpoint,
                                                     "init_checkpoint")
  tvars = (tf.compat.v1.global_variables() if global_vars
           else tf.compat.v1.trainable_variables())
  assignment_map, initialized = get_assignment_map_from_checkpoint(
      tvars, init_checkpoint, allow_missing)
  # Read every tensor once now: a truncated or damaged checkpoint is one
  # line naming its file, not a failure deep inside the first session run.
  checkpoint_io.read_tensors(init_checkpoint, list(assignment_map))

  def tpu_scaffold():
    """Initializes from the checkpoint inside the TPU model function."""
    tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)
    return tf.compat.v1.train.Scaffold()

  if use_tpu:
    scaffold_fn = tpu_scaffold
  else:
    tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)
    scaffold_fn = None

  tf.compat.v1.logging.info("Initialized %d of %d variables from %s:",
                            len(initialized), len(tvars), init_checkpoint)
  for name in initialized:
    tf.compat.v1.logging.info("  %s *INIT_FROM_CKPT*", name)
  return scaffold_fn


def init_template_from_checkpoint(template, path, allow_missing=()):
  """Loads the variables of a built `make_template` model found by name in
  `path` (a checkpoint prefix, a directory or DIR/latest).

  Raises:
    ValueError: when the checkpoint lacks a model variable (other than
      those matching `allow_missing`) or has another shape.
  """
  prefix = checkpoint_io.resolve_checkpoint(path, "--init_checkpoint")
  model_vars = {template_lib.checkpoint_name(
      v, template.variable_scope.name): v for v in template.variables}

  class _Named:  # get_assignment_map_from_checkpoint reads .name/.shape
    def __init__(self, name, var):
      self.name, self.shape = name, var.shape

  assignment, names = get_assignment_map_from_checkpoint(
      [_Named(n, v) for n, v in model_vars.items()], prefix, allow_missing)
  values = checkpoint_io.read_tensors(prefix, list(assignment))
  for name in names:
    model_vars[name].assign(values[name])
  logging.info("Initialized %d of %d model variables from %s", len(names),
               len(model_vars), prefix)
