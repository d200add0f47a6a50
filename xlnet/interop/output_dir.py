"""A converter's output directory, written whole or not at all: the files go
to a temporary sibling directory that is renamed to the output at the end.

The temporary directory is `{output_dir}.tmp-{pid}-{8 hex}-{host}`. A killed
conversion (SIGKILL, a lost machine) leaves it behind; the next conversion
to the same output removes it when it is provably a dead run's: the name has
exactly this form, the host is this one and no process with that pid runs.
A live conversion's directory (two converters writing one output at once),
or one of another host (a shared file system), is left alone.
"""
import contextlib
import os
import re
import shutil
import socket
import uuid

from absl import logging

from xlnet import errors
from xlnet import io_utils

# What follows `io_utils.TMP_MARK` in a temporary directory's name.
_TMP_SUFFIX = re.compile(r"^(\d+)-[0-9a-f]{8}-(.+)$")


def check_output_dir(output_dir, flag="--output_dir"):
  """Refuses an output that exists and is not an empty directory."""
  if not output_dir:
    raise ValueError(f"{flag} must be set")
  if os.path.exists(output_dir) and (not os.path.isdir(output_dir)
                                     or os.listdir(output_dir)):
    raise ValueError(f"{flag}={output_dir} exists and is not an empty "
                     "directory; choose a new one (nothing is overwritten)")


def tmp_dir_for(output_dir):
  """A fresh temporary directory name next to `output_dir` (see above)."""
  return (f"{output_dir}{io_utils.TMP_MARK}{os.getpid()}-"
          f"{uuid.uuid4().hex[:8]}-{socket.gethostname()}")


def stale_tmp_dirs(output_dir):
  """The temporary directories of `output_dir` that killed conversions of
  this host left (their pid runs no more), in name order."""
  parent = os.path.dirname(output_dir) or "."
  prefix = os.path.basename(output_dir) + io_utils.TMP_MARK
  host = socket.gethostname()
  stale = []
  for name in sorted(os.listdir(parent)) if os.path.isdir(parent) else []:
    match = (_TMP_SUFFIX.match(name[len(prefix):])
             if name.startswith(prefix) else None)
    path = os.path.join(parent, name)
    if (match and match.group(2) == host and os.path.isdir(path)
        and not os.path.islink(path)
        and not io_utils.pid_is_running(int(match.group(1)))):
      stale.append(path)
  return stale


def sweep_stale(output_dir):
  """Removes `stale_tmp_dirs(output_dir)`, each with a warning."""
  for path in stale_tmp_dirs(output_dir):
    shutil.rmtree(path, ignore_errors=True)
    logging.warning("Removed %s (left by a killed conversion)", path)


_NOTHING_WRITTEN = ("nothing was written (no output and no temporary "
                    "folder is left); make room (or fix the permission) "
                    "and rerun")


@contextlib.contextmanager
def staged(output_dir, flag="--output_dir"):
  """Yields a temporary directory; on success it becomes `output_dir`.

  On any exception (SIGTERM's `errors.Terminated` and Ctrl-C included) the
  temporary directory is removed and `output_dir` is left as it was; a
  resource failure (no space left, file too large, ...) becomes a one-line
  `io_utils.ResourceError` naming `output_dir` and the cause (exit code 1).
  Temporary directories that killed conversions left are removed first
  (`sweep_stale`).
  """
  check_output_dir(output_dir, flag)
  output_dir = os.path.abspath(output_dir)
  sweep_stale(output_dir)
  tmp = tmp_dir_for(output_dir)
  try:
    os.makedirs(tmp)
    yield tmp
    check_output_dir(output_dir, flag)  # another run may have written it
    if os.path.isdir(output_dir):
      os.rmdir(output_dir)
    os.rename(tmp, output_dir)
  except BaseException as e:
    shutil.rmtree(tmp, ignore_errors=True)
    error = _as_resource_error(output_dir, e)
    if error is not None:
      raise error from None
    raise


def _as_resource_error(output_dir, err):
  """A `ResourceError` naming `output_dir` for a resource failure `err`
  (also one a writer inside already reported for its temporary file), else
  None (signals and other errors pass unchanged)."""
  if (isinstance(err, errors.Stop)
      and not isinstance(err, io_utils.ResourceError)):
    return None
  if not isinstance(err, Exception):
    return None
  return io_utils.resource_error(output_dir, err, _NOTHING_WRITTEN)
