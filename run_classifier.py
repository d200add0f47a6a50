#!/usr/bin/env python3
"""Fine-tuning XLNet for sequence classification and regression.

`python run_classifier.py --task_name=sts-b --do_train --do_eval ...`; see
docs/finetuning.md. `--help` lists every flag of the program.
"""
from xlnet.programs import run_classifier

if __name__ == "__main__":
  run_classifier.entry_point()
