#!/usr/bin/env python3
"""Converts a model: `python convert_checkpoint.py --to=hf` (a checkpoint ->
a HuggingFace transformers directory), `--to=tf` (back) or
`--to=saved_model` (for TF Serving); see `xlnet/interop/` and
docs/interop.md.
"""
from xlnet.programs import convert_checkpoint

if __name__ == "__main__":
  convert_checkpoint.entry_point()
