"""Fine-tuning XLNet for sequence classification and regression.

`python run_classifier.py --task_name=... --do_train --do_eval ...` (see
`--helpfull`). The steps:

  1. Validate the flags and paths; read the task's labels.
  2. Write (or reuse) the feature records of the needed splits under
     `--output_dir`.
  3. `--do_train`: fine-tune from `--init_checkpoint` into `--model_dir`.
  4. `--do_eval`: evaluate the latest checkpoint (every checkpoint with
     `--eval_all_ckpt`) on `--eval_split`; metrics go to
     `model_dir/eval_results.txt` and to TensorBoard under
     `model_dir/eval_{task}_{split}`.
  5. `--do_predict`: label the `--eval_split` examples with
     `--predict_ckpt` (default: the latest checkpoint) into the release's
     files `predict_dir/{task}.tsv` (index and prediction) and
     `predict_dir/{task}.logits.json`, plus `predict_dir/{task}.ids.tsv`
     (index -> example id).

The training examples are written in a random order seeded by `--seed`
(the release shuffles them once before writing, unseeded).

The flags are resolved once (`xlnet/flags/finetuning.py`) into typed
settings for `xlnet.finetuning.api.run_classifier`, which Python code can
call directly (docs/python_api_finetuning.md).
"""
from absl import flags

from xlnet import cli
from xlnet.finetuning import api
from xlnet.finetuning import classifier_datasets
from xlnet.finetuning import classifier_utils
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import finetuning as finetune_flags


def define_flags(flag_values=flags.FLAGS):
  """Defines the common fine-tuning flags and the task flags."""
  flag_catalog.define_common_flags(flag_values)
  if "task_name" in flag_values:
    return
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("task_name", None,
                      "Task: " + ", ".join(classifier_datasets.TASK_NAMES)
                      + " (case-insensitive).", **fv)
  flags.DEFINE_string("data_dir", None, "The task's data directory.", **fv)
  flags.DEFINE_integer(
      "max_seq_length", 128,
      f"Pieces per example, >= {classifier_utils.MIN_SEQ_LENGTH}. XLNet's "
      "positions are relative, so there is no hard upper limit, but the "
      "released models were pretrained on sequences of "
      f"{classifier_utils.PRETRAIN_SEQ_LENGTH}: longer inputs use relative "
      "distances they never saw (a warning is logged).", **fv)
  flags.DEFINE_bool("do_eval", False, "Evaluate on --eval_split.", **fv)
  flags.DEFINE_bool("do_predict", False, "Label the --eval_split examples.",
                    **fv)
  flags.DEFINE_enum("eval_split", "dev", ["dev", "test", "train"],
                    "Split for --do_eval and --do_predict (GLUE test sets "
                    "have no labels: predict only).", **fv)
  flags.DEFINE_integer("eval_batch_size", 128,
                       "Eval batch size (per GPU without --use_tpu, as "
                       "train_batch_size).", **fv)
  flags.DEFINE_integer("predict_batch_size", 128,
                       "Predict batch size (per GPU without --use_tpu, as "
                       "train_batch_size).", **fv)
  flags.DEFINE_bool("eval_all_ckpt", False,
                    "Evaluate every checkpoint in model_dir, not only the "
                    "latest.", **fv)
  flags.DEFINE_string("predict_ckpt", None,
                      "Checkpoint to predict with (default: the latest in "
                      "model_dir).", **fv)
  flags.DEFINE_string("predict_dir", None,
                      "Where {task}.tsv, {task}.logits.json and "
                      "{task}.ids.tsv go.", **fv)
  flags.DEFINE_float("predict_threshold", 0.0,
                     "Binary tasks: predict the second label when its logit "
                     "exceeds the first one's by more than this.", **fv)
  flags.DEFINE_bool("is_regression", None,
                    "Regression (one output, squared error); default: the "
                    "task's kind (sts-b: True). Required for tsv/csv "
                    "regression.", **fv)
  flags.DEFINE_string("cls_scope", None,
                      "Name of the classification head "
                      "(model/classification_{cls_scope}); default: the task "
                      "name. E.g. evaluate mnli_mismatched with the head "
                      "trained as mnli_matched.", **fv)
  flags.DEFINE_integer("num_passes", 1,
                       "Accepted for the released commands; training "
                       "repeats its examples indefinitely, so it changes "
                       "nothing.", **fv)
  # Your own data (--task_name=tsv or csv).
  flags.DEFINE_string("label_column", "label",
                      "tsv/csv tasks: label column, a 0-based index or a "
                      "header name.", **fv)
  flags.DEFINE_string("text_a_column", "text_a",
                      "tsv/csv tasks: first text column (index or name).",
                      **fv)
  flags.DEFINE_string("text_b_column", None,
                      "tsv/csv tasks: second text column (index or name), "
                      "for text pairs.", **fv)
  flags.DEFINE_bool("contains_header", None,
                    "tsv/csv tasks: the first row is a header (implied when "
                    "a column is given by name).", **fv)
  flags.DEFINE_list("label_list", None,
                    "tsv/csv tasks: the labels, comma-separated (default: "
                    "the sorted labels found in train.{tsv,csv}).", **fv)


def main(unused_argv):
  """absl main: resolves the parsed flags once and runs the fine-tuning."""
  api.run_classifier(**finetune_flags.resolve_classifier(flags.FLAGS))


def entry_point():
  """`python run_classifier.py ...`: defines the flags and runs `main`."""
  cli.run(main, define_flags)
