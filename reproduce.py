#!/usr/bin/env python3
"""Runs one of the paper's tables: `python reproduce.py --table=glue ...`.

See `xlnet/finetuning/reproduce.py`, `docs/reproducing.md` and
`python reproduce.py --help`.
"""
from absl import flags

from xlnet.finetuning import reproduce

if __name__ == "__main__":
  reproduce.define_flags()
  # --help lists the flags of the main module: make the library's its own.
  flags.adopt_module_key_flags(reproduce)
  reproduce.entry_point()
