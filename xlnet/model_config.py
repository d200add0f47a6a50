"""The model's configs: `XLNetConfig` (the sizes of one checkpoint, stored
as JSON with exactly the keys in `XLNetConfig.keys`) and `RunConfig` (the
settings of one run).

No TensorFlow: every program's flags build these configs, and `--help`, a
flag error or a dry run need none. A config file is read and written with
Python's own calls, a URL (gs://...) through `io_utils`, which imports
TensorFlow for it. The model that takes them is `xlnet/model.py`
(`XLNetModel`).
"""
import dataclasses
import json
from typing import Optional

from xlnet import errors
from xlnet import io_utils
from xlnet import program_defaults
from xlnet import validation


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
    try:
      values = json.loads(io_utils.read_file(json_path))
    except (FileNotFoundError, *errors.tf_errors("NotFoundError")) as e:
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
    io_utils.atomic_write(
        json_path, json.dumps(self.to_dict(), indent=4, sort_keys=False)
        + "\n")


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
  in the trainer, and a GPU). `recompute` keeps only each layer's input
  for the backward pass of training, which computes the layer again (the
  same gradients, less memory, about a third more time: docs/training.md).
  The fields are checked when built (`xlnet/validation.py`: dropout rates
  in [0, 1), `init`, `mem_len`, the precision, `recompute` a bool).
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
  recompute: bool = False

  def __post_init__(self):
    validation.check_fields(self)
    validation.check_precision(self.use_tpu, self.use_bfloat16, self.use_fp16)

  def for_training(self, is_training):
    """The same run's config in training (dropout on) or evaluation mode."""
    return dataclasses.replace(self, is_training=is_training)
