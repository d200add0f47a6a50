"""convert_checkpoint.py under faults: SIGTERM at any moment, a killed
run's temporary folder, a full disk or a file size limit, a damaged
`model.safetensors`, a config that does not fit the weights, a missing or
malformed head.json. Each ends with one line (exit 143, 1 or 2) and leaves
no output and no temporary folder, or a complete output; nothing is
reported as something it is not."""
import errno
import json
import logging
import os
import resource
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import safetensors
from safetensors import numpy as safetensors_numpy
import tensorflow as tf

from tests.interop import interop_fixtures as fx
from xlnet import cli
from xlnet import io_utils
from xlnet.interop import hf_export
from xlnet.interop import hf_import
from xlnet.interop import output_dir
from xlnet.interop import saved_model
from xlnet.training import checkpoint_io

CONVERT = os.path.join(fx.REPO, "convert_checkpoint.py")
STOPPED = ("convert_checkpoint.py: stopped by SIGTERM; no temporary file is "
           "left; rerun the same command to redo the work")


def _env():
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _program(*args, max_file_bytes=None):
  """Runs convert_checkpoint.py; with `max_file_bytes`, no file it writes
  may grow past that (`ulimit -f`; Python ignores SIGXFSZ, so a write past
  it fails with EFBIG, as a full disk fails with ENOSPC)."""

  def limit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes,) * 2)

  proc = subprocess.run([sys.executable, CONVERT, *args], capture_output=True,
                        text=True, timeout=300, cwd=fx.REPO, env=_env(),
                        preexec_fn=limit if max_file_bytes else None)
  return proc.returncode, proc.stderr


def _last_line(stderr):
  assert "Traceback" not in stderr, stderr[-3000:]
  return stderr.strip().splitlines()[-1]


def _leftovers(out):
  """Whatever a conversion to `out` left beside it (temporary folders)."""
  parent, base = os.path.split(out)
  return sorted(n for n in os.listdir(parent)
                if n.startswith(base + io_utils.TMP_MARK))


def _tree(root):
  """{relative path: bytes} of every file under `root`."""
  files = {}
  for dirpath, _, names in os.walk(root):
    for name in names:
      path = os.path.join(dirpath, name)
      with open(path, "rb") as f:
        files[os.path.relpath(path, root)] = f.read()
  return files


# ---- SIGTERM ---------------------------------------------------------------


@pytest.mark.parametrize("swallowed", [False, True],
                         ids=["raised", "swallowed"])
def test_sigterm_while_reading_a_checkpoint_is_not_corruption(
    tmp_path, monkeypatch, swallowed):
  """SIGTERM arriving between two tensors of a checkpoint read propagates
  as `cli.Terminated` (exit 143 under cli.run); it used to be caught as a
  damaged file ('the data file is missing, truncated or corrupt'). When
  the handler's exception is raised inside the reader's own Python calls
  and swallowed there (TensorFlow's GetTensor runs NumPy's version check),
  the read stops all the same; it used to go on as if no signal came."""
  prefix, _, _, _ = fx.random_checkpoint(str(tmp_path / "ckpt"), "lm")
  load = tf.train.load_checkpoint

  class SignalledReader:
    """A checkpoint reader that receives SIGTERM while reading."""

    def __init__(self, path):
      self.reader, self.reads = load(path), 0

    def get_variable_to_shape_map(self):
      return self.reader.get_variable_to_shape_map()

    def get_tensor(self, name):
      self.reads += 1
      if self.reads == 3:
        try:
          os.kill(os.getpid(), signal.SIGTERM)
          time.sleep(0.01)  # the handler runs here at the latest
        except cli.Terminated:
          if not swallowed:
            raise
      return self.reader.get_tensor(name)

  monkeypatch.setattr(tf.train, "load_checkpoint", SignalledReader)
  monkeypatch.setattr(cli, "_sigterm_received", False)
  previous = signal.signal(signal.SIGTERM, cli._raise_terminated)  # pylint: disable=protected-access
  try:
    with pytest.raises(cli.Terminated):
      checkpoint_io.read_tensors(prefix)
  finally:
    signal.signal(signal.SIGTERM, previous)
