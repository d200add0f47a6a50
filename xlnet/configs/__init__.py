"""The shipped configuration files: model sizes and programs' flag files.

`xlnet_tiny.json`, `xlnet_base.json`, `xlnet_large.json` (XLNetConfig) and
`demo.flags`, `pretrain_base.flags`, `pretrain_large.flags` (`--flagfile`)
live in this package, so `pip install` ships them with the library.

The programs and the docs name them `configs/NAME`: given to `--flagfile`
on the command line or to `--model_config_path` (also from a flag file,
e.g. `--flagfile=configs/demo.flags`), such a relative path means
`./configs/NAME` when that file exists, else the shipped NAME. So the
commands work from any directory, in a checkout or after `pip install`, and
a copy edited into `./configs/` wins over the shipped file. From Python,
`path(NAME)` is the shipped file; `python -m xlnet.configs` prints this
directory.
"""
import os

# The seed of every run that names none: weights, data order, dropout (the
# programs' --seed and the typed configs' default; `get_input_fn`'s too).
DEFAULT_SEED = 1
DIR = os.path.dirname(os.path.abspath(__file__))
# The name under which the docs, scripts and flag files refer to these files.
PREFIX = "configs/"
SUFFIXES = (".json", ".flags")


def names():
  """The shipped files' names, sorted (e.g. ["demo.flags", ...])."""
  return sorted(n for n in os.listdir(DIR) if n.endswith(SUFFIXES))


def path(name):
  """Absolute path of the shipped config `name` (e.g. "xlnet_tiny.json").

  Raises:
    ValueError: no shipped config has that name (the message lists them).
  """
  if name not in names():
    raise ValueError(f"no shipped config {name!r}; the shipped ones are "
                     f"{', '.join(names())} (in {DIR})")
  return os.path.join(DIR, name)


def resolve(value):
  """A command line's config path: `value`, or the shipped file it names.

  Args:
    value: str, a path as given to `--flagfile` or `--model_config_path`.

  Returns:
    the shipped file when `value` is `configs/NAME`, no such file exists
    relative to the current directory and NAME is shipped; else `value`
    unchanged (so a missing file is reported under the name the user gave).
  """
  if (not value or not value.startswith(PREFIX) or os.path.exists(value)
      or value[len(PREFIX):] not in names()):
    return value
  return os.path.join(DIR, value[len(PREFIX):])
