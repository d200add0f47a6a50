#!/usr/bin/env python3
"""XLNet pretraining on GPUs/CPUs: `python train_gpu.py --record_info_dir=...`.

See `xlnet/programs/train_gpu.py`; `python train_gpu.py --help` lists the
flags.
"""
from xlnet.programs import train_gpu

if __name__ == "__main__":
  train_gpu.entry_point()
