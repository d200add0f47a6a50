"""Programs start without TensorFlow where they need none.

`--help` of the programs below runs in one fresh interpreter (in sequence, each as `python PROGRAM ARGS` runs it,
`in_process.run_program`) that must not have imported TensorFlow at the
end: its import costs 5-10 s and prints a screen of start-up lines. That
interpreter starts without TF_CPP_MIN_LOG_LEVEL, so it also shows the
default the programs set before TensorFlow could be imported.
"""
import json
import os
import signal
import subprocess
import sys

import pytest

from xlnet.programs import cli
from tests import data_helpers
from tests.programs import program_flags

# The programs whose --help must not import TensorFlow.
NO_TENSORFLOW = ("spm_train.py", "download.py", "train_gpu.py",
                 "train_tpu.py", "train.py", "eval_pretrain.py",
                 "convert_checkpoint.py", "data_service.py",
                 "model_utils.py", "run_race.py", "run_classifier.py",
                 "run_squad.py", "run_ner.py", "data_utils.py",
                 "reproduce.py")

# Runs each command of argv[1] (a JSON list of [PROGRAM, *ARGS]) in this
# interpreter; prints what TensorFlow's import state was after each.
_RUNS = r"""
import json, os, sys
from absl import app  # its flags, as in every test process
from tests.in_process import run_program
from xlnet.programs import cli  # what every program imports first
level = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
found = []
for command in json.loads(sys.argv[1]):
  result = run_program(*command)
  found.append([command, result.returncode, "tensorflow" in sys.modules,
                result.stderr[-1000:]])
print(json.dumps({"runs": found, "level": level}))
"""


def test_help_and_work_without_tensorflow_import_none(tmp_path):
  """Each program's --help, a SentencePiece model trained and written
  (spm_train.py) and download.py's plan leave TensorFlow unimported;
  TensorFlow's C++ log level defaults to 3."""
  commands = [[p, "--help"] for p in NO_TENSORFLOW] + [
      ["spm_train.py", f"--input={data_helpers.corpus_slice(300)}",
       f"--model_prefix={tmp_path / 'sp'}", "--vocab_size=300"],
      ["download.py", f"--data_root={tmp_path / 'data'}", "--only=glue",
       "--dry_run"]]
  env = {k: v for k, v in program_flags.ENV.items()
         if k != "TF_CPP_MIN_LOG_LEVEL"}
  proc = subprocess.run([sys.executable, "-c", _RUNS, json.dumps(commands)],
                        cwd=program_flags.REPO, env=env, capture_output=True,
                        text=True, timeout=300)
  assert proc.returncode == 0, proc.stderr[-3000:]
  report = json.loads(proc.stdout.strip().split("\n")[-1])
  for command, code, imported, stderr in report["runs"]:
    # absl's --help status is 1
    assert code == (1 if command[1:] == ["--help"] else 0), (command, stderr)
    assert not imported, f"{' '.join(command)} imported TensorFlow"
  assert (tmp_path / "sp.model").is_file()
  assert report["level"] == "3"


# Uses what the programs use before TensorFlow (argv[1]: a work dir,
# argv[2]: a SentencePiece model); prints what came out.
_CONFIGS_AND_FILES = r"""
import json, os, sys
from xlnet import RunConfig, XLNetConfig, configs
from xlnet.data import prepro_utils
from xlnet.training import progress, run_lock
run_dir = os.path.join(sys.argv[1], "run")
XLNetConfig(json_path=configs.path("xlnet_tiny.json")).to_json(
    os.path.join(run_dir, "config.json"))
written = XLNetConfig(json_path=os.path.join(run_dir, "config.json"))
run = RunConfig(is_training=True, use_tpu=False, use_bfloat16=False,
                dropout=0.1, dropatt=0.1)
token = run_lock.acquire(run_dir)
run_lock.release(run_dir, token)
print(json.dumps({
    "config": written.to_dict(), "dropout": run.dropout,
    "pieces": prepro_utils.load_sp_model(sys.argv[2], "--sp_path")
              .get_piece_size(),
    "duration": progress.format_duration(90061),
    "files": sorted(os.listdir(run_dir)),
    "tensorflow": "tensorflow" in sys.modules}))
"""


def test_configs_and_local_files_need_no_tensorflow(tmp_path):
  """The model's configs read and written, a SentencePiece model loaded,
  a run's lock taken and released, a duration written: on local files,
  what the programs do before TensorFlow imports none of it."""
  sp_path = data_helpers.train_tiny_spm(vocab_size=1000)
  proc = subprocess.run(
      [sys.executable, "-c", _CONFIGS_AND_FILES, str(tmp_path), sp_path],
      cwd=program_flags.REPO, env=program_flags.ENV, capture_output=True,
      text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr[-3000:]
  got = json.loads(proc.stdout.strip().split("\n")[-1])
  with open(os.path.join(program_flags.REPO, "xlnet", "configs",
                         "xlnet_tiny.json"), encoding="utf-8") as f:
    assert got["config"] == json.load(f)
  assert (got["dropout"], got["pieces"]) == (0.1, 1000)
  assert got["duration"] == "1d 01:01:01"  # 86400 + 3600 + 60 + 1
  assert got["files"] == ["config.json"]  # no lock, no temporary file
  assert not got["tensorflow"]


def test_a_users_tensorflow_log_level_is_kept(monkeypatch):
  """TF_CPP_MIN_LOG_LEVEL set by the user wins over the programs' 3."""
  monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
  cli.quiet_tensorflow()
  assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
  monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL")
  cli.quiet_tensorflow()
  assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "3"


def _ended_by(error, capsys, monkeypatch):
  """(exit code, stderr) of a guarded `main` of program "prog" that
  raises `error`."""
  monkeypatch.setattr(sys, "argv", ["prog"])

  def main(argv):
    del argv
    raise error
  with pytest.raises(SystemExit) as info:
    cli.guarded(main)(["prog"])
  return info.value.code, capsys.readouterr().err


def test_resources_exhausted_outside_a_step_are_one_line(capsys,
                                                        monkeypatch):
  """A ResourceExhaustedError that reaches a program's top (out of device
  memory while the model is built or restored; a full disk under a
  TensorFlow write): one line, exit code 1, no traceback."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for message, want in (
      ("OOM when allocating tensor with shape[1024,4096]\n\t [[{{node x}}]]",
       "prog: error: out of device memory (OOM when allocating tensor with "
       "shape[1024,4096]): a smaller batch, shorter sequences or more "
       "accumulation steps per update fit (see the program's --help); a "
       "training run resumes from its newest checkpoint"),
      ("/data/x.tmp; No space left on device",
       "prog: error: /data/x.tmp; No space left on device; make room and "
       "rerun the same command")):
    assert _ended_by(tf.errors.ResourceExhaustedError(None, None, message),
                     capsys, monkeypatch) == (1, want + "\n")


def test_an_unreachable_remote_path_is_one_line(capsys, monkeypatch):
  """TensorFlow's error of a gs:// path that cannot be reached (the text
  TensorFlow 2.15 gives for an unknown host): one line naming the path,
  exit code 1; the same error class without a URL is the program's own
  and keeps its traceback."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  unreachable = tf.errors.FailedPreconditionError(None, None, (
      "Error executing an HTTP request: libcurl code 6 meaning 'Couldn't "
      "resolve host name', error details: Could not resolve host: "
      "www.googleapis.com\n\t when reading metadata of "
      "gs://b/ck/xlnet_config.json"))
  assert _ended_by(unreachable, capsys, monkeypatch) == (1, (
      "prog: error: Error executing an HTTP request: libcurl code 6 meaning "
      "'Couldn't resolve host name', error details: Could not resolve "
      "host: www.googleapis.com when reading metadata of "
      "gs://b/ck/xlnet_config.json; check that the path is reachable from "
      "this machine (the network, the bucket's name, the credentials) and "
      "rerun the same command\n"))
  with pytest.raises(tf.errors.FailedPreconditionError):
    _ended_by(tf.errors.FailedPreconditionError(
        None, None, "Could not find variable x"), capsys, monkeypatch)


def test_sigterm_replaced_by_c_code_still_ends_as_sigterm(capsys,
                                                         monkeypatch):
  """SIGTERM's exception crossing TensorFlow's C++ code can come back as
  another one (pybind11: "MISMATCH of original and normalized active
  exception types ... REPLACED BY Terminated"): the program still ends
  with SIGTERM's one line and exit code 143, not a traceback."""
  monkeypatch.setattr(sys, "argv", ["prog"])

  def main(argv):
    del argv
    try:
      os.kill(os.getpid(), signal.SIGTERM)
      for _ in range(10000):  # the handler runs at a bytecode boundary
        pass
    except cli.Terminated:
      raise RuntimeError("pybind11::error_already_set: MISMATCH of "
                         "original and normalized active exception "
                         "types") from None
  with cli.sigterm_raises(), pytest.raises(SystemExit) as info:
    cli.guarded(main)(["prog"])
  assert info.value.code == 143
  assert capsys.readouterr().err == (
      "prog: stopped by SIGTERM; no temporary file is left; rerun the same "
      "command to redo the work\n")
