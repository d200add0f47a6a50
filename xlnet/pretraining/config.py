"""Typed settings of pretraining: the records and how they are read
(`PretrainData`), the held-out evaluation (`HeldOut`), and the bundle of
every config one run takes (`PretrainConfigs`).

`xlnet/flags/pretraining.py` builds them from the programs' flags; from
Python, build them directly (docs/python_api.md). Fields keep the names of
the flags they come from.
"""
import dataclasses
from typing import Optional

from xlnet import model as model_lib
from xlnet import validation
from xlnet.data import input_pipeline
from xlnet.data import pretrain_examples
from xlnet.data import record_format
from xlnet.pretraining import inputs
from xlnet.training import config as train_config_lib

# PretrainData's fields that are the corpus_info.json settings of the same
# name (the records were written with them).
CORPUS_FIELDS = ("seq_len", "reuse_len", "uncased", "bi_data", "mask_alpha",
                 "mask_beta", "num_predict")


@dataclasses.dataclass(frozen=True)
class PretrainData:
  """The pretraining records (written by data_utils.py) and how they are
  turned into examples; the sizes must be those the records were written
  with (their corpus_info.json).

  Attributes:
    record_info_dir: comma-separated directories of the record files.
    seq_len: tokens per example.
    reuse_len: tokens of an example reused as the next one's memory.
    perm_size: length of the factorization-order blocks (None: reuse_len).
    bi_data: forward and backward rows.
    mask_alpha, mask_beta: span masking (tokens per span, spans per group).
    num_predict: predicted tokens per example.
    uncased: the records were lower-cased.
    num_passes: passes over the data the records hold (None: all files).
    sample_strategy: token records only: span masks start at word starts
      ("word_span") or at any piece ("token_span").
    corpus_info: the corpus_info.json dict the sizes were checked against,
      or None (the one next to the records).
  """
  record_info_dir: str
  seq_len: int
  reuse_len: int
  perm_size: Optional[int]
  bi_data: bool
  mask_alpha: int
  mask_beta: int
  num_predict: int
  uncased: bool = False
  num_passes: Optional[int] = None
  corpus_info: Optional[dict] = None
  sample_strategy: str = validation.first_choice("sample_strategy")

  def __post_init__(self):
    """The rules the programs' flags follow: `sample_strategy` one of its
    choices, `perm_size` tiling both parts of a row, span masks that fit
    an example (`mask_alpha` >= `mask_beta` > 0, `num_predict` targets
    shared by its two parts: what data_utils.py checks when it writes
    example records, and the input function when it draws from token
    records)."""
    validation.check_fields(self)
    name = input_pipeline.namer(inputs.FLAG_NAMES)
    input_pipeline.check_perm_size(
        self.reuse_len if self.perm_size is None else self.perm_size,
        self.seq_len, self.reuse_len, name)
    pretrain_examples.check_sampling(self.mask_alpha, self.mask_beta,
                                     self.num_predict, self.seq_len,
                                     self.reuse_len, name)

  @classmethod
  def from_corpus_info(cls, path_or_dict, record_info_dir, perm_size=None,
                       num_passes=None,
                       sample_strategy=validation.first_choice(
                           "sample_strategy")):
    """The records of `record_info_dir` with the sizes they were written
    with.

    Args:
      path_or_dict: their corpus_info.json (the file, the save_dir holding
        it, or the tfrecords directory below that), or its dict.
      record_info_dir: comma-separated directories of the record files.
      perm_size: factorization-order block length (None: reuse_len).
      num_passes: passes over the data (None: all files).
      sample_strategy: see the attribute.

    Raises:
      ValueError: naming the path when no corpus_info.json is there, or
        the settings the corpus info lacks.
    """
    info = path_or_dict
    if not isinstance(info, dict):
      info = record_format.load_corpus_info(path_or_dict)
      if info is None:
        raise ValueError(f"{path_or_dict}: no corpus_info.json there (the "
                         "one data_utils.py writes beside tfrecords/)")
    missing = [name for name in CORPUS_FIELDS if name not in info]
    if missing:
      raise ValueError(f"the corpus info lacks {', '.join(missing)} (the "
                       "corpus_info.json data_utils.py writes)")
    return cls(record_info_dir=record_info_dir, perm_size=perm_size,
               num_passes=num_passes, corpus_info=info,
               sample_strategy=sample_strategy,
               **{name: info[name] for name in CORPUS_FIELDS})


@dataclasses.dataclass(frozen=True)
class HeldOut:
  """Held-out evaluation: read in order on one device, memories carried.

  Attributes:
    eval_steps: during training, evaluate every eval_steps steps and at
      the end (0: never).
    eval_split: the held-out records' split name.
    eval_record_info_dir: their directory (None: the training records').
    eval_batches: host batches evaluated (None: one pass).
    eval_ckpt: the checkpoint `evaluate` reads (a prefix or a directory).
  """
  eval_steps: int = 0
  eval_split: str = "valid"
  eval_record_info_dir: Optional[str] = None
  eval_batches: Optional[int] = None
  eval_ckpt: Optional[str] = None

  def __post_init__(self):
    validation.check_fields(self)


@dataclasses.dataclass(frozen=True)
class PretrainConfigs:
  """Everything one pretraining run (or evaluation) takes.

  Attributes:
    model: the `XLNetConfig` (sizes; saved as model_dir/config.json).
    run: the `RunConfig` in training mode (`for_training(False)` for
      evaluation). Its `reuse_len` and `bi_data` describe the data's rows:
      left unset (None and False) they are taken from `data`; given, they
      must be the data's.
    data: the `PretrainData`.
    batch: the `BatchLayout` (global/host/per-core batch, accumulation;
      the memories' length is `run.mem_len`).
    optimizer: the `OptimizerConfig`.
    checkpoint: the `CheckpointConfig` (None: evaluation of `eval_ckpt`
      without a model_dir).
    train: the `TrainConfig` (logging, seed, XLA, float16).
    device: the `DeviceConfig`; `tpu_engine` "estimator" runs TPUEstimator
      (TensorFlow 2.15), anything else the engine (a TPUStrategy with
      `use_tpu`).
    held_out: the `HeldOut` evaluation.
  """
  model: model_lib.XLNetConfig
  run: model_lib.RunConfig
  data: PretrainData
  batch: train_config_lib.BatchLayout
  optimizer: train_config_lib.OptimizerConfig
  checkpoint: Optional[train_config_lib.CheckpointConfig]
  train: train_config_lib.TrainConfig = train_config_lib.TrainConfig()
  device: train_config_lib.DeviceConfig = train_config_lib.DeviceConfig()
  held_out: HeldOut = HeldOut()

  def __post_init__(self):
    """The model's RunConfig must describe the rows the data give it (its
    unset reuse_len and bi_data are the data's), and the devices and
    precision of the DeviceConfig and TrainConfig (the programs set each
    pair from one flag)."""
    if self.run.reuse_len is None and not self.run.bi_data:
      # Frozen: set once, here, before anything reads it.
      object.__setattr__(self, "run", dataclasses.replace(
          self.run, reuse_len=self.data.reuse_len,
          bi_data=self.data.bi_data))
    for name, run_value, owner, value in (
        ("reuse_len", self.run.reuse_len, "PretrainData", self.data.reuse_len),
        ("bi_data", self.run.bi_data, "PretrainData", self.data.bi_data),
        ("use_tpu", self.run.use_tpu, "DeviceConfig", self.device.use_tpu),
        ("use_fp16", self.run.use_fp16, "TrainConfig", self.train.use_fp16)):
      if run_value != value:
        raise ValueError(f"RunConfig.{name}={run_value} differs from "
                         f"{owner}.{name}={value}; give both the same value")
    # The data's batch and vocabulary, where the corpus info gives them.
    info = self.data.corpus_info or {}
    where = f"the corpus info of {self.data.record_info_dir}"
    if "bsz_per_host" in info:
      check_batch(self.batch.train_batch_size, self.batch.num_hosts, info,
                  where)
    if "vocab_size" in info:
      check_vocabulary(self.model.n_token, info, where,
                       source="XLNetConfig.n_token")


def check_batch(train_batch_size, num_hosts, corpus_info, where):
  """Raises unless the global batch is the data's: the records hold
  `bsz_per_host` rows per host batch (data_utils.py --bsz_per_host), so
  `num_hosts` hosts train on `bsz_per_host * num_hosts`.

  Args:
    train_batch_size, num_hosts: ints, the run's.
    corpus_info: dict, the records' corpus_info.json.
    where: str, what the message calls the corpus info (its path).
  """
  data_bsz = corpus_info["bsz_per_host"] * num_hosts
  if train_batch_size != data_bsz:
    raise ValueError(
        f"--train_batch_size={train_batch_size} does not match the data: "
        f"{where} has bsz_per_host={corpus_info['bsz_per_host']}, so with "
        f"--num_hosts={num_hosts} it must be {data_bsz}")


def check_vocabulary(n_token, corpus_info, where,
                     source="--n_token or --model_config_path"):
  """Raises if the model's vocabulary `n_token` (int; 0 means the data's)
  is smaller than the data's `vocab_size`: the records hold ids the
  embedding has no row for. `source` names where n_token came from."""
  vocab_size = corpus_info["vocab_size"]
  if n_token and n_token < vocab_size:
    raise ValueError(
        f"n_token={n_token} ({source}) is smaller than the data's "
        f"vocabulary: {where} has vocab_size={vocab_size}")
