"""Fine-tuning over several hosts (MultiWorkerMirroredStrategy): two worker
processes over loopback, ports from the OS.

* Two workers of one replica each end with the variables (model, Adam
  slots, step) of one process training two replicas (logical CPU devices,
  MirroredStrategy), dropout and gradient accumulation on: each replica
  trains on the batches, and draws the dropout masks, of the same replica
  of the one process (run_classifier.py; the engine and its split of the
  batches are the same for every program, and every program's training
  input is the same stream each time it is built, which is what the split
  asks of it).
* Only the chief writes the feature records, the results and the run
  records: a worker whose chief never comes writes nothing, waits
  --records_timeout seconds and stops with one line; in a full run the
  worker reads the chief's records and leaves evaluation and prediction to
  it.
* A worker that dies mid-training stops the other with one line naming the
  last checkpoint; both restarted resume from it to the uninterrupted end.
  SIGTERM on one worker saves the same step on every worker; resumed with
  another batch, the chief refuses and the worker stops.
* reproduce.py, one command per host: the chief alone records.

The one-process runs the clusters are compared with, and what a worker
says before any cluster forms, run in this process (tests/in_process.py);
the model is one layer wide (each process builds and traces it).
"""
import json
import re
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import data_helpers
from tests import in_process
from tests import loopback
from tests import qa_fixtures
from tests.data_helpers import train_tiny_spm
from xlnet.finetuning import qa_records
from xlnet.finetuning import record_cache
from xlnet.finetuning.squad import features as squad_features
from xlnet.training import strategies

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
CONFIG = fx.PROGRAM_CONFIG
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _start(argv):
  """Starts a program (argv[0] relative to the repository)."""
  return subprocess.Popen([sys.executable, *argv], cwd=REPO, env=ENV,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


def _finish(procs, timeout=300):
  """(exit codes, logs) of started programs; those still running after
  `timeout` seconds are killed (code "timeout")."""
  deadline = time.monotonic() + timeout
  codes, logs = [], []
  for proc in procs:
    try:
      logs.append(proc.communicate(
          timeout=max(1.0, deadline - time.monotonic()))[0])
      codes.append(proc.returncode)
    except subprocess.TimeoutExpired:
      proc.kill()
      logs.append(proc.communicate()[0])
      codes.append("timeout")
  return codes, logs


def _wait_for(path, seconds=240):
  """Returns once the file `path` exists (or `seconds` passed)."""
  deadline = time.monotonic() + seconds
  while not path.exists() and time.monotonic() < deadline:
    time.sleep(0.05)


def _cluster(argv, per_task=None, tasks=(0, 1)):
  """Starts `argv` as `tasks` of a two-worker cluster on loopback;
  `per_task[i]` adds flags to task i."""
  hosts = ",".join(f"127.0.0.1:{p}" for p in loopback.free_ports(2))
  return [_start(argv + [f"--worker_hosts={hosts}", f"--task_index={i}"] +
                 list((per_task or {}).get(i, ()))) for i in tasks]


@pytest.fixture(scope="module")
def stsb(tmp_path_factory):
  """A stand-in for the released model (SentencePiece model, config,
  random backbone checkpoint; shared read-only) and an STS-B directory of
  16 rows a split."""
  model = fx.shared_released_model(CONFIG)
  root = tmp_path_factory.mktemp("stsb")
  data = root / "STS-B"
  data.mkdir()
  head = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t" \
         "sentence1\tsentence2\tscore\n"
  for split in ("train", "dev"):
    rows = [f"{i}\tmain\tMSRvid\t2012\t{i:04d}\tnone\tnone\tA man plays "
            f"{i} songs.\tA man plays music {i * 7 % 16}.\t{i % 6}.0\n"
            for i in range(16)]
    (data / f"{split}.tsv").write_text(head + "".join(rows))
  return dict(config=os.path.join(model, "xlnet_config.json"),
              ckpt=os.path.join(model, "xlnet_model.ckpt"),
              spm=os.path.join(model, "spiece.model"), data=data)


def _classifier_argv(stsb, work, *extra):
  """run_classifier.py on the STS-B stand-in, everything under `work`;
  dropout on (the replicas' masks must match) and two micro-batches per
  step."""
  return ["run_classifier.py", "--task_name=sts-b",
          f"--data_dir={stsb['data']}", f"--output_dir={work / 'records'}",
          f"--model_dir={work / 'model'}",
          f"--spiece_model_file={stsb['spm']}",
          f"--model_config_path={stsb['config']}",
          f"--init_checkpoint={stsb['ckpt']}", "--max_seq_length=16",
          "--train_batch_size=2", "--accum_steps=2", "--train_steps=4",
          "--learning_rate=1e-2", "--iterations=1", "--eval_batch_size=4",
          "--seed=5", *extra]


def _one_process(argv):
  """Runs `argv` (the program first) in this process, as the one process
  of two replicas (this process's two logical CPUs) that a cluster is
  compared with; returns its output."""
  result = in_process.run_program(argv[0], *argv[1:], cwd=REPO)
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stderr


def _checkpoint_values(model_dir):
  """{name: value} of the latest checkpoint of `model_dir`."""
  reader = tf.train.load_checkpoint(model_dir)
  return {name: reader.get_tensor(name)
          for name in reader.get_variable_to_shape_map()}


def _assert_same_variables(got, want):
  """The variables of two runs are those of one computation: equal up to
  the float rounding of kernels that split their sums over threads
  otherwise (on this 2-core CPU the classifier's are bit-identical)."""
  assert sorted(got) == sorted(want)
  for name, value in want.items():
    np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-8,
                               err_msg=name)


def _eval_metrics(model_dir):
  """The metrics dict of the first entry of eval_results.txt."""
  line = (model_dir / "eval_results.txt").read_text().splitlines()[0]
  return dict(field.split("=", 1) for field in line.split("\t")
              if "=" in field)


@pytest.mark.tf_version
def test_every_training_input_is_the_same_stream_each_time_it_is_built(
    tmp_path):
  """Every worker builds the training input and keeps its replicas' share
  of it (`strategies.worker_share`): the SQuAD and RACE input (over two
  shard files, shuffled with --seed) must give the same batches each time
  it is built, and another seed another order. (The classifier's:
  test_classifier_features.py.)"""
  spec = squad_features.feature_spec(8, is_training=True)
  rows = [{name: [i] * width for name, (width, _) in spec.items()}
          for i in range(24)]
  paths = [str(tmp_path / f"shard-{k}.tf_record") for k in range(2)]
  for k, path in enumerate(paths):
    qa_fixtures.write_protobuf_records(path, rows[k::2])

  def stream(seed):
    input_fn = qa_records.make_input_fn(paths, spec, is_training=True,
                                        drop_remainder=True,
                                        shuffle_buffer=16, seed=seed)
    return [b["unique_ids"].tolist()
            for b in data_helpers.take_batches(input_fn, 12, batch_size=4)]

  first = stream(3)
  assert stream(3) == first
  assert sorted(sum(first[:6], [])) == list(range(24))  # an epoch: all
  assert stream(4) != first


################################################################################
# The records: written by the chief alone.
################################################################################
def _squad_argv(tmp_path):
  data = qa_fixtures.synthetic_squad(np.random.default_rng(5), 4, 2)
  train = qa_fixtures.write_json(tmp_path / "train-v2.0.json", {"data": data})
  return ["run_squad.py", f"--spiece_model_file={train_tiny_spm()}",
          f"--train_file={train}", "--max_seq_length=48",
          "--max_query_length=8", "--doc_stride=12"]


def _race_argv(tmp_path):
  files = {f"train/{level}/0.txt": {
      "article": "the man went home and slept", "questions": ["Who _?"],
      "options": [["the man", "a dog", "a river", "Botchan"]],
      "answers": ["A"], "id": "0.txt"} for level in ("middle", "high")}
  return ["run_race.py",
          f"--data_dir={qa_fixtures.write_race_dir(tmp_path / 'RACE', files)}",
          f"--spiece_model_file={train_tiny_spm()}", "--max_seq_length=24",
          "--max_qa_length=8"]


def _as_worker_one(argv):
  """Runs `argv` (the program first) in this process as task 1 of a
  two-worker cluster on loopback whose chief never starts: what it does
  before any cluster forms."""
  hosts = ",".join(f"127.0.0.1:{p}" for p in loopback.free_ports(2))
  return in_process.run_program(argv[0], *argv[1:], f"--worker_hosts={hosts}",
                                "--task_index=1", cwd=REPO)


def _qa_argv(tmp_path, program):
  """run_squad.py or run_race.py on tiny data, everything under
  `tmp_path`."""
  return (_squad_argv(tmp_path) if program == "squad" else
          _race_argv(tmp_path)) + [
              f"--output_dir={tmp_path / 'records'}",
              f"--model_dir={tmp_path / 'model'}",
              f"--model_config_path={qa_fixtures.write_tiny_config(tmp_path)}"]


@pytest.mark.parametrize("program", ["classifier", "squad", "race"])
def test_a_worker_writes_no_records_and_waits_for_the_chief(stsb, tmp_path,
                                                            program):
  """Task 1 of a two-worker cluster whose chief never starts: it writes no
  record and, after --records_timeout, stops with one line (exit 2)."""
  if program == "classifier":
    argv = _classifier_argv(stsb, tmp_path)
  else:
    argv = _qa_argv(tmp_path, program)
  (records := tmp_path / "records").mkdir()
  result = _as_worker_one(argv + ["--do_train", "--records_timeout=1"])
  assert result.returncode == 2, result.stderr[-3000:]
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith(f"run_{program}.py: error: ") and (
      "after 1 s of waiting (--records_timeout) for the chief" in last), last
  assert "Traceback" not in result.stderr
  assert os.listdir(records) == []
  assert not (tmp_path / "model").exists()


def test_a_worker_leaves_prediction_to_the_chief(tmp_path):
  """A SQuAD worker (task 1) asked to predict writes nothing: it says the
  chief predicts (the chief alone does, after the training)."""
  argv = _qa_argv(tmp_path, "squad") + [
      f"--predict_file={tmp_path / 'train-v2.0.json'}", "--do_predict",
      f"--predict_dir={tmp_path / 'predict'}"]
  result = _as_worker_one(argv)
  assert result.returncode == 0, result.stderr[-3000:]
  assert ("Process 1 of 2: prediction left to the chief (process 0)" in
          result.stderr)
  assert not (tmp_path / "predict").exists()
  assert not (tmp_path / "records").exists()


def test_a_waiting_worker_takes_the_records_once_the_chief_wrote_them(
    tmp_path):
  """`record_cache.prepare` with `wait`: returns the chief's count as soon
  as records with the same key appear, never writes."""
  path, key = str(tmp_path / "train.tf_record"), {"task": "x", "seed": 1}

  def chief_writes():
    time.sleep(0.5)
    record_cache.prepare(path, key, lambda out: open(out, "w").close() or 7)

  def must_not_write(out):
    raise AssertionError(f"the worker wrote {out}")

  pid = os.fork()
  if pid == 0:  # the chief
    try:
      chief_writes()
    finally:
      os._exit(0)  # pylint: disable=protected-access
  try:
    assert record_cache.prepare(path, key, must_not_write, wait=30) == 7
  finally:
    os.waitpid(pid, 0)
  # Records made with another key are not taken: the worker waits, then
  # stops with one line naming the difference.
  with pytest.raises(ValueError, match=r"differing: seed\) after 0 s of "
                     r"waiting \(--records_timeout\)"):
    record_cache.prepare(path, dict(key, seed=2), must_not_write, wait=0.2)


################################################################################
# Which replica trains on which batch; who is the chief.
################################################################################
@pytest.mark.quick
@pytest.mark.tf_version
@pytest.mark.eager
@pytest.mark.parametrize("local", [1, 2])
def test_worker_share_is_what_one_process_gives_the_same_replicas(local):
  """One process of n = 2*local replicas gives replica r of step s the
  batch s*n + r; worker w holds the replicas [w*local, (w+1)*local): its
  share, in its replicas' order, must be exactly those batches."""
  n = 2 * local
  stream = tf.data.Dataset.range(40)
  for w in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2,
                                         input_pipeline_id=w,
                                         num_replicas_in_sync=n)
    got = [int(b) for b in strategies.worker_share(stream, context, local)]
    want = [s * n + r for s in range(40 // n)
            for r in range(w * local, (w + 1) * local)]
    assert got == want


@pytest.mark.parametrize("tf_config,flags,want", [
    (None, {}, (0, 1)),
    ({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}},
     {}, (0, 1)),
    ({"cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"]},
      "task": {"type": "chief", "index": 0}}, {}, (0, 3)),
    ({"cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"]},
      "task": {"type": "worker", "index": 1}}, {}, (2, 3)),
    ({"cluster": {"worker": ["a:1", "b:1"]},
      "task": {"type": "worker", "index": 1}}, {}, (1, 2)),
    # The flags win over TF_CONFIG.
    ({"cluster": {"worker": ["a:1", "b:1"]},
      "task": {"type": "worker", "index": 1}},
     {"worker_hosts": "a:1,b:1,c:1", "task_index": 0}, (0, 3)),
])
@pytest.mark.quick
def test_cluster_task_numbers_the_chief_first(monkeypatch, tf_config, flags,
                                              want):
  if tf_config is None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
  else:
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
  assert strategies.cluster_task(**flags) == want


@pytest.mark.slow
def test_workers_given_different_commands_both_stop_with_one_line(stsb,
                                                                  tmp_path):
  """A host started with another --train_steps (as a straggler of another
  task would be) meets the chief on one cluster: neither trains, both
  stop with one line (exit 2)."""
  argv = _classifier_argv(stsb, tmp_path, "--do_train")
  codes, logs = _finish(_cluster(argv, {1: ["--train_steps=5"]}),
                        timeout=240)
  assert codes == [2, 2], "\n".join(log[-3000:] for log in logs)
  for log in logs:
    last = log.strip().splitlines()[-1]
    assert last == (
        "run_classifier.py: error: the workers of this cluster run different "
        "commands (they differ in --accum_steps, --model_dir, "
        "--num_core_per_host, --num_hosts, --train_batch_size, "
        "--train_steps): start every host with the same command, the shared "
        "directories at the same paths, each with its own --task_index"), last
  assert not list((tmp_path / "model").glob("model.ckpt-*"))


################################################################################
# A worker that dies.
################################################################################
@pytest.mark.slow
@pytest.mark.eager
@pytest.mark.tf_version
def test_two_workers_train_as_one_process_and_resume_after_one_died(
    stsb, tmp_path):
  """Two workers (one replica each) against one process with two replicas
  (this process), dropout and gradient accumulation on. SIGKILL of worker
  1 after checkpoint 2: the chief stops with one line naming the last
  checkpoint (exit 1); both restarted with the same command resume from
  it, each on its own share of the batches, and end with the variables
  (model, Adam slots, step) and the evaluation of the one process trained
  without a break; the chief alone wrote the records, evaluated and
  predicted. (A fresh start is what the killed run made before
  checkpoint 2.)"""
  # A constant learning rate: --train_steps changes no update.
  steady = ["--do_train", "--min_lr_ratio=1", "--save_steps=2"]
  two = tmp_path / "two"
  procs = _cluster(_classifier_argv(stsb, two, *steady,
                                    "--train_steps=100000"))
  _wait_for(two / "model" / "model.ckpt-2.index")
  procs[1].send_signal(signal.SIGKILL)
  codes, logs = _finish(procs, timeout=120)
  assert codes == [1, -signal.SIGKILL], logs[0][-3000:]
  last = logs[0].strip().splitlines()[-1]
  match = re.fullmatch(
      r"run_classifier\.py: error: a worker of the cluster stopped during "
      r"step (\d+) \(\w+Error in a collective op; its log says why\): "
      r"restart every host with the same command to resume from "
      r"model\.ckpt-(\d+), the newest checkpoint in (\S+); the steps after "
      r"it are lost, as saving needs every worker", last)
  assert match, last
  saved = int(match.group(2))
  assert 2 <= saved <= int(match.group(1)) and match.group(3) == str(
      two / "model")
  # The chief wrote the records once; the worker used them.
  assert "written by the chief" in logs[1]
  assert "written by the chief" not in logs[0]

  end = saved + 2
  codes, logs = _finish(_cluster(
      _classifier_argv(stsb, two, *steady, f"--train_steps={end}",
                       "--do_eval", "--do_predict"),
      {0: [f"--predict_dir={two / 'predict-0'}"],
       1: [f"--predict_dir={two / 'predict-1'}"]}))
  assert codes == [0, 0], "\n".join(log[-3000:] for log in logs)
  assert f"Resumed from {two / 'model' / f'model.ckpt-{saved}'}" in logs[1]
  one = tmp_path / "one"
  _one_process(_classifier_argv(stsb, one, *steady, f"--train_steps={end}",
                                "--num_core_per_host=2", "--do_eval"))
  want = _checkpoint_values(str(one / "model"))
  got = _checkpoint_values(str(two / "model"))
  assert int(got["global_step"]) == end
  _assert_same_variables(got, want)
  # Trained: the backbone moved away from the pretrained values.
  kernel = "model/transformer/layer_0/ff/layer_1/kernel"
  assert np.abs(got[kernel] - tf.train.load_checkpoint(
      stsb["ckpt"]).get_tensor(kernel)).max() > 1e-3

  # The chief alone evaluated and predicted (on its own device, after
  # training): the same metrics as the one process's two replicas.
  assert "left to the chief (process 0)" in logs[1]
  assert "waiting for the chief to finish" in logs[1]
  assert "eval_pearsonr" not in logs[1]
  for key, value in _eval_metrics(one / "model").items():
    if key.startswith("eval_"):
      assert float(_eval_metrics(two / "model")[key]) == pytest.approx(
          float(value), rel=1e-5, abs=1e-6), key
  assert (two / "predict-0" / "sts-b.tsv").exists()
  assert not (two / "predict-1").exists()
  # The run records are the chief's: the layout counts both hosts.
  layout = json.loads((two / "model" / "batch_layout.json").read_text())
  assert layout["num_hosts"] == 2 and layout["train_batch_size"] == 2


@pytest.mark.slow
def test_sigterm_on_one_worker_saves_and_stops_every_worker(stsb, tmp_path):
  """SIGTERM to worker 1 (a preemption notice): both workers end the same
  step, the chief saves it, both exit 143 with one line naming it. Resumed
  with another batch, the chief refuses (exit 2, its line names the flag);
  the worker, which learns it in a collective op of the set-up, stops with
  one line (exit 1), no traceback."""
  argv = _classifier_argv(stsb, tmp_path, "--do_train", "--save_steps=2",
                          "--train_steps=100000")
  procs = _cluster(argv)
  _wait_for(tmp_path / "model" / "model.ckpt-2.index")
  procs[1].send_signal(signal.SIGTERM)
  codes, logs = _finish(procs, timeout=120)
  assert codes == [128 + signal.SIGTERM] * 2, logs[0][-3000:]
  lines = [log.strip().splitlines()[-1] for log in logs]
  match = re.fullmatch(r"run_classifier\.py: stopped by a signal on another "
                       r"worker after step (\d+); checkpoint model\.ckpt-"
                       r"\1 saved in \S+; rerun the same command to resume",
                       lines[0])
  assert match, lines[0]
  step = match.group(1)
  assert lines[1] == (f"run_classifier.py: stopped by SIGTERM after step "
                      f"{step}; checkpoint model.ckpt-{step} saved in "
                      f"{tmp_path / 'model'}; rerun the same command to "
                      "resume")
  assert (tmp_path / "model" / f"model.ckpt-{step}.index").exists()

  codes, logs = _finish(_cluster(argv + ["--train_batch_size=4"]))
  assert codes == [2, 1], "\n".join(log[-3000:] for log in logs)
  chief, worker = (log.strip().splitlines()[-1] for log in logs)
  assert chief.startswith("run_classifier.py: error: ") and (
      "--train_batch_size" in chief), chief
  assert worker.startswith(
      "run_classifier.py: error: a worker of the cluster stopped before "
      "training ("), worker
  assert worker.endswith(f"resume from model.ckpt-{step}, the newest "
                         f"checkpoint in {tmp_path / 'model'}; the steps "
                         "after it are lost, as saving needs every worker"), (
                             worker)
  assert "Traceback" not in logs[1]


def test_a_chief_whose_worker_never_comes_stops_at_the_bound(stsb,
                                                             tmp_path):
  """A chief whose worker 1 never starts (TensorFlow alone waits for ever)
  given --cluster_timeout=1 stops after it with one line naming worker 1
  and its address (exit 1), no checkpoint written."""
  ports = loopback.free_ports(2)
  result = in_process.run_program(*_classifier_argv(
      stsb, tmp_path, "--do_train", "--worker_hosts=127.0.0.1:"
      f"{ports[0]},127.0.0.1:{ports[1]}", "--cluster_timeout=1"), cwd=REPO)
  in_process.assert_ended(result, 1, (
      "run_classifier.py: error: the cluster did not form within "
      f"--cluster_timeout=1 s: worker 1 at 127.0.0.1:{ports[1]} never "
      "answered; start every host with the same --worker_hosts (or "
      "TF_CONFIG cluster) and its own --task_index, or raise "
      "--cluster_timeout"))
  assert not list((tmp_path / "model").glob("model.ckpt*"))


@pytest.mark.slow
def test_a_chief_waiting_for_its_cluster_ends_at_sigterm(stsb, tmp_path):
  """A chief waiting for a worker that never starts (TensorFlow's own
  wait holds the interpreter and ignores SIGTERM and Ctrl-C), sent SIGTERM
  once it says it waits: it says at once, in one line, that it stopped and
  which task it waited for, and exits 143; no traceback."""
  ports = loopback.free_ports(2)
  waiting = _start(_classifier_argv(stsb, tmp_path, "--do_train") + [
      f"--worker_hosts=127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}",
      "--cluster_timeout=120"])
  seen = []
  for line in waiting.stdout:
    seen.append(line)
    if "Waiting up to 120 s (--cluster_timeout)" in line:
      break
  waiting.send_signal(signal.SIGTERM)
  sent = time.monotonic()
  said = waiting.stdout.readline()
  # The line comes at once; the exit follows after the interpreter's
  # teardown of TensorFlow (about 1 s alone, 5 s on a loaded machine).
  assert time.monotonic() - sent < 2.0
  codes, logs = _finish([waiting], timeout=60)
  log = "".join(seen) + said + logs[0]
  assert codes == [128 + signal.SIGTERM], log[-3000:]
  assert log.strip().splitlines()[-1] == (
      "run_classifier.py: stopped by SIGTERM while waiting for the cluster "
      f"(worker 1 at 127.0.0.1:{ports[1]} not seen yet); nothing was "
      "trained; rerun the same command")
  assert "Traceback" not in log


################################################################################
# reproduce.py, one command per host.
################################################################################
def _reproduce_argv(stsb, work, *extra):
  """reproduce.py on the STS-B stand-in, a smoke run."""
  return ["reproduce.py", "--table=glue", "--tasks=sts-b",
          f"--data_root={stsb['data'].parent}", f"--work_dir={work}",
          f"--init_checkpoint={stsb['ckpt']}",
          f"--model_config_path={stsb['config']}",
          f"--spiece_model_file={stsb['spm']}", "--train_steps=2",
          "--max_seq_length=16", "--train_batch_size=4", "--save_steps=2",
          "--iterations=1", "--eval_batch_size=4", "--num_seeds=1", *extra]


def test_reproduce_passes_the_host_flags_and_splits_the_batch(stsb,
                                                              tmp_path,
                                                              capsys):
  """--dry_run: every command names the cluster and this host, and the
  global batch is split over the GPUs of every host."""
  from absl import flags as absl_flags  # pylint: disable=import-outside-toplevel
  from xlnet.programs import reproduce  # pylint: disable=import-outside-toplevel
  from xlnet.flags import finetuning as finetune_flags  # pylint: disable=import-outside-toplevel
  from xlnet.reproduce import api as reproduce_api  # pylint: disable=import-outside-toplevel

  def command(*extra):
    flag_values = absl_flags.FlagValues()
    reproduce.define_flags(flag_values)
    flag_values(_reproduce_argv(stsb, tmp_path, "--dry_run",
                                "--num_core_per_host=2",
                                "--train_batch_size=16", *extra))
    reproduce_api.run_table(finetune_flags.resolve_reproduce(flag_values))
    # the run's plan (a comment), then its command
    line = capsys.readouterr().out.strip().split("\n")[-1]
    return dict(arg[2:].split("=", 1) for arg in line.split()[2:])

  one = command()
  two = command("--worker_hosts=10.0.0.1:2222,10.0.0.2:2222",
                "--task_index=1")
  assert "worker_hosts" not in one and "task_index" not in one
  assert (two["worker_hosts"], two["task_index"]) == (
      "10.0.0.1:2222,10.0.0.2:2222", "1")
  # 16 examples a step: 8 per GPU on one host of 2, 4 on two hosts of 2.
  assert (one["train_batch_size"], two["train_batch_size"]) == ("8", "4")
  assert not os.listdir(tmp_path)


@pytest.mark.slow
def test_reproduce_on_two_hosts_the_chief_alone_records(stsb, tmp_path):
  """Two reproduce.py commands (task 0 and 1) on one shared work dir: the
  task trains on both; the chief alone holds the work dir and writes the
  result and the reports; the other host logs its program's output to its
  own file."""
  work = tmp_path / "work"
  hosts = ",".join(f"127.0.0.1:{p}" for p in loopback.free_ports(2))
  argv = _reproduce_argv(stsb, work, f"--worker_hosts={hosts}")
  # Task 1 a process; the chief's reproduce.py in this process (each starts
  # its run_classifier.py, and those two form the cluster).
  other = _start(argv + ["--task_index=1"])
  chief = in_process.run_program(*argv, "--task_index=0", cwd=REPO)
  codes, logs = _finish([other])
  assert (chief.returncode, codes) == (0, [0]), (chief.stderr[-3000:],
                                                  logs[0][-3000:])
  assert "Results:" in chief.stdout and "Results:" not in logs[0]
  assert ("STS-B (seed 1): starting (the chief evaluates and records it)"
          in logs[0])
  report = json.loads((work / "results.json").read_text())
  assert [row["status"] for row in report["rows"]] == ["done"]
  run_dir = work / "sts-b" / "seed-1"
  assert (run_dir / "result.json").exists()
  chief_log = (run_dir / "log.txt").read_text()
  worker_log = (run_dir / "log.process-1.txt").read_text()
  assert "--task_index=0" in chief_log and "eval_pearsonr" in chief_log
  assert "--task_index=1" in worker_log and "eval_pearsonr" not in worker_log
  assert "left to the chief" in worker_log
  # A rerun on either host skips the recorded task (the host flags are not
  # settings of the result): no program starts, so each runs alone, here.
  for index in (1, 0):
    rerun = in_process.run_program(*argv, f"--task_index={index}",
                                   "--worker_hosts=10.0.0.1:1,10.0.0.2:1",
                                   cwd=REPO)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "STS-B (seed 1): done by an earlier run, skipped" in rerun.stdout
