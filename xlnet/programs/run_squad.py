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
import functools

from absl import flags

from xlnet.programs import cli
from xlnet.finetuning import config as finetune_config
from xlnet.flags import task_catalog


def main(unused_argv):
  """absl main: the flags resolved once, then `api.run_squad`."""
  # (imported here: --help needs no TensorFlow)
  from xlnet.finetuning import api  # pylint: disable=g-import-not-at-top
  from xlnet.flags import finetuning  # pylint: disable=g-import-not-at-top
  api.run_squad(**finetuning.resolve_squad(flags.FLAGS))


define_flags, parse_flags, entry_point = cli.finetuning_program(
    "squad", "train_file", functools.partial(
        task_catalog.define_squad_flags,
        target_eval_keys=finetune_config.SQUAD_TARGET_EVAL_KEYS), main)
