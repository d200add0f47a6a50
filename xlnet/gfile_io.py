"""Files at a URL (gs://, ram://, ...), through TensorFlow's file systems.

The URL side of `io_utils`, which reads and writes local paths with
Python's own calls and imports this module (with TensorFlow) only for a
URL (`io_utils.url_files`). Modules that import TensorFlow anyway use it
directly (`glob_escape` for `tf.io.gfile.glob`).
"""
import tensorflow as tf

# What a file operation on a URL raises when it fails.
FAILURES = (tf.errors.OpError, OSError)

exists = tf.io.gfile.exists
isdir = tf.io.gfile.isdir
makedirs = tf.io.gfile.makedirs
glob = tf.io.gfile.glob


def glob_escape(path):
  """`path` with the glob metacharacters `*?[` escaped for tf.io.gfile.glob."""
  return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def remove_quietly(path):
  """Deletes `path` if it exists; never raises."""
  try:
    if tf.io.gfile.exists(path):
      tf.io.gfile.remove(path)
  except FAILURES:
    pass


def replace(src, dst):
  """Renames `src` over `dst`."""
  tf.io.gfile.rename(src, dst, overwrite=True)


def write(path, data):
  """Writes `data` (str or bytes) to `path`."""
  with tf.io.gfile.GFile(path, "wb" if isinstance(data, (bytes, bytearray))
                         else "w") as f:
    f.write(data)


def read(path, binary=False):
  """The contents of `path`: bytes when `binary`, else str (UTF-8)."""
  with tf.io.gfile.GFile(path, "rb" if binary else "r") as f:
    return f.read()


def mtime(path):
  """The modification time of `path`, in seconds since the epoch."""
  return tf.io.gfile.stat(path).mtime_nsec / 1e9
