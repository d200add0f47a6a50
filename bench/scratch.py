"""Scratch directories for the benchmarks.

Benchmarks write corpora, records and checkpoints of several GB. Left in the
temp dir, a few runs fill a shared disk, so a scratch dir the user did not
name is removed when the benchmark exits; one named with --work_dir is kept.
"""

import atexit
import os
import shutil
import tempfile


def scratch_dir(work_dir, prefix):
  """Returns work_dir (created, kept) or a new temp dir removed at exit."""
  if work_dir:
    os.makedirs(work_dir, exist_ok=True)
    return work_dir
  path = tempfile.mkdtemp(prefix=prefix)
  atexit.register(shutil.rmtree, path, True)
  return path
