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

from xlnet import cli
from xlnet.finetuning import api
from xlnet.finetuning import squad_task
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import finetuning as finetune_flags


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of run_squad.py (no-op if already there)."""
  if "train_file" in flag_values:
    return
  flag_catalog.define_common_flags(flag_values)
  fv = dict(flag_values=flag_values)
  flags.DEFINE_integer("max_seq_length", 512,
                       "Pieces per sequence, padding included.", **fv)
  flags.DEFINE_bool("do_prepro", False,
                    "Write the training records of shard --proc_id.", **fv)
  flags.DEFINE_bool("do_predict", False,
                    "Predict --predict_file and evaluate.", **fv)
  flags.DEFINE_string("train_file", None,
                      "SQuAD JSON for training, e.g. train-v2.0.json.", **fv)
  flags.DEFINE_string("predict_file", None,
                      "SQuAD JSON to predict, e.g. dev-v2.0.json.", **fv)
  flags.DEFINE_string("predict_dir", None,
                      "Where the prediction files go (default: "
                      "--model_dir).", **fv)
  flags.DEFINE_integer("num_proc", 1,
                       "Number of preprocessing shards.", **fv)
  flags.DEFINE_integer("proc_id", 0,
                       "Shard written by this --do_prepro run.", **fv)
  flags.DEFINE_integer("max_query_length", 64,
                       "Question pieces kept (the first ones).", **fv)
  flags.DEFINE_integer("doc_stride", 128,
                       "Pieces between the starts of two windows.", **fv)
  flags.DEFINE_integer("max_answer_length", 64,
                       "Longest predicted answer, in pieces.", **fv)
  flags.DEFINE_integer("start_n_top", 5, "Beam size of answer starts.", **fv)
  flags.DEFINE_integer("end_n_top", 5, "Answer ends kept per start.", **fv)
  flags.DEFINE_integer("n_best_size", 5,
                       "Answers kept per question in "
                       "nbest_predictions.json.", **fv)
  flags.DEFINE_integer("predict_batch_size", 32, "Prediction batch size.",
                       **fv)
  # Our earlier behaviour where it differs from the release's (which is the
  # default); see docs/differences.md.
  flags.DEFINE_bool("answer_on_last_piece", False,
                    "Let a window's last paragraph piece start or end a "
                    "predicted answer (the release never does).", **fv)
  flags.DEFINE_bool("skip_empty_answers", False,
                    "Skip predicted spans whose text is empty (the release "
                    "keeps them and can predict \"\").", **fv)
  flags.DEFINE_bool("trim_answer_whitespace", False,
                    "End a training answer whose text ends in whitespace on "
                    "its last word (the release ends it on the next "
                    "piece).", **fv)
  flags.DEFINE_bool("keep_unaligned", False,
                    "Train on and predict the questions of paragraphs the "
                    "release's character alignment fails on (it drops "
                    "them: no training features, the prediction \"\").",
                    **fv)
  flags.DEFINE_enum("target_eval_key", "best_f1",
                    squad_task.TARGET_EVAL_KEYS,
                    "Metric of eval_results.json that rates a checkpoint "
                    "and picks the best in eval_results.txt (has_ans_f1 "
                    "for the paper's Model I).", **fv)
  flags.DEFINE_bool("eval_all_ckpt", False,
                    "Predict with and evaluate every checkpoint of "
                    "--model_dir, not only the latest.", **fv)
  # The paper's XLNet-Large settings.
  flag_catalog.set_defaults(flag_values, learning_rate=3e-5,
                        train_batch_size=48, train_steps=8000,
                        warmup_steps=1000, lr_layer_decay_rate=0.75,
                        save_steps=1000)


def parse_flags(argv):
  """A fresh, parsed FlagValues with every flag of run_squad.py."""
  flag_values = flags.FlagValues()
  define_flags(flag_values)
  flag_values(list(argv))
  return flag_values


def main(unused_argv):
  """absl main: resolves the parsed flags once and runs the steps."""
  api.run_squad(**finetune_flags.resolve_squad(flags.FLAGS))


def entry_point():
  """The `run_squad.py` command."""
  cli.run(main, define_flags)
