"""Typed settings of a fine-tuning run, resolved once by a program
(`xlnet/flags/finetuning.py`) or built in Python, and passed down.

  ModelConfig     the pretrained backbone and its run settings (dropout,
                  initializer, precision) plus the sequence summary
  EngineConfig    how training and inference run: model_dir and warm start,
                  the optimizer, the batch layout, the loop, the devices

Every field keeps the name of the flag it comes from, and every config
checks its fields when built with the programs' rules and messages
(`xlnet/validation.py`; `check_together` checks what a run's model and
engine must agree on). A run has one seed, the engine's
`TrainConfig.seed` (`run_seed`): it also orders the training records and
shuffles the input. Batch sizes here are
resolved: `BatchLayout.train_batch_size` and every `*_batch_size` of a task
config count the examples of one step over all replicas (the flags count
them per GPU unless --use_tpu, as the release).
"""
import dataclasses
from typing import Optional, Tuple

from xlnet import model_config as model_lib
from xlnet import program_defaults
from xlnet import validation
from xlnet.finetuning.classifier import tasks as classifier_tasks
from xlnet.training import config as train_config_lib


# What a fine-tuned model_dir records of its summary head
# (`ModelConfig.head_record()`): kept by a resumed run, compared by
# evaluation and prediction, read by the export (docs/interop.md).
HEAD_FILE = "head.json"
# What a fine-tuned model_dir records of its model (`ModelRecord`, written
# by `finetune.train`, read by `loaded_model.load` and the export): the
# sizes, as a pretraining model_dir holds them; the task's settings; and a
# copy of the SentencePiece model.
MODEL_CONFIG_FILE = "config.json"
# A model's config beside its checkpoint: ours (a pretraining or
# fine-tuning model_dir), then the released models' name.
CONFIG_FILES = (MODEL_CONFIG_FILE, "xlnet_config.json")
TASK_FILE = "task.json"
SPIECE_FILE = "spiece.model"
# The sequence summaries (`modeling.summarize_sequence`).
SUMMARY_TYPES = validation.CHOICES["summary_type"]
# The smallest max_seq_length of a classification task: one piece plus
# `<sep>` and `<cls>`.
MIN_SEQ_LENGTH = 3
# The sequence length of the released checkpoints' pretraining: a longer
# max_seq_length reaches relative distances they never saw.
PRETRAIN_SEQ_LENGTH = 512
# The metrics run_squad.py's --target_eval_key may name
# (`squad/official_eval.evaluate`'s).
SQUAD_TARGET_EVAL_KEYS = ("best_f1", "best_exact", "has_ans_f1",
                          "has_ans_exact", "f1", "exact")
# The splits a task evaluates or predicts (run_classifier.py, run_race.py).
CLASSIFIER_EVAL_SPLITS = ("dev", "test", "train")
RACE_EVAL_SPLITS = ("dev", "test")
# Seconds the non-chief workers of a multi-host run wait, at most, for the
# chief to write the training records (a large task's take well under an
# hour on one core).
RECORDS_TIMEOUT = 7200


# The fine-tuning programs' backbone settings by default (their flags'
# defaults, as the release's): dropout 0.1, normal(0.02) initializer, no
# clamp, float32 on GPUs/CPUs.
DEFAULT_RUN = model_lib.RunConfig(
    is_training=True, use_tpu=False, use_bfloat16=False,
    **{name: program_defaults.of(program_defaults.LIBRARY)[name]
       for name in ("dropout", "dropatt")})


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """The backbone every head is built on, and how it pools a sequence.

  Attributes:
    xlnet_config: the pretrained model's `XLNetConfig`.
    run: the backbone's `RunConfig` (dropout, initializer, clamp_len,
      device and precision; `run_config` sets its `is_training` per use).
      Fine-tuning reads no memory and no permutation: its `mem_len` and
      `reuse_len` are None, `bi_data` and `same_length` False.
    summary_type: "last", "first", "mean" or "attn" (`get_pooled_out`).
    use_summ_proj: the tanh projection of the summary.
  """
  xlnet_config: model_lib.XLNetConfig
  run: model_lib.RunConfig = DEFAULT_RUN
  summary_type: str = "last"
  use_summ_proj: bool = True

  def __post_init__(self):
    validation.check_fields(self)
    pretraining_only = {name: getattr(self.run, name) for name in (
        "mem_len", "reuse_len", "bi_data", "same_length")
                        if getattr(self.run, name)}
    if pretraining_only:
      raise ValueError(
          "ModelConfig.run sets " + ", ".join(
              f"{k}={v}" for k, v in pretraining_only.items()) +
          ": pretraining settings; fine-tuning reads no memory and no "
          "permutation (leave them unset)")

  def head_record(self):
    """How a summary head pools a sequence (dict flag name -> value): what
    a model_dir records in `HEAD_FILE`."""
    return {"summary_type": self.summary_type,
            "use_summ_proj": self.use_summ_proj}

  def run_config(self, is_training):
    """The backbone's `RunConfig` in training (dropout on) or inference
    mode."""
    return self.run.for_training(is_training)


@dataclasses.dataclass(frozen=True)
class ModelRecord:
  """What fine-tuning records in its model_dir, so that the directory alone
  gives a model that predicts (`xlnet/finetuning/classifier/loaded_model.py`).

  Attributes:
    xlnet_config: the model's `XLNetConfig` (-> `MODEL_CONFIG_FILE`).
    task: dict of the task's settings (-> `TASK_FILE`), or None.
    spiece_model_file: the SentencePiece model (copied to `SPIECE_FILE`),
      or None.
  """
  xlnet_config: model_lib.XLNetConfig
  task: Optional[dict] = None
  spiece_model_file: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class EngineConfig:
  """How a fine-tuning run trains and predicts.

  Attributes:
    checkpoint: model_dir (resume, results), init_checkpoint, saving.
    optimizer: the schedule and the Adam step (training only).
    layout: the training batch over all replicas (training only).
    train: the loop (log interval, seed, XLA, float16).
    device: GPUs/CPUs or a TPU.
  """
  checkpoint: train_config_lib.CheckpointConfig
  optimizer: Optional[train_config_lib.OptimizerConfig] = None
  layout: Optional[train_config_lib.BatchLayout] = None
  train: train_config_lib.TrainConfig = train_config_lib.TrainConfig()
  device: train_config_lib.DeviceConfig = train_config_lib.DeviceConfig()

  def __post_init__(self):
    validation.check_precision(self.device.use_tpu, False,
                               self.train.use_fp16)

  @property
  def model_dir(self):
    """Where checkpoints and results live."""
    return self.checkpoint.model_dir

  @property
  def seed(self):
    """The run's seed (weights, data order, dropout)."""
    return self.train.seed


@dataclasses.dataclass(frozen=True)
class ClassifierConfig:
  """A classification or regression task (`run_classifier.py`).

  Attributes:
    task_name: one of `classifier/tasks.py`'s NAMES: a GLUE task, imdb,
      yelp-2/5, dbpedia, amazon-2/5, ag, or tsv/csv for your own data
      (case-insensitive).
    data_dir: the task's data directory.
    output_dir: where the feature records are cached.
    spiece_model_file: the pretrained model's SentencePiece model.
    max_seq_length: pieces per example.
    uncased: lower-case the text.
    shuffle_buffer: the training input's shuffle buffer.
    overwrite_data: rewrite the records even when valid.
    records_timeout: seconds a non-chief worker waits for the chief's
      training records.
    eval_split: "dev", "test" or "train", for evaluation and prediction.
    eval_batch_size, predict_batch_size: examples of one step over all
      replicas.
    eval_all_ckpt: evaluate every checkpoint of model_dir, not only the
      latest.
    predict_ckpt: checkpoint to predict with (None: the latest).
    predict_dir: where the prediction files go.
    predict_threshold: binary tasks: the second label's lead needed.
    is_regression: None: the task's kind.
    cls_scope: the classification head's name (None: the task's).
    label_column, text_a_column, text_b_column, contains_header,
      label_list: tsv/csv tasks' columns and labels.
  """
  task_name: str
  data_dir: str
  output_dir: str
  spiece_model_file: str
  max_seq_length: int = 128
  uncased: bool = False
  shuffle_buffer: int = 2048
  overwrite_data: bool = False
  records_timeout: int = RECORDS_TIMEOUT
  eval_split: str = "dev"
  eval_batch_size: int = 128
  predict_batch_size: int = 128
  eval_all_ckpt: bool = False
  predict_ckpt: Optional[str] = None
  predict_dir: Optional[str] = None
  predict_threshold: float = 0.0
  is_regression: Optional[bool] = None
  cls_scope: Optional[str] = None
  label_column: str = "label"
  text_a_column: str = "text_a"
  text_b_column: Optional[str] = None
  contains_header: Optional[bool] = None
  label_list: Optional[Tuple[str, ...]] = None

  def __post_init__(self):
    check_classifier(self)


@dataclasses.dataclass(frozen=True)
class SquadConfig:
  """SQuAD 2.0 / 1.1 (`run_squad.py`).

  Attributes:
    spiece_model_file: the pretrained model's SentencePiece model.
    output_dir: where the window records are written.
    train_file, predict_file: SQuAD JSON files.
    predict_dir: where the prediction files go (None: model_dir).
    max_seq_length, max_query_length, doc_stride: the windows.
    max_answer_length: longest predicted answer, in pieces.
    start_n_top, end_n_top: the answer beam.
    n_best_size: answers kept per question in nbest_predictions.json.
    predict_batch_size: examples of one step over all replicas.
    uncased: lower-case the text.
    shuffle_buffer: the training input's shuffle buffer.
    num_proc, proc_id: preprocessing shards, and the one to write.
    records_timeout: seconds a non-chief worker waits for the chief's
      training records.
    answer_on_last_piece, skip_empty_answers, trim_answer_whitespace,
      keep_unaligned: our earlier behaviour where it differs from the
      release's (docs/differences.md).
    target_eval_key: the metric that rates a checkpoint.
    eval_all_ckpt: evaluate every checkpoint, not only the latest.
  """
  spiece_model_file: str
  output_dir: str
  train_file: Optional[str] = None
  predict_file: Optional[str] = None
  predict_dir: Optional[str] = None
  max_seq_length: int = 512
  max_query_length: int = 64
  doc_stride: int = 128
  max_answer_length: int = 64
  start_n_top: int = 5
  end_n_top: int = 5
  n_best_size: int = 5
  predict_batch_size: int = 32
  uncased: bool = False
  shuffle_buffer: int = 2048
  num_proc: int = 1
  proc_id: int = 0
  records_timeout: int = RECORDS_TIMEOUT
  answer_on_last_piece: bool = False
  skip_empty_answers: bool = False
  trim_answer_whitespace: bool = False
  keep_unaligned: bool = False
  target_eval_key: str = "best_f1"
  eval_all_ckpt: bool = False

  def __post_init__(self):
    check_squad(self)


@dataclasses.dataclass(frozen=True)
class RaceConfig:
  """RACE (`run_race.py`).

  Attributes:
    data_dir: {train,dev,test}/{middle,high}/*.txt.
    spiece_model_file: the pretrained model's SentencePiece model.
    output_dir: where the records are cached.
    max_seq_length: pieces per option's sequence.
    max_qa_length: question+option pieces kept (the last ones).
    uncased: lower-case the text.
    high_only, middle_only: one level of RACE.
    eval_split: "dev" or "test".
    eval_batch_size: examples of one step over all replicas.
    shuffle_buffer: the training input's shuffle buffer.
    records_timeout: seconds a non-chief worker waits for the chief's
      training records.
  """
  data_dir: str
  spiece_model_file: str
  output_dir: str
  max_seq_length: int = 512
  max_qa_length: int = 128
  uncased: bool = False
  high_only: bool = False
  middle_only: bool = False
  eval_split: str = "dev"
  eval_batch_size: int = 32
  shuffle_buffer: int = 2048
  records_timeout: int = RECORDS_TIMEOUT

  def __post_init__(self):
    check_race(self)


################################################################################
# The tasks' rules: each takes a task config or the program's flags (the
# same names), so both are refused alike.
################################################################################
def check_classifier(values):
  """Raises a one-line ValueError naming the first bad setting of a
  classification task."""
  classifier_tasks.get(values.task_name)
  if values.max_seq_length < MIN_SEQ_LENGTH:
    raise ValueError(f"--max_seq_length={values.max_seq_length} must be >= "
                     f"{MIN_SEQ_LENGTH} (one piece, <sep> and <cls>)")
  validation.check_choice("eval_split", values.eval_split,
                          CLASSIFIER_EVAL_SPLITS)
  validation.check_all(values)


def check_squad(values):
  """Raises a one-line ValueError naming the first bad setting of SQuAD."""
  validation.check_all(values)
  validation.check_choice("target_eval_key", values.target_eval_key,
                          SQUAD_TARGET_EVAL_KEYS)
  check_room(values, "max_query_length", "paragraph")
  for name in ("start_n_top", "end_n_top"):
    if getattr(values, name) > values.max_seq_length:
      raise ValueError(f"--{name}={getattr(values, name)} exceeds "
                       f"--max_seq_length={values.max_seq_length}")
  if not 0 <= values.proc_id < values.num_proc:
    raise ValueError(f"--proc_id={values.proc_id} must be in [0, "
                     f"--num_proc={values.num_proc})")


def check_race(values):
  """Raises a one-line ValueError naming the first bad setting of RACE."""
  check_levels(values.high_only, values.middle_only)
  validation.check_choice("eval_split", values.eval_split, RACE_EVAL_SPLITS)
  validation.check_all(values)
  check_room(values, "max_qa_length", "article")


def check_levels(high_only, middle_only):
  """Raises unless at most one level of RACE is asked for."""
  if high_only and middle_only:
    raise ValueError("--high_only and --middle_only exclude each other")


def check_room(values, kept, what):
  """Raises unless max_seq_length holds the `kept` pieces (the setting of
  that name), the four special ones and at least one piece of `what`
  (e.g. "paragraph")."""
  least = getattr(values, kept) + 4
  if values.max_seq_length < least:
    raise ValueError(
        f"--max_seq_length={values.max_seq_length} leaves no room for the "
        f"{what}: it must be at least --{kept} + 4 = {least}")


def run_seed(engine, seed=None):
  """The run's one seed (weights, dropout, the training records' order and
  the input's shuffle): the engine's `TrainConfig.seed`; `seed` only for a
  run without an engine (SQuAD's preprocessing alone), whose records the
  later training finds by that seed (None: the programs' default)."""
  if engine is None:
    return train_config_lib.DEFAULT_SEED if seed is None else seed
  if seed is not None:
    raise ValueError(f"seed={seed} is for preprocessing without an engine; "
                     f"this run's seed is TrainConfig.seed="
                     f"{engine.train.seed}")
  return engine.train.seed


def check_together(model, engine):
  """Raises unless a run's configs agree where two hold the same setting
  (the programs give each pair from one flag): the devices and precision
  of the model and the engine (None model or engine: nothing to
  compare); and unless the engine freezes at most the model's layers."""
  if model is not None and engine is not None and engine.optimizer:
    validation.check_freeze_layers(engine.optimizer.freeze_layers,
                                   model.xlnet_config.n_layer)
  pairs = []
  if model is not None and engine is not None:
    pairs += [
        ("use_tpu", "ModelConfig.run", model.run.use_tpu, "DeviceConfig",
         engine.device.use_tpu),
        ("use_fp16", "ModelConfig.run", model.run.use_fp16, "TrainConfig",
         engine.train.use_fp16)]
  for name, owner, value, other, other_value in pairs:
    if value != other_value:
      raise ValueError(f"{owner}.{name}={value} differs from "
                       f"{other}.{name}={other_value}; give both the same "
                       "value")
