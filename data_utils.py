"""Creates XLNet pretraining TFRecords: `python data_utils.py --help`.

`python data_utils.py --verify --save_dir=DIR` checks written records.
"""
from absl import flags

from xlnet import cli
from xlnet import record_writer

if __name__ == "__main__":
  record_writer.define_flags()
  flags.adopt_module_key_flags(record_writer)  # list them under --help
  cli.run(record_writer.main)
