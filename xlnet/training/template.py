"""The model as a `tf.compat.v1.make_template` and its variables' names.

The model is the unchanged `tf.compat.v1.get_variable` graph code, wrapped
once in `make_template` so that a `tf.function` step can call it; the
template adds the scope `xlnet/` to every variable name, which is stripped
again when checkpoints are written and read, so checkpoints carry the
released names (`model/transformer/...`).
"""
import tensorflow as tf

from xlnet.training import checkpoint_io

TEMPLATE_SCOPE = "xlnet"


def checkpoint_name(variable, scope=TEMPLATE_SCOPE):
  """A template variable's checkpoint (released) name: its name without the
  template's scope (`xlnet/`, or `xlnet_1/` for a second template)."""
  name = variable.name.split(":")[0]
  prefix = scope + "/"
  return name[len(prefix):] if name.startswith(prefix) else name


def load_template_variables(template, prefix):
  """Assigns every variable of a built `make_template` template from the
  checkpoint `prefix`, by its released name.

  Raises:
    checkpoint_io.CheckpointError: a variable is missing, unreadable or of
      another shape.
  """
  variables = {checkpoint_name(v, template.variable_scope.name): v
               for v in template.variables}
  values = checkpoint_io.read_tensors(prefix, sorted(variables))
  for name, var in variables.items():
    if tuple(values[name].shape) != tuple(var.shape):
      raise checkpoint_io.CheckpointError(
          f"{prefix}: {name} has shape {list(values[name].shape)}, the "
          f"model needs {var.shape.as_list()}")
    var.assign(values[name])


def zeros_like_spec(spec):
  """A zero tensor of a (static) TensorSpec."""
  return tf.zeros(spec.shape, spec.dtype)
