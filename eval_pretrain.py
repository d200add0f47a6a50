#!/usr/bin/env python3
"""Held-out evaluation of a pretraining checkpoint:
`python eval_pretrain.py --record_info_dir=... --model_dir=...` (see
`xlnet/pretraining/pretrain_eval.py` and `--help`).
"""
from xlnet.pretraining import pretrain_eval

if __name__ == "__main__":
  pretrain_eval.entry_point()
