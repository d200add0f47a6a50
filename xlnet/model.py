"""XLNet model API: configurations and the `XLNetModel` wrapper.

`XLNetConfig` holds the per-checkpoint sizes (stored as JSON with exactly the
keys in `XLNetConfig.keys`), `RunConfig` the per-run settings, and
`XLNetModel` builds the backbone under variable scope `model` so that the
released checkpoints load by name.
"""
import dataclasses
import json
import os
from typing import Optional
import uuid

from xlnet import program_defaults
from xlnet import validation

# TensorFlow (and `modeling`) are imported by the functions that use them:
# every program's flags read the configs here, and `--help` or a dry run
# needs no TensorFlow.


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

  def __init__(self, FLAGS=None, json_path=None, **values):  # pylint: disable=invalid-name
    """Reads the config from flags or a JSON file, or takes the values given.

    Args:
      FLAGS: the release's way: an object holding `keys` as attributes
        (absl's FLAGS of a program that defines the model's sizes), or
        None.
      json_path: path of a JSON config (local or a `tf.io.gfile` URL), or
        None.
      **values: exactly `keys`.

    Raises:
      ValueError: unless exactly one of the three is given, or if a key is
        missing or unknown, or a value is invalid.
    """
    given = [FLAGS is not None, json_path is not None, bool(values)]
    if sum(given) != 1:
      raise ValueError("XLNetConfig takes FLAGS, json_path or the values of "
                       f"{self.keys} (one of the three)")
    if json_path is not None:
      self.init_from_json(json_path)
    elif FLAGS is not None:
      self._init_from_values({k: getattr(FLAGS, k) for k in self.keys
                              if hasattr(FLAGS, k)}, "FLAGS")
    else:
      self._init_from_values(values, "the values given")

  @classmethod
  def from_dict(cls, values, source="the values given"):
    """The config of a dict holding exactly `keys` (as `to_dict` returns);
    `source` says where the values came from in error messages."""
    config = cls.__new__(cls)
    config._init_from_values(values, source)  # pylint: disable=protected-access
    return config

  def _init_from_values(self, values, source):
    """Checks and sets `values` (exactly `keys`)."""
    self._check_keys(values, source)
    self._set(values, source)

  def _check_keys(self, values, source):
    """Raises ValueError unless `values` holds exactly `keys`."""
    missing = [k for k in self.keys if k not in values]
    if missing:
      raise ValueError(f"XLNetConfig: {source} lacks key(s) {missing}; "
                       f"expected exactly {self.keys}")
    unknown = sorted(set(values) - set(self.keys))
    if unknown:
      raise ValueError(f"XLNetConfig: {source} has unknown key(s) "
                       f"{unknown}; expected exactly {self.keys}")

  def init_from_json(self, json_path):
    """Sets every key from a JSON file holding exactly `keys`."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    try:
      with tf.io.gfile.GFile(json_path) as f:
        values = json.load(f)
    except tf.errors.NotFoundError as e:
      raise ValueError(f"XLNetConfig: config file {json_path} not found") from e
    except json.JSONDecodeError as e:
      raise ValueError(f"XLNetConfig: {json_path} is not valid JSON: {e}") from e
    if not isinstance(values, dict):
      raise ValueError(f"XLNetConfig: {json_path} must hold a JSON object")
    self._check_keys(values, json_path)
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
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
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


# RunConfig's defaults: the programs' flags' (`program_defaults.py`).
_DEFAULTS = program_defaults.of(program_defaults.LIBRARY)


@dataclasses.dataclass(frozen=True)
class RunConfig:
  """Settings of one run (training, evaluation or fine-tuning).

  `init` is "normal" (stddev init_std) or "uniform" (+-init_range);
  `mem_len`/`reuse_len` None mean no memory / cache all. `use_bfloat16` and
  `use_fp16` (exclusive) compute the activations and matrix products in
  bfloat16 / float16 while the variables, the attention softmax, the
  LayerNorm statistics and the loss stay float32 (float16 needs loss scaling
  in the trainer, and a GPU). The fields are checked when built
  (`xlnet/validation.py`: dropout rates in [0, 1), `init`, `mem_len`, the
  precision).
  """
  is_training: bool
  use_tpu: bool
  use_bfloat16: bool
  dropout: float
  dropatt: float
  init: str = _DEFAULTS["init"]
  init_range: float = _DEFAULTS["init_range"]
  init_std: float = _DEFAULTS["init_std"]
  mem_len: Optional[int] = None
  reuse_len: Optional[int] = None
  bi_data: bool = False
  clamp_len: int = _DEFAULTS["clamp_len"]
  same_length: bool = False
  use_fp16: bool = False

  def __post_init__(self):
    validation.check_fields(self)
    validation.check_precision(self.use_tpu, self.use_bfloat16, self.use_fp16)

  def for_training(self, is_training):
    """The same run's config in training (dropout on) or evaluation mode."""
    return dataclasses.replace(self, is_training=is_training)


def _get_initializer(run_config):
  """The run's initializer: normal(init_std) or uniform(+-init_range)
  (`RunConfig` allows no other `init`)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if run_config.init == "uniform":
    return tf.compat.v1.initializers.random_uniform(
        minval=-run_config.init_range, maxval=run_config.init_range)
  return tf.compat.v1.initializers.random_normal(stddev=run_config.init_std)


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
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from xlnet import modeling  # pylint: disable=g-import-not-at-top
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
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from xlnet import modeling  # pylint: disable=g-import-not-at-top
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

  def get_lm_logits(self):
    """float32 `[len, bsz, n_token]` logits of the tied LM softmax over the
    sequence output (variables `model/lm_loss/bias`, weights tied to the
    embedding), for prediction without targets."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from xlnet import modeling  # pylint: disable=g-import-not-at-top
    with tf.compat.v1.variable_scope("model",
                                     reuse=tf.compat.v1.AUTO_REUSE):
      # lm_loss owns the softmax variables; its loss against a dummy target
      # is unused.
      _, logits = modeling.lm_loss(
          self.output, tf.zeros(tf.shape(self.output)[:2], tf.int32),
          self.xlnet_config.n_token, self.xlnet_config.d_model,
          self.initializer, lookup_table=self.lookup_table, tie_weight=True,
          return_logits=True)
    return logits

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
