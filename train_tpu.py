#!/usr/bin/env python3
"""XLNet pretraining with TPUEstimator: `python train_tpu.py --use_tpu=True ...`.

Needs TensorFlow <= 2.15 (the reference environment); see
`xlnet/programs/train_tpu.py` and `python train_tpu.py --help`.
"""
from xlnet.programs import train_tpu

if __name__ == "__main__":
  train_tpu.entry_point()
