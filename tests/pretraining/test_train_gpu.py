"""Tests of the pretraining program `train_gpu.py` on the engine: the log
line, flags against the data, exact resume after SIGKILL and SIGTERM and
after a rollback, damaged checkpoints, a full disk, divergence, checkpoint
retention, warm start, and end-to-end training on demo-corpus records.

One test runs `python train_gpu.py` in processes of its own, for what only
a process shows (a kill, a signal, the interpreter's start); the others run
the program's command line in the test process (`fx.run_program`), most
from a copy of one shared trained model_dir (`_trained`).
"""
import hashlib
import json
import os
import pathlib
import re
import shutil
import signal

import numpy as np
import pytest
import tensorflow as tf

from tests import data_helpers
from tests import in_process
from tests import shared_artifacts
from tests import train_fixtures as fx
from xlnet import errors
from xlnet.data import input_pipeline
from xlnet.data import record_format
from xlnet.pretraining import pretrain
from xlnet.training import checkpoint_io

pytestmark = pytest.mark.eager

REPO = data_helpers.REPO_ROOT


@pytest.mark.quick
def test_log_line_format_and_a_diverged_loss():
  """The release's log line (docs/training.md); a diverged loss (exp overflows a float) is
  logged as pplx inf instead of killing the run with OverflowError."""
  assert pretrain.format_log_line(1000, 0.4512, 1e-5, 6.0) == (
      "[1000] | gnorm 0.45 lr 0.000010 | loss 6.00 | pplx  403.43, "
      "bpc  8.6562")
  assert pretrain.format_log_line(7, float("nan"), 4e-4, 800.0) == (
      "[7] | gnorm nan lr 0.000400 | loss 800.00 | pplx     inf, "
      "bpc 1154.1560")


@pytest.mark.quick
def test_entry_point_bad_input_is_one_line_exit_2(tmp_path):
  """Run in-process: the command-line wiring is the kill test's, below."""
  record_dir = fx.fake_data_dir(tmp_path)
  for argv, message in [
      ([f"--record_info_dir={record_dir}", "--perm_size=8"],
       "--perm_size=8 must be <= and divide"),
      ([f"--record_info_dir={record_dir}", "--reuse_len=2"],
       "--reuse_len=2 does not match the data"),
      ([f"--record_info_dir={tmp_path}/nowhere"], "does not exist")]:
    proc = fx.run_program("train_gpu.py", f"--model_dir={tmp_path}/m", *argv)
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
def tiny_records():
  """Example records written for 2 cores (read by 1 core unless told)."""
  return fx.shared_program_records(2)


def _command(record_dir, model_dir, *extra):
  return fx.program_command("train_gpu.py", record_dir, model_dir, "--seed=1",
                            *extra)


def _run(record_dir, model_dir, *extra):
  """The program in this process (`fx.run_program`)."""
  return fx.run_in_process(_command(record_dir, model_dir, *extra))


def _signal_when(cmd, pattern, sig):
  return fx.signal_when(cmd, pattern, sig, REPO)


# The shared run most fault tests start from (a copy of it): 24 steps on
# token records (examples sampled online) on 1 core, checkpoints 10, 20, 24.
TRAINED = ["--num_core_per_host=1", "--train_steps=24", "--save_steps=10"]


def _token_records():
  return fx.shared_program_records(1, record_kind="tokens")


def _trained(tmp_path):
  """(records, a private copy of the shared TRAINED model_dir, the shared
  run's log)."""
  records = _token_records()
  model_dir, log = fx.shared_program_run("train_gpu.py", records, "--seed=1",
                                         *TRAINED)
  return (records, pathlib.Path(shared_artifacts.copy_of(
      model_dir, tmp_path / "m")), log)


def _check_lines(got, want, first, last):
  """The logged lines `got` are steps first..last, each the line `want`
  logged for its step ({step: line})."""
  assert (min(got), max(got)) == (first, last), sorted(got)
  for step, line in got.items():
    assert line == want[step], (step, line, want[step])


def test_killed_and_terminated_run_resumes_with_the_same_losses(
    tmp_path, tiny_records):
  """`python train_gpu.py` on 2 replicas is killed (SIGKILL) right after
  checkpoint 10, and the same command, rerun, gets SIGTERM after its
  first step: it saves the step it is on and stops with one line (exit
  143); rerun again it finishes. Every logged line is the line of an
  uninterrupted run, and the end state (every variable, both replicas'
  memories) its bits: dropout (0.1) masks are a function of the step, the
  permutations of the data position.

  40 steps: the SIGTERM must arrive before the run's end (step 11 + the
  time it takes to deliver it under load)."""
  flags = ["--num_core_per_host=2", "--train_steps=40", "--save_steps=10"]
  reference, log = fx.shared_program_run("train_gpu.py", tiny_records,
                                         "--seed=1", *flags)
  want = fx.log_lines(log)
  assert sorted(want) == list(range(1, 41))

  cut = tmp_path / "cut"
  code, first = _signal_when(_command(tiny_records, cut, *flags),
                             r"Saved checkpoint .*model\.ckpt-10$",
                             signal.SIGKILL)
  assert code == -signal.SIGKILL
  assert all(fx.log_lines(first)[s] == want[s] for s in range(1, 11))

  code, second = _signal_when(_command(tiny_records, cut, *flags),
                              r"\[11\] \| gnorm", signal.SIGTERM)
  assert code == 128 + signal.SIGTERM, second[-3000:]
  last = second.strip().splitlines()[-1]
  match = re.fullmatch(
      r"train_gpu\.py: stopped by SIGTERM after step (\d+); checkpoint "
      r"model\.ckpt-(\d+) saved in .*; rerun the same command to resume",
      last)
  assert match and match.group(1) == match.group(2), last
  assert "Traceback" not in second
  stop = int(match.group(1))
  assert stop < 40, "SIGTERM came after the end; give the run more steps"
  _check_lines(fx.log_lines(second), want, 11, stop)
  assert tf.train.latest_checkpoint(str(cut)).endswith(f"-{stop}")
  assert int(tf.train.load_checkpoint(str(cut)).get_tensor(
      "global_step")) == stop
  assert not [p for p in os.listdir(cut) if ".tmp-" in p]

  rest = _run(tiny_records, cut, *flags)
  assert rest.returncode == 0, rest.stderr[-3000:]
  _check_lines(fx.log_lines(rest.stderr), want, stop + 1, 40)
  fx.assert_same_checkpoint(cut, reference)


@pytest.mark.tf_version
def test_a_rolled_back_run_resumes_with_the_same_losses(tmp_path):
  """On 1 device, on token records (examples sampled online, keyed by the
  data position): the shared run rolled back to checkpoint 10
  (`model_utils.py rollback_ckpt --step=10`) and rerun logs steps 11-24 as
  it did, and ends with its bits (memories included)."""
  records, model_dir, log = _trained(tmp_path)
  fix = fx.run_program("model_utils.py", "rollback_ckpt",
                       f"--model_dir={model_dir}", "--step=10")
  assert fix.returncode == 0, fix.stderr[-2000:]
  assert tf.train.latest_checkpoint(str(model_dir)).endswith(
      "model.ckpt-10")
  proc = _run(records, model_dir, *TRAINED)
  assert proc.returncode == 0, proc.stderr[-3000:]
  _check_lines(fx.log_lines(proc.stderr), fx.log_lines(log), 11, 24)
  fx.assert_same_checkpoint(model_dir,
                            model_dir / "quarantine" / "model.ckpt-24")


def _checksums(directory):
  return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
          for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("damage", ["truncated data", "missing index"])
def test_damaged_newest_checkpoint_stops_without_touching_files(
    tmp_path, damage):
  records, model_dir, _ = _trained(tmp_path)
  if damage == "truncated data":
    data = model_dir / "model.ckpt-24.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    named = data.name
  else:
    (model_dir / "model.ckpt-24.index").unlink()
    named = "model.ckpt-24.index"
  before = _checksums(model_dir)
  proc = _run(records, model_dir, *TRAINED)
  assert proc.returncode == 2, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("train_gpu.py: error: ") and named in last, last
  assert "model.ckpt-20 (the newest intact checkpoint)" in last, last
  assert "rollback_ckpt" in last and "Traceback" not in proc.stderr
  assert _checksums(model_dir) == before  # nothing written or removed

  # The suggested command moves the damaged files away; training resumes
  # from step 20.
  fix = fx.run_program("model_utils.py", "rollback_ckpt",
                       f"--model_dir={model_dir}")
  assert fix.returncode == 0, fix.stderr[-2000:]
  resumed = _run(records, model_dir, *TRAINED)
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert sorted(fx.log_lines(resumed.stderr)) == [21, 22, 23, 24]


def test_a_save_beyond_a_file_size_limit_is_one_line_and_a_rerun_resumes(
    tmp_path):
  """The save of model.ckpt-26 fails (file too large): one line naming the
  path, the cause and the intact model.ckpt-24, exit code 1, no file of the
  failed save left; model.ckpt-24 still loads, and the same command without
  the limit resumes from it."""
  records, model_dir, _ = _trained(tmp_path)
  data = model_dir / "model.ckpt-24.data-00000-of-00001"
  want = checkpoint_io.read_tensors(str(model_dir / "model.ckpt-24"))
  flags = [*TRAINED, "--train_steps=26"]
  with in_process.file_size_limit(data.stat().st_size // 2):
    proc = _run(records, model_dir, *flags)
  assert proc.returncode == 1, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert last == (f"train_gpu.py: error: cannot write {model_dir}/"
                  "model.ckpt-26: file too large; model.ckpt-24 is intact; "
                  "fix the cause and rerun the same command to resume from "
                  "it"), last
  assert "Traceback" not in proc.stderr
  assert not [p.name for p in model_dir.iterdir()
              if p.name.startswith("model.ckpt-26") or ".tmp-" in p.name]
  assert not (model_dir / "trainer.lock").exists()
  got = checkpoint_io.read_tensors(str(model_dir / "model.ckpt-24"))
  for name, value in want.items():
    np.testing.assert_array_equal(got[name], value, err_msg=name)
  rerun = _run(records, model_dir, *flags)
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert sorted(fx.log_lines(rerun.stderr)) == [25, 26]


def test_divergence_stops_and_never_saves_non_finite_weights(tmp_path,
                                                             tiny_records):
  model_dir = tmp_path / "m"
  proc = _run(tiny_records, model_dir, "--train_steps=50",
              "--learning_rate=1e30", "--warmup_steps=0")
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


def test_max_save_bounds_checkpoints_across_restarts(tmp_path):
  """Resumed with --max_save=2 where an earlier run left checkpoints 10,
  20 and 24: only the run's last two remain, the earlier run's are gone."""
  records, model_dir, _ = _trained(tmp_path)
  assert sorted(p.name for p in model_dir.glob("model.ckpt-*.index")) == [
      "model.ckpt-10.index", "model.ckpt-20.index", "model.ckpt-24.index"]
  proc = _run(records, model_dir, *TRAINED, "--train_steps=28",
              "--save_steps=1", "--max_save=2")
  assert proc.returncode == 0, proc.stderr[-3000:]
  indexes = sorted(p.name for p in model_dir.glob("model.ckpt-*.index"))
  assert indexes == ["model.ckpt-27.index", "model.ckpt-28.index"]
  assert sorted(p.name for p in model_dir.glob("model.ckpt-*.data-*")) == [
      "model.ckpt-27.data-00000-of-00001", "model.ckpt-28.data-00000-of-00001"]


@pytest.mark.slow
def test_loss_falls_on_demo_corpus_records_with_two_replicas(tmp_path):
  """Demo-corpus records (bi_data, written for 1 core) on 2 CPU replicas.
  80 steps of a d_model 32 model: the loss must fall by 1 nat."""
  record_dir = data_helpers.shared_records(num_lines=1500)
  model_dir = tmp_path / "model"
  proc = fx.run_program(
      "train_gpu.py", f"--record_info_dir={record_dir}",
      f"--model_dir={model_dir}",
      "--n_layer=2", "--d_model=32", "--n_head=2", "--d_head=16",
      "--d_inner=64", "--dropout=0", "--dropatt=0", "--mem_len=32",
      "--perm_size=16", "--num_core_per_host=2", "--learning_rate=3e-3",
      "--warmup_steps=10", "--train_steps=80", "--iterations=1",
      "--seed=1")
  assert proc.returncode == 0, proc.stderr[-3000:]
  losses = fx.log_lines(proc.stderr)
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
  proc = _run(data / "tfrecords", model_dir, "--train_steps=100000",
              "--iterations=100")
  assert proc.returncode == 1, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  match = re.match(r"train_gpu\.py: error: a corrupted input record stopped "
                   r"training after step (\d+) \(progress saved in "
                   r"model\.ckpt-(\d+)\): 1 of 1 record files are corrupt", last)
  assert match and match.group(1) == match.group(2), last
  assert str(record) in last and "Traceback" not in proc.stderr
  assert re.search(r": corrupted record at \d+\); rewrite them", last), last
  step = int(match.group(1))
  assert step > 50  # a third into the file, after many good batches
  assert tf.train.latest_checkpoint(str(model_dir)).endswith(f"-{step}")


def test_model_dir_that_is_a_file_or_unwritable_is_one_line(tmp_path,
                                                           tiny_records):
  blocker = tmp_path / "a_file"
  blocker.write_text("x")
  for model_dir, words in ((blocker, "exists and is not a directory"),
                           (blocker / "sub", "is not writable")):
    proc = _run(tiny_records, model_dir, "--train_steps=2")
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
  ok = _run(data / "tfrecords", tmp_path / "m", "--train_steps=2",
            f"--corpus_info_path={info}")
  assert ok.returncode == 0, ok.stderr[-3000:]
  assert "regrouped from 2 to 1 cores" in ok.stderr
  missing = _run(data / "tfrecords", tmp_path / "m2", "--train_steps=2")
  assert missing.returncode == 2
  assert "corpus_info.json" in missing.stderr.strip().splitlines()[-1]


################################################################################
# The objective a run was trained with, and the records it reads.
################################################################################
def _last_error(proc):
  """The one line of a refused run (exit code 2, no traceback)."""
  assert proc.returncode == 2, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr
  return proc.stderr.strip().splitlines()[-1]


def test_a_resume_that_changes_the_objective_is_refused(tmp_path):
  """The shared run (token records, their corpus info's num_predict=6,
  word_span) resumed with another span-mask setting, or on the example
  records of the same text, stops before its first step with one line
  naming the flag (or the records), the recorded value and the given one;
  so does another factorization-order block (--perm_size); nothing in
  the model dir changes. Token
  records take any sampling flags, so without objective.json these runs
  went on silently."""
  records, model_dir, _ = _trained(tmp_path)
  before = _checksums(model_dir)
  record = model_dir / "objective.json"
  more = [*TRAINED, "--train_steps=26"]
  for flag, recorded in (("--sample_strategy=token_span", "word_span"),
                         ("--num_predict=5", "6"),
                         ("--perm_size=16", "8")):
    name = flag.split("=")[0]
    assert _last_error(_run(records, model_dir, *more, flag)) == (
        f"train_gpu.py: error: {flag} but {model_dir} was trained with "
        f"{name}={recorded} ({record}): a resumed run keeps the objective "
        "it was trained with (how its examples' span masks and "
        "factorization orders are made); "
        f"rerun with {name}={recorded} or use another --model_dir")
  examples = fx.shared_program_records(1)
  assert _last_error(_run(examples, model_dir, *more)) == (
      f"train_gpu.py: error: --record_info_dir={examples} holds example "
      f"records but {model_dir} was trained on token records (data_utils.py "
      f"--record_kind=tokens) ({record}): a resumed run keeps the objective "
      "it was trained with (how its examples' span masks and factorization "
      "orders are made); give "
      "--record_info_dir token records or use another --model_dir")
  assert _checksums(model_dir) == before


def test_token_and_example_dirs_together_are_one_line(tmp_path):
  """--record_info_dir naming a token dir and an example dir (either
  order: the trainer reads the first dir's corpus info for both) stops
  before training with one line naming both dirs (was a TensorFlow error
  at the first step)."""
  tokens, examples = _token_records(), fx.shared_program_records(1)
  for dirs in ((tokens, examples), (examples, tokens)):
    kinds = {tokens: "token", examples: "example"}
    proc = _run(",".join(dirs), tmp_path / "m", "--num_core_per_host=1",
                "--train_steps=2")
    assert _last_error(proc) == (
        f"train_gpu.py: error: --record_info_dir={dirs[0]},{dirs[1]} mixes "
        f"record kinds: {dirs[0]} holds {kinds[dirs[0]]} records, {dirs[1]} "
        f"holds {kinds[dirs[1]]} records (data_utils.py --record_kind); "
        "train on one kind at a time")
  assert not (tmp_path / "m").exists() or not list(
      (tmp_path / "m").glob("model.ckpt-*"))


def test_token_ids_beyond_the_vocabulary_are_one_line_and_fail_verify(
    tmp_path):
  """The shared token records (1000-piece model) under a corpus info of the
  800-piece model: a file written with another SentencePiece model. The
  trainer stops before training with one line naming the file (was an
  error inside the sampler's lookup of the 800 word starts), and
  data_utils.py --verify reports it (it said OK)."""
  data = pathlib.Path(shared_artifacts.copy_of(
      os.path.dirname(_token_records()), tmp_path / "data"))
  info = json.loads((data / "corpus_info.json").read_text())
  info.update(vocab_size=800, sp_path=data_helpers.train_tiny_spm(
      vocab_size=800))
  (data / "corpus_info.json").write_text(json.dumps(info))
  (token_file,) = (data / "tfrecords").glob("*.tfrecords")
  (record_info,) = (data / "tfrecords").glob("record_info-*.json")
  # The largest id, read from the file itself.
  top = max(max(r["tokens"]) for r in data_helpers.read_records(
      data / "tfrecords"))
  assert top >= 800
  assert _last_error(_run(data / "tfrecords", tmp_path / "m",
                          "--num_core_per_host=1", "--train_steps=2")) == (
      f"train_gpu.py: error: {token_file}: holds token id {top}, beyond the "
      "800 pieces of the corpus info's SentencePiece model (written with "
      f"another model?) ({record_info}); rewrite it with data_utils.py "
      "and the corpus info's sp_path, or move its record info away")
  verify = fx.run_program("data_utils.py", "--verify", f"--save_dir={data}")
  assert verify.returncode != 0
  assert f"BAD {token_file}: holds token id {top}, beyond the 800 pieces" in (
      verify.stdout), verify.stdout + verify.stderr[-2000:]


def test_ids_changed_beyond_the_vocabulary_stop_at_the_first_batch(
    tmp_path, tiny_records):
  """Records whose ids were changed after their record info was written
  (1500: beyond the corpus info's 1000 pieces, within the tiny model's
  2000, so the model would read it without a word): the trainer stops at
  its first batch with one line naming the file, the largest id and the
  vocabulary; so do eval_pretrain.py on the checkpoint it saved and the
  token records' input (it stopped inside the sampler's lookup with
  TensorFlow's error), and data_utils.py --verify reports the example
  records too."""
  examples = pathlib.Path(shared_artifacts.copy_of(
      os.path.dirname(tiny_records), tmp_path / "examples"))
  bad = fx.change_an_id(examples / "tfrecords", "input", 1500)
  found = (f"1 of 1 record files are corrupt ({bad}: holds token id 1500, "
           "beyond the 1000 pieces of the corpus info's SentencePiece model "
           "(written with another model?)); rewrite them with data_utils.py "
           "(same flags, --task and --pass_id) or move their "
           "record_info-*.json away")
  proc = _run(examples / "tfrecords", tmp_path / "m", "--train_steps=2")
  assert proc.returncode == 1 and "Traceback" not in proc.stderr
  assert proc.stderr.strip().splitlines()[-1] == (
      "train_gpu.py: error: a corrupted input record stopped training after "
      f"step 0 (progress saved in model.ckpt-0): {found}")
  held_out = fx.run_program(
      "eval_pretrain.py", f"--record_info_dir={examples / 'tfrecords'}",
      f"--eval_record_info_dir={examples / 'tfrecords'}",
      "--eval_split=train", f"--model_dir={tmp_path / 'm'}", *fx.PROGRAM_RUN)
  assert held_out.returncode == 2 and "Traceback" not in held_out.stderr
  assert held_out.stderr.strip().splitlines()[-1] == (
      "eval_pretrain.py: error: a held-out record stopped the evaluation: "
      f"{found}")
  verify = fx.run_program("data_utils.py", "--verify",
                          f"--save_dir={examples}")
  assert verify.returncode != 0
  assert f"BAD {bad}: holds token id 1500, beyond the 1000 pieces" in (
      verify.stdout), verify.stdout + verify.stderr[-2000:]

  tokens = pathlib.Path(shared_artifacts.copy_of(
      os.path.dirname(_token_records()), tmp_path / "tokens"))
  bad = fx.change_an_id(tokens / "tfrecords", "tokens", 1500)
  input_fn, info = input_pipeline.get_input_fn(
      str(tokens / "tfrecords"), "train", bsz_per_host=4, seq_len=32,
      reuse_len=16, bi_data=True, perm_size=8)
  with pytest.raises(tf.errors.InvalidArgumentError) as caught:
    next(iter(input_fn({"batch_size": 4})))
  assert errors.is_bad_data(caught.value)
  assert info["vocab_size"] == 1000
  assert record_format.data_loss_message(info["host_filenames"][0], 1000) == (
      found.replace(str(examples), str(tokens)))
