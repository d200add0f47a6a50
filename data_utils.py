"""Creates XLNet pretraining TFRecords: `python data_utils.py --help`."""
from absl import app

from xlnet.data_utils import define_flags, main

if __name__ == "__main__":
  define_flags()
  app.run(main)
