"""A converter's output directory, written whole or not at all: the files go
to a temporary sibling directory that is renamed to the output at the end."""
import contextlib
import os
import shutil
import uuid


def check_output_dir(output_dir, flag="--output_dir"):
  """Refuses an output that exists and is not an empty directory."""
  if not output_dir:
    raise ValueError(f"{flag} must be set")
  if os.path.exists(output_dir) and (not os.path.isdir(output_dir)
                                     or os.listdir(output_dir)):
    raise ValueError(f"{flag}={output_dir} exists and is not an empty "
                     "directory; choose a new one (nothing is overwritten)")


@contextlib.contextmanager
def staged(output_dir, flag="--output_dir"):
  """Yields a temporary directory; on success it becomes `output_dir`.

  On any exception the temporary directory is removed and `output_dir` is
  left as it was.
  """
  check_output_dir(output_dir, flag)
  output_dir = os.path.abspath(output_dir)
  tmp = f"{output_dir}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
  os.makedirs(tmp)
  try:
    yield tmp
    check_output_dir(output_dir, flag)  # another run may have written it
    if os.path.isdir(output_dir):
      os.rmdir(output_dir)
    os.rename(tmp, output_dir)
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
    raise
