"""A work dir that a driver fills over several runs of its command: held by
one run at a time (`lock`), and kept to one set of settings: what the first
run recorded (`recorded_settings`) is compared with a rerun's
(`differing_settings`), and the driver refuses a rerun with others, whose
outputs would mix with the first's.
"""
import contextlib
import json

import tensorflow as tf

from xlnet import io_utils
from xlnet import settings_files
from xlnet.training import run_lock


@contextlib.contextmanager
def lock(work_dir, user, active=True):
  """Holds the lock of `work_dir` (`run_lock.hold`) for the `with` block,
  so that two runs never write one work dir (nothing when not `active`:
  the other hosts of a multi-host run); `user` names the holder in the
  message another run gets ("reproduce.py run").

  Raises:
    run_lock.Locked: another such run holds it (one line).
    ValueError / ResourceError: the work dir cannot be written (one line).
  """
  with contextlib.ExitStack() as stack:
    try:
      stack.enter_context(run_lock.hold(work_dir, active, flag="work_dir",
                                        user=user))
    except (OSError, tf.errors.OpError) as e:
      error = io_utils.resource_error(
          run_lock.lock_path(work_dir), e, "nothing was run; make room (or "
          "fix the permission) and rerun")
      if error is None:
        raise
      raise error from None
    yield


def recorded_settings(path, settings):
  """The settings recorded in the JSON file `path`; `settings` (a json-able
  dict) when there are none yet, recorded there first (atomically).

  Raises:
    ValueError: one line naming the file and, where a recorded value is
      not of the kind of this run's (`"mem_len": "sixteen"` where this run
      has 64), the setting and what was expected: a rerun is compared
      with values it can trust.
  """
  recorded = settings_files.read(
      path, settings_files.Fields({name: settings_files.kind_of(value)
                                   for name, value in settings.items()}),
      "settings record", "restore it, or use a new work dir")
  if recorded is None:
    io_utils.atomic_write(path, json.dumps(settings, indent=1) + "\n")
    return settings
  return recorded


def differing_settings(recorded, current, defaults=None):
  """The names of the settings whose values differ between `recorded` and
  `current` ({name: value}), in recorded's order and then current's.

  A name that one of them lacks reads as its value in `defaults` (None
  without one): a setting added after a work dir was made is read there as
  the default the driver had before it existed, so an older work dir
  resumes.
  """
  defaults = defaults or {}
  value = lambda settings, name: settings.get(name, defaults.get(name))
  return [name for name in dict.fromkeys(list(recorded) + list(current))
          if value(recorded, name) != value(current, name)]
