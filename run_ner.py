#!/usr/bin/env python3
"""XLNet for NER, POS and any tagging: `python run_ner.py --do_train
--do_eval ...`.

See `xlnet/programs/run_ner.py`, `docs/tagging.md` and
`python run_ner.py --help`.
"""
from xlnet.programs import run_ner

if __name__ == "__main__":
  run_ner.entry_point()
