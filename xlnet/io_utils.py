"""Atomic file output shared by every writer in the project.

A file appears under its final name only when it is complete: writers put
their bytes into a temporary sibling (`{path}.tmp-{pid}-{random}`) and rename
it over `path` at the end. A crash or a kill leaves at most a temporary file,
which the next run writing the same `path` removes (`remove_stale_tmp`),
unless the process that wrote it is still running: two runs may write the
same file at once (a shared feature cache, the demo corpus), and the last
rename wins with the same bytes.
Works for local paths, with Python's own calls, and every `tf.io.gfile`
URL (e.g. gs://), through `gfile_io`, imported for the first URL
(`url_files`): spm_train.py, download.py and a program's --help write and
read local files without TensorFlow.
"""
import contextlib
import errno
import glob
import os
import uuid

from xlnet import errors
from xlnet import signals

TMP_MARK = ".tmp-"

# Resource failures a writer can meet, by errno and by the text TensorFlow's
# file system puts in its errors (tf.errors carry no errno).
_RESOURCE_CAUSES = (
    (errno.ENOSPC, "No space left on device", "no space left on device"),
    (errno.EDQUOT, "Disk quota exceeded", "disk quota exceeded"),
    (errno.EFBIG, "File too large", "file too large"),
    (errno.EROFS, "Read-only file system", "read-only file system"),
    (errno.EACCES, "Permission denied", "permission denied"),
)


class ResourceError(errors.Stop):
  """Writing failed for lack of a resource (space, size limit, permission);
  the message names the path, the cause and what is safe. Exit code 1.

  Attributes:
    cause: the short cause ("no space left on device", ...).
  """

  def __init__(self, message, cause=None):
    super().__init__(message)
    self.cause = cause


def resource_cause(err):
  """The short cause ("no space left on device", ...) of an OSError, a
  tf.errors.OpError or another library's error (e.g. safetensors') whose
  text reports a resource failure, or of a `ResourceError`; else None."""
  if isinstance(err, ResourceError):
    return err.cause
  number = getattr(err, "errno", None)
  text = errors.error_text(err)
  for code, marker, cause in _RESOURCE_CAUSES:
    if number == code or marker in text:
      return cause
  return None


def resource_error(path, err, safe):
  """A `ResourceError` for `err` while writing `path`, or None when `err` is
  not a resource failure (re-raise it as it is then).

  Args:
    path: str, the file or directory being written.
    err: the exception raised by the write.
    safe: str, what is intact and what to do, e.g. "model.ckpt-100 is
      intact; free space and rerun".
  """
  cause = resource_cause(err)
  if cause is None:
    return None
  return ResourceError(f"cannot write {path}: {cause}; {safe}", cause)


def is_local(path):
  """Whether `path` is on the local file system (no `scheme://`)."""
  return "://" not in path


def url_files():
  """`xlnet/gfile_io.py`, the file operations on a URL (gs://...).

  Imported here, when the first URL is given, and not with this module:
  it imports TensorFlow (5-10 s), which local files never need.
  """
  from xlnet import gfile_io  # pylint: disable=g-import-not-at-top
  return gfile_io


def tmp_path_for(path):
  """A fresh temporary name next to `path`: `{path}.tmp-{pid}-{8 hex}`."""
  return f"{path}{TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"


def remove_quietly(path):
  """Deletes `path` if it exists; never raises."""
  if not is_local(path):
    url_files().remove_quietly(path)
    return
  try:
    os.remove(path)
  except OSError:
    pass


def remove_stale_tmp(path):
  """Removes temporary files a killed run left for the final file `path`.

  Only `{path}.tmp-{pid}-*` is touched, and only where process `pid` is not
  running on this host: a live writer of the same file (another run sharing
  a feature cache) keeps its temporary file. On a remote file system the
  pid names a process of another machine, so there every such file counts
  as stale.

  Returns:
    list of the removed paths.
  """
  if is_local(path):
    found = glob.glob(glob.escape(path) + TMP_MARK + "*")
  else:
    gfile = url_files()
    found = gfile.glob(gfile.glob_escape(path) + TMP_MARK + "*")
  stale = [name for name in found if not _writer_is_running(name)]
  for name in stale:
    remove_quietly(name)
  return stale


def _writer_is_running(tmp):
  """Whether the local temporary file `tmp` (`{path}.tmp-{pid}-...`) was
  made by a process that is still running."""
  pid = tmp.rsplit(TMP_MARK, 1)[1].split("-", 1)[0]
  if "://" in tmp or not pid.isdigit():
    return False
  return pid_is_running(int(pid))


def pid_is_running(pid):
  """Whether a process with id `pid` runs on this host."""
  try:
    os.kill(pid, 0)
  except PermissionError:
    return True  # it runs, as another user
  except (OSError, OverflowError):
    return False
  return True


@contextlib.contextmanager
def atomic_output(path, safe=None):
  """Yields a temporary path to write; renames it to `path` on success.

  On any exception (KeyboardInterrupt and SIGTERM's `errors.Terminated`
  included) the temporary file is removed and `path` is left as it was. A
  resource failure (disk full, file too large, read-only, no permission)
  raised inside the block then becomes a one-line `ResourceError` naming
  `path`, the cause and `safe` (exit code 1 under `cli.run`).

  Args:
    path: str, the final file.
    safe: str, what is intact and what to do after a resource failure;
      default: `path` is unchanged and no temporary file is left.

  Usage:
    with atomic_output("out/x.tfrecords") as tmp:
      with tf.io.TFRecordWriter(tmp) as w: ...
  """
  parent = os.path.dirname(path)
  tmp = tmp_path_for(path)
  if is_local(path) and os.path.isdir(path):  # before the work, not after
    raise ValueError(f"{path} is a directory; the output is a file: give "
                     "a file name")
  try:
    if parent:
      _makedirs(parent)
    yield tmp
    signals.raise_if_terminated()  # never publish after SIGTERM
    _replace(tmp, path)
  except BaseException as e:
    remove_quietly(tmp)
    error = _as_resource_error(path, e, safe)
    if error is not None:
      raise error from None
    raise


def _as_resource_error(path, err, safe):
  """`resource_error` for an exception escaping `atomic_output`, or None
  (not a resource failure, or already one)."""
  if not isinstance(err, Exception) or isinstance(err, errors.Stop):
    return None
  return resource_error(path, err, safe or (
      "it is unchanged and no temporary file is left; make room (or fix the "
      "permission) and rerun"))


def atomic_write(path, data, safe=None):
  """Writes `data` (str or bytes) to `path` atomically (`safe`: see
  `atomic_output`)."""
  binary = isinstance(data, (bytes, bytearray))
  with atomic_output(path, safe) as tmp:
    if is_local(tmp):
      with open(tmp, "wb" if binary else "w",
                encoding=None if binary else "utf-8") as f:
        f.write(data)
    else:
      url_files().write(tmp, data)


def read_file(path, binary=False):
  """The contents of file `path`: bytes when `binary`, else str (UTF-8)."""
  if not is_local(path):
    return url_files().read(path, binary)
  with open(path, "rb" if binary else "r",
            encoding=None if binary else "utf-8") as f:
    return f.read()


def exists(path):
  """Whether `path` exists (a file or a directory)."""
  if is_local(path):
    return os.path.exists(path)
  return url_files().exists(path)


def _touch(path):
  """Creates `path` as an empty file, in place (a probe, not an output)."""
  if is_local(path):
    with open(path, "w", encoding="utf-8"):
      pass
  else:
    url_files().write(path, "")


def _makedirs(path):
  """Creates directory `path` and its parents if needed."""
  if is_local(path):
    os.makedirs(path, exist_ok=True)
  else:
    url_files().makedirs(path)


def _replace(src, dst):
  """Renames `src` over `dst` (one atomic rename on a local disk)."""
  if is_local(dst):
    os.replace(src, dst)
  else:
    url_files().replace(src, dst)


def ensure_writable_dir(path, flag_name):
  """Creates directory `path` if needed and checks that files can be
  written in it.

  Raises:
    ValueError: one line naming the flag and path (a file in the way, no
      permission, a read-only file system, ...).
  """
  if is_local(path):
    isdir, failures = os.path.isdir, (OSError,)
  else:
    isdir, failures = url_files().isdir, url_files().FAILURES
  if exists(path) and not isdir(path):
    raise ValueError(f"--{flag_name}={path} exists and is not a directory")
  probe = os.path.join(path, f".write-test{TMP_MARK}{os.getpid()}")
  # A SIGTERM in the middle (while the probe is removed) would leave it.
  with signals.deferred_signals():
    try:
      _makedirs(path)
      _touch(probe)
    except failures as e:
      raise ValueError(f"--{flag_name}={path} is not writable "
                       f"({errors.error_text(e)[:200]})") from None
    finally:
      remove_quietly(probe)
