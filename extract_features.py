#!/usr/bin/env python3
"""Texts -> vectors from a released, pretrained or fine-tuned XLNet
checkpoint, as BERT's extract_features.py: `python extract_features.py
--input_file=texts.txt --output_file=vectors.jsonl
--init_checkpoint=xlnet_cased_L-24_H-1024_A-16/xlnet_model.ckpt`; see
docs/features.md. `--help` lists every flag of the program.
"""
from xlnet.programs import extract_features

if __name__ == "__main__":
  extract_features.entry_point()
