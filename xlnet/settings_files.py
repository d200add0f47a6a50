"""Settings files read strictly: the JSON objects a run records and a later
run trusts (a pretraining run's `objective.json` and `batch_layout.json`,
a fine-tuned head's `head.json`, the chain's `chain.json`, a memory
calibration file).

Such a file is trusted only whole: truncated or binary bytes, JSON of
another shape (a list, a number where a table belongs) and a value of
another kind (`"mem_len": "sixteen"`, an infinite peak) are one line that
names the file, the key and what was expected, never a traceback, a
nonsense plan or a file ignored as if it were missing. `read` checks a
file against its kinds: `Kind`s for single values (`INTEGER`, `one_of`,
...), `Fields` for an object, `ListOf` for a list; `kind_of` is the kind
of a value a run has now, for files that record a run's own values.
No TensorFlow: local files with Python, a URL through `io_utils`.
"""
import json
import math

from xlnet import io_utils

_MISSING = object()


class Kind:
  """What a value must be: `expected` says it in words ("an integer"),
  `accepts(value)` tests it."""

  def __init__(self, expected, accepts):
    self.expected, self.accepts = expected, accepts

  def problem(self, value, key):
    """None, or (key, value, expected) when `value` is not of this kind."""
    return None if self.accepts(value) else (key, value, self.expected)


def _is_number(value):
  return type(value) in (int, float) and math.isfinite(value)


INTEGER = Kind("an integer", lambda v: type(v) is int)
POSITIVE_INTEGER = Kind("an integer >= 1", lambda v: type(v) is int and v >= 1)
NON_NEGATIVE_INTEGER = Kind("an integer >= 0",
                            lambda v: type(v) is int and v >= 0)
NUMBER = Kind("a finite number", _is_number)
POSITIVE = Kind("a finite number > 0", lambda v: _is_number(v) and v > 0)
NON_NEGATIVE_NUMBER = Kind("a finite number >= 0",
                          lambda v: _is_number(v) and v >= 0)
BOOLEAN = Kind("true or false", lambda v: type(v) is bool)
STRING = Kind("a string", lambda v: type(v) is str)
LIST = Kind("a list", lambda v: type(v) is list)
ANY = Kind("any value", lambda v: True)


def one_of(*values):
  """The kind of a value that is one of `values` (strings)."""
  return Kind("one of " + ", ".join(json.dumps(v) for v in values),
              lambda v: type(v) is str and v in values)


def or_null(kind):
  """`kind`, or null (an unset setting)."""
  return Kind(f"{kind.expected} or null",
              lambda v: v is None or kind.accepts(v))


class Fields(Kind):
  """A JSON object whose keys have the kinds `kinds` (a dict key -> kind;
  keys it does not name may hold anything), each key of `required`
  present."""

  def __init__(self, kinds, required=()):
    super().__init__("a JSON object", lambda v: type(v) is dict)
    self.kinds, self.required = kinds, tuple(required)

  def problem(self, value, key):
    if type(value) is not dict:
      return (key, value, self.expected)
    for name in self.required:
      if name not in value:
        return (_join(key, name), _MISSING, self.kinds[name].expected)
    for name, kind in self.kinds.items():
      found = (kind.problem(value[name], _join(key, name)) if name in value
               else None)
      if found:
        return found
    return None


class ListOf(Kind):
  """A list whose items are of `kind` (at least one when `non_empty`)."""

  def __init__(self, kind, non_empty=False):
    super().__init__(("a non-empty " if non_empty else "a ") + "list",
                     lambda v: type(v) is list and (v or not non_empty))
    self.kind = kind

  def problem(self, value, key):
    if not self.accepts(value):
      return (key, value, self.expected)
    for i, item in enumerate(value):
      found = self.kind.problem(item, f"{key}[{i}]")
      if found:
        return found
    return None


def _join(key, name):
  return f"{key}.{name}" if key else name


def kind_of(value):
  """The kind of a value like `value` (one a run has now): a number for a
  float, an integer for an int, a list of items like its first, an object
  of the same keys' kinds, ...; anything for None (an unset setting, which
  any recorded value differs from)."""
  if type(value) is list and value:
    return ListOf(kind_of(value[0]))
  if type(value) is dict:
    return Fields({key: kind_of(item) for key, item in value.items()})
  if value is None:
    return ANY
  if type(value) is float:
    return NUMBER
  return {bool: BOOLEAN, int: INTEGER, str: STRING,
          list: LIST}.get(type(value), ANY)


def _shown(value):
  if value is _MISSING:
    return "missing"
  text = json.dumps(value)
  return text if len(text) <= 60 else text[:57] + "..."


def read(path, kind, what, remedy="", label=None):
  """The JSON value of the file `path`, checked against `kind` (usually
  `Fields`); None when there is no file.

  Args:
    path: a local path or URL.
    kind: what the file must hold.
    what: what the file is, for messages ("run record").
    remedy: what to do about a bad file (ends the message).
    label: how messages name the file (default: `path`; e.g. the flag
      that gave it, `--memory_calibration=PATH`).

  Raises:
    ValueError: one line naming the file, what is wrong (the key, its
      value and what was expected) and `remedy`.
  """
  if not io_utils.exists(path):
    return None
  end = f"; {remedy}" if remedy else ""
  bad = f"{label or path} is not a valid {what}"
  try:
    data = io_utils.read_file(path, binary=True)
  except OSError as e:
    raise ValueError(f"cannot read {what} {label or path} "
                     f"({e.strerror or e}){end}") from None
  if not data.strip():
    raise ValueError(f"{bad}: the file is empty{end}")
  try:
    value = json.loads(data.decode("utf-8"))
  except UnicodeDecodeError:
    raise ValueError(f"{bad}: not UTF-8 text (binary bytes){end}") from None
  except json.JSONDecodeError as e:
    raise ValueError(f"{bad}: not JSON ({e.msg} at line {e.lineno} column "
                     f"{e.colno}; truncated?){end}") from None
  found = kind.problem(value, "")
  if found:
    key, got, expected = found
    where = f"{key} is" if key else "it holds"
    raise ValueError(f"{bad}: {where} {_shown(got)}, expected {expected}"
                     f"{end}")
  return value
