"""Fine-tuning XLNet for sequence classification and regression.

`python run_classifier.py --task_name=... --do_train --do_eval ...` (see
`--help`). The steps:

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
call directly (docs/python_api.md, "Fine-tuning").
"""
import functools

from absl import flags

from xlnet.programs import cli
from xlnet.finetuning import config as finetune_config
from xlnet.flags import task_catalog


def main(unused_argv):
  """absl main: the flags resolved once, then `api.run_classifier`."""
  # (imported here: --help needs no TensorFlow)
  from xlnet.finetuning import api  # pylint: disable=g-import-not-at-top
  from xlnet.flags import finetuning  # pylint: disable=g-import-not-at-top
  api.run_classifier(**finetuning.resolve_classifier(flags.FLAGS))


define_flags, parse_flags, entry_point = cli.finetuning_program(
    "classifier", "task_name", functools.partial(
        task_catalog.define_classifier_flags,
        min_seq_length=finetune_config.MIN_SEQ_LENGTH,
        pretrain_seq_length=finetune_config.PRETRAIN_SEQ_LENGTH), main)
