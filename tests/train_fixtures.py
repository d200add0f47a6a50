"""Synthetic pretraining batches, tiny flags and engine helpers for the
trainer tests."""
import dataclasses
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context

from tests import data_helpers
from tests import in_process
from tests import shared_artifacts
from xlnet.training import trainer as trainer_lib
from xlnet import model as model_lib
from xlnet import pretraining_loss
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import configs as config_flags

TINY = dict(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, n_token=40,
            dropout=0.0, dropatt=0.0, seq_len=8, reuse_len=4, perm_size=4,
            mem_len=4, bi_data=False, train_batch_size=4, num_predict=3,
            mask_alpha=6, mask_beta=1, uncased=False, learning_rate=1e-3,
            warmup_steps=0, min_lr_ratio=1.0, weight_decay=0.0,
            train_steps=100, iterations=1)


# The released README's pretraining command, flag by flag, verbatim (it
# names the corpus info explicitly with --corpus_info_path).
README_COMMAND = [
    "--corpus_info_path=$DATA/corpus_info.json",
    "--record_info_dir=$DATA/tfrecords", "--train_batch_size=2048",
    "--seq_len=512", "--reuse_len=256", "--perm_size=256", "--n_layer=24",
    "--d_model=1024", "--d_embed=1024", "--n_head=16", "--d_head=64",
    "--d_inner=4096", "--untie_r=True", "--mask_alpha=6", "--mask_beta=1",
    "--num_predict=85"]


# The pretraining programs' tiny run (tests/pretraining, tests/programs):
# configs/xlnet_tiny.json on `program_records`.
PROGRAM_RUN = ["--model_config_path=configs/xlnet_tiny.json", "--mem_len=8",
               "--perm_size=8", "--iterations=1", "--learning_rate=1e-3",
               "--warmup_steps=2", "--dropout=0.1", "--dropatt=0.1"]


def program_records(directory, num_core_per_host=2, num_lines=600, **flags):
  """Demo-corpus records: seq 32, reuse 16, batch 4, 6 predictions,
  written for `num_core_per_host` cores (`flags`: more record_writer
  arguments, e.g. split)."""
  return data_helpers.make_records(
      str(directory), num_lines=num_lines, seq_len=32, reuse_len=16,
      bsz_per_host=4, num_core_per_host=num_core_per_host, num_predict=6,
      **flags)


def shared_program_records(num_core_per_host=2, num_lines=600, **flags):
  """`program_records` written once per test run and shared read-only."""
  return data_helpers.shared_records(
      num_lines=num_lines, seq_len=32, reuse_len=16, bsz_per_host=4,
      num_core_per_host=num_core_per_host, num_predict=6, **flags)


def change_an_id(record_dir, key, new_id):
  """Rewrites the first record of `record_dir`'s one file with id `new_id`
  at position 3 of feature `key` ("input" of example records, "tokens" of
  token records): ids changed after the record info was written (its file
  sizes are updated, its largest id is not). Returns the file."""
  (path,) = glob.glob(os.path.join(record_dir, "*.tfrecords"))
  with context.eager_mode():
    records = list(tf.data.TFRecordDataset(path).as_numpy_iterator())
  example = tf.train.Example.FromString(records[0])
  example.features.feature[key].int64_list.value[3] = new_id
  records[0] = example.SerializeToString()
  with tf.io.TFRecordWriter(path) as writer:
    for record in records:
      writer.write(record)
  for info_path in glob.glob(os.path.join(record_dir, "record_info-*.json")):
    with open(info_path) as f:
      info = json.load(f)
    info["file_bytes"] = {name: os.path.getsize(os.path.join(
        record_dir, name)) for name in info["file_bytes"]}
    with open(info_path, "w") as f:
      json.dump(info, f)
  return path


def program_command(program, record_dir, model_dir, *extra):
  """`python {program}` (train_gpu.py, train_tpu.py) on the tiny run, with
  `extra` flags (later ones win)."""
  return [sys.executable, os.path.join(data_helpers.REPO_ROOT, program),
          f"--record_info_dir={record_dir}", f"--model_dir={model_dir}",
          *PROGRAM_RUN, *extra]


def shared_train_gpu_run(*flags, num_core_per_host=2, timeout=300):
  """A model_dir that `train_gpu.py` trained on `shared_program_records(
  num_core_per_host)` with the tiny run and `flags` (e.g. "--train_steps=4",
  "--save_steps=2"), trained once per test run (in a test process, see
  `shared_program_run`) and shared read-only: a test that changes it works
  on `shared_artifacts.copy_of(path, tmp_path / "m")`.

  Returns:
    (record_dir, model_dir).
  """
  del timeout  # the run is in-process
  records = shared_program_records(num_core_per_host)
  model_dir, _ = shared_program_run(
      "train_gpu.py", records, f"--num_core_per_host={num_core_per_host}",
      *flags)
  return records, model_dir


def tiny_flags(**overrides):
  """Parsed trainer flags of a tiny model (dropout 0), with `overrides`."""
  values = dict(TINY, **overrides)
  argv = ["prog"] + [f"--{k}={v}" for k, v in values.items()
                     if v is not None]
  return flag_catalog.parse_flags(argv)


def xlnet_config_of(FL):
  """The XLNetConfig of the model flags of `FL` (e.g. `tiny_flags()`)."""
  return model_lib.XLNetConfig(**{k: getattr(FL, k)
                                  for k in model_lib.XLNetConfig.keys})


def run_config_of(FL):
  """The pretraining RunConfig (training mode) of the flags `FL`."""
  return config_flags.run_config(True, False, FL)


def fake_batch(rng, bsz, seq_len, num_predict, n_token):
  """One batch-major feature dict as the input function produces it.

  Every row has `num_predict` random target positions that nobody may see
  (perm_mask column = 1), `target_mask` all ones, random tokens.

  Returns:
    dict of numpy arrays: `input_k, input_q, seg_id [bsz,seq]`,
    `perm_mask [bsz,seq,seq]`, `target, target_mask [bsz,P]`,
    `target_mapping [bsz,P,seq]`, `label [bsz]`.
  """
  inp = rng.randint(9, n_token, size=(bsz, seq_len)).astype(np.int32)
  perm_mask = np.zeros((bsz, seq_len, seq_len), np.float32)
  mapping = np.zeros((bsz, num_predict, seq_len), np.float32)
  inp_q = np.zeros((bsz, seq_len), np.float32)
  target = np.zeros((bsz, num_predict), np.int32)
  for b in range(bsz):
    pos = np.sort(rng.choice(seq_len, num_predict, replace=False))
    perm_mask[b][:, pos] = 1.0
    mapping[b, np.arange(num_predict), pos] = 1.0
    inp_q[b, pos] = 1.0
    target[b] = inp[b, pos]
  seg_id = np.zeros((bsz, seq_len), np.int32)
  seg_id[:, seq_len // 2:] = 1
  return dict(input_k=inp, input_q=inp_q, seg_id=seg_id, perm_mask=perm_mask,
              target=target, target_mask=np.ones((bsz, num_predict),
                                                 np.float32),
              target_mapping=mapping, label=np.zeros((bsz,), np.int32))


def take_rows(batch, rows):
  """The rows `rows` (list of ints) of every feature of `batch`."""
  return {k: v[rows] for k, v in batch.items()}


def placeholders(batch):
  """Placeholders with the dtypes and shapes of a numpy feature dict."""
  return {k: tf.compat.v1.placeholder(tf.as_dtype(v.dtype), v.shape, name=k)
          for k, v in batch.items()}


def feed(phs, batch):
  """feed_dict mapping `placeholders(batch)` to `batch`."""
  return {phs[k]: v for k, v in batch.items()}


def per_core_input_fn(host_batches, data_cores):
  """An input function cycling through `host_batches` in order.

  Args:
    host_batches: list of feature dicts `[bsz, ...]`, each the concatenation
      of `data_cores` per-core batches.
    data_cores: int.

  Returns:
    input_fn(params) -> dataset of per-core batches of
    `params["batch_size"]` rows: core 0, core 1, ... of host batch 0, then
    of host batch 1, ...
  """
  per_core = []
  for batch in host_batches:
    bsz = len(batch["input_k"])
    q = bsz // data_cores
    per_core += [take_rows(batch, list(range(c * q, (c + 1) * q)))
                 for c in range(data_cores)]
  stacked = {k: np.stack([b[k] for b in per_core]) for k in per_core[0]}

  def input_fn(params):
    assert params["batch_size"] == len(per_core[0]["input_k"])
    return tf.data.Dataset.from_tensor_slices(stacked).repeat()

  return input_fn


def per_core_batches(host_batches, cores):
  """Splits host batches into per-core batches, core-major per host step."""
  out = []
  for batch in host_batches:
    q = len(batch["input_k"]) // cores
    out += [take_rows(batch, list(range(c * q, (c + 1) * q)))
            for c in range(cores)]
  return out


def batches_dataset(batches):
  """A repeating dataset yielding `batches` (feature dicts) in order."""
  stacked = {k: np.stack([b[k] for b in batches]) for k in batches[0]}
  return tf.data.Dataset.from_tensor_slices(stacked).repeat()


def make_trainer(FL, n_replicas, model_dir, accum_steps=1, use_xla=False,
                 strategy=None):
  """An engine Trainer of the pretraining loss on 1 device or 2 logical CPUs
  (or on `strategy` when given).

  `FL.train_batch_size` is the batch of one optimizer micro-step over all
  replicas.
  """
  if strategy is None:
    strategy = (tf.distribute.get_strategy() if n_replicas == 1 else
                tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
  config = xlnet_config_of(FL)
  memory = (trainer_lib.MemoryConfig(
      config.n_layer, FL.mem_len,
      FL.train_batch_size // strategy.num_replicas_in_sync, config.d_model)
            if FL.mem_len else None)
  return trainer_lib.Trainer(
      strategy, pretraining_loss.pretrain_loss_fn(config, run_config_of(FL)),
      config_flags.optimizer_config(FL, config.n_layer), str(model_dir),
      memory=memory, accum_steps=accum_steps,
      train=dataclasses.replace(config_flags.train_config(FL),
                                use_xla=use_xla))


def random_weights(trainer, seed, std=0.1):
  """Seeded random values for every trainable variable of `trainer`."""
  rng = np.random.RandomState(seed)
  return {name: rng.normal(0.0, std, var.shape.as_list()).astype(np.float32)
          for name, var in zip(trainer.names, trainer.trainable)}


def train_batches(trainer, host_batches, steps, weights=None):
  """Builds `trainer`, loads `weights`, trains `steps` optimizer steps on
  `host_batches` (cycled; each split over the trainer's replicas).

  Returns:
    list of the per-step outputs (loss, gnorm, lr, ...).
  """
  per_core = per_core_batches(host_batches, trainer.num_replicas)
  trainer.build(batches_dataset(per_core[:1]).element_spec)
  if weights is not None:
    trainer.state.load_values(weights)
  dataset = trainer.distribute(lambda ctx: batches_dataset(per_core))
  outputs = []
  trainer.train(dataset, steps, on_step=lambda step, out: outputs.append(out))
  return outputs


def signal_when(cmd, line_pattern, sig, cwd):
  """Runs `cmd`, sends it `sig` once an output line matches `line_pattern`,
  and returns (exit code, all output)."""
  proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, cwd=cwd,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  out, sent = [], False
  for line in proc.stdout:
    out.append(line)
    if not sent and re.search(line_pattern, line):
      proc.send_signal(sig)
      sent = True
  return proc.wait(timeout=300), "".join(out)


def fake_data_dir(tmp_path, **overrides):
  """A record dir whose corpus_info.json says seq_len 8, bsz 4, ..."""
  info = dict(vocab_size=40, bsz_per_host=4, num_core_per_host=1, seq_len=8,
              reuse_len=4, uncased=False, bi_data=True, mask_alpha=6,
              mask_beta=1, num_predict=3, use_eod=True)
  info.update(overrides)
  (tmp_path / "tfrecords").mkdir(parents=True)
  (tmp_path / "corpus_info.json").write_text(json.dumps(info))
  return str(tmp_path / "tfrecords")


# ---- programs run in the test process ---------------------------------------
def run_program(program, *args):
  """`python {program} args` (a top-level program, e.g. train_gpu.py) run
  in this process (`tests/in_process.py`: no interpreter to start, no
  TensorFlow import; the library's functions traced by earlier runs of
  this process are reused), from the repository, eagerly whatever the
  test's mode (the engine runs eagerly, a graph-mode test's graph would
  hold its ops).

  Returns:
    in_process.Result(returncode, stdout, stderr).
  """
  with context.eager_mode():
    return in_process.run_program(program, *args, cwd=data_helpers.REPO_ROOT)


def run_in_process(command):
  """`run_program` of a `program_command` list ([python, program, args])."""
  return run_program(os.path.basename(command[1]), *command[2:])


def shared_program_run(program, record_dir, *flags):
  """A model_dir that `program` (train_gpu.py, train_tpu.py) trained on
  `record_dir` with the tiny run (`PROGRAM_RUN`) and `flags`, trained once
  per test run, in the process of the first test that asks (the same bits
  as `python {program}`: the same command gives the same bits), and shared
  read-only: copy it (`shared_artifacts.copy_of`) to change it.

  Returns:
    (model_dir, the run's log: stdout and stderr).
  """

  def train(directory, program, record_dir, flags):
    result = run_in_process(program_command(
        program, record_dir, os.path.join(directory, "model"), *flags))
    assert result.returncode == 0, result.stderr[-3000:]
    with open(os.path.join(directory, "log.txt"), "w") as f:
      f.write(result.stdout + result.stderr)

  directory = shared_artifacts.build_once(
      "program-run", train, program=program, record_dir=record_dir,
      flags=list(flags))
  with open(os.path.join(directory, "log.txt")) as f:
    return os.path.join(directory, "model"), f.read()


def log_lines(text):
  """{step: the logged '[step] | gnorm ... | loss ...' part} of a
  pretraining program's output."""
  return {int(m.group(1)): m.group(0) for m in re.finditer(
      r"\[(\d+)\] \| gnorm \S+ lr \S+ \| loss \S+", text)}


def checkpoint_values(path):
  """{name: array} of every tensor of a checkpoint (a prefix, or a
  directory's newest)."""
  reader = tf.train.load_checkpoint(str(path))
  return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


def assert_same_checkpoint(got, want):
  """The two checkpoints hold the same names and the same bits."""
  got, want = checkpoint_values(got), checkpoint_values(want)
  assert sorted(got) == sorted(want)
  for name, value in want.items():
    np.testing.assert_array_equal(got[name], value, err_msg=name)

