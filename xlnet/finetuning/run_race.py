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

from xlnet import cli
from xlnet.finetuning import api
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import finetuning as finetune_flags


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of run_race.py (no-op if already there)."""
  if "max_qa_length" in flag_values:
    return
  flag_catalog.define_common_flags(flag_values)
  fv = dict(flag_values=flag_values)
  flags.DEFINE_integer("max_seq_length", 512,
                       "Pieces per sequence, padding included.", **fv)
  flags.DEFINE_string("data_dir", None,
                      "RACE directory: {train,dev,test}/{middle,high}/*.txt.",
                      **fv)
  flags.DEFINE_integer("max_qa_length", 128,
                       "Question+option pieces kept (the last ones).", **fv)
  flags.DEFINE_bool("high_only", False, "Use only RACE-H.", **fv)
  flags.DEFINE_bool("middle_only", False, "Use only RACE-M.", **fv)
  flags.DEFINE_bool("do_eval", False, "Evaluate --eval_split.", **fv)
  flags.DEFINE_enum("eval_split", "dev", ["dev", "test"],
                    "Split scored by --do_eval.", **fv)
  flags.DEFINE_integer("eval_batch_size", 32, "Evaluation batch size.", **fv)
  # The paper's XLNet-Large settings.
  flag_catalog.set_defaults(flag_values, learning_rate=2e-5,
                        train_batch_size=32, train_steps=12000,
                        warmup_steps=1000, save_steps=1000)


def parse_flags(argv):
  """A fresh, parsed FlagValues with every flag of run_race.py."""
  flag_values = flags.FlagValues()
  define_flags(flag_values)
  flag_values(list(argv))
  return flag_values


def main(unused_argv):
  """absl main: resolves the parsed flags once and runs the steps."""
  api.run_race(**finetune_flags.resolve_race(flags.FLAGS))


def entry_point():
  """The `run_race.py` command."""
  cli.run(main, define_flags)
