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
from xlnet.flags import task_catalog


def main(unused_argv):
  """absl main: the flags resolved once, then `api.run_race`."""
  # (imported here: --help needs no TensorFlow)
  from xlnet.finetuning import api  # pylint: disable=g-import-not-at-top
  from xlnet.flags import finetuning  # pylint: disable=g-import-not-at-top
  api.run_race(**finetuning.resolve_race(flags.FLAGS))


define_flags, parse_flags, entry_point = cli.finetuning_program(
    "race", "max_qa_length", task_catalog.define_race_flags, main)
