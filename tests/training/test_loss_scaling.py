"""float16 loss scaling of the trainer (`optimizer.AdamState`): float16
tracks float32, overflows lower the scale and skip the update, an overflow
at scale 1 stops the run with exactly the last applied state saved, and a
scale below 1 is refused or lifted on restore."""
import numpy as np
import pytest
import tensorflow as tf

from tests import train_fixtures as fx
from xlnet.flags import configs as config_flags
from xlnet.training import checkpoint_io
from xlnet.training import progress
from xlnet.training import trainer as trainer_lib

pytestmark = pytest.mark.eager


@pytest.mark.tf_version
def test_float16_with_loss_scaling_tracks_float32(tmp_path):
  """--use_fp16: the loss of every step stays within float16 rounding of the
  float32 run's, from the same weights and batches."""
  rng = np.random.RandomState(8)
  batches = [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(3)]
  runs = {}
  for use_fp16 in (False, True):
    FL = fx.tiny_flags(use_fp16=use_fp16, learning_rate=1e-3)
    trainer = fx.make_trainer(FL, 1, tmp_path / f"fp16-{use_fp16}")
    trainer.build(fx.batches_dataset(batches[:1]).element_spec)
    weights = fx.random_weights(trainer, seed=3)
    out = fx.train_batches(trainer, batches, 4, weights)
    runs[use_fp16] = ([o["loss"] for o in out], [o["gnorm"] for o in out],
                      trainer.state.values())
  np.testing.assert_allclose(runs[True][0], runs[False][0], rtol=5e-3)
  # The gradients were unscaled (Adam alone would hide a missing unscale).
  np.testing.assert_allclose(runs[True][1], runs[False][1], rtol=2e-2)
  assert runs[True][2]["loss_scale"] == 2.0 ** 15  # no overflow here


def test_loss_scale_recovers_from_overflow_without_stopping(tmp_path):
  """A first scale of 2**40 overflows float16 gradients: those updates are
  skipped and the scale halves until the gradients are finite; the steps
  still count, then training goes on."""
  FL = fx.tiny_flags(use_fp16=True, loss_scale=2.0 ** 40, learning_rate=1e-3,
                     mem_len=0)
  batch = fx.fake_batch(np.random.RandomState(9), 4, 8, 3, 40)
  trainer = fx.make_trainer(FL, 1, tmp_path)
  out = fx.train_batches(trainer, [batch], 40)
  applied = [bool(o["applied"]) for o in out]
  state = trainer.state.values()
  assert not applied[0] and applied[-1], applied
  skipped = applied.index(True)
  assert state["global_step"] == 40
  assert state["loss_scale"] == 2.0 ** (40 - skipped)
  assert out[-1]["loss"] < out[skipped]["loss"]  # it trains afterwards
  # The skipped steps changed no weight: the first applied step starts from
  # the initial weights (its loss equals step 1's: same batch, no memory).
  np.testing.assert_allclose(out[skipped]["loss"], out[0]["loss"], rtol=1e-6)


################################################################################
# float16 loss scaling at its floor.
################################################################################
@tf.custom_gradient
def _overflowing_gradient(loss, boom):
  """Identity on `loss` whose gradient is infinite where `boom` > 0 (an
  overflow of float16 gradients that no loss scale avoids)."""
  def grad(dy):
    return dy * tf.where(boom > 0, np.inf, 1.0), tf.zeros_like(boom)
  return tf.identity(loss), grad


def _quadratic_loss(features, mems, is_training):
  """sum((w - x)^2) of one [1, 3] row, its gradient overflowing on `boom`
  rows: a model small enough to check every variable exactly."""
  del mems, is_training
  w = tf.compat.v1.get_variable(
      "model/w", [3], initializer=tf.compat.v1.constant_initializer(
          [1.0, -2.0, 0.5]))
  loss = tf.reduce_sum(tf.square(w - features["x"][0]))
  return _overflowing_gradient(loss, features["boom"][0]), None, {}


def _boom_trainer(model_dir, loss_scale=2.0):
  FL = fx.tiny_flags(use_fp16=True, loss_scale=loss_scale,
                     learning_rate=0.1, mem_len=0)
  trainer = trainer_lib.Trainer(tf.distribute.get_strategy(), _quadratic_loss,
                                config_flags.optimizer_config(FL),
                                str(model_dir),
                                train=config_flags.train_config(FL))
  return trainer


def _boom_dataset(booms, start=0):
  """Batches {x [1, 3], boom [1]}; `booms[i]` marks step i + 1's batch."""
  x = np.arange(3 * len(booms), dtype=np.float32).reshape(len(booms), 1, 3)
  boom = np.asarray(booms, np.float32).reshape(len(booms), 1)
  return tf.data.Dataset.from_tensor_slices(
      {"x": x, "boom": boom}).skip(start).repeat()


def _saved_state(model_dir):
  reader = tf.train.load_checkpoint(str(model_dir))
  return {name: reader.get_tensor(name)
          for name, _ in tf.train.list_variables(str(model_dir))}


@pytest.mark.quick
@pytest.mark.tf_version
def test_overflow_at_loss_scale_one_saves_exactly_the_last_applied_state(
    tmp_path):
  """Scale 2: an overflow lowers it to 1 (never below), finite steps are
  applied, then an overflow at scale 1 stops the run: the checkpoint is
  exactly the state recorded after the last counted step (weights, Adam
  slots, beta powers, step, scale), and a rerun stops at the same step
  with the same state, never applying an update twice."""
  booms = [0, 1, 0, 0, 1]
  trainer = _boom_trainer(tmp_path)
  dataset = trainer.distribute(lambda ctx: _boom_dataset(booms))
  trainer.build(_boom_dataset(booms).element_spec)
  records = []
  with pytest.raises(progress.Diverged, match="overflow at loss scale 1"):
    trainer.train(dataset, 10, on_step=lambda step, out: records.append(
        (step, bool(out["applied"]), trainer.state.values())))
  assert [(s, a) for s, a, _ in records] == [
      (1, True), (2, False), (3, True), (4, True)]
  assert records[1][2]["loss_scale"] == 1.0  # halved from 2, not below
  last = records[-1][2]
  saved = _saved_state(tmp_path)
  assert set(saved) == set(last)
  for name, value in last.items():
    np.testing.assert_array_equal(saved[name], value, err_msg=name)

  again = _boom_trainer(tmp_path)
  again.build(_boom_dataset(booms).element_spec)
  again.restore(tf.train.latest_checkpoint(str(tmp_path)))
  start = int(again.global_step.numpy())
  with pytest.raises(progress.Diverged, match=f"at step {start + 1}:"):
    again.train(again.distribute(lambda ctx: _boom_dataset(booms, start)), 10)
  for name, value in _saved_state(tmp_path).items():
    np.testing.assert_array_equal(value, last[name], err_msg=name)


def test_loss_scale_below_one_is_refused_as_a_flag_and_lifted_on_restore(
    tmp_path):
  with pytest.raises(ValueError, match=r"--loss_scale=0.5 must be >= 1"):
    _boom_trainer(tmp_path, loss_scale=0.5)
  trainer = _boom_trainer(tmp_path)
  trainer.build(_boom_dataset([0]).element_spec)
  values = dict(trainer.state.values(), loss_scale=np.float32(0.5))
  prefix = str(tmp_path / "model.ckpt-3")
  checkpoint_io.write_checkpoint(prefix, values)
  trainer.restore(prefix)
  assert trainer.adam.loss_scale.numpy() == 1.0


@pytest.mark.parametrize("flag", ["inf", "1e39", "nan", "-inf"])
def test_a_loss_scale_that_is_not_finite_is_refused(flag):
  """--loss_scale=inf (or 1e39, infinite as the float32 scale) used to be
  accepted: every step overflowed, none was applied, the run exited 0 and
  saved an infinite scale."""
  FL = fx.tiny_flags(use_fp16=True, loss_scale=flag)
  with pytest.raises(ValueError) as caught:
    config_flags.train_config(FL)
  want = ("must be >= 1: a smaller scale cannot keep float16 gradients "
          "from overflowing" if flag in ("nan", "-inf") else
          "must be finite, at most 3.40282e+38 (float32's largest; the "
          "default is 2**15 = 32768): an infinite scale makes every step's "
          "gradients overflow, so that no update is ever applied")
  assert str(caught.value) == f"--loss_scale={float(flag)} {want}"
  assert config_flags.train_config(fx.tiny_flags(
      use_fp16=True, loss_scale=3.4e38)).loss_scale == 3.4e38


def test_an_infinite_saved_loss_scale_resumes_with_the_first_scale(
    tmp_path):
  """A checkpoint an older version saved with --loss_scale=inf resumes with
  the run's --loss_scale, with a warning (it would apply no update)."""
  trainer = _boom_trainer(tmp_path, loss_scale=8.0)
  trainer.build(_boom_dataset([0]).element_spec)
  values = dict(trainer.state.values(), loss_scale=np.float32(np.inf))
  prefix = str(tmp_path / "model.ckpt-3")
  checkpoint_io.write_checkpoint(prefix, values)
  trainer.restore(prefix)
  assert trainer.adam.loss_scale.numpy() == 8.0
  trainer.train(trainer.distribute(lambda ctx: _boom_dataset([0])), 4)
  assert trainer.adam.loss_scale.numpy() == 8.0  # applied, no overflow
  assert _saved_state(tmp_path)["loss_scale"] == 8.0
