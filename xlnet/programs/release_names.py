"""The release's module names kept at the repository root (`data_utils`,
`model_utils`, `modeling`, `function_builder`), for the scripts that import
them.

Each name is imported from the module that holds it now when it is first
used (a module `__getattr__`), so a root module that is also a program
answers `--help` without TensorFlow. A release name we do not offer raises
one line naming what to use instead (docs/differences.md), where the
release's script first touches it.
"""
import importlib


def module_attributes(module, module_globals, moved, replaced=None):
  """The `__getattr__` and `__dir__` of a root module.

  Args:
    module: the root module's name (`__name__`), for messages.
    module_globals: its `globals()`.
    moved: dict release name -> "package.module" that holds it under the
      same name, or "package.module:name" under another.
    replaced: dict release name -> what to use instead (a phrase).

  Returns:
    (__getattr__, __dir__): assign them in the module.
  """
  replaced = replaced or {}

  def __getattr__(name):  # pylint: disable=invalid-name
    if name in moved:
      path, _, attribute = moved[name].partition(":")
      return getattr(importlib.import_module(path), attribute or name)
    if name in replaced:
      raise ImportError(f"{module}.{name} (the release's) is not offered "
                        f"here: use {replaced[name]} (docs/differences.md)")
    raise AttributeError(f"module {module!r} has no attribute {name!r}")

  def __dir__():  # pylint: disable=invalid-name
    return sorted(set(module_globals) | set(moved))

  return __getattr__, __dir__
