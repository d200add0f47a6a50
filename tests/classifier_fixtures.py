"""Test helpers for fine-tuning: a tiny XLNet config and checkpoints written
by variable name, as a released pretrained checkpoint holds them."""
import json
import os
import shutil

import numpy as np
import tensorflow as tf

from tests import data_helpers
from tests import np_reference
from tests import shared_artifacts
from xlnet import model as model_lib
from xlnet.finetuning import config as finetune_config

TINY_CONFIG = dict(n_layer=2, d_model=8, n_head=2, d_head=4, d_inner=16,
                   ff_activation="gelu", untie_r=True, n_token=32)
# The stand-in model the programs' tests start (reproduce.py's tables,
# multi-worker runs): one layer, as every program builds and traces its
# model; its vocabulary covers the tests' 1000-piece SentencePiece model.
PROGRAM_CONFIG = dict(TINY_CONFIG, n_layer=1, n_token=1000)


def write_config(directory, config=None):
  """Writes an XLNetConfig json into `directory`; returns its path."""
  os.makedirs(directory, exist_ok=True)
  path = os.path.join(directory, "xlnet_config.json")
  with open(path, "w") as f:
    json.dump(config or TINY_CONFIG, f)
  return path


def pretrained_shapes(cfg=None):
  """{name: shape} of a pretrained checkpoint (untie_r), by the released
  variable names: the backbone, `mask_emb` and the LM bias."""
  return np_reference.variable_shapes(cfg or TINY_CONFIG)


def head_shapes(head_scope, n_out, cfg=None):
  """{name: shape} of the pooler projection and a task head."""
  m = (cfg or TINY_CONFIG)["d_model"]
  return {"model/sequnece_summary/summary/kernel": [m, m],
          "model/sequnece_summary/summary/bias": [m],
          f"model/{head_scope}/logit/kernel": [m, n_out],
          f"model/{head_scope}/logit/bias": [n_out]}


def random_values(shapes, seed=0, scale=0.4):
  """Random float32 values for every name (LayerNorm and biases too, so no
  term of the model is trivially 0 or 1)."""
  rng = np.random.default_rng(seed)
  return {name: rng.normal(0.0, scale, shape).astype(np.float32)
          for name, shape in shapes.items()}


def write_checkpoint(prefix, values):
  """Saves `values` (name -> array) as a TF checkpoint at `prefix`."""
  with tf.Graph().as_default():
    variables = [tf.compat.v1.get_variable(name, initializer=value)
                 for name, value in values.items()]
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      tf.compat.v1.train.Saver(variables).save(sess, prefix,
                                               write_meta_graph=False,
                                               write_state=False)
  return prefix


def head_model(model_config_path, **overrides):
  """The backbone settings the heads read (a ModelConfig of the config at
  `model_config_path`), with dropout rates that tests can check."""
  run = dict(is_training=True, dropout=0.1, dropatt=0.1, clamp_len=-1,
             init="normal", init_std=0.02, init_range=0.1, use_tpu=False,
             use_bfloat16=False)
  head = dict(summary_type="last", use_summ_proj=True)
  for name, value in overrides.items():
    (head if name in head else run)[name] = value
  return finetune_config.ModelConfig(
      xlnet_config=model_lib.XLNetConfig(json_path=model_config_path),
      run=model_lib.RunConfig(**run), **head)


def write_released_model(directory, config):
  """Writes a stand-in for a released model directory into `directory`:
  spiece.model (the tests' 1000-piece SentencePiece model),
  xlnet_config.json (`config`) and xlnet_model.ckpt, a random pretrained
  checkpoint by the released variable names."""
  shutil.copyfile(data_helpers.train_tiny_spm(),
                  os.path.join(directory, "spiece.model"))
  write_config(directory, config)
  write_checkpoint(os.path.join(directory, "xlnet_model.ckpt"),
                   random_values(pretrained_shapes(config)))


def shared_released_model(config):
  """`write_released_model` of `config` (its n_token at least 1000), built
  once per test run and shared read-only (tests/shared_artifacts.py).

  Returns:
    the directory (spiece.model, xlnet_config.json, xlnet_model.ckpt.*).
  """
  return shared_artifacts.build_once("released-model", write_released_model,
                                     config=dict(config))
