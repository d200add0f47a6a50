#!/usr/bin/env python3
"""XLNet on RACE: `python run_race.py --do_train --do_eval ...`.

See `xlnet/programs/run_race.py`, `docs/squad_race.md` and
`python run_race.py --help`.
"""
from xlnet.programs import run_race

if __name__ == "__main__":
  run_race.entry_point()
