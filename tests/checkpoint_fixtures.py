"""Checkpoints written with tf.compat.v1.train.Saver, for the tests of the
checkpoint tools and of warm start."""
import os

import numpy as np
import tensorflow as tf

MODEL_VARS = {"model/transformer/layer_0/ff/layer_1/kernel": (2, 3),
              "model/lm_loss/bias": (4,)}
OPTIMIZER_VARS = ["model/lm_loss/bias/adam_m", "model/lm_loss/bias/adam_v",
                  "model/lm_loss/bias/Adam", "model/lm_loss/bias/Adam_1",
                  "beta1_power", "beta2_power"]


def save_checkpoints(model_dir, values_per_step, with_optimizer=True):
  """Saves one checkpoint per dict of model values; returns the prefixes."""
  prefixes = []
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    variables = {n: tf.compat.v1.get_variable(n, shape=s)
                 for n, s in MODEL_VARS.items()}
    if with_optimizer:
      for n in OPTIMIZER_VARS:
        tf.compat.v1.get_variable(n, shape=[4] if "/" in n else [])
      tf.compat.v1.train.get_or_create_global_step()
    saver = tf.compat.v1.train.Saver(max_to_keep=10)
    sess.run(tf.compat.v1.global_variables_initializer())
    for step, values in enumerate(values_per_step):
      for n, v in variables.items():
        v.load(values[n], sess)
      prefixes.append(saver.save(sess, os.path.join(model_dir, "model.ckpt"),
                                 global_step=step + 1))
  return prefixes


def random_values(seed):
  """Random float32 values of MODEL_VARS."""
  rng = np.random.RandomState(seed)
  return {n: rng.randn(*s).astype(np.float32) for n, s in MODEL_VARS.items()}


def read_checkpoint(prefix):
  """{name: array} of every tensor of a checkpoint."""
  reader = tf.train.load_checkpoint(prefix)
  return {n: reader.get_tensor(n) for n, _ in tf.train.list_variables(prefix)}


def truncate_data(prefix):
  """Cuts the checkpoint's data file to 10 bytes; returns its file name."""
  data = tf.io.gfile.glob(prefix + ".data-*")[0]
  with open(data, "rb") as f:
    raw = f.read()
  with open(data, "wb") as f:
    f.write(raw[:10])
  return os.path.basename(data)


def random_checkpoint(path, shapes, seed=0, scale=0.4):
  """Writes a checkpoint of random values under exactly the given names.

  Args:
    path: checkpoint prefix.
    shapes: dict variable name -> shape.

  Returns:
    dict name -> float64 value (what the checkpoint holds, as float32).
  """
  rng = np.random.default_rng(seed)
  values = {name: rng.normal(0.0, scale, shape).astype(np.float32)
            for name, shape in shapes.items()}
  with tf.Graph().as_default():
    plain = [tf.compat.v1.get_variable(name, initializer=value)
             for name, value in values.items()]
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      tf.compat.v1.train.Saver(plain).save(sess, path)
  return {name: value.astype(np.float64) for name, value in values.items()}
