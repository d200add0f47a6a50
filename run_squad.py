#!/usr/bin/env python3
"""XLNet on SQuAD 2.0 / 1.1: `python run_squad.py --do_train --do_predict ...`.

See `xlnet/programs/run_squad.py`, `docs/squad_race.md` and
`python run_squad.py --help`.
"""
from xlnet.programs import run_squad

if __name__ == "__main__":
  run_squad.entry_point()
