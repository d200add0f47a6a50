"""Runs one of the paper's tables with the paper's fine-tuning settings.

`python reproduce.py --table=glue --init_checkpoint=... --data_root=DIR
--work_dir=DIR ...` runs each task of the table, with each of --num_seeds
seeds, through the programs users run (`run_classifier.py`, `run_squad.py`,
`run_race.py`), as subprocesses, and writes `work_dir/results.{md,json,png}`
after each run; `--dry_run` prints the commands instead. A run with a
result.json is skipped, an interrupted one resumes; SIGTERM and SIGINT are
passed on to the running program (exit code 143 / 130), a failed run makes
the exit code 1.

The flags are resolved once (`xlnet/flags/finetuning.py`) into a
`ReproduceConfig` for `xlnet.reproduce.api.run_table`, which describes the
work dir's layout and the multi-host runs; docs/reproducing.md.
"""
from absl import flags

from xlnet.programs import cli
from xlnet.flags import task_catalog
from xlnet.reproduce import paper_settings


def define_flags(flag_values=flags.FLAGS):
  """Defines the flags of reproduce.py (no-op if already there)."""
  if "table" not in flag_values:
    task_catalog.define_reproduce_flags(
        flag_values, tables=list(paper_settings.TABLES))


def main(unused_argv):
  """absl main: resolves the parsed flags once and runs the table."""
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.flags import finetuning as finetune_flags
  from xlnet.reproduce import api
  api.run_table(finetune_flags.resolve_reproduce(flags.FLAGS))


def entry_point():
  """`python reproduce.py ...`: defines the flags and runs `main`."""
  cli.run(main, define_flags)
