"""Feature records made once and reused while what made them is unchanged.

`run_classifier.py`, `run_squad.py` and `run_race.py` write their training
records into --output_dir and reuse them on later runs. Beside a record file,
`{records}.json` holds the number of records and the key they were made
with: the digest of the bytes of every input (the data files, the
SentencePiece model) and every setting that changes the records. The records
are reused while the key is the same; any difference (an edited data file,
even one of the same size, another `spiece.model` under the same name, a
changed setting) rewrites them, with one log line naming what differs.

The key file is removed before the records are rewritten and written after
them, so a run killed in between leaves records without a key, which the
next run rewrites.

In a run over several hosts only the chief writes records; every other
worker waits until records with its own key are in place (`prepare`'s
`wait`), so a shared --output_dir is written once, never raced.
"""
import hashlib
import json
import time

from absl import logging
import tensorflow as tf

from xlnet import io_utils

# Bytes read per step of a digest: large files are digested in constant
# memory.
_DIGEST_CHUNK = 1 << 20
# Seconds between two looks of a waiting worker at the chief's records.
POLL_SECONDS = 2.0


def update_digest(hasher, path):
  """Feeds the bytes of the file at `path` (local or a tf.io.gfile URL) to
  `hasher` (a hashlib object), `_DIGEST_CHUNK` bytes at a time."""
  with tf.io.gfile.GFile(path, "rb") as f:
    while True:
      chunk = f.read(_DIGEST_CHUNK)
      if not chunk:
        return
      hasher.update(chunk)


def file_digest(path):
  """sha1 (hex) of the bytes of the file at `path`."""
  hasher = hashlib.sha1()
  update_digest(hasher, path)
  return hasher.hexdigest()


def key_path(path):
  """`{path}.json`: the key file of the records at `path`."""
  return path + ".json"


def _read_json(path):
  """The JSON object at `path`, or None when missing or unreadable."""
  if not tf.io.gfile.exists(path):
    return None
  try:
    with tf.io.gfile.GFile(path) as f:
      content = json.load(f)
  except (ValueError, tf.errors.OpError, OSError):
    return None
  return content if isinstance(content, dict) else None


def differing(old, new):
  """Sorted names of the fields of two keys (dicts) whose values differ."""
  return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def check(path, key):
  """Whether the records at `path` were made with `key`.

  Returns:
    (number of records, None) when they were; else (None, why they must be
    written: "is missing", "has no valid key file (...)" or "was made from
    other data or settings (differing: ...)").
  """
  if not tf.io.gfile.exists(path):
    return None, "is missing"
  meta = _read_json(key_path(path))
  if (meta is None or not isinstance(meta.get("key"), dict) or
      not isinstance(meta.get("num_examples"), int)):
    return None, ("has no valid key file (written by an earlier version or "
                  "a killed run)")
  key = json.loads(json.dumps(key))  # as stored (tuples become lists)
  if meta["key"] != key:
    return None, ("was made from other data or settings (differing: "
                  f"{', '.join(differing(meta['key'], key))})")
  return meta["num_examples"], None


def wait_for(path, key, timeout):
  """The number of records at `path` once another process (the chief of a
  multi-host run) has made them with `key`.

  Args:
    path, key: as `prepare`.
    timeout: seconds to wait at most.

  Raises:
    ValueError: one line naming the records, why they are not usable and
      what to check, after `timeout` seconds.
  """
  count, why = check(path, key)
  if why is None:
    logging.info("Using %d records in %s (written by the chief)", count, path)
    return count
  logging.info("Waiting up to %.0f s for the chief to write %s (it %s)",
               timeout, path, why)
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
    count, why = check(path, key)
    if why is None:
      logging.info("Using %d records in %s (written by the chief)", count,
                   path)
      return count
  raise ValueError(
      f"{path} {why} after {timeout:.0f} s of waiting (--records_timeout) "
      "for the chief to write it: every host must see the chief's "
      "--output_dir (a shared file system or bucket) and read the same data "
      "with the same settings, or hold a copy of the chief's records "
      "(docs/distributed.md)")


def prepare(path, key, write_fn, overwrite=False, wait=None):
  """Returns the number of records at `path`, writing them when needed.

  Args:
    path: the record file (local or a tf.io.gfile URL).
    key: JSON-able dict of everything the records are made from (see the
      module docstring): digests of the inputs and the settings.
    write_fn: `write_fn(path)` writes the records atomically and returns
      their number; called only when they are missing or were made with
      another key (or with `overwrite`).
    overwrite: rewrite even records made with `key`.
    wait: None: this process writes the records; seconds: another one (the
      chief) does, and this one waits up to that long for records made
      with `key` (`wait_for`; `overwrite` is the writer's to apply).

  Returns:
    int, the number of records.
  """
  if wait is not None:
    return wait_for(path, key, wait)
  for stale in (path, key_path(path)):
    io_utils.remove_stale_tmp(stale)
  count, why = check(path, key)
  if why is None and not overwrite:
    logging.info("Reusing %d records in %s (made from the same data and "
                 "settings)", count, path)
    return count
  if why is None:
    logging.info("Rewriting %s (asked to overwrite it)", path)
  elif why != "is missing":
    logging.info("%s %s; rewriting it", path, why)
  # No key while the records are rewritten: a killed run is redone.
  io_utils.remove_quietly(key_path(path))
  count = write_fn(path)
  io_utils.atomic_write(key_path(path), json.dumps(
      {"num_examples": count, "key": key}, indent=2) + "\n")
  return count
