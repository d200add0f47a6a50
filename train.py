#!/usr/bin/env python3
"""The release's name of the TPU trainer, kept so that the original README's
command (`python train.py --record_info_dir=... ...`) runs as written; the same
as `python train_tpu.py` (TensorFlow <= 2.15, see `xlnet/programs/train_tpu.py`).
"""
from xlnet.programs import train_tpu

if __name__ == "__main__":
  train_tpu.entry_point()
