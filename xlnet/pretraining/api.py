"""Pretraining records, pretraining and its held-out evaluation from
Python, without flags.

    from xlnet.pretraining import api
    records = api.write_records("text/*.txt", "spiece.model", "data",
                                seq_len=512, reuse_len=256, ...)
    data = records.data()              # a PretrainData of those records
    history = api.pretrain(configs)    # configs: a PretrainConfigs
    results = api.evaluate(configs)    # configs.held_out.eval_ckpt

`data_utils.py` calls `record_writer.create_data` as `write_records` does;
`train_gpu.py`, `train_tpu.py` and `eval_pretrain.py` resolve their flags
into the same `PretrainConfigs` (`xlnet/flags/pretraining.py`) and call these
functions: a program and the Python API run the same code. See
docs/python_api.md.
"""
import dataclasses
import os
from typing import Optional

from xlnet import validation
from xlnet.data import record_format
from xlnet.data import record_writer
from xlnet.training import strategies
from xlnet.pretraining import config as pretrain_config
from xlnet.pretraining import estimator
from xlnet.pretraining import held_out as held_out_lib
from xlnet.pretraining import inputs
from xlnet.pretraining import pretrain as pretrain_lib
from xlnet.training import data_service
from xlnet.training import run_lock


@dataclasses.dataclass(frozen=True)
class Records:
  """Pretraining records written by `write_records`.

  Attributes:
    record_info_dir: the directory of the record files
      (`{save_dir}/tfrecords`, what `PretrainData.record_info_dir` names).
    record_info: the record info json of the (task, pass_id) written.
    corpus_info: the save_dir's corpus_info.json (the settings the records
      were written with, `vocab_size` included).
  """
  record_info_dir: str
  record_info: str
  corpus_info: dict

  def data(self, perm_size=None, num_passes=None,
           sample_strategy=validation.first_choice("sample_strategy")):
    """The `PretrainData` of these records, every size from their
    corpus_info.json (`perm_size` None: the records' `reuse_len`, as the
    release's scripts set it; `sample_strategy`: for token records, see
    `PretrainData`)."""
    info = self.corpus_info
    return pretrain_config.PretrainData(
        record_info_dir=self.record_info_dir, seq_len=info["seq_len"],
        reuse_len=info["reuse_len"],
        perm_size=info["reuse_len"] if perm_size is None else perm_size,
        bi_data=info["bi_data"], mask_alpha=info["mask_alpha"],
        mask_beta=info["mask_beta"], num_predict=info["num_predict"],
        uncased=info["uncased"], num_passes=num_passes, corpus_info=info,
        sample_strategy=sample_strategy)


def write_records(input_glob: str, sp_path: str, save_dir: str, *,
                  seq_len: int = 512, reuse_len: int = 256,
                  bsz_per_host: int = 32, num_core_per_host: int = 8,
                  uncased: bool = False, bi_data: bool = True,
                  mask_alpha: int = 6, mask_beta: int = 1,
                  num_predict: int = 85, use_eod: bool = True,
                  from_raw_text: bool = True, split: str = "train",
                  pass_id: int = 0, num_task: int = 1, task: int = 0,
                  num_workers: Optional[int] = None,
                  record_kind: str = validation.first_choice("record_kind")
                  ) -> Records:
  """Writes the pretraining TFRecords of raw text, as `data_utils.py`
  (docs/data.md): `{save_dir}/tfrecords/` (the records and their record
  info json) and, for task 0, `{save_dir}/corpus_info.json`, each
  atomically; a rerun writes the same bytes.

  Args:
    input_glob: comma-separated globs of text files (one sentence per line,
      documents separated by an empty line).
    sp_path: the SentencePiece model.
    save_dir: the output directory.
    seq_len ... task: the settings of the flags of the same names
      (`python data_utils.py --help`); the defaults are the flags'.
    num_workers: encoding processes (None: one per CPU).
    record_kind: "examples" (the release's records) or "tokens" (the rows
      once, examples sampled online by the input function: docs/data.md,
      "Token records and online sampling").

  Returns:
    the `Records` written.

  Raises:
    ValueError: one line naming the setting or file at fault (before
      anything is written), e.g. settings other than those of the records
      already in save_dir.
  """
  info_path = record_writer.create_data(
      input_glob, sp_path, save_dir, bsz_per_host=bsz_per_host,
      num_core_per_host=num_core_per_host, seq_len=seq_len,
      reuse_len=reuse_len, uncased=uncased, bi_data=bi_data,
      mask_alpha=mask_alpha, mask_beta=mask_beta, num_predict=num_predict,
      use_eod=use_eod, from_raw_text=from_raw_text, split=split,
      pass_id=pass_id, num_task=num_task, task=task, num_workers=num_workers,
      record_kind=record_kind)
  return Records(os.path.dirname(info_path), info_path,
                 record_format.load_corpus_info(save_dir))


def pretrain(configs):
  """Trains (or resumes) `configs.model` on `configs.data` to
  `configs.optimizer.train_steps`, holding the run lock of the model_dir
  (`xlnet/training/run_lock.py`) on the chief.

  `configs.device.tpu_engine == "estimator"` runs TPUEstimator (TensorFlow
  2.15); otherwise the shared engine runs on the device's strategy (a
  TPUStrategy with `use_tpu`, else the GPUs/CPUs of `num_core_per_host` and
  `worker_hosts`). With `held_out.eval_steps` the held-out records are
  evaluated every eval_steps steps and at the end. With
  `device.data_service` (the engine only) the dispatcher must answer first;
  its workers then make the training input (`data_service.distribute`).

  Args:
    configs: a `PretrainConfigs` (xlnet/pretraining/config.py).

  Returns:
    the engine: list of (step, mean loss) of every step of this run;
    TPUEstimator: None (its losses are in the TensorBoard summaries).

  Raises:
    ValueError: bad settings or data (one line).
    run_lock.Locked: another trainer uses the model_dir.
    progress.StopTraining: stopped early after saving (signal, divergence,
      corrupted input).
  """
  if configs.checkpoint is None:
    raise ValueError("pretrain needs configs.checkpoint, a CheckpointConfig "
                     "naming the model_dir")
  model_dir = configs.checkpoint.model_dir
  if configs.device.data_service:
    if configs.device.tpu_engine == "estimator":
      raise ValueError("--data_service needs the engine: TPUEstimator "
                       "runs its own input (--tpu_engine=strategy)")
    data_service.check_dispatcher(configs.device.data_service)
  if configs.device.tpu_engine == "estimator":
    with run_lock.hold(model_dir):
      return estimator.run_estimator(configs)
  pretrain_lib.check_model_dir(model_dir)
  held_out = (inputs.HeldOutInput(configs) if configs.held_out.eval_steps
              else None)
  strategy = strategies.for_training(configs.device, configs.batch)
  with run_lock.hold(model_dir, strategies.is_chief(strategy)):
    return pretrain_lib.train(configs, strategy, held_out)


def evaluate(configs):
  """Evaluates the checkpoint `configs.held_out.eval_ckpt` on the held-out
  records (one device, memories carried, dropout off) and writes
  `eval_results_pretrain.json` next to it.

  Returns:
    dict: `loss` (per target token), `pplx`, `accuracy`, `num_targets`,
    `num_batches`, `checkpoint` (the prefix read), `split`.
  """
  return held_out_lib.evaluate_checkpoint(configs)
