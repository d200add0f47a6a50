"""XLNet on SQuAD 2.0 / 1.1: preprocessing, fine-tuning, prediction and the
official evaluation (`python run_squad.py --help`).

Steps, each enabled by its flag:
  --do_prepro   training features -> records: shard --proc_id of --num_proc
                (questions are split by paragraph); alone it runs just this.
  --do_train    fine-tunes on the training records (made here when missing
                and --num_proc is 1).
  --do_predict  predicts --predict_file with the latest checkpoint of
                --model_dir (every checkpoint with --eval_all_ckpt) and
                writes the latest's predictions.json, null_odds.json,
                nbest_predictions.json and eval_results.json (exact match /
                F1, HasAns / NoAns, best null threshold, the release's
                has_ans_*) to --predict_dir; eval_results.txt there keeps
                every evaluated checkpoint's metrics and the best by
                --target_eval_key.

The flags are resolved once (`xlnet/flags/finetuning.py`) into typed
settings for `xlnet.finetuning.api.run_squad`.
"""
from absl import flags

from xlnet.programs import cli
from xlnet.finetuning import config as finetune_config
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import task_catalog


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of run_squad.py (no-op if already there)."""
  if "train_file" in flag_values:
    return
  flag_catalog.define_common_flags(flag_values, "run_squad")
  task_catalog.define_squad_flags(
      flag_values, target_eval_keys=finetune_config.SQUAD_TARGET_EVAL_KEYS)


def parse_flags(argv):
  """A fresh, parsed FlagValues with every flag of run_squad.py."""
  return flag_catalog.parse_fresh(define_flags, argv)


def main(unused_argv):
  """absl main: resolves the parsed flags once and runs the steps."""
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.finetuning import api
  from xlnet.flags import finetuning as finetune_flags
  api.run_squad(**finetune_flags.resolve_squad(flags.FLAGS))


def entry_point():
  """The `run_squad.py` command."""
  cli.run(main, define_flags)
