"""XLNet model API: configurations and the `XLNetModel` wrapper.

`XLNetConfig` holds the per-checkpoint sizes (stored as JSON with exactly the
keys in `XLNetConfig.keys`), `RunConfig` the per-run settings, and
`XLNetModel` builds the backbone under variable scope `model` so that the
released checkpoints load by name.
"""
import json
import os
import uuid

import tensorflow as tf

from xlnet import modeling


class XLNetConfig:
  """Model sizes of one XLNet checkpoint.

  Attributes:
    n_layer: int, number of layers.
    d_model: int, hidden width.
    n_head: int, attention heads.
    d_head: int, width of one head.
    d_inner: int, feed-forward width.
    ff_activation: "relu" or "gelu".
    untie_r: bool, per-layer relative-attention biases.
    n_token: int, vocabulary size.
  """

  keys = ["n_layer", "d_model", "n_head", "d_head", "d_inner",
          "ff_activation", "untie_r", "n_token"]
  _int_keys = ("n_layer", "d_model", "n_head", "d_head", "d_inner", "n_token")

  def __init__(self, FLAGS=None, json_path=None):  # pylint: disable=invalid-name
    """Reads the config from FLAGS and/or a JSON file (the file wins).

    Args:
      FLAGS: object with one attribute per key (e.g. absl flags), or None.
      json_path: path of a JSON config, or None.

    Raises:
      ValueError: if both are None, a key is missing or unknown, or a value
        is invalid.
    """
    if FLAGS is None and json_path is None:
      raise ValueError("XLNetConfig needs FLAGS or json_path")
    if FLAGS is not None:
      self.init_from_flags(FLAGS)
    if json_path is not None:
      self.init_from_json(json_path)

  def init_from_flags(self, FLAGS):  # pylint: disable=invalid-name
    """Sets every key from the attribute of FLAGS with the same name."""
    values = {}
    for key in self.keys:
      if not hasattr(FLAGS, key):
        raise ValueError(f"XLNetConfig: flag --{key} is not defined")
      values[key] = getattr(FLAGS, key)
    self._set(values, "flags")

  def init_from_json(self, json_path):
    """Sets every key from a JSON file holding exactly `keys`."""
    try:
      with tf.io.gfile.GFile(json_path) as f:
        values = json.load(f)
    except tf.errors.NotFoundError as e:
      raise ValueError(f"XLNetConfig: config file {json_path} not found") from e
    except json.JSONDecodeError as e:
      raise ValueError(f"XLNetConfig: {json_path} is not valid JSON: {e}") from e
    if not isinstance(values, dict):
      raise ValueError(f"XLNetConfig: {json_path} must hold a JSON object")
    missing = [k for k in self.keys if k not in values]
    if missing:
      raise ValueError(f"XLNetConfig: {json_path} lacks key(s) {missing}; "
                       f"expected exactly {self.keys}")
    unknown = sorted(set(values) - set(self.keys))
    if unknown:
      raise ValueError(f"XLNetConfig: {json_path} has unknown key(s) "
                       f"{unknown}; expected exactly {self.keys}")
    self._set(values, json_path)

  def _set(self, values, source):
    """Validates `values` (from `source`, for messages) and stores them."""
    for key in self._int_keys:
      value = values[key]
      if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"XLNetConfig: {key} must be a positive int, got "
                         f"{value!r} (from {source})")
    if values["ff_activation"] not in ("relu", "gelu"):
      raise ValueError("XLNetConfig: ff_activation must be 'relu' or 'gelu', "
                       f"got {values['ff_activation']!r} (from {source})")
    if not isinstance(values["untie_r"], bool):
      raise ValueError("XLNetConfig: untie_r must be true or false, got "
                       f"{values['untie_r']!r} (from {source})")
    for key in self.keys:
      setattr(self, key, values[key])

  def to_dict(self):
    """Returns the config as a dict with exactly `keys`."""
    return {key: getattr(self, key) for key in self.keys}

  def to_json(self, json_path):
    """Writes the config as JSON (atomically: temp file, then rename).

    `json_path` may be local or any `tf.io.gfile` URL (e.g. gs://...).
    """
    json_dir = os.path.dirname(json_path)
    if json_dir:
      tf.io.gfile.makedirs(json_dir)
    tmp_path = f"{json_path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
      with tf.io.gfile.GFile(tmp_path, "w") as f:
        f.write(json.dumps(self.to_dict(), indent=4, sort_keys=False) + "\n")
      tf.io.gfile.rename(tmp_path, json_path, overwrite=True)
    except BaseException:
      if tf.io.gfile.exists(tmp_path):
        tf.io.gfile.remove(tmp_path)
      raise


class RunConfig:
  """Settings of one run (training, evaluation or fine-tuning).

  `init` is "normal" (stddev init_std) or "uniform" (+-init_range);
  `mem_len`/`reuse_len` None mean no memory / cache all. `use_bfloat16` and
  `use_fp16` (exclusive) compute the activations and matrix products in
  bfloat16 / float16 while the variables, the attention softmax, the
  LayerNorm statistics and the loss stay float32 (float16 needs loss scaling
  in the trainer).
  """

  def __init__(self, is_training, use_tpu, use_bfloat16, dropout, dropatt,
               init="normal", init_range=0.1, init_std=0.02, mem_len=None,
               reuse_len=None, bi_data=False, clamp_len=-1,
               same_length=False, use_fp16=False):
    if use_bfloat16 and use_fp16:
      raise ValueError("RunConfig: use_bfloat16 and use_fp16 exclude each "
                       "other; got both")
    self.init = init
    self.init_range = init_range
    self.init_std = init_std
    self.is_training = is_training
    self.dropout = dropout
    self.dropatt = dropatt
    self.use_tpu = use_tpu
    self.use_bfloat16 = use_bfloat16
    self.use_fp16 = use_fp16
    self.mem_len = mem_len
    self.reuse_len = reuse_len
    self.bi_data = bi_data
    self.clamp_len = clamp_len
    self.same_length = same_length


def _get_initializer(run_config):
  """The run's initializer: normal(init_std) or uniform(+-init_range)."""
  if run_config.init == "uniform":
    return tf.compat.v1.initializers.random_uniform(
        minval=-run_config.init_range, maxval=run_config.init_range)
  if run_config.init == "normal":
    return tf.compat.v1.initializers.random_normal(
        stddev=run_config.init_std)
  raise ValueError(f"init must be 'normal' or 'uniform', "
                   f"got {run_config.init!r}")


class XLNetModel:
  """XLNet backbone (always attn_type "bi") under variable scope `model`.

  All inputs are time-major:
    input_ids: int32 `[len, bsz]`.
    seg_ids: int32 `[len, bsz]` or None.
    input_mask: float32 `[len, bsz]`, 1 = padding, or None.
    mems: list of n_layer float `[mlen, bsz, d_model]` or None.
    perm_mask: float32 `[len, len, bsz]` (1 = i may not see j) or None.
    target_mapping: float32 `[num_predict, len, bsz]` or None.
    inp_q: float32 `[len, bsz]`, 1 = query-stream position, or None.
  """

  def __init__(self, xlnet_config, run_config, input_ids, seg_ids, input_mask,
               mems=None, perm_mask=None, target_mapping=None, inp_q=None,
               **kwargs):
    initializer = _get_initializer(run_config)
    with tf.compat.v1.variable_scope("model",
                                     reuse=tf.compat.v1.AUTO_REUSE):
      self.output, self.new_mems, self.lookup_table = modeling.transformer_xl(
          inp_k=input_ids, seg_id=seg_ids, input_mask=input_mask, mems=mems,
          perm_mask=perm_mask, target_mapping=target_mapping, inp_q=inp_q,
          n_token=xlnet_config.n_token, n_layer=xlnet_config.n_layer,
          d_model=xlnet_config.d_model, n_head=xlnet_config.n_head,
          d_head=xlnet_config.d_head, d_inner=xlnet_config.d_inner,
          ff_activation=xlnet_config.ff_activation,
          untie_r=xlnet_config.untie_r, attn_type="bi",
          initializer=initializer, is_training=run_config.is_training,
          use_bfloat16=run_config.use_bfloat16,
          use_fp16=run_config.use_fp16,
          use_tpu=run_config.use_tpu,
          dropout=run_config.dropout, dropatt=run_config.dropatt,
          mem_len=run_config.mem_len, reuse_len=run_config.reuse_len,
          bi_data=run_config.bi_data, clamp_len=run_config.clamp_len,
          same_length=run_config.same_length, **kwargs)
    self.xlnet_config = xlnet_config
    self.run_config = run_config
    self.initializer = initializer
    self.input_mask = input_mask

  def get_pooled_out(self, summary_type, use_summ_proj=True):
    """Sequence summary `[bsz, d_model]` (scope `model/sequnece_summary`).

    Args:
      summary_type: "last", "first", "mean" or "attn".
      use_summ_proj: add the dense tanh projection `summary`.
    """
    xlnet_config = self.xlnet_config
    run_config = self.run_config
    with tf.compat.v1.variable_scope("model",
                                     reuse=tf.compat.v1.AUTO_REUSE):
      return modeling.summarize_sequence(
          summary_type=summary_type, hidden=self.output,
          d_model=xlnet_config.d_model, n_head=xlnet_config.n_head,
          d_head=xlnet_config.d_head, dropout=run_config.dropout,
          dropatt=run_config.dropatt, input_mask=self.input_mask,
          is_training=run_config.is_training, initializer=self.initializer,
          use_proj=use_summ_proj)

  def get_sequence_output(self):
    """float32 `[len, bsz, d_model]` (query stream if inp_q was given)."""
    return self.output

  def get_new_memory(self):
    """List of n_layer float32 `[mem_len, bsz, d_model]`, or None when the
    run config has no mem_len."""
    return self.new_mems

  def get_embedding_table(self):
    """The float32 `[n_token, d_model]` word-embedding variable."""
    return self.lookup_table

  def get_initializer(self):
    """The initializer used for kernels and embeddings."""
    return self.initializer
