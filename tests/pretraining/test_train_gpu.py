"""Tests of the pretraining program `train_gpu.py` on the engine: the log
line, flags against the data, exact resume after SIGKILL, SIGTERM/SIGINT,
damaged checkpoints, divergence, checkpoint retention, warm start, and
end-to-end training on demo-corpus records."""
import hashlib
import os
import re
import resource
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import train_fixtures as fx
from tests.data_helpers import make_records
from xlnet.pretraining import pretrain
from xlnet.training import checkpoint_io

pytestmark = pytest.mark.eager

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_log_line_format_and_a_diverged_loss():
  """The release's log line (docs/training.md); a diverged loss (exp overflows a float) is
  logged as pplx inf instead of killing the run with OverflowError."""
  assert pretrain.format_log_line(1000, 0.4512, 1e-5, 6.0) == (
      "[1000] | gnorm 0.45 lr 0.000010 | loss 6.00 | pplx  403.43, "
      "bpc  8.6562")
  assert pretrain.format_log_line(7, float("nan"), 4e-4, 800.0) == (
      "[7] | gnorm nan lr 0.000400 | loss 800.00 | pplx     inf, "
      "bpc 1154.1560")


def test_entry_point_bad_input_is_one_line_exit_2(tmp_path):
  record_dir = fx.fake_data_dir(tmp_path)
  for argv, message in [
      ([f"--record_info_dir={record_dir}", "--perm_size=8"],
       "--perm_size=8 must be <= and divide"),
      ([f"--record_info_dir={record_dir}", "--reuse_len=2"],
       "--reuse_len=2 does not match the data"),
      ([f"--record_info_dir={tmp_path}/nowhere"], "does not exist")]:
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "train_gpu.py"),
         f"--model_dir={tmp_path}/m"] + argv,
        capture_output=True, text=True, cwd=REPO, timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("train_gpu.py: error: ") and message in last, last
    assert "Traceback" not in proc.stderr


def test_init_checkpoint_with_missing_variables_is_clear(tmp_path):
  with tf.Graph().as_default():
    tf.compat.v1.get_variable("model/transformer/r_w_bias", [2, 2, 8])
    saver = tf.compat.v1.train.Saver()
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      ckpt = saver.save(sess, str(tmp_path / "partial" / "model.ckpt"))
  FL = fx.tiny_flags()
  trainer = fx.make_trainer(FL, 1, tmp_path / "m")
  trainer.build(fx.batches_dataset(
      [fx.fake_batch(np.random.RandomState(0), 4, 8, 3, 40)]).element_spec)
  with pytest.raises(ValueError, match=r"lacks 32 \(model/lm_loss/bias"):
    trainer.init_from_checkpoint(ckpt)


################################################################################
# The program under faults: kills, signals, damaged checkpoints, divergence.
################################################################################
@pytest.fixture(scope="module")
def tiny_records(tmp_path_factory):
  return fx.program_records(tmp_path_factory.mktemp("records"))


def _command(record_dir, model_dir, *extra):
  return fx.program_command("train_gpu.py", record_dir, model_dir, "--seed=1",
                            *extra)


def _run(cmd, timeout=300):
  return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                        timeout=timeout,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def _signal_when(cmd, pattern, sig):
  return fx.signal_when(cmd, pattern, sig, REPO)


def _log_lines(text):
  """{step: the logged '[step] | gnorm ... | loss ...' part}."""
  return {int(m.group(1)): m.group(0) for m in re.finditer(
      r"\[(\d+)\] \| gnorm \S+ lr \S+ \| loss \S+", text)}


@pytest.mark.parametrize("cores", [1, 2])
def test_resume_after_sigkill_logs_the_same_losses(tmp_path, tiny_records,
                                                   cores):
  """Killed (SIGKILL) right after checkpoint 10 and restarted with the same
  command, the run logs exactly the losses of an uninterrupted run (dropout
  0.1: the masks are a function of the step, the permutations of the data
  position)."""
  _check_resume_after_sigkill(tmp_path, tiny_records, cores)


@pytest.mark.slow
def test_resume_on_token_records_logs_the_same_losses(tmp_path_factory,
                                                      tmp_path):
  """The same on token records (data_utils.py --record_kind=tokens): the
  examples sampled online, too, are a function of the data position."""
  records = fx.program_records(tmp_path_factory.mktemp("tokens"),
                               record_kind="tokens")
  _check_resume_after_sigkill(tmp_path, records, 2)


def _check_resume_after_sigkill(tmp_path, tiny_records, cores):
  """Asserts that a run killed after checkpoint 10 and restarted logs the
  losses, and ends with the bits, of an uninterrupted run."""
  extra = ["--train_steps=24", "--save_steps=10",
           f"--num_core_per_host={cores}"]
  full = _run(_command(tiny_records, tmp_path / "full", *extra))
  assert full.returncode == 0, full.stderr[-3000:]
  want = _log_lines(full.stderr)
  assert sorted(want) == list(range(1, 25))

  cut = tmp_path / "cut"
  code, first = _signal_when(_command(tiny_records, cut, *extra),
                           r"Saved checkpoint .*model\.ckpt-10$",
                           signal.SIGKILL)
  assert code == -signal.SIGKILL
  rest = _run(_command(tiny_records, cut, *extra))
  assert rest.returncode == 0, rest.stderr[-3000:]
  got = _log_lines(rest.stderr)
  assert min(got) == 11 and max(got) == 24
  for step, line in got.items():
    assert line == want[step], (step, line, want[step])
  # ... and ends with the same bits: every variable, memories included.
  full_ckpt = tf.train.load_checkpoint(str(tmp_path / "full"))
  cut_ckpt = tf.train.load_checkpoint(str(cut))
  names = full_ckpt.get_variable_to_shape_map()
  assert names == cut_ckpt.get_variable_to_shape_map()
  for name in names:
    np.testing.assert_array_equal(cut_ckpt.get_tensor(name),
                                  full_ckpt.get_tensor(name), err_msg=name)
  del first


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_saves_a_checkpoint_and_exits_non_zero(tmp_path, tiny_records,
                                                      sig):
  model_dir = tmp_path / "m"
  code, out = _signal_when(
      _command(tiny_records, model_dir, "--train_steps=100000"),
      r"\[3\] \| gnorm", sig)
  assert code == 128 + sig, out[-3000:]
  last = out.strip().splitlines()[-1]
  match = re.fullmatch(
      rf"train_gpu\.py: stopped by {signal.Signals(sig).name} after step "
      rf"(\d+); checkpoint model\.ckpt-(\d+) saved in .*; rerun the same "
      r"command to resume", last)
  assert match and match.group(1) == match.group(2), last
  assert "Traceback" not in out
  step = int(match.group(1))
  assert tf.train.latest_checkpoint(str(model_dir)).endswith(f"-{step}")
  assert int(tf.train.load_checkpoint(str(model_dir)).get_tensor(
      "global_step")) == step
  assert not [p for p in os.listdir(model_dir) if ".tmp-" in p]


def _checksums(directory):
  return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
          for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("damage", ["truncated data", "missing index"])
def test_damaged_newest_checkpoint_stops_without_touching_files(
    tmp_path, tiny_records, damage):
  model_dir = tmp_path / "m"
  first = _run(_command(tiny_records, model_dir, "--train_steps=4",
                        "--save_steps=2"))
  assert first.returncode == 0, first.stderr[-3000:]
  newest = model_dir / "model.ckpt-4"
  if damage == "truncated data":
    data = model_dir / "model.ckpt-4.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    named = data.name
  else:
    (model_dir / "model.ckpt-4.index").unlink()
    named = "model.ckpt-4.index"
  before = _checksums(model_dir)
  proc = _run(_command(tiny_records, model_dir, "--train_steps=6",
                       "--save_steps=2"))
  assert proc.returncode == 2, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("train_gpu.py: error: ") and named in last, last
  assert "model.ckpt-2 (the newest intact checkpoint)" in last, last
  assert "rollback_ckpt" in last and "Traceback" not in proc.stderr
  assert _checksums(model_dir) == before  # nothing written or removed

  # The suggested command moves the damaged files away; training resumes
  # from step 2.
  fix = subprocess.run(
      [sys.executable, os.path.join(REPO, "model_utils.py"), "rollback_ckpt",
       f"--model_dir={model_dir}"], capture_output=True, text=True, cwd=REPO,
      timeout=120, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert fix.returncode == 0, fix.stderr[-2000:]
  resumed = _run(_command(tiny_records, model_dir, "--train_steps=6",
                          "--save_steps=2"))
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert min(_log_lines(resumed.stderr)) == 3
  del newest


def _file_size_limit(limit):
  """A preexec_fn: files may not grow beyond `limit` bytes (`ulimit -f`);
  with SIGXFSZ ignored a write beyond it fails with EFBIG."""
  def preexec():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
  return preexec


@pytest.mark.slow
def test_a_save_beyond_a_file_size_limit_is_one_line_and_a_rerun_resumes(
    tmp_path, tiny_records):
  """The save of model.ckpt-4 fails (file too large): one line naming the
  path, the cause and the intact model.ckpt-2, exit code 1, no file of the
  failed save left; model.ckpt-2 still loads, and the same command without
  the limit resumes from it."""
  model_dir = tmp_path / "m"
  first = _run(_command(tiny_records, model_dir, "--train_steps=2"))
  assert first.returncode == 0, first.stderr[-3000:]
  data = model_dir / "model.ckpt-2.data-00000-of-00001"
  want = checkpoint_io.read_tensors(str(model_dir / "model.ckpt-2"))
  proc = subprocess.run(
      _command(tiny_records, model_dir, "--train_steps=4"),
      capture_output=True, text=True, cwd=REPO, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
      preexec_fn=_file_size_limit(data.stat().st_size // 2))
  assert proc.returncode == 1, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert last == (f"train_gpu.py: error: cannot write {model_dir}/"
                  "model.ckpt-4: file too large; model.ckpt-2 is intact; "
                  "fix the cause and rerun the same command to resume from "
                  "it"), last
  assert "Traceback" not in proc.stderr
  assert not [p.name for p in model_dir.iterdir()
              if p.name.startswith("model.ckpt-4") or ".tmp-" in p.name]
  assert not (model_dir / "trainer.lock").exists()
  got = checkpoint_io.read_tensors(str(model_dir / "model.ckpt-2"))
  for name, value in want.items():
    np.testing.assert_array_equal(got[name], value, err_msg=name)
  rerun = _run(_command(tiny_records, model_dir, "--train_steps=4"))
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert sorted(_log_lines(rerun.stderr)) == [3, 4]


def test_divergence_stops_and_never_saves_non_finite_weights(tmp_path,
                                                             tiny_records):
  model_dir = tmp_path / "m"
  proc = _run(_command(tiny_records, model_dir, "--train_steps=50",
                       "--learning_rate=1e30", "--warmup_steps=0"))
  assert proc.returncode == 1, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("train_gpu.py: error: non-finite loss"), last
  assert "Traceback" not in proc.stderr
  state = tf.train.get_checkpoint_state(str(model_dir))
  assert state.all_model_checkpoint_paths
  for prefix in state.all_model_checkpoint_paths:
    reader = tf.train.load_checkpoint(os.path.join(model_dir, prefix))
    for name in reader.get_variable_to_shape_map():
      assert np.all(np.isfinite(reader.get_tensor(name))), (prefix, name)


def test_max_save_bounds_checkpoints_across_restarts(tmp_path, tiny_records):
  model_dir = tmp_path / "m"
  for steps in (5, 9):
    proc = _run(_command(tiny_records, model_dir, f"--train_steps={steps}",
                         "--save_steps=1", "--max_save=2", "--dropout=0",
                         "--dropatt=0"))
    assert proc.returncode == 0, proc.stderr[-3000:]
  indexes = sorted(p.name for p in model_dir.glob("model.ckpt-*.index"))
  assert indexes == ["model.ckpt-8.index", "model.ckpt-9.index"]
  assert sorted(p.name for p in model_dir.glob("model.ckpt-*.data-*")) == [
      "model.ckpt-8.data-00000-of-00001", "model.ckpt-9.data-00000-of-00001"]


@pytest.mark.slow
def test_loss_falls_on_demo_corpus_records_with_two_replicas(tmp_path):
  """Demo-corpus records (bi_data, written for 1 core) on 2 CPU replicas."""
  record_dir = make_records(str(tmp_path / "data"), num_lines=1500)
  model_dir = tmp_path / "model"
  proc = _run([
      sys.executable, os.path.join(REPO, "train_gpu.py"),
      f"--record_info_dir={record_dir}", f"--model_dir={model_dir}",
      "--n_layer=2", "--d_model=32", "--n_head=2", "--d_head=16",
      "--d_inner=64", "--dropout=0", "--dropatt=0", "--mem_len=32",
      "--perm_size=16", "--num_core_per_host=2", "--learning_rate=3e-3",
      "--warmup_steps=10", "--train_steps=80", "--iterations=1",
      "--seed=1"])
  assert proc.returncode == 0, proc.stderr[-3000:]
  losses = _log_lines(proc.stderr)
  assert sorted(losses) == list(range(1, 81))
  values = [float(losses[s].rsplit(" ", 1)[1]) for s in sorted(losses)]
  assert values[0] > 6.0  # ~ln(vocab 1000) at the start
  assert np.mean(values[-10:]) < values[0] - 1.0, values
  assert tf.train.latest_checkpoint(str(model_dir)).endswith("-80")
  reader = tf.train.load_checkpoint(str(model_dir))
  assert reader.get_tensor("mems/replica_1/layer_0").shape == (32, 2, 32)


def test_corrupted_record_saves_progress_and_names_the_file(tmp_path,
                                                           tiny_records):
  """A flipped byte in the middle of the record file (same size, bad CRC):
  training saves a checkpoint of the last full step and stops with one line
  naming the file."""
  data = tmp_path / "data"
  shutil.copytree(os.path.dirname(tiny_records), data)
  (record,) = (data / "tfrecords").glob("*.tfrecords")
  raw = bytearray(record.read_bytes())
  raw[len(raw) // 3] ^= 0xFF
  record.write_bytes(bytes(raw))
  model_dir = tmp_path / "m"
  proc = _run(_command(data / "tfrecords", model_dir, "--train_steps=100000",
                       "--iterations=100"))
  assert proc.returncode == 1, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  match = re.match(r"train_gpu\.py: error: a corrupted input record stopped "
                   r"training after step (\d+) \(progress saved in "
                   r"model\.ckpt-(\d+)\): 1 of 1 record files are corrupt", last)
  assert match and match.group(1) == match.group(2), last
  assert str(record) in last and "Traceback" not in proc.stderr
  step = int(match.group(1))
  assert step > 50  # a third into the file, after many good batches
  assert tf.train.latest_checkpoint(str(model_dir)).endswith(f"-{step}")


def test_model_dir_that_is_a_file_or_unwritable_is_one_line(tmp_path,
                                                           tiny_records):
  blocker = tmp_path / "a_file"
  blocker.write_text("x")
  for model_dir, words in ((blocker, "exists and is not a directory"),
                           (blocker / "sub", "is not writable")):
    proc = _run(_command(tiny_records, model_dir, "--train_steps=2"))
    assert proc.returncode == 2, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("train_gpu.py: error: --model_dir=") and (
        words in last), last
    assert "Traceback" not in proc.stderr
  assert blocker.read_text() == "x"


def test_corpus_info_path_reaches_the_input_function(tmp_path, tiny_records):
  """corpus_info.json moved away from the records and named with
  --corpus_info_path: its core layout (bi_data, written for 2 cores, read
  by 1) reaches the input function, so the run regroups and trains; without
  any corpus info the run stops instead of guessing the layout."""
  data = tmp_path / "data"
  shutil.copytree(os.path.dirname(tiny_records), data)
  info = tmp_path / "elsewhere" / "info.json"
  info.parent.mkdir()
  os.rename(data / "corpus_info.json", info)
  ok = _run(_command(data / "tfrecords", tmp_path / "m", "--train_steps=2",
                     f"--corpus_info_path={info}"))
  assert ok.returncode == 0, ok.stderr[-3000:]
  assert "regrouped from 2 to 1 cores" in ok.stderr
  missing = _run(_command(data / "tfrecords", tmp_path / "m2",
                          "--train_steps=2"))
  assert missing.returncode == 2
  assert "corpus_info.json" in missing.stderr.strip().splitlines()[-1]
