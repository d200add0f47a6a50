"""Tests of the GPU/CPU trainer: towers, memories, overfitting, resume,
end-to-end training on demo-corpus records, and bad input."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import train_fixtures as fx
from tests.data_helpers import make_records
from xlnet import flags as flags_lib
from xlnet import function_builder
from xlnet import train_gpu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_weights(sess, seed):
  """Overwrites every trainable variable with seeded random values."""
  rng = np.random.RandomState(seed)
  values = {}
  for var in sorted(tf.compat.v1.trainable_variables(), key=lambda v: v.name):
    values[var.name] = rng.normal(0.0, 0.1, var.shape.as_list()).astype(
        np.float32)
    var.load(values[var.name], sess)
  return values


def _variables(sess):
  """{name: value} of all global variables except the memories."""
  return {v.name: value for v, value in zip(
      tf.compat.v1.global_variables(),
      sess.run(tf.compat.v1.global_variables()))
          if not v.name.startswith("mems/")}


def _run_steps(FL, host_batches, n_towers):
  """Trains one step per host batch.

  Returns:
    ([(loss, gnorm)] per step, {name: value} after the steps, initial
    trainable values).
  """
  with tf.Graph().as_default():
    phs = fx.placeholders(host_batches[0])
    step = train_gpu.build_train_step(FL, phs,
                                      train_gpu.tower_devices(n_towers))
    with tf.compat.v1.Session(
        config=train_gpu.session_config(n_towers)) as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      initial = _load_weights(sess, 7)
      losses = [sess.run([step.train_op, step.loss, step.gnorm],
                         fx.feed(phs, b))[1:] for b in host_batches]
      return losses, _variables(sess), initial


@pytest.mark.parametrize("bi_data", [False, True])
def test_two_towers_match_one_tower(bi_data):
  """Two CPU towers give the same two updates as one tower on all rows."""
  FL = fx.tiny_flags(bi_data=bi_data)
  rng = np.random.RandomState(0)
  # Two steps of rows a0..a3. The towers get [a0 a1] and [a2 a3]: with
  # bi_data a0, a2 are forward rows and a1, a3 backward rows, so the single
  # tower must get them as [forward..., backward...] = [a0 a2 a1 a3].
  rows = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(2)]
  single_layout = [0, 2, 1, 3] if bi_data else [0, 1, 2, 3]

  ref_losses, ref_vars, initial = _run_steps(
      FL, [fx.take_rows(b, single_layout) for b in rows], 1)
  losses, two_vars, _ = _run_steps(FL, rows, 2)

  # loss (rtol 1e-5) and gnorm (rtol 1e-4: a norm over all gradients whose
  # float32 sums run in another order across two towers; a wrong tower
  # scaling is off by a factor, not by 1e-5).
  losses, ref_losses = np.asarray(losses), np.asarray(ref_losses)
  np.testing.assert_allclose(losses[:, 0], ref_losses[:, 0], rtol=1e-5)
  np.testing.assert_allclose(losses[:, 1], ref_losses[:, 1], rtol=1e-4)
  assert set(two_vars) == set(ref_vars)
  for name, value in ref_vars.items():
    np.testing.assert_allclose(two_vars[name], value, rtol=1e-4, atol=1e-6,
                               err_msg=name)
  # The step changed the weights (the comparison is not vacuous).
  moved = [np.abs(two_vars[n] - v).max() for n, v in initial.items()]
  assert min(moved) > 0.0 and max(moved) > 5e-4


def test_memories_are_carried_on_device():
  """Step 2 uses step 1's memories: same loss as feeding them explicitly."""
  # lr 0: the weights stay put and only the memories move.
  FL = fx.tiny_flags(learning_rate=0.0, init_std=0.3)
  rng = np.random.RandomState(1)
  b1, b2 = (fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(2))
  with tf.Graph().as_default():
    phs = fx.placeholders(b1)
    step = train_gpu.build_train_step(FL, phs, ["/device:CPU:0"])
    mem_phs = [tf.compat.v1.placeholder(tf.float32, [4, 4, 16])
               for _ in range(FL.n_layer)]
    with tf.compat.v1.variable_scope(tf.compat.v1.get_variable_scope(),
                                     reuse=True):
      loss, new_mems, _ = function_builder.get_loss(FL, phs, None, mem_phs,
                                                    True)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      zeros = [np.zeros([4, 4, 16], np.float32)] * FL.n_layer
      m1 = sess.run(new_mems, {**fx.feed(phs, b1), **dict(zip(mem_phs,
                                                               zeros))})
      sess.run(step.train_op, fx.feed(phs, b1))
      stored = sess.run(step.mem_vars[0])
      carried = sess.run([step.train_op, step.loss], fx.feed(phs, b2))[1]
      explicit = sess.run(loss, {**fx.feed(phs, b2), **dict(zip(mem_phs,
                                                                m1))})
      reset = sess.run(loss, {**fx.feed(phs, b2), **dict(zip(mem_phs,
                                                             zeros))})
  for got, want in zip(stored, m1):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
  assert np.abs(m1[0]).max() > 0.1  # the memories are not trivially zero
  np.testing.assert_allclose(carried, explicit, rtol=1e-5)
  assert abs(carried - reset) > 1e-3


def test_tiny_model_overfits_one_batch():
  FL = fx.tiny_flags(mem_len=0, learning_rate=1e-2, d_model=32, d_head=16,
                     d_inner=64)
  batch = fx.fake_batch(np.random.RandomState(2), 4, 8, 3, 40)
  with tf.Graph().as_default():
    tf.compat.v1.set_random_seed(0)
    feats = {k: tf.constant(v) for k, v in batch.items()}
    step = train_gpu.build_train_step(FL, feats, ["/device:CPU:0"])
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      losses = [sess.run([step.train_op, step.loss])[1] for _ in range(120)]
  assert losses[0] > 3.0  # ~ln(40) at the start
  assert losses[-1] < 0.05, losses[-10:]


def test_log_line_format_and_a_diverged_loss():
  """SPEC section 6's line; a diverged loss (exp overflows a float) is
  logged as pplx inf instead of killing the run with OverflowError."""
  assert train_gpu.format_log_line(1000, 0.4512, 1e-5, 6.0) == (
      "[1000] | gnorm 0.45 lr 0.000010 | loss 6.00 | pplx  403.43, "
      "bpc  8.6562")
  assert train_gpu.format_log_line(7, float("nan"), 4e-4, 800.0) == (
      "[7] | gnorm nan lr 0.000400 | loss 800.00 | pplx     inf, "
      "bpc 1154.1560")


def _train(FL, model_dir, train_steps, host_batches):
  FL.model_dir = str(model_dir)
  FL.train_steps = train_steps
  return train_gpu.train(FL, fx.per_core_input_fn(host_batches, 1),
                         len(host_batches))


def _checkpoint_values(model_dir):
  reader = tf.train.load_checkpoint(str(model_dir))
  return {name: reader.get_tensor(name)
          for name in reader.get_variable_to_shape_map()}


def test_resume_continues_like_an_uninterrupted_run(tmp_path):
  rng = np.random.RandomState(3)
  batches = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(3)]
  flags_kw = dict(seed=5, save_steps=2, learning_rate=3e-3)

  full = _train(fx.tiny_flags(**flags_kw), tmp_path / "full", 5, batches)
  first = _train(fx.tiny_flags(**flags_kw), tmp_path / "cut", 2, batches)
  rest = _train(fx.tiny_flags(**flags_kw), tmp_path / "cut", 5, batches)

  assert [s for s, _ in full] == [1, 2, 3, 4, 5]
  assert [s for s, _ in first] == [1, 2] and [s for s, _ in rest] == [3, 4, 5]
  np.testing.assert_allclose([l for _, l in first + rest],
                             [l for _, l in full], rtol=1e-5)
  want = _checkpoint_values(tmp_path / "full")
  got = _checkpoint_values(tmp_path / "cut")
  assert set(got) == set(want)
  assert any("mems/tower_0/layer_1" in n for n in want)
  assert any(n.endswith("/Adam") for n in want) or any(
      n.endswith("adam_m") for n in want)
  for name, value in want.items():
    np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-7,
                               err_msg=name)
  assert tf.train.latest_checkpoint(str(tmp_path / "cut")).endswith("-5")
  # The log wrote TensorBoard scalars.
  assert list((tmp_path / "full").glob("events.out.tfevents.*"))
  # The model's XLNetConfig sits next to its checkpoints (SPEC section 1: per
  # checkpoint; the release's trainers wrote model_dir/config.json).
  assert json.loads((tmp_path / "cut" / "config.json").read_text()) == dict(
      n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32,
      ff_activation="gelu", untie_r=True, n_token=40)


def _fake_data_dir(tmp_path, **overrides):
  """A record dir whose corpus_info.json says seq_len 8, bsz 4, ..."""
  info = dict(vocab_size=40, bsz_per_host=4, num_core_per_host=1, seq_len=8,
              reuse_len=4, uncased=False, bi_data=True, mask_alpha=6,
              mask_beta=1, num_predict=3, use_eod=True)
  info.update(overrides)
  (tmp_path / "tfrecords").mkdir()
  (tmp_path / "corpus_info.json").write_text(json.dumps(info))
  return str(tmp_path / "tfrecords")


@pytest.mark.parametrize("argv,message", [
    ([], "--record_info_dir is required"),
    (["--seq_len=16"], "--seq_len=16 does not match the data"),
    (["--bi_data=False"], "--bi_data=False does not match the data"),
    (["--num_predict=5"], "num_predict=3"),
    (["--train_batch_size=8"], "--train_batch_size=8 does not match"),
    (["--num_core_per_host=3"], "--train_batch_size=4 is not divisible"),
    (["--d_embed=32"], "--d_embed=32 must equal d_model=16"),
    (["--n_token=10"], "smaller than the data's vocabulary"),
    (["--iterations=0"], "--iterations=0 must be >= 1"),
])
def test_flags_checked_against_corpus_info(tmp_path, argv, message):
  FL = flags_lib.parse_flags(
      ["prog", "--n_layer=1", "--d_model=16", f"--model_dir={tmp_path}/m"] +
      ([f"--record_info_dir={_fake_data_dir(tmp_path)}"]
       if argv else []) + argv)
  with pytest.raises(ValueError, match=message.replace("'", ".")):
    train_gpu.run(FL)


# The released README's pretraining command, flag by flag, verbatim (it
# names the corpus info explicitly with --corpus_info_path).
README_COMMAND = [
    "--corpus_info_path=$DATA/corpus_info.json",
    "--record_info_dir=$DATA/tfrecords", "--train_batch_size=2048",
    "--seq_len=512", "--reuse_len=256", "--perm_size=256", "--n_layer=24",
    "--d_model=1024", "--d_embed=1024", "--n_head=16", "--d_head=64",
    "--d_inner=4096", "--untie_r=True", "--mask_alpha=6", "--mask_beta=1",
    "--num_predict=85"]
README_CORPUS_INFO = dict(
    vocab_size=32000, bsz_per_host=2048, num_core_per_host=1, seq_len=512,
    reuse_len=256, uncased=False, bi_data=True, mask_alpha=6, mask_beta=1,
    num_predict=85, use_eod=True)


def _readme_argv(record_dir, info_path):
  return ["prog"] + [a.replace("$DATA/tfrecords", record_dir).replace(
      "$DATA/corpus_info.json", info_path) for a in README_COMMAND]


def test_original_readme_command_is_accepted_with_corpus_info_path(tmp_path):
  """--corpus_info_path (in the README's command) is accepted and read; here
  it is the only corpus_info.json (none next to the records)."""
  record_dir = tmp_path / "data" / "tfrecords"
  record_dir.mkdir(parents=True)
  info_path = tmp_path / "elsewhere" / "info.json"
  info_path.parent.mkdir()
  info_path.write_text(json.dumps(README_CORPUS_INFO))
  FL = flags_lib.parse_flags(_readme_argv(str(record_dir), str(info_path)))
  flags_lib.resolve_flags(FL, flags_lib.load_corpus_info(FL))
  assert (FL.seq_len, FL.reuse_len, FL.perm_size, FL.bi_data, FL.num_predict,
          FL.train_batch_size, FL.n_token, FL.n_layer, FL.d_model) == (
              512, 256, 256, True, 85, 2048, 32000, 24, 1024)
  # The original TPU trainer's --track_mean is accepted too.
  flags_lib.parse_flags(["prog", "--track_mean=False"])

  # A --corpus_info_path that disagrees with the flags is named in the error;
  # one that does not exist is reported as such.
  info_path.write_text(json.dumps(dict(README_CORPUS_INFO, seq_len=128)))
  FL = flags_lib.parse_flags(_readme_argv(str(record_dir), str(info_path)))
  with pytest.raises(ValueError, match="--seq_len=512 does not match the "
                     "data: .*info.json has seq_len=128"):
    flags_lib.resolve_flags(FL, flags_lib.load_corpus_info(FL))
  FL = flags_lib.parse_flags(_readme_argv(str(record_dir),
                                          str(tmp_path / "none.json")))
  with pytest.raises(ValueError, match="--corpus_info_path=.*none.json does "
                     "not exist"):
    flags_lib.load_corpus_info(FL)


def test_resolve_fills_data_flags_from_corpus_info(tmp_path):
  FL = flags_lib.parse_flags(["prog", "--record_info_dir=" +
                              _fake_data_dir(tmp_path)])
  flags_lib.resolve_flags(FL, flags_lib.load_corpus_info(FL))
  assert (FL.seq_len, FL.reuse_len, FL.bi_data, FL.num_predict,
          FL.train_batch_size, FL.n_token) == (8, 4, True, 3, 4, 40)


def test_corpus_info_is_read_through_tf_gfile():
  """Record dirs on gs:// must work: here TensorFlow's in-memory ram://
  filesystem stands in for a remote one (os.path cannot see either)."""
  info = dict(vocab_size=40, bsz_per_host=4, num_core_per_host=1, seq_len=8,
              reuse_len=4, uncased=False, bi_data=True, mask_alpha=6,
              mask_beta=1, num_predict=3, use_eod=True)
  tf.io.gfile.makedirs("ram://xlnet_test_data/tfrecords")
  with tf.io.gfile.GFile("ram://xlnet_test_data/corpus_info.json", "w") as f:
    f.write(json.dumps(info))
  FL = flags_lib.parse_flags(
      ["prog", "--record_info_dir=ram://xlnet_test_data/tfrecords"])
  assert flags_lib.load_corpus_info(FL) == info
  FL = flags_lib.parse_flags(
      ["prog", "--record_info_dir=ram://xlnet_test_data/missing"])
  with pytest.raises(ValueError, match="directory ram://xlnet_test_data/"
                     "missing does not exist"):
    flags_lib.load_corpus_info(FL)


def test_entry_point_bad_input_is_one_line_exit_2(tmp_path):
  record_dir = _fake_data_dir(tmp_path)
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
  FL = fx.tiny_flags(init_checkpoint=ckpt, model_dir=str(tmp_path / "m"))
  batches = [fx.fake_batch(np.random.RandomState(0), 4, 8, 3, 40)]
  with pytest.raises(ValueError, match="lookup_table"):
    train_gpu.train(FL, fx.per_core_input_fn(batches, 1), 1)


@pytest.mark.slow
def test_loss_falls_on_demo_corpus_records_with_two_towers(tmp_path):
  """Demo-corpus records (bi_data, written for 1 core) on 2 CPU towers."""
  record_dir = make_records(str(tmp_path / "data"), num_lines=1500)
  model_dir = tmp_path / "model"
  FL = flags_lib.parse_flags([
      "prog", f"--record_info_dir={record_dir}", f"--model_dir={model_dir}",
      "--n_layer=2", "--d_model=32", "--n_head=2", "--d_head=16",
      "--d_inner=64", "--dropout=0", "--dropatt=0", "--mem_len=32",
      "--perm_size=16", "--num_core_per_host=2", "--learning_rate=3e-3",
      "--warmup_steps=10", "--train_steps=80", "--iterations=20",
      "--seed=1"])
  history = train_gpu.run(FL)
  losses = [loss for _, loss in history]
  assert [s for s, _ in history] == list(range(1, 81))
  assert losses[0] > 6.0  # ~ln(vocab 1000) at the start
  assert np.mean(losses[-10:]) < losses[0] - 1.0, losses
  assert tf.train.latest_checkpoint(str(model_dir)).endswith("-80")
  reader = tf.train.load_checkpoint(str(model_dir))
  assert reader.get_tensor("mems/tower_1/layer_0").shape == (32, 2, 32)
