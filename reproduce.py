#!/usr/bin/env python3
"""Runs one of the paper's tables: `python reproduce.py --table=glue ...`.

See `xlnet/reproduce/`, `docs/reproducing.md` and
`python reproduce.py --help`.
"""
from xlnet.programs import reproduce

if __name__ == "__main__":
  reproduce.entry_point()
