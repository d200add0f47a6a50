#!/usr/bin/env python3
"""Creates XLNet pretraining TFRecords: `python data_utils.py --help`.

`python data_utils.py --verify --save_dir=DIR` checks written records.
As a module it keeps the release's names for users who import it
(`data_utils.get_input_fn`, `data_utils.create_data`, ...); the library
itself imports the modules of `xlnet/data/` directly.
"""
from absl import flags
from absl import logging

from xlnet import cli
from xlnet.data import record_writer
# pylint: disable=unused-import
from xlnet.data.input_pipeline import find_record_files  # noqa: F401
from xlnet.data.input_pipeline import get_input_fn  # noqa: F401
from xlnet.data.input_pipeline import make_parser  # noqa: F401
from xlnet.data.record_format import CORPUS_INFO  # noqa: F401
from xlnet.data.record_format import data_loss_message  # noqa: F401
from xlnet.data.record_format import format_filename  # noqa: F401
from xlnet.data.record_format import load_corpus_info  # noqa: F401
from xlnet.data.record_format import parse_filename  # noqa: F401
from xlnet.data.record_format import verify_records  # noqa: F401
from xlnet.data.record_writer import create_data  # noqa: F401
from xlnet.data.token_stream import batchify  # noqa: F401
from xlnet.flags import catalog as flag_catalog


def main(argv):
  """Writes one (task, pass_id) of records, or checks them (--verify)."""
  del argv
  f = flags.FLAGS
  if f.verify:
    record_writer.verify(f.save_dir)
    return
  if f.pass_id >= f.num_passes:
    logging.info("--pass_id=%d >= --num_passes=%d: the input function reads "
                 "only passes below --num_passes", f.pass_id, f.num_passes)
  create_data(
      f.input_glob, f.sp_path, f.save_dir, bsz_per_host=f.bsz_per_host,
      num_core_per_host=f.num_core_per_host, seq_len=f.seq_len,
      reuse_len=f.reuse_len, uncased=f.uncased, bi_data=f.bi_data,
      mask_alpha=f.mask_alpha, mask_beta=f.mask_beta,
      num_predict=f.num_predict, use_eod=f.use_eod,
      from_raw_text=f.from_raw_text, split=f.split, pass_id=f.pass_id,
      num_task=f.num_task, task=f.task, num_workers=f.num_workers,
      record_kind=f.record_kind)


if __name__ == "__main__":
  cli.run(main, flag_catalog.define_record_flags)
