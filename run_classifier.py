#!/usr/bin/env python3
"""Fine-tuning XLNet for sequence classification and regression.

`python run_classifier.py --task_name=sts-b --do_train --do_eval ...`; see
docs/finetuning.md. `--help` lists every flag of the program.
"""
from absl import flags

from xlnet.finetuning import run_classifier
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import task_catalog

if __name__ == "__main__":
  run_classifier.define_flags()
  # --help lists the flags of the main module: make the library's its own.
  flags.adopt_module_key_flags(flag_catalog)
  flags.adopt_module_key_flags(task_catalog)
  flags.adopt_module_key_flags(run_classifier)
  run_classifier.entry_point()
