"""The tf.distribute trainer (xlnet/training/trainer.py): replicas, memories,
gradient accumulation, XLA, two workers, and the divergence guard.

References are independent runs of the same model on one replica with the
combined batch, or graph-mode computations of the loss with explicit
memories; never the engine's own outputs.
"""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests import loopback
from tests import train_fixtures as fx
from tests.training import test_optimizer
from xlnet.training import progress
from xlnet.training import trainer as trainer_lib
from xlnet.training import checkpoint_io
from xlnet import pretraining_loss

pytestmark = pytest.mark.eager
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _weights_close(got, want, atol=1e-5):
  assert set(got) == set(want)
  for name, value in want.items():
    np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=atol,
                               err_msg=name)


@pytest.mark.parametrize("bi_data", [
    False, pytest.param(True, marks=pytest.mark.tf_version)])
def test_two_replicas_match_one_replica_on_the_combined_batch(tmp_path,
                                                              bi_data):
  """Two logical-CPU replicas == one replica on all rows, weights and
  optimizer state after 3 steps (<= 1e-5), and each replica's memories are
  the reference's memories of its rows."""
  FL = fx.tiny_flags(bi_data=bi_data, learning_rate=3e-3)
  rng = np.random.RandomState(0)
  # Host rows a0..a3: the replicas get [a0 a1] and [a2 a3]. With bi_data a0,
  # a2 are forward rows and a1, a3 backward rows, so one replica must get
  # them as [forward..., backward...] = [a0 a2 a1 a3].
  host = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(3)]
  layout = [0, 2, 1, 3] if bi_data else [0, 1, 2, 3]

  ref = fx.make_trainer(FL, 1, tmp_path / "one")
  ref.build(fx.batches_dataset(host[:1]).element_spec)
  weights = fx.random_weights(ref, seed=7)
  ref_out = fx.train_batches(ref, [fx.take_rows(b, layout) for b in host], 3,
                             weights)
  two = fx.make_trainer(FL, 2, tmp_path / "two")
  two_out = fx.train_batches(two, host, 3, weights)

  np.testing.assert_allclose([o["loss"] for o in two_out],
                             [o["loss"] for o in ref_out], rtol=1e-5)
  _weights_close(two.state.values(), ref.state.values())
  moved = max(np.abs(two.state.values()[n] - w).max()
              for n, w in weights.items())
  assert moved > 1e-3  # the comparison is not vacuous
  ref_mems = ref.state.replica_memories()[0]
  rows_of = {0: [layout.index(0), layout.index(1)],
             1: [layout.index(2), layout.index(3)]}
  for replica, mems in two.state.replica_memories().items():
    for layer, mem in enumerate(mems):
      np.testing.assert_allclose(mem, ref_mems[layer][:, rows_of[replica]],
                                 rtol=1e-5, atol=1e-6)
  assert np.abs(ref_mems[0]).max() > 0.1


def test_accumulated_step_equals_one_large_batch(tmp_path):
  """accum_steps=2 of 2 rows == one step of 4 rows (mem_len 0, dropout 0);
  the schedule and global_step count optimizer steps."""
  FL_small = fx.tiny_flags(mem_len=0, train_batch_size=2, warmup_steps=3,
                           train_steps=10, learning_rate=1e-2)
  FL_large = fx.tiny_flags(mem_len=0, train_batch_size=4, warmup_steps=3,
                           train_steps=10, learning_rate=1e-2)
  rng = np.random.RandomState(1)
  micro = [fx.fake_batch(rng, 2, 8, 3, 40) for _ in range(4)]
  large = [{k: np.concatenate([micro[2 * i][k], micro[2 * i + 1][k]])
            for k in micro[0]} for i in range(2)]

  ref = fx.make_trainer(FL_large, 1, tmp_path / "large")
  ref.build(fx.batches_dataset(large[:1]).element_spec)
  weights = fx.random_weights(ref, seed=3)
  ref_out = fx.train_batches(ref, large, 2, weights)
  acc = fx.make_trainer(FL_small, 1, tmp_path / "acc", accum_steps=2)
  acc_out = fx.train_batches(acc, micro, 2, weights)

  _weights_close(acc.state.values(), ref.state.values())
  assert acc.state.values()["global_step"] == 2
  # lr of optimizer steps 0 and 1: 0/3 and 1/3 of the peak.
  np.testing.assert_allclose([o["lr"] for o in acc_out], [0.0, 1e-2 / 3],
                             rtol=1e-6)
  np.testing.assert_allclose([o["loss"] for o in acc_out],
                             [o["loss"] for o in ref_out], rtol=1e-5)


def test_accumulation_advances_memories_per_micro_batch(tmp_path):
  """With lr 0, one accumulated step over micro-batches b1, b2 leaves the
  memories two plain steps over b1, b2 leave."""
  FL = fx.tiny_flags(learning_rate=0.0, init_std=0.3)
  rng = np.random.RandomState(2)
  batches = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(2)]
  plain = fx.make_trainer(FL, 1, tmp_path / "plain")
  plain.build(fx.batches_dataset(batches[:1]).element_spec)
  weights = fx.random_weights(plain, seed=4)
  fx.train_batches(plain, batches, 2, weights)
  acc = fx.make_trainer(FL, 1, tmp_path / "acc", accum_steps=2)
  fx.train_batches(acc, batches, 1, weights)
  for got, want in zip(acc.state.replica_memories()[0],
                       plain.state.replica_memories()[0]):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.tf_version
def test_xla_step_equals_the_plain_step(tmp_path):
  """The whole replica step jit-compiled (what a TPU compiles) gives the
  non-XLA numbers."""
  FL = fx.tiny_flags(bi_data=True, weight_decay=0.01, learning_rate=3e-3)
  rng = np.random.RandomState(5)
  batches = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(2)]
  plain = fx.make_trainer(FL, 1, tmp_path / "plain")
  plain.build(fx.batches_dataset(batches[:1]).element_spec)
  weights = fx.random_weights(plain, seed=6)
  plain_out = fx.train_batches(plain, batches, 2, weights)
  xla = fx.make_trainer(FL, 1, tmp_path / "xla", use_xla=True)
  xla_out = fx.train_batches(xla, batches, 2, weights)
  np.testing.assert_allclose([o["loss"] for o in xla_out],
                             [o["loss"] for o in plain_out], rtol=1e-5)
  _weights_close(xla.state.values(), plain.state.values())


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")),
                    reason="the CPU's choice")
def test_cpu_trainer_draws_byte_dropout_masks_unless_xla(tmp_path):
  """On the CPU the trainer draws dropout masks from bytes
  (modeling._byte_keep_mask), except under XLA, which needs static shapes."""
  FL = fx.tiny_flags()
  assert fx.make_trainer(FL, 1, tmp_path / "plain").byte_masks
  assert fx.make_trainer(FL, 2, tmp_path / "mirrored").byte_masks
  assert not fx.make_trainer(FL, 1, tmp_path / "xla", use_xla=True).byte_masks


def _graph_loss(FL, weights, batch, mems):
  """Loss and new memories of `batch` with explicit `mems`, in a graph-mode
  model loaded with `weights` (an independent build of the same model)."""
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    feats = {k: tf.constant(v) for k, v in batch.items()}
    mem_t = [tf.constant(m) for m in mems]
    loss, new_mems, _ = pretraining_loss.get_loss(
        fx.xlnet_config_of(FL), fx.run_config_of(FL), feats, None, mem_t,
        True)
    for var in tf.compat.v1.global_variables():
      sess.run(var.assign(weights[var.name.split(":")[0]]))
    return sess.run([loss, new_mems])


def test_memories_are_carried_from_step_to_step(tmp_path):
  FL = fx.tiny_flags(learning_rate=0.0, init_std=0.3)
  rng = np.random.RandomState(1)
  b1, b2 = (fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(2))
  trainer = fx.make_trainer(FL, 1, tmp_path)
  trainer.build(fx.batches_dataset([b1]).element_spec)
  weights = fx.random_weights(trainer, seed=8, std=0.3)
  out = fx.train_batches(trainer, [b1, b2], 2, weights)
  zeros = [np.zeros([4, 4, 16], np.float32)] * FL.n_layer
  _, m1 = _graph_loss(FL, weights, b1, zeros)
  want, m2 = _graph_loss(FL, weights, b2, m1)
  reset, _ = _graph_loss(FL, weights, b2, zeros)
  np.testing.assert_allclose(out[1]["loss"], want, rtol=1e-5)
  assert abs(want - reset) > 1e-3  # the memories matter
  for got, expected in zip(trainer.state.replica_memories()[0], m2):
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_tiny_model_overfits_one_batch(tmp_path):
  FL = fx.tiny_flags(mem_len=0, learning_rate=1e-2, d_model=32, d_head=16,
                     d_inner=64, seed=1)
  batch = fx.fake_batch(np.random.RandomState(2), 4, 8, 3, 40)
  out = fx.train_batches(fx.make_trainer(FL, 1, tmp_path), [batch], 120)
  losses = [o["loss"] for o in out]
  assert losses[0] > 3.0  # ~ln(40) at the start
  assert losses[-1] < 0.05, losses[-10:]


def test_non_finite_loss_stops_without_applying_the_update(tmp_path):
  """lr 1e30 blows the weights up after one step: the next step's loss is
  not finite, its update is skipped, the saved state is finite, and the run
  stops with Diverged."""
  FL = fx.tiny_flags(learning_rate=1e30, mem_len=4)
  batch = fx.fake_batch(np.random.RandomState(3), 4, 8, 3, 40)
  trainer = fx.make_trainer(FL, 1, tmp_path)
  with pytest.raises(progress.Diverged, match="non-finite loss .* at step "):
    fx.train_batches(trainer, [batch], 10)
  step = int(trainer.state.values()["global_step"])
  values = tf.train.load_checkpoint(str(tmp_path))
  names = [n for n, _ in tf.train.list_variables(str(tmp_path))]
  assert values.get_tensor("global_step") == step
  for name in names:
    assert np.all(np.isfinite(values.get_tensor(name))), name
  for value in trainer.state.values().values():
    assert np.all(np.isfinite(value))


# A quadratic loss small enough to follow in NumPy: sum(0.5 c w^2 + x w)
# over two variables (one a LayerNorm weight, which AdamW does not decay),
# x read from the batch.
QUADRATIC = {"model/transformer/layer_0/ff/layer_1/kernel": (2, 3),
             "model/transformer/layer_0/ff/LayerNorm/gamma": (3,)}


def _quadratic_setup():
  """(initial values, coefficients, offsets) of the QUADRATIC loss."""
  rng = np.random.RandomState(1)
  coefs = {n: rng.uniform(0.5, 2.0, s).astype(np.float32)
           for n, s in QUADRATIC.items()}
  offsets = {n: rng.randn(*s).astype(np.float32) for n, s in QUADRATIC.items()}
  initial = {n: rng.randn(*s).astype(np.float32) for n, s in QUADRATIC.items()}
  return initial, coefs, offsets


def _quadratic_trainer(model_dir, opt):
  initial, coefs, _ = _quadratic_setup()

  def loss_fn(features, mems, is_training):
    del mems, is_training
    loss = 0.0
    for i, (name, shape) in enumerate(QUADRATIC.items()):
      w = tf.compat.v1.get_variable(
          name, initializer=initial[name]) if shape else None
      x = tf.reshape(features[f"x{i}"][0], shape)
      loss += tf.reduce_sum(0.5 * coefs[name] * tf.square(w) + x * w)
    return loss, None, {}

  return trainer_lib.Trainer(tf.distribute.get_strategy(), loss_fn, opt,
                             str(model_dir))


def _quadratic_batches(start=0):
  """The offsets as a batch of one row, every step."""
  _, _, offsets = _quadratic_setup()
  row = {f"x{i}": offsets[n].reshape(1, -1)
         for i, n in enumerate(QUADRATIC)}
  return tf.data.Dataset.from_tensors(row).repeat().skip(start)


@pytest.mark.quick
@pytest.mark.tf_version
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_engine_steps_are_adams_and_resume_bit_for_bit(tmp_path,
                                                       weight_decay):
  """The engine's optimizer steps (`Trainer.train`: warm-up, clipping,
  Adam or AdamW) on a quadratic loss are test_optimizer.py's NumPy
  reference; a trainer restored from checkpoint 2 takes step 3 with the
  uninterrupted trainer's bits (weights, Adam slots, step)."""
  opt = test_optimizer.make_config(learning_rate=0.1, warmup_steps=2,
                                   train_steps=10, weight_decay=weight_decay,
                                   clip=1.5, adam_epsilon=1e-3)
  initial, coefs, offsets = _quadratic_setup()
  first = _quadratic_trainer(tmp_path / "first", opt)
  first.build(_quadratic_batches().element_spec)
  got = []
  first.train(first.distribute(lambda ctx: _quadratic_batches()), 3,
              save_steps=2, on_step=lambda step, o: got.append(
                  {n: first.state.values()[n] for n in QUADRATIC}))
  want = test_optimizer.np_adam_steps(initial, coefs, offsets, opt, 3)
  for step in range(3):
    for n in QUADRATIC:
      np.testing.assert_allclose(got[step][n], want[step][n], rtol=2e-5,
                                 atol=1e-6, err_msg=f"step {step} {n}")
  assert not np.allclose(got[2][n], initial[n])

  second = _quadratic_trainer(tmp_path / "second", opt)
  second.build(_quadratic_batches().element_spec)
  second.restore(str(tmp_path / "first" / "model.ckpt-2"))
  second.train(second.distribute(lambda ctx: _quadratic_batches(2)), 3)
  want, got = first.state.values(), second.state.values()
  assert sorted(got) == sorted(want) and want["global_step"] == 3
  for name, value in want.items():
    np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_corrupted_record_without_a_callback_is_tensorflows_cause_in_one_line(
    tmp_path):
  """Records 0-2 whole, record 3's bytes flipped (its CRC fails): steps 1-3
  run, the fourth read stops training with checkpoint 3 saved and one line
  ending in TensorFlow's cause (the fine-tuning trainer passes no
  callback), not in the graph's Python stack."""
  path = str(tmp_path / "x.tfrecords")
  with tf.io.TFRecordWriter(path) as writer:
    for i in range(5):
      writer.write(b"record %d " % i + b"x" * 40)
  # A record: 12 bytes (its length and the length's CRC), 49 of data, 4
  # (the data's CRC). TensorFlow names the offset of the bad data.
  data_of_record_3 = 3 * (12 + 49 + 4) + 12
  raw = bytearray(open(path, "rb").read())
  raw[data_of_record_3 + 20] ^= 0xFF
  open(path, "wb").write(bytes(raw))
  row = {k: tf.constant(v) for k, v in
         next(iter(_quadratic_batches().take(1))).items()}
  opt = test_optimizer.make_config(learning_rate=0.1, warmup_steps=0,
                                   train_steps=10)
  trainer = _quadratic_trainer(tmp_path / "m", opt)
  trainer.build(_quadratic_batches().element_spec)
  records = tf.data.TFRecordDataset(path).map(lambda _: row)
  with pytest.raises(progress.DataCorrupted) as info:
    trainer.train(trainer.distribute(lambda ctx: records), 10)
  assert str(info.value) == (
      "a corrupted input record stopped training after step 3 (progress "
      f"saved in model.ckpt-3): corrupted record at {data_of_record_3}")
  assert tf.train.latest_checkpoint(str(tmp_path / "m")).endswith(
      "model.ckpt-3")


@pytest.mark.tf_version
def test_a_trainer_restored_from_its_checkpoint_goes_on_bit_for_bit(
    tmp_path):
  """A trainer saves after step 1 and takes step 2; another, restored from
  checkpoint 1, takes step 2 on the same batch: the same loss and the same
  bits (weights, Adam slots, step, memories), dropout (0.1) and all: the
  masks are a function of the step. One layer: the property is the
  engine's, not the depth's."""
  FL = fx.tiny_flags(n_layer=1, dropout=0.1, dropatt=0.1)
  rng = np.random.RandomState(12)
  batches = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(2)]
  spec = fx.batches_dataset(batches[:1]).element_spec
  first = fx.make_trainer(FL, 1, tmp_path / "first")
  first.build(spec)
  out = []
  first.train(first.distribute(lambda ctx: fx.batches_dataset(batches)), 2,
              save_steps=1, on_step=lambda step, o: out.append(o))
  second = fx.make_trainer(FL, 1, tmp_path / "second")
  second.build(spec)
  second.restore(str(tmp_path / "first" / "model.ckpt-1"))
  again = []
  second.train(second.distribute(lambda ctx: fx.batches_dataset(
      batches).skip(1)), 2, on_step=lambda step, o: again.append(o))
  assert again[0]["loss"] == out[1]["loss"]
  want, got = first.state.values(), second.state.values()
  assert sorted(got) == sorted(want) and want["global_step"] == 2
  for name, value in want.items():
    np.testing.assert_array_equal(got[name], value, err_msg=name)
  for g, w in zip(second.state.replica_memories()[0],
                  first.state.replica_memories()[0]):
    np.testing.assert_array_equal(g, w)


def test_sigint_stops_after_the_next_step_with_its_checkpoint(tmp_path):
  """SIGINT (Ctrl-C) during step 2: the trainer runs one more step (the
  stop is agreed on inside a step, as every worker must), saves it and
  stops with `Interrupted`: exit code 130, one line naming the signal and
  the checkpoint; the handlers it replaced are back. (SIGTERM, the same
  handler: tests/pretraining/test_train_gpu.py, in a process of its own.)"""
  trainer = fx.make_trainer(fx.tiny_flags(), 1, tmp_path)
  batch = fx.fake_batch(np.random.RandomState(4), 4, 8, 3, 40)
  trainer.build(fx.batches_dataset([batch]).element_spec)
  missed = []

  def on_step(step, out):
    del out
    if step == 2:
      os.kill(os.getpid(), signal.SIGINT)

  mine = lambda signum, frame: missed.append(signum)
  previous = signal.signal(signal.SIGINT, mine)
  try:
    with pytest.raises(progress.Interrupted) as caught:
      trainer.train(trainer.distribute(lambda ctx: fx.batches_dataset(
          [batch])), 10, on_step=on_step)
    assert signal.getsignal(signal.SIGINT) is mine
  finally:
    signal.signal(signal.SIGINT, previous)
  assert not missed  # the trainer's handler took it
  assert caught.value.exit_code == 130
  assert str(caught.value) == (
      f"stopped by SIGINT after step 3; checkpoint model.ckpt-3 saved in "
      f"{tmp_path}; rerun the same command to resume")
  assert [s for s, _ in checkpoint_io.list_checkpoints(str(tmp_path))] == [3]
  assert fx.checkpoint_values(tmp_path)["global_step"] == 3


################################################################################
# Two workers over loopback (MultiWorkerMirroredStrategy).
################################################################################
def _run_workers(tmp_path, model_dir, steps, save_steps=None, bi_data=False,
                 kill_after_save=None, chief=False):
  """Runs the two workers of tests/engine_worker.py to `steps`; returns the
  exit codes and each worker's result (None when killed)."""
  hosts = ",".join(f"127.0.0.1:{p}" for p in loopback.free_ports(2))
  procs, outs = [], []
  for task in range(2):
    out = tmp_path / f"{model_dir.name}-w{task}.npz"
    cmd = [sys.executable, os.path.join(REPO, "tests", "engine_worker.py"),
           f"--worker_hosts={hosts}", f"--task_index={task}",
           f"--model_dir={model_dir}", f"--steps={steps}",
           f"--weights={tmp_path / 'init.npz'}", f"--out={out}"]
    cmd += [f"--save_steps={save_steps}"] if save_steps else []
    cmd += ["--bi_data"] if bi_data else []
    cmd += ["--chief"] if chief else []
    cmd += [f"--hold_after={kill_after_save}"] if kill_after_save else []
    procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  cwd=REPO))
    outs.append(out)
  logs = [""] * 2
  if kill_after_save:
    index = model_dir / f"model.ckpt-{kill_after_save}.index"
    deadline = time.time() + 240
    while not index.exists() and time.time() < deadline:
      time.sleep(0.05)
    for proc in procs:
      proc.kill()
  codes = []
  for task, proc in enumerate(procs):
    logs[task] = proc.communicate(timeout=240)[0]
    codes.append(proc.returncode)
  results = [dict(np.load(o)) if o.exists() else None for o in outs]
  return codes, results, logs


def _memory_rows(layout, replica):
  """The rows of the combined batch (the reference's, in `layout` order)
  that replica `replica` holds (host rows 2r, 2r + 1)."""
  return [layout.index(2 * replica), layout.index(2 * replica + 1)]


@pytest.mark.slow
@pytest.mark.tf_version
def test_two_workers_match_one_process_when_killed_and_resumed(tmp_path):
  """Two MultiWorkerMirroredStrategy workers over loopback (one replica
  each, bi_data) are killed (SIGKILL) while holding after checkpoint 2,
  and restarted to step 4. Checkpoint 2 (the chief merged both workers'
  shards, both replicas' memories) and each worker's end state hold the
  weights of one replica trained on all rows (<= 1e-5), and each replica's
  memories are the reference's memories of its rows. The killed run names
  two 'worker' tasks in TF_CONFIG, the resumed one a 'chief' and a
  'worker' (the layout many launchers write): the chief is process 0 and
  the worker process 1 (their own checkpoint shards and memories), as
  workers 0 and 1 are."""
  FL = fx.tiny_flags(bi_data=True, learning_rate=3e-3)
  rng = np.random.RandomState(11)  # as tests/engine_worker.py draws them
  host = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(4)]
  # Worker h holds host rows [2h, 2h + 1]: forward row 2h, backward row
  # 2h + 1; one replica gets them as [forward..., backward...].
  layout = [0, 2, 1, 3]
  ref = fx.make_trainer(FL, 1, tmp_path / "ref")
  combined = [fx.take_rows(b, layout) for b in host]
  ref.build(fx.batches_dataset(combined[:1]).element_spec)
  weights = fx.random_weights(ref, seed=9)
  np.savez(tmp_path / "init.npz", **weights)
  ref.state.load_values(weights)
  want = {}
  for steps in (2, 4):
    ref.train(ref.distribute(lambda ctx, start=steps - 2: fx.batches_dataset(
        combined).skip(start)), steps)
    want[steps] = (ref.state.values(), ref.state.replica_memories()[0])

  cut = tmp_path / "cut"
  codes, _, logs = _run_workers(tmp_path, cut, 4, save_steps=2,
                                kill_after_save=2, bi_data=True)
  assert codes == [-9, -9], logs  # killed while holding after step 2
  assert not (cut / "model.ckpt-4.index").exists()
  saved = fx.checkpoint_values(cut / "model.ckpt-2")
  values, mems = want[2]
  _weights_close({k: saved[k] for k in values}, values)
  for replica in (0, 1):
    for layer in range(FL.n_layer):
      np.testing.assert_allclose(
          saved[f"mems/replica_{replica}/layer_{layer}"],
          mems[layer][:, _memory_rows(layout, replica)], rtol=1e-5,
          atol=1e-6)

  codes, resumed, logs = _run_workers(tmp_path, cut, 4, save_steps=2,
                                      bi_data=True, chief=True)
  assert codes == [0, 0], logs
  values, mems = want[4]
  assert sorted(int(r["replica"]) for r in resumed) == [0, 1]
  for result in resumed:
    _weights_close({k: result[k] for k in values}, values)
    rows = _memory_rows(layout, int(result["replica"]))
    for layer in range(FL.n_layer):
      np.testing.assert_allclose(result[f"mem_{layer}"],
                                 mems[layer][:, rows], rtol=1e-5, atol=1e-6)
  moved = max(np.abs(values[n] - w).max() for n, w in weights.items())
  assert moved > 1e-3  # the comparison is not vacuous


def test_every_seed_seeds_the_initial_weights_zero_included(tmp_path):
  """The initial weights are a function of the seed: two trainers built
  with seed 0 (which once left them unseeded) or with no seed (the default
  seed) hold equal weights; seeds 0 and 1 differ."""
  batch = fx.fake_batch(np.random.RandomState(0), 4, 8, 3, 40)

  def initial(seed):
    trainer = fx.make_trainer(fx.tiny_flags(seed=seed), 1, tmp_path)
    tf.random.uniform([7])  # global random state moved in between
    trainer.build(fx.batches_dataset([batch]).element_spec)
    return dict(zip(trainer.names, [v.numpy() for v in trainer.trainable]))

  zero, zero_again, default, one = (initial(0), initial(0), initial(None),
                                    initial(1))
  kernel = "model/transformer/layer_0/ff/layer_1/kernel"
  for name, value in zero.items():
    np.testing.assert_array_equal(zero_again[name], value, err_msg=name)
    np.testing.assert_array_equal(default[name], one[name], err_msg=name)
  assert not np.array_equal(zero[kernel], one[kernel])
