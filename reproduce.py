"""Runs one of the paper's tables: `python reproduce.py --table=glue ...`.

See `xlnet/reproduce.py`, `docs/reproducing.md` and
`python reproduce.py --helpfull`.
"""
from xlnet import reproduce

if __name__ == "__main__":
  reproduce.entry_point()
