#!/usr/bin/env python3
"""Creates XLNet pretraining TFRecords: `python data_utils.py --help`.

`python data_utils.py --verify --save_dir=DIR` checks written records.
As a module it keeps the release's names for users who import it
(`data_utils.get_input_fn`, `data_utils.create_data`, ...); the library
itself imports the modules of `xlnet/data/` directly.
"""
from absl import flags
from absl import logging

from xlnet.data import prepro_utils
from xlnet.programs import cli
from xlnet.programs import release_names
from xlnet.flags import tool_catalog

# The release's constants: its special symbols' ids, and the vocabulary size
# of the released models (`n_token` of xlnet/configs/xlnet_base.json).
special_symbols = dict(zip(prepro_utils.SPECIAL_SYMBOLS,
                           range(len(prepro_utils.SPECIAL_SYMBOLS))))
VOCAB_SIZE = 32000

# The release's names, each from the module that holds it now; imported on
# first use, so that --help needs no TensorFlow.
_RELEASE_NAMES = {
    "UNK_ID": "xlnet.data.prepro_utils",
    "CLS_ID": "xlnet.data.prepro_utils",
    "SEP_ID": "xlnet.data.prepro_utils",
    "MASK_ID": "xlnet.data.prepro_utils",
    "EOD_ID": "xlnet.data.prepro_utils",
    "find_record_files": "xlnet.data.input_pipeline",
    "get_input_fn": "xlnet.data.input_pipeline",
    "make_parser": "xlnet.data.perm_features",
    "CORPUS_INFO": "xlnet.data.record_format",
    "data_loss_message": "xlnet.data.record_format",
    "format_filename": "xlnet.data.record_format",
    "load_corpus_info": "xlnet.data.record_format",
    "parse_filename": "xlnet.data.record_format",
    "verify_records": "xlnet.data.record_format",
    "create_data": "xlnet.data.record_writer",
    "batchify": "xlnet.data.token_stream",
}
# The release's steps of create_data and get_input_fn, not offered alone.
_STEPS = ("data_utils.create_data(input_glob, sp_path, save_dir, ...) or "
          "data_utils.get_input_fn(...), whose step it is")
_NOT_OFFERED = dict.fromkeys(
    ("create_tfrecords", "parse_files_to_dataset", "get_dataset"), _STEPS)
__getattr__, __dir__ = release_names.module_attributes(
    __name__, globals(), _RELEASE_NAMES, _NOT_OFFERED)


def main(argv):
  """Writes one (task, pass_id) of records, or checks them (--verify)."""
  del argv
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.data import record_writer
  f = flags.FLAGS
  if f.verify:
    record_writer.verify(f.save_dir)
    return
  if f.pass_id >= f.num_passes:
    logging.info("--pass_id=%d >= --num_passes=%d: the input function reads "
                 "only passes below --num_passes", f.pass_id, f.num_passes)
  record_writer.create_data(
      f.input_glob, f.sp_path, f.save_dir, bsz_per_host=f.bsz_per_host,
      num_core_per_host=f.num_core_per_host, seq_len=f.seq_len,
      reuse_len=f.reuse_len, uncased=f.uncased, bi_data=f.bi_data,
      mask_alpha=f.mask_alpha, mask_beta=f.mask_beta,
      num_predict=f.num_predict, use_eod=f.use_eod,
      from_raw_text=f.from_raw_text, split=f.split, pass_id=f.pass_id,
      num_task=f.num_task, task=f.task, num_workers=f.num_workers,
      record_kind=f.record_kind)


if __name__ == "__main__":
  cli.run(main, tool_catalog.define_record_flags)
