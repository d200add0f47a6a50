"""XLNet on RACE: fine-tuning and accuracy on middle, high and all
(`python run_race.py --help`).

Steps, each enabled by its flag:
  --do_train  fine-tunes on {data_dir}/train (records made once, cached in
              --output_dir).
  --do_eval   scores {data_dir}/{eval_split} and writes
              eval_results_{eval_split}.json to --model_dir.
--high_only / --middle_only restrict both to one level.

The flags are resolved once (`xlnet/flags/finetuning.py`) into typed
settings for `xlnet.finetuning.api.run_race`.
"""
from absl import flags

from xlnet.programs import cli
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import task_catalog


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of run_race.py (no-op if already there)."""
  if "max_qa_length" in flag_values:
    return
  flag_catalog.define_common_flags(flag_values, "run_race")
  task_catalog.define_race_flags(flag_values)


def parse_flags(argv):
  """A fresh, parsed FlagValues with every flag of run_race.py."""
  return flag_catalog.parse_fresh(define_flags, argv)


def main(unused_argv):
  """absl main: resolves the parsed flags once and runs the steps."""
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.finetuning import api
  from xlnet.flags import finetuning as finetune_flags
  api.run_race(**finetune_flags.resolve_race(flags.FLAGS))


def entry_point():
  """The `run_race.py` command."""
  cli.run(main, define_flags)
