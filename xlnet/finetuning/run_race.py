"""XLNet on RACE: fine-tuning and accuracy on middle, high and all
(`python run_race.py --help`).

Steps, each enabled by its flag:
  --do_train  fine-tunes on {data_dir}/train (records made once, cached in
              --output_dir).
  --do_eval   scores {data_dir}/{eval_split} and writes
              eval_results_{eval_split}.json to --model_dir.
--high_only / --middle_only restrict both to one level.
"""
import json
import os

from absl import flags
from absl import logging
import tensorflow as tf

from xlnet.flags import catalog as flag_catalog
from xlnet.flags import finetuning as finetune_flags
from xlnet.flags import rules as flag_rules
from xlnet import cli
from xlnet.finetuning import finetune
from xlnet import io_utils
from xlnet.data import prepro_utils
from xlnet.finetuning import qa_records
from xlnet import race_heads
from xlnet.finetuning import race_utils

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


def validate_flags(FLAGS):  # pylint: disable=invalid-name
  """Raises ValueError (naming the flag) on a setting that cannot work."""
  if not (FLAGS.do_train or FLAGS.do_eval):
    raise ValueError("nothing to do: set --do_train and/or --do_eval")
  finetune_flags.require(FLAGS, "data_dir", "spiece_model_file", "output_dir",
                   "model_config_path", "model_dir",
                   why="(RACE data, SentencePiece model, records directory, "
                   "model config and checkpoint directory)")
  race_utils.race_levels(FLAGS.high_only, FLAGS.middle_only)
  finetune_flags.check_positive(FLAGS, "max_seq_length", "max_qa_length",
                          "train_batch_size", "eval_batch_size",
                          "train_steps")
  flag_rules.check_all(FLAGS)
  if FLAGS.max_seq_length < FLAGS.max_qa_length + 4:
    raise ValueError(
        f"--max_seq_length={FLAGS.max_seq_length} leaves no room for the "
        f"article: it must be at least --max_qa_length + 4 = "
        f"{FLAGS.max_qa_length + 4}")


def record_path(FLAGS, split):  # pylint: disable=invalid-name
  """`{output_dir}/{spiece}.len-L.qa-Q[.uncased].{levels}.{split}.tf_record`,
  with `.seed-S` before `.tf_record` for the (shuffled) training split."""
  spiece = os.path.splitext(os.path.basename(FLAGS.spiece_model_file))[0]
  case = ".uncased" if FLAGS.uncased else ""
  levels = "-".join(race_utils.race_levels(FLAGS.high_only,
                                           FLAGS.middle_only))
  seed = (f".seed-{qa_records.order_seed(FLAGS.seed)}" if split == "train"
          else "")
  return os.path.join(
      FLAGS.output_dir,
      f"{spiece}.len-{FLAGS.max_seq_length}.qa-{FLAGS.max_qa_length}{case}."
      f"{levels}.{split}{seed}.tf_record")


def release_train_record(FLAGS):  # pylint: disable=invalid-name
  """Where the release wrote its training records:
  `{output_dir}/{spiece file name}.len-L.train.tf_record`."""
  spiece = os.path.basename(FLAGS.spiece_model_file)
  return os.path.join(FLAGS.output_dir,
                      f"{spiece}.len-{FLAGS.max_seq_length}.train.tf_record")


def prepro(FLAGS, sp_model, split):  # pylint: disable=invalid-name
  """Reads one split and writes its records.

  Training questions are shuffled once with `qa_records.order_seed(--seed)`
  and their records (whose name holds that seed) are reused when they
  exist; otherwise the release's training records are used when
  --output_dir holds them (`release_train_record`). Evaluation records are
  always rewritten, so they match the questions read now.

  Returns:
    (examples, records path).
  """
  levels = race_utils.race_levels(FLAGS.high_only, FLAGS.middle_only)
  articles, examples = race_utils.read_race_examples(FLAGS.data_dir, split,
                                                     levels)
  if split == "train":
    examples = qa_records.shuffled(examples,
                                   qa_records.order_seed(FLAGS.seed))
  path = record_path(FLAGS, split)
  if split == "train" and tf.io.gfile.exists(path):
    logging.info("Reusing %s (%d questions)", path, len(examples))
    return examples, path
  release = release_train_record(FLAGS)
  if split == "train" and tf.io.gfile.exists(release):
    logging.warning("Training on the release's records %s: their order, "
                    "levels and max_qa_length are the release run's, and "
                    "they keep its fault (when the article fitted, each "
                    "option also holds the earlier options)", release)
    return examples, release
  converter = race_utils.FeatureConverter(
      sp_model, articles, FLAGS.max_seq_length, FLAGS.max_qa_length,
      FLAGS.uncased)
  count = qa_records.write_records(path, converter.iter_features(examples))
  logging.info("Wrote %d %s questions to %s", count, split, path)
  return examples, path


def write_eval_results(FLAGS, metrics):  # pylint: disable=invalid-name
  """Writes `eval_results_{eval_split}.json` to --model_dir and logs it."""
  path = os.path.join(FLAGS.model_dir,
                      f"eval_results_{FLAGS.eval_split}.json")
  io_utils.atomic_write(path, json.dumps(metrics, indent=4) + "\n")
  for key, value in metrics.items():
    logging.info("  %s = %s", key, value)


# Variables of the RACE head (and the pooler), which a pretrained
# checkpoint lacks.
NEW_VARIABLE_PATTERNS = (r"^logits/", r"^model/sequnece_summary/")


def train(FLAGS, input_fn):  # pylint: disable=invalid-name
  """Fine-tunes for --train_steps steps into --model_dir (see
  `finetune.train`): the loss of a batch is `race_heads.get_race_loss`."""
  return finetune.train(
      FLAGS, input_fn,
      lambda features, is_training: race_heads.get_race_loss(
          FLAGS, features)[0], allow_missing=NEW_VARIABLE_PATTERNS)


def predict(FLAGS, input_fn):  # pylint: disable=invalid-name
  """Runs the latest checkpoint of --model_dir over every record.

  Returns:
    list of dicts of NumPy values (`logits [4]`), one per question, in
    record order.
  """
  return finetune.predict_records(
      FLAGS, input_fn,
      lambda features, is_training: race_heads.get_race_predictions(
          FLAGS, features),
      FLAGS.eval_batch_size)


def run(FLAGS):  # pylint: disable=invalid-name
  """Runs the steps the flags ask for.

  Returns:
    the accuracies with --do_eval, else None.
  """
  validate_flags(FLAGS)
  sp_model = prepro_utils.load_sp_model(FLAGS.spiece_model_file,
                                        "spiece_model_file")
  spec = race_utils.feature_spec(FLAGS.max_seq_length)
  if FLAGS.do_train:
    _, path = prepro(FLAGS, sp_model, "train")
    train(FLAGS, qa_records.make_input_fn(
        [path], spec, is_training=True, drop_remainder=True,
        shuffle_buffer=FLAGS.shuffle_buffer, seed=FLAGS.seed))
  if not FLAGS.do_eval:
    return None
  examples, path = prepro(FLAGS, sp_model, FLAGS.eval_split)
  results = predict(FLAGS, qa_records.make_input_fn(
      [path], spec, is_training=False, drop_remainder=False))
  metrics = race_utils.accuracy_by_level(examples, results)
  write_eval_results(FLAGS, metrics)
  return metrics


def main(_):
  run(flags.FLAGS)


def entry_point():
  """The `run_race.py` command."""
  cli.run(main, define_flags)
