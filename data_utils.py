"""Creates XLNet pretraining TFRecords: `python data_utils.py --help`.

`python data_utils.py --verify --save_dir=DIR` checks written records.
As a module it keeps the release's names for users who import it
(`data_utils.get_input_fn`, `data_utils.create_data`, ...); the library
itself imports the modules of `xlnet/data/` directly.
"""
from absl import flags

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

if __name__ == "__main__":
  record_writer.define_flags()
  flags.adopt_module_key_flags(record_writer)  # list them under --help
  cli.run(record_writer.main)
