"""Cost of one optimizer update (`get_train_op`) on XLNet-shaped variables.

Creates the variables of an XLNet backbone of XLNet-Base width (d_model 768,
12 heads of 64, d_inner 3072, 32000 tokens) with `--n_layer` layers, feeds
fixed random gradients through `grads_and_vars` (so no model is run) and
times the update: global-norm clipping, the learning-rate schedule and Adam
(`--weight_decay=0`) or AdamW. Prints wall and process CPU milliseconds per
step (CPU time is the steadier figure on a shared machine).

Usage (from the repository root):
  .venvs/reference/bin/python bench/optimizer_step.py --n_layer 6 \
      --weight_decay 0.01 --steps 10
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from xlnet.training import config  # noqa: E402
from xlnet.training import tpu_estimator  # noqa: E402

flags.DEFINE_integer("n_layer", 6, "Transformer layers.")
flags.DEFINE_float("weight_decay", 0.01, "0 = Adam, > 0 = AdamW.")
flags.DEFINE_float("lr_layer_decay_rate", 1.0, "Layer-wise decay rate.")
flags.DEFINE_integer("steps", 10, "Timed steps (after one warm-up step).")
FLAGS = flags.FLAGS

D_MODEL, N_HEAD, D_HEAD, D_INNER, N_TOKEN = 768, 12, 64, 3072, 32000


def variable_shapes(n_layer):
  """{name: shape} of the backbone's variables (docs/model.md)."""
  t = "model/transformer/"
  shapes = {t + "word_embedding/lookup_table": [N_TOKEN, D_MODEL],
            t + "mask_emb/mask_emb": [1, 1, D_MODEL],
            t + "seg_embed": [n_layer, 2, N_HEAD, D_HEAD],
            "model/lm_loss/bias": [N_TOKEN]}
  for bias in ("r_w_bias", "r_r_bias", "r_s_bias"):
    shapes[t + bias] = [n_layer, N_HEAD, D_HEAD]
  for l in range(n_layer):
    p = f"{t}layer_{l}/"
    for k in "qkvro":
      shapes[f"{p}rel_attn/{k}/kernel"] = [D_MODEL, N_HEAD, D_HEAD]
    shapes[p + "ff/layer_1/kernel"] = [D_MODEL, D_INNER]
    shapes[p + "ff/layer_1/bias"] = [D_INNER]
    shapes[p + "ff/layer_2/kernel"] = [D_INNER, D_MODEL]
    shapes[p + "ff/layer_2/bias"] = [D_MODEL]
    for scope in ("rel_attn", "ff"):
      shapes[f"{p}{scope}/LayerNorm/gamma"] = [D_MODEL]
      shapes[f"{p}{scope}/LayerNorm/beta"] = [D_MODEL]
  return shapes


def main(_):
  """Builds the update and prints its time per step."""
  tf.compat.v1.disable_eager_execution()
  shapes = variable_shapes(FLAGS.n_layer)
  optimizer = config.OptimizerConfig(
      learning_rate=1e-4, warmup_steps=0, train_steps=1000,
      decay_method="poly", min_lr_ratio=0.0, weight_decay=FLAGS.weight_decay,
      adam_epsilon=1e-6, clip=1.0,
      lr_layer_decay_rate=FLAGS.lr_layer_decay_rate, n_layer=FLAGS.n_layer)
  init = tf.compat.v1.random_normal_initializer(stddev=0.02)
  params = [tf.compat.v1.get_variable(n, s, initializer=init)
            for n, s in shapes.items()]
  grads = [tf.compat.v1.get_variable(n + "_grad", s, initializer=init,
                                     trainable=False).read_value()
           for n, s in shapes.items()]
  train_op, _, _ = tpu_estimator.get_train_op(
      optimizer, None, grads_and_vars=list(zip(grads, params)))
  n_params = sum(int(np.prod(s)) for s in shapes.values())
  with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    sess.run(train_op)
    wall, cpu = time.time(), time.process_time()
    for _ in range(FLAGS.steps):
      sess.run(train_op)
    wall = (time.time() - wall) / FLAGS.steps * 1e3
    cpu = (time.process_time() - cpu) / FLAGS.steps * 1e3
  print(f"{len(shapes)} variables, {n_params / 1e6:.1f}M parameters, "
        f"{'AdamW' if FLAGS.weight_decay else 'Adam'}: {wall:.1f} ms/step "
        f"wall, {cpu:.1f} ms/step CPU")


if __name__ == "__main__":
  app.run(main)
