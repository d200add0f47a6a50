#!/usr/bin/env python3
"""A tf.data service dispatcher (`python data_service.py --port=PORT`) or
worker (`... --port=PORT --dispatcher=HOST:PORT`) for the trainers'
`--data_service`.

See `xlnet/programs/data_service.py`; `python data_service.py --help` lists
the flags.
"""
from xlnet.programs import data_service

if __name__ == "__main__":
  data_service.entry_point()
