"""The pretraining input functions of a run's configs: training (every
core reads its per-core batch) and held-out evaluation (one device reads
whole host batches)."""
import contextlib

import tensorflow as tf

from xlnet import errors
from xlnet.data import input_pipeline
from xlnet.data import record_format

# How the pretraining programs' flags set the input function's arguments,
# for its messages (the training split, "train", is no flag).
FLAG_NAMES = dict(
    record_info_dir="--record_info_dir",
    bsz_per_host="--train_batch_size/--num_hosts", seq_len="--seq_len",
    reuse_len="--reuse_len", perm_size="--perm_size", bi_data="--bi_data",
    mask_alpha="--mask_alpha", mask_beta="--mask_beta",
    num_predict="--num_predict", uncased="--uncased",
    num_passes="--num_passes", num_core_per_host="--num_core_per_host",
    num_hosts="--num_hosts", seed="--seed",
    corpus_info_path="--corpus_info_path",
    sample_strategy="--sample_strategy")


def input_fn(configs, layout, split="train", record_dir=None,
             corpus_info=None, flag_names=None):
  """The pretraining input function of `configs` read with `layout`.

  Args:
    configs: the run's `PretrainConfigs` (data, seed, precision).
    layout: the `BatchLayout` read: `bsz_per_host` rows per host batch,
      `num_hosts` hosts sharing the files, `num_core_per_host` cores that
      each read one per-core batch per step (the input function regroups
      the rows when the data was written for a different core count, so
      every core gets [forward, backward] halves with `bi_data`).
    split: the records' split name (held-out evaluation reads "valid").
    record_dir: the record infos' directory (None: `data.record_info_dir`).
    corpus_info: the corpus info the sizes were checked against (None: the
      one next to the records).
    flag_names: how messages name the arguments (default `FLAG_NAMES`).

  Returns:
    (input_fn, record_info) as `input_pipeline.get_input_fn`.
  """
  data = configs.data
  return input_pipeline.get_input_fn(
      tfrecord_dir=record_dir or data.record_info_dir,
      split=split,
      bsz_per_host=layout.bsz_per_host,
      seq_len=data.seq_len,
      reuse_len=data.reuse_len,
      bi_data=data.bi_data,
      num_hosts=layout.num_hosts,
      num_core_per_host=layout.num_core_per_host,
      perm_size=data.perm_size,
      mask_alpha=data.mask_alpha,
      mask_beta=data.mask_beta,
      uncased=data.uncased,
      num_passes=data.num_passes,
      use_bfloat16=configs.run.use_bfloat16,
      num_predict=data.num_predict,
      corpus_info=corpus_info,
      seed=configs.train.seed,
      flag_names=flag_names or FLAG_NAMES,
      sample_strategy=data.sample_strategy)


def training_input_fn(configs):
  """The training input function (`configs.batch`, the resolved corpus
  info); see `input_fn`."""
  return input_fn(configs, configs.batch,
                  corpus_info=configs.data.corpus_info)


class HeldOutInput:
  """The held-out records of `configs.held_out`, read in order on one
  device (`BatchLayout.on_one_device`).

  Attributes:
    input_fn: input_fn(params) -> dataset of host batches.
    num_batches: host batches evaluated (`eval_batches`, or one pass).
    batch_size: rows of one batch (the training's bsz_per_host).
    mem_shape: `[mem_len, batch_size, d_model]` or None.
  """

  def __init__(self, configs):
    held_out = configs.held_out
    layout = configs.batch.on_one_device()
    record_dir = held_out.eval_record_info_dir or configs.data.record_info_dir
    # The evaluation's one-device layout is set by no flag.
    names = dict(FLAG_NAMES, split="--eval_split", bsz_per_host="bsz_per_host",
                 num_core_per_host="num_core_per_host")
    if held_out.eval_record_info_dir:
      names["record_info_dir"] = "--eval_record_info_dir"
    check_split(record_dir, held_out.eval_split, names["record_info_dir"])
    self.input_fn, info = input_fn(
        configs, layout, split=held_out.eval_split, record_dir=record_dir,
        flag_names=names)
    self.num_batches = held_out.eval_batches or info["num_batch"]
    self.batch_size = layout.bsz_per_core
    self.mem_shape = layout.memory_shape(configs.run.mem_len,
                                         configs.model.d_model)
    self._files = info["host_filenames"][0]
    self._vocab_size = info["vocab_size"]

  @contextlib.contextmanager
  def bad_data_named(self):
    """Turns a held-out record that cannot be read (`errors.is_bad_data`:
    corrupted, or a token id beyond the vocabulary) into one line naming
    the file (`record_format.data_loss_message`)."""
    try:
      yield
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
      if not errors.is_bad_data(e):
        raise
      raise ValueError(
          "a held-out record stopped the evaluation: " +
          record_format.data_loss_message(self._files, self._vocab_size, e)
      ) from None

  def dataset(self):
    """The dataset of held-out batches, from the first."""
    return self.input_fn({"batch_size": self.batch_size})


def check_split(record_dir, split, dir_flag):
  """Raises a one-line ValueError unless the record dirs `record_dir`
  (comma-separated, named by the flag `dir_flag`) hold records of the
  held-out split `split` (--eval_split)."""
  found = {name["split"] for d in record_dir.split(",") if d
           for _, name in record_format.find_record_infos(d)}
  if split in found:
    return
  where = f"{dir_flag}={record_dir}"
  if dir_flag == "--record_info_dir":
    where += " (the training records: --eval_record_info_dir is unset)"
  raise ValueError(
      f"--eval_split={split}: {where} holds no records of split {split} "
      f"(only {', '.join(sorted(found)) or 'none'}); give "
      "--eval_record_info_dir the tfrecords directory of the held-out "
      f"records (data_utils.py --split={split}), or train without held-out "
      "evaluation: --eval_steps=0")
