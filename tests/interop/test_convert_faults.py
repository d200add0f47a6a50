"""convert_checkpoint.py under faults: SIGTERM at any moment, a killed
run's temporary folder, a full disk or a file size limit, a damaged
`model.safetensors`, a config that does not fit the weights, a missing or
malformed head.json. Each ends with one line (exit 143, 1 or 2) and leaves
no output and no temporary folder, or a complete output; nothing is
reported as something it is not.

The program runs in a process of its own where only a process shows it (a
signal at a real moment of its reading or writing, a file size limit, a
killed run); its other command lines run in this process
(tests/in_process.py). The random checkpoints are shared by the test run
(interop_fixtures.shared_checkpoint); a test that changes one works on a
copy."""
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

from tests import in_process
from tests import shared_artifacts
from tests.interop import interop_fixtures as fx
from tests.programs import test_sigterm_moments as moments
from xlnet import io_utils
from xlnet.interop import hf_export
from xlnet.interop import hf_import
from xlnet.interop import output_dir
from xlnet.interop import saved_model
from xlnet.programs import cli
from xlnet.training import checkpoint_io

CONVERT = os.path.join(fx.REPO, "convert_checkpoint.py")
STOPPED = ("convert_checkpoint.py: stopped by SIGTERM; no temporary file is "
           "left; rerun the same command to redo the work")


def _env():
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _program(*args, max_file_bytes=None):
  """Runs convert_checkpoint.py in a process of its own; with
  `max_file_bytes`, no file it writes may grow past that (`ulimit -f`;
  Python ignores SIGXFSZ, so a write past it fails with EFBIG, as a full
  disk fails with ENOSPC)."""

  def limit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes,) * 2)

  proc = subprocess.run([sys.executable, CONVERT, *args], capture_output=True,
                        text=True, timeout=300, cwd=fx.REPO, env=_env(),
                        preexec_fn=limit if max_file_bytes else None)
  return proc.returncode, proc.stderr


def _in_process(*args):
  """convert_checkpoint.py's command line run in this process."""
  proc = in_process.run_program("convert_checkpoint.py", *args)
  return proc.returncode, proc.stderr


def _last_line(stderr):
  assert "Traceback" not in stderr, stderr[-3000:]
  return stderr.strip().splitlines()[-1]


def _leftovers(out):
  """Whatever a conversion to `out` left beside it (temporary folders)."""
  parent, base = os.path.split(out)
  return sorted(n for n in os.listdir(parent)
                if n.startswith(base + io_utils.TMP_MARK))


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
  prefix, _, _, _ = fx.shared_checkpoint("lm")
  load = tf.train.load_checkpoint

  class SignalledReader:
    """A checkpoint reader that receives SIGTERM while reading."""

    def __init__(self, path):
      self.reader, self.reads = load(path), 0

    def get_variable_to_shape_map(self):
      return self.reader.get_variable_to_shape_map()

    def get_variable_to_dtype_map(self):
      return self.reader.get_variable_to_dtype_map()

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
  with cli.sigterm_raises(), pytest.raises(cli.Terminated):
    checkpoint_io.read_tensors(prefix)


def _big_checkpoint(directory):
  """A classifier checkpoint whose read takes a while (20,000 extra small
  variables, which the export leaves out) and whose export writes ~26 MB
  (a 100,000-row embedding), with its config.json beside it."""
  prefix, _, config, values = fx.random_checkpoint(
      directory, "classification", n_token=100000, d_model=64, n_head=4,
      d_head=16, d_inner=128)
  values.update({f"extra/v_{i:05d}": np.full([4], i, np.float32)
                 for i in range(20000)})
  checkpoint_io.write_checkpoint(prefix, values)
  os.rename(os.path.join(directory, "xlnet_config.json"),
            os.path.join(directory, "config.json"))
  return prefix, config


def _has_open(pid, path):
  """Whether process `pid` holds `path` open."""
  try:
    fds = os.listdir(f"/proc/{pid}/fd")
  except OSError:
    return False
  for fd in fds:
    try:
      if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
        return True
    except OSError:
      pass
  return False


def _signal_when(args, condition, what):
  """Starts the converter, sends SIGTERM once `condition(pid)` holds (or
  after `condition` seconds), returns (exit code, stderr)."""
  proc = subprocess.Popen([sys.executable, CONVERT, *args], cwd=fx.REPO,
                          env=_env(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
  try:
    if callable(condition):
      while not condition(proc.pid):
        assert proc.poll() is None, f"the converter ended before {what}"
        time.sleep(0.001)
    else:
      time.sleep(condition)
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=120), proc.communicate()[1]
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()


@pytest.mark.slow
@pytest.mark.only_env("interop", why="the converter's signal and file handling, the same on every TensorFlow")
def test_sigterm_at_many_moments_of_a_conversion(tmp_path):
  """SIGTERM to `convert_checkpoint.py --to=hf` while it reads the
  checkpoint (the data file open) and while it writes the output (its
  temporary folder there), each in a process of its own: it ends with 143
  and the one line (never 'corrupt'), or after finishing with 0; no
  temporary folder is left and the output is absent or whole. Then at 24
  moments spread over the program's work (`export_hf` as its main calls it,
  from resolving the checkpoint and its config to the output's rename, run
  as cli.run runs main: test_sigterm_moments.sweep): the same, and the same
  conversion rerun writes the whole output. (The start-up before the
  handler, TensorFlow's import, is most of a run's time: a signal there
  ends the process before it wrote anything.)"""
  prefix, _ = _big_checkpoint(str(tmp_path / "ckpt"))
  args = ["--to=hf", f"--checkpoint={prefix}",
          f"--spiece_model_file={fx.SPIECE}"]
  reference = str(tmp_path / "reference")
  assert _in_process(*args, f"--output_dir={reference}")[0] == 0
  expected = shared_artifacts.file_bytes(reference)
  data_file = prefix + ".data-00000-of-00001"
  moments_of_a_run = [("reading", lambda pid: _has_open(pid, data_file)),
                      ("writing", lambda pid: bool(_leftovers(out)))]
  outcomes = {}
  for i, (what, condition) in enumerate(moments_of_a_run):
    out = str(tmp_path / f"out{i}")
    code, stderr = _signal_when(args + [f"--output_dir={out}"], condition,
                                what)
    outcomes[what] = code
    assert "corrupt" not in stderr and "Traceback" not in stderr, stderr
    assert code in (0, 143), (what, stderr[-2000:])
    if code == 143:
      assert _last_line(stderr) == STOPPED, what
    assert not _leftovers(out), what
    assert (not os.path.exists(out)
            or shared_artifacts.file_bytes(out) == expected), what
  assert outcomes["reading"] == 143, outcomes

  template = tmp_path / "convert"
  prefix = fx.shared_checkpoint("classification")[0]
  shared_artifacts.copy_of(os.path.dirname(prefix), template)
  # How the head pools, recorded (else a warning joins the stopped line).
  _write_head(str(template / "model.ckpt"),
              {"summary_type": "last", "use_summ_proj": True})

  def convert(work):  # main of --to=hf --checkpoint=DIR --task_name=...
    out = os.path.join(work, "hf")
    if os.path.exists(out):  # stopped after its rename: whole (`check`)
      return
    hf_export.export_hf(str(work), None, fx.SPIECE, out, fx.TASK)

  def check(stopped, before, after, now):
    del stopped
    assert any(p.startswith("hf/") for p in after)
    assert moments.no_temporaries(now)
    assert now in (before, after)

  moments.sweep(template, convert, 24, check)


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
  prefix, config_path, _, _ = fx.shared_checkpoint("squad")
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
    code, stderr = _in_process("--to=hf", f"--checkpoint={prefix}",
                               f"--model_config_path={config_path}",
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
  same command writes it (run in this process)."""
  prefix, config_path, _, _ = fx.shared_checkpoint("classification")
  source = prefix
  if to == "tf":
    source = fx.shared_hf_export("classification")[0]
  out = str(tmp_path / "out")
  args = [f"--to={to}", f"--checkpoint={source}", f"--output_dir={out}",
          f"--spiece_model_file={fx.SPIECE}",
          f"--model_config_path={config_path}"][:3 if to == "tf" else 5]
  code, stderr = _program(*args, max_file_bytes=4096)
  assert (code, _last_line(stderr)) == (1, _no_room(out))
  assert not os.path.exists(out) and not _leftovers(out)
  code, stderr = _in_process(*args)
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
  prefix, _, config, _ = fx.shared_checkpoint("lm")

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


# ---- damaged HF weights -----------------------------------------------------


def _refused(fn, *args, match, output, **kwargs):
  """`fn` raises one line matching `match` and leaves no `output` and no
  temporary folder beside it."""
  with pytest.raises(ValueError, match=match) as info:
    fn(*args, output, **kwargs)
  assert "\n" not in str(info.value)
  assert not os.path.exists(output) and not _leftovers(output)
  return str(info.value)


def _hf_dir(tmp_path):
  """A writable copy of the exported HF directory of the shared random
  classification checkpoint."""
  return shared_artifacts.copy_of(
      fx.shared_hf_export("classification")[0], tmp_path / "hf")


@pytest.mark.parametrize("damage", ["truncated", "a flipped byte"])
def test_a_damaged_checkpoint_is_one_line(tmp_path, damage):
  """--to=hf and saved_model on a checkpoint whose data file is truncated
  or has a flipped byte (its checksum fails): one line naming the data
  file, nothing written (saved_model's restore was a traceback)."""
  prefix, _, config, _ = fx.copied_checkpoint(tmp_path / "ckpt",
                                              "classification")
  data_file = prefix + ".data-00000-of-00001"
  with open(data_file, "rb") as f:
    data = bytearray(f.read())
  if damage == "truncated":
    data = data[:len(data) // 2]
  else:
    data[100] ^= 0xFF
  with open(data_file, "wb") as f:
    f.write(bytes(data))
  out = str(tmp_path / "out")
  for export, extra in ((hf_export.export_hf, (fx.SPIECE,)),
                        (saved_model.export_saved_model, ())):
    message = _refused(export, prefix, config, *extra, output=out,
                       task_name=fx.TASK, match=f"^{data_file}: cannot read")
    assert "truncated or corrupt" in message


def test_truncated_or_corrupt_safetensors_is_one_line(tmp_path):
  hf_dir = _hf_dir(tmp_path)
  weights = os.path.join(hf_dir, "model.safetensors")
  with open(weights, "rb") as f:
    data = f.read()
  header = 8 + int.from_bytes(data[:8], "little")
  out = str(tmp_path / "out")
  damaged = {"empty": b"", "cut in the size": data[:5],
             "cut in the header": data[:header // 2],
             "cut in the tensors": data[:header + 100],
             "one byte short": data[:-1],
             "garbage": bytes(range(256)) * 40,
             "header of flipped bytes": data[:8] + bytes(
                 b ^ 0xFF for b in data[8:header]) + data[header:]}
  for what, content in damaged.items():
    with open(weights, "wb") as f:
      f.write(content)
    message = _refused(hf_import.import_hf, hf_dir, output=out,
                       match=f"^{weights} is truncated or corrupt ")
    assert message.endswith("; download or save it again"), what
  code, stderr = _in_process("--to=tf", f"--checkpoint={hf_dir}",
                             f"--output_dir={out}")
  assert code == 2 and _last_line(stderr).startswith(
      f"convert_checkpoint.py: error: {weights} is truncated or corrupt (")


def test_a_malformed_shard_index_is_one_line(tmp_path):
  hf_dir = _hf_dir(tmp_path)
  os.rename(os.path.join(hf_dir, "model.safetensors"),
            os.path.join(hf_dir, "part-1.safetensors"))
  index = os.path.join(hf_dir, "model.safetensors.index.json")
  out = str(tmp_path / "out")
  for content in ("{", "[]", '{"weights": {}}'):
    with open(index, "w") as f:
      f.write(content)
    _refused(hf_import.import_hf, hf_dir, output=out,
             match=f"^{index} is not a safetensors index")
  with open(index, "w") as f:
    json.dump({"weight_map": {"a": "part-1.safetensors",
                              "b": "part-2.safetensors"}}, f)
  with pytest.raises(FileNotFoundError, match="part-2.safetensors"):
    hf_import.import_hf(hf_dir, out)  # one line under cli.run (exit 2)


# ---- weights the config does not describe -----------------------------------


def _rewrite_config(hf_dir, **changes):
  path = os.path.join(hf_dir, "config.json")
  with open(path) as f:
    config = json.load(f)
  config.update(changes)
  with open(path, "w") as f:
    json.dump(config, f)
  return path


def test_to_tf_refuses_weights_the_config_does_not_describe(tmp_path):
  """--to=tf checks every tensor against config.json: layers beyond
  n_layer, missing layers, a tensor of another shape, a head with another
  number of labels; each one line, nothing written. Tensors of no use to
  the checkpoint are named in a warning."""
  hf_dir = _hf_dir(tmp_path)
  out = str(tmp_path / "out")
  config = _rewrite_config(hf_dir, n_layer=1)
  _refused(hf_import.import_hf, hf_dir, output=out,
           match=rf"^the model in {hf_dir} holds layer\(s\) \[1\] but "
           rf"{config} gives n_layer=1 \(layers 0-0\)")
  _rewrite_config(hf_dir, n_layer=3)
  _refused(hf_import.import_hf, hf_dir, output=out,
           match=rf"^the model in {hf_dir} lacks transformer\.layer\.2\."
           rf"[a-z_.]+: layer 2 of the n_layer=3 {config} gives$")
  _rewrite_config(hf_dir, n_layer=2, d_inner=32)
  _refused(hf_import.import_hf, hf_dir, output=out,
           match=rf"transformer\.layer\.0\.ff\.layer_1\.weight has shape "
           rf"\[16, 8\] but {config} gives \[32, 8\]")
  _rewrite_config(hf_dir, d_inner=16, id2label={"0": "a", "1": "b"},
                  label2id={"a": 0, "b": 1})
  _refused(hf_import.import_hf, hf_dir, output=out,
           match=r"logits_proj\.weight has shape \[3, 8\] but .* gives "
           r"\[2, 8\]")


def test_to_tf_warns_of_tensors_it_leaves_out(tmp_path, caplog):
  hf_dir = _hf_dir(tmp_path)
  weights = os.path.join(hf_dir, "model.safetensors")
  tensors = safetensors_numpy.load_file(weights)
  tensors["qa_outputs.weight"] = np.zeros([2, 8], np.float32)
  safetensors_numpy.save_file(tensors, weights)
  with caplog.at_level(logging.WARNING):
    hf_import.import_hf(hf_dir, str(tmp_path / "out"))
  assert (f"1 tensor(s) of {hf_dir} have no place in the classification "
          "checkpoint and are left out: qa_outputs.weight") in caplog.text


def test_exports_refuse_a_config_that_does_not_fit_the_checkpoint(tmp_path):
  """--to=hf and saved_model: a checkpoint with more layers than the
  config (they used to be dropped without a word) or a tensor of another
  shape is one line."""
  prefix, _, _, _ = fx.shared_checkpoint("lm", n_layer=3)
  config_path, _ = fx.write_config(str(tmp_path / "small"))  # n_layer=2
  out = str(tmp_path / "out")
  for export, extra in ((hf_export.export_hf, (fx.SPIECE,)),
                        (saved_model.export_saved_model, ())):
    _refused(export, prefix, config_path, *extra, output=out,
             match=rf"^--checkpoint={prefix} holds layer\(s\) \[2\] but "
             rf"--model_config_path={config_path} gives n_layer=2")
  wide, _ = fx.write_config(str(tmp_path / "wide"), n_layer=3, d_inner=32)
  _refused(hf_export.export_hf, prefix, wide, fx.SPIECE, output=out,
           match=r"model/transformer/layer_0/ff/layer_1/kernel has shape "
           r"\[8, 16\] but --model_config_path=.* gives \[8, 32\]")


# ---- head.json ---------------------------------------------------------------


def _write_head(prefix, record):
  with open(os.path.join(os.path.dirname(prefix), "head.json"), "w") as f:
    json.dump(record, f)


def test_head_record_missing_malformed_or_contradicting(tmp_path, caplog):
  """No head.json: the export pools "last" and says so in one warning.
  A summary type that is not ours, a record that is not an object, or a
  projection the checkpoint lacks: one line naming the file, the value and
  what is allowed; nothing reaches HF's config.json."""
  prefix, _, config, _ = fx.copied_checkpoint(tmp_path / "ckpt",
                                              "classification")
  head = os.path.join(os.path.dirname(prefix), "head.json")
  with caplog.at_level(logging.WARNING):
    hf_export.export_hf(prefix, config, fx.SPIECE, str(tmp_path / "hf"),
                        fx.TASK)
  assert (f"{head} is missing: the classification head is exported pooling "
          "the sequence with summary_type=last (the fine-tuning default); if "
          "it was fine-tuned with another, give --summary_type"
          ) in caplog.text
  caplog.clear()
  with caplog.at_level(logging.WARNING):
    hf_export.export_hf(prefix, config, fx.SPIECE, str(tmp_path / "hf2"),
                        fx.TASK, summary_type="last")
  assert "is missing" not in caplog.text  # the flag says it

  out = str(tmp_path / "out")
  for export, extra in ((hf_export.export_hf, (fx.SPIECE,)),
                        (saved_model.export_saved_model, ())):
    _write_head(prefix, {"summary_type": "max", "use_summ_proj": True})
    _refused(export, prefix, config, *extra, output=out, task_name=fx.TASK,
             match=rf'^{head}: summary_type "max" is not one of last, first, '
             "mean, attn$")
    _write_head(prefix, ["last"])
    _refused(export, prefix, config, *extra, output=out, task_name=fx.TASK,
             match=rf'^{head} is not a valid head record: it holds \["last"\],'
             " expected a JSON object; fine-tuning writes it")
    _write_head(prefix, {"summary_type": "last", "use_summ_proj": "yes"})
    _refused(export, prefix, config, *extra, output=out, task_name=fx.TASK,
             match=rf'^{head}: use_summ_proj "yes" is not true or false$')
  bare, _, config, _ = fx.copied_checkpoint(
      tmp_path / "bare", "classification", summary=("last", False))
  _write_head(bare, {"summary_type": "last", "use_summ_proj": True})
  _refused(hf_export.export_hf, bare, config, fx.SPIECE, output=out,
           task_name=fx.TASK, match=r"head\.json records use_summ_proj=true "
           r"but --checkpoint=.* lacks model/sequnece_summary/summary/kernel")


# ---- the config and vocabulary the checkpoint's directory holds ------------


@pytest.mark.only_env("interop", why="the converter's defaults, the same on every TensorFlow")
@pytest.mark.eager  # as in a process of its own (--to=saved_model)
def test_config_and_vocabulary_default_to_the_checkpoints_directory(
    tmp_path):
  """--to=hf and saved_model without --model_config_path read the
  directory's config.json (what train_gpu.py writes), else its
  xlnet_config.json (a release's, or --to=tf's); --spiece_model_file
  defaults to its spiece.model. The flag still wins. A directory with
  neither is one line naming both files and the flag. (The command lines
  run in this process.)"""
  prefix, config_path, _, values = fx.copied_checkpoint(tmp_path / "run",
                                                        "lm")
  run_dir = str(tmp_path / "run")
  os.rename(config_path, os.path.join(run_dir, "config.json"))
  hf_dir, tf_dir, again = (str(tmp_path / n) for n in ("hf", "tf", "again"))
  code, stderr = _in_process("--to=hf", f"--checkpoint={run_dir}",
                             f"--spiece_model_file={fx.SPIECE}",
                             f"--output_dir={hf_dir}")
  assert code == 0, stderr[-3000:]
  code, stderr = _in_process("--to=tf", f"--checkpoint={hf_dir}",
                             f"--output_dir={tf_dir}")
  assert code == 0, stderr[-3000:]
  # A release-like directory: model.ckpt, xlnet_config.json, spiece.model.
  code, stderr = _in_process("--to=hf", f"--checkpoint={tf_dir}",
                             f"--output_dir={again}")
  assert code == 0, stderr[-3000:]
  assert (shared_artifacts.file_bytes(again)
          == shared_artifacts.file_bytes(hf_dir))
  code, stderr = _in_process("--to=saved_model", f"--checkpoint={tf_dir}",
                             f"--output_dir={tmp_path / 'serving'}")
  assert code == 0, stderr[-3000:]

  wide, _ = fx.write_config(str(tmp_path / "wide"), d_inner=32)
  code, stderr = _in_process("--to=hf", f"--checkpoint={run_dir}",
                             f"--model_config_path={wide}",
                             f"--spiece_model_file={fx.SPIECE}",
                             f"--output_dir={tmp_path / 'x'}")
  assert code == 2 and f"--model_config_path={wide} gives [8, 32]" in (
      _last_line(stderr))
  bare = checkpoint_io.write_checkpoint(
      str(tmp_path / "bare" / "model.ckpt"), values)
  for to in ("hf", "saved_model"):
    code, stderr = _in_process(f"--to={to}", f"--checkpoint={bare}",
                               f"--spiece_model_file={fx.SPIECE}",
                               f"--output_dir={tmp_path / 'y'}")
    assert (code, _last_line(stderr)) == (2, (
        f"convert_checkpoint.py: error: --checkpoint={bare}: its directory "
        "holds no config.json or xlnet_config.json; give the model's config "
        "with --model_config_path"))
  code, stderr = _in_process("--to=hf", f"--checkpoint={run_dir}",
                             f"--output_dir={tmp_path / 'z'}")
  assert (code, _last_line(stderr)) == (2, (
      f"convert_checkpoint.py: error: --checkpoint={run_dir}/model.ckpt: its "
      "directory holds no spiece.model; give the model's SentencePiece model "
      "with --spiece_model_file"))
