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


# ---- a killed run's temporary folder ---------------------------------------

_INSIDE_STAGED = """
import sys, time
from xlnet.interop import output_dir
with output_dir.staged(sys.argv[1]) as tmp:
  with open(tmp + "/model.safetensors", "wb") as f:
    f.write(b"half" * 1000)
  print(tmp, flush=True)
  time.sleep(600)
"""


def _converter_inside_staged(out):
  """A process stopped in the middle of writing `out` (inside
  `output_dir.staged`, as a conversion writes); returns (process, its
  temporary folder)."""
  proc = subprocess.Popen([sys.executable, "-c", _INSIDE_STAGED, out],
                          cwd=fx.REPO, env=_env(), stdout=subprocess.PIPE,
                          text=True)
  return proc, proc.stdout.readline().strip()


def test_a_killed_conversions_folder_is_swept_by_the_next(tmp_path):
  """SIGKILL in the middle of writing leaves a temporary folder; the next
  conversion to the same output removes it (a warning names it) and writes
  the output. It keeps the folder of a conversion still running (two
  converters on one output), one written on another host (a shared file
  system, where the pid means nothing here) and names not of this form."""
  prefix, _, config, _ = fx.random_checkpoint(str(tmp_path / "ckpt"),
                                              "squad")
  out = str(tmp_path / "hf")
  killed, killed_tmp = _converter_inside_staged(out)
  running, running_tmp = _converter_inside_staged(out)
  try:
    killed.kill()
    killed.wait()
    assert os.path.isdir(killed_tmp)
    dead_pid = killed.pid
    other_host = f"{out}.tmp-{dead_pid}-0123abcd-not-{socket.gethostname()}"
    unrelated = f"{out}.tmp-notes"
    for path in (other_host, unrelated):
      os.makedirs(path)
    code, stderr = _program("--to=hf", f"--checkpoint={prefix}",
                            f"--model_config_path={tmp_path}/ckpt/"
                            "xlnet_config.json",
                            f"--spiece_model_file={fx.SPIECE}",
                            f"--output_dir={out}")
    assert code == 0, stderr[-3000:]
    assert f"Removed {killed_tmp} (left by a killed conversion)" in stderr
    assert not os.path.exists(killed_tmp)
    assert sorted(_leftovers(out)) == sorted(
        os.path.basename(p) for p in (running_tmp, other_host, unrelated))
    assert "config.json" in os.listdir(out)
  finally:
    running.kill()
    running.wait()


# ---- full disks and file size limits ---------------------------------------


def _no_room(out):
  return (f"convert_checkpoint.py: error: cannot write {out}: file too "
          "large; nothing was written (no output and no temporary folder is "
          "left); make room (or fix the permission) and rerun")


@pytest.mark.parametrize("to", ["hf", "saved_model", "tf"])
def test_file_size_limit_is_one_line(tmp_path, to):
  """A file size limit (`ulimit -f`: EFBIG, as a full disk's ENOSPC) while
  writing --to=hf (safetensors), saved_model or tf (a checkpoint): one line
  naming the output and the cause, exit code 1, nothing left; with room the
  same command writes it."""
  prefix, config_path, config, _ = fx.random_checkpoint(
      str(tmp_path / "ckpt"), "classification")
  source = prefix
  if to == "tf":
    source = str(tmp_path / "hf")
    hf_export.export_hf(prefix, config, fx.SPIECE, source, fx.TASK)
  out = str(tmp_path / "out")
  args = [f"--to={to}", f"--checkpoint={source}", f"--output_dir={out}",
          f"--spiece_model_file={fx.SPIECE}",
          f"--model_config_path={config_path}"][:3 if to == "tf" else 5]
  code, stderr = _program(*args, max_file_bytes=4096)
  assert (code, _last_line(stderr)) == (1, _no_room(out))
  assert not os.path.exists(out) and not _leftovers(out)
  code, stderr = _program(*args)
  assert code == 0, stderr[-3000:]


@pytest.mark.parametrize("error", [
    OSError(errno.ENOSPC, "No space left on device"),
    safetensors.SafetensorError("Error while serializing: I/O error: No "
                                "space left on device (os error 28)")],
                         ids=["OSError", "SafetensorError"])
def test_full_disk_during_the_export_is_one_line(tmp_path, monkeypatch,
                                                 error):
  """A full disk, faked: the safetensors writer fails as it does on a full
  disk (an OSError, or the library's own error whose text carries the
  cause; a file size limit above fails the same way for real). A
  `ResourceError` names the output and 'no space left on device', nothing
  is left."""
  prefix, _, config, _ = fx.random_checkpoint(str(tmp_path / "ckpt"), "lm")

  def full_disk(tensors, path, metadata=None):
    del tensors, metadata
    with open(path, "wb") as f:
      f.write(b"partial")
    raise error

  monkeypatch.setattr(hf_export.safetensors_numpy, "save_file", full_disk)
  out = str(tmp_path / "out")
  with pytest.raises(io_utils.ResourceError) as info:
    hf_export.export_hf(prefix, config, fx.SPIECE, out)
  assert str(info.value) == (
      f"cannot write {out}: no space left on device; nothing was written (no "
      "output and no temporary folder is left); make room (or fix the "
      "permission) and rerun")
  assert not os.path.exists(out) and not _leftovers(out)
