#!/usr/bin/env python3
"""Held-out evaluation of a pretraining checkpoint:
`python eval_pretrain.py --record_info_dir=... --model_dir=...` (see
`xlnet/programs/eval_pretrain.py` and `--help`).
"""
from xlnet.programs import eval_pretrain

if __name__ == "__main__":
  eval_pretrain.entry_point()
