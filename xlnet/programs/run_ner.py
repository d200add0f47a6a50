"""XLNet for tagging words: NER, POS, chunking (`python run_ner.py
--help`; docs/tagging.md).

Steps, each enabled by its flag:
  --do_train    fine-tunes a tag per word on --train_file (its windows'
                records made once, cached in --output_dir).
  --do_eval     scores --eval_file with conlleval's figures (precision,
                recall, F1 per type and overall; token accuracy) into
                --model_dir's eval_results.txt and
                eval_results_{file}.json.
  --do_predict  writes --predict_file (default --eval_file) with each
                token's predicted tag added, in its layout, to
                --predict_dir/{name}.predictions{ext}.

The files: CoNLL-2003, a "token ... tag" column file or CoNLL-U
(--file_layout), tags in IOB1, IOB2 or IOBES (detected, or --tag_scheme)
or plain tags such as POS (--tag_scheme=none).

The flags are resolved once (`xlnet/flags/finetuning.py`) into typed
settings for `xlnet.finetuning.api.run_ner`, which Python code can call
directly (docs/python_api.md).
"""
from absl import flags

from xlnet.programs import cli
from xlnet.flags import task_catalog


def main(unused_argv):
  """absl main: the flags resolved once, then `api.run_ner`."""
  # (imported here: --help needs no TensorFlow)
  from xlnet.finetuning import api  # pylint: disable=g-import-not-at-top
  from xlnet.flags import finetuning  # pylint: disable=g-import-not-at-top
  api.run_ner(**finetuning.resolve_ner(flags.FLAGS))


define_flags, parse_flags, entry_point = cli.finetuning_program(
    "ner", "window_stride", task_catalog.define_ner_flags, main)
