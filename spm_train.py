#!/usr/bin/env python3
"""Trains an XLNet SentencePiece model with the release's options:
`python spm_train.py --input=FILES --model_prefix=PREFIX --vocab_size=N`
(see `xlnet/data/spm_train.py` and `--help`).
"""
from absl import flags

from xlnet.programs import cli
from xlnet.data import spm_train
from xlnet.flags import tool_catalog


def main(argv):
  """Trains the model the flags describe."""
  del argv
  f = flags.FLAGS
  if not f.input or not f.model_prefix:
    raise ValueError("--input and --model_prefix are required")
  spm_train.train_spm(f.input, f.model_prefix, f.vocab_size,
                      f.input_sentence_size, f.character_coverage,
                      f.num_threads, f.split_digits)


if __name__ == "__main__":
  cli.run(main, tool_catalog.define_spm_flags)
