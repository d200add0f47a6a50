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
"""
import json
import os

from absl import flags
from absl import logging
import tensorflow as tf

from xlnet.flags import catalog as flag_catalog
from xlnet.flags import finetuning as finetune_flags
from xlnet.flags import rules as flag_rules
from xlnet.finetuning import checkpoint_eval
from xlnet import cli
from xlnet.finetuning import finetune
from xlnet import io_utils
from xlnet.data import prepro_utils
from xlnet.finetuning import qa_records
from xlnet.finetuning import squad_eval
from xlnet import squad_heads
from xlnet.finetuning import squad_utils

# Metrics --target_eval_key may name (see squad_eval.evaluate).
TARGET_EVAL_KEYS = ("best_f1", "best_exact", "has_ans_f1", "has_ans_exact",
                    "f1", "exact")
# Every evaluated checkpoint's metrics and the best (checkpoint_eval).
EVAL_RESULTS = "eval_results.txt"


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
  flags.DEFINE_enum("target_eval_key", "best_f1", TARGET_EVAL_KEYS,
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


def validate_flags(FLAGS):  # pylint: disable=invalid-name
  """Raises ValueError (naming the flag) on a setting that cannot work."""
  if not (FLAGS.do_prepro or FLAGS.do_train or FLAGS.do_predict):
    raise ValueError("nothing to do: set --do_prepro, --do_train and/or "
                     "--do_predict")
  finetune_flags.require(FLAGS, "spiece_model_file", "output_dir",
                   why="(the SentencePiece model and the records directory)")
  if FLAGS.do_prepro or FLAGS.do_train:
    finetune_flags.require(FLAGS, "train_file", why="with --do_prepro/--do_train")
  if FLAGS.do_train or FLAGS.do_predict:
    finetune_flags.require(FLAGS, "model_config_path", "model_dir",
                     why="with --do_train/--do_predict")
  if FLAGS.do_predict:
    finetune_flags.require(FLAGS, "predict_file", why="with --do_predict")
  finetune_flags.check_positive(
      FLAGS, "max_seq_length", "max_query_length", "doc_stride",
      "max_answer_length", "start_n_top", "end_n_top", "n_best_size",
      "num_proc", "train_batch_size", "predict_batch_size", "train_steps")
  flag_rules.check_all(FLAGS)
  if FLAGS.max_seq_length < FLAGS.max_query_length + 4:
    raise ValueError(
        f"--max_seq_length={FLAGS.max_seq_length} leaves no room for the "
        f"paragraph: it must be at least --max_query_length + 4 = "
        f"{FLAGS.max_query_length + 4}")
  for name in ("start_n_top", "end_n_top"):
    if getattr(FLAGS, name) > FLAGS.max_seq_length:
      raise ValueError(f"--{name}={getattr(FLAGS, name)} exceeds "
                       f"--max_seq_length={FLAGS.max_seq_length}")
  if not 0 <= FLAGS.proc_id < FLAGS.num_proc:
    raise ValueError(f"--proc_id={FLAGS.proc_id} must be in [0, "
                     f"--num_proc={FLAGS.num_proc})")


def _record_stem(FLAGS, data_file):  # pylint: disable=invalid-name
  """`{output_dir}/{data}.{spiece}.slen-L.qlen-Q.stride-S[.uncased]`."""
  data = os.path.splitext(os.path.basename(data_file))[0]
  spiece = os.path.splitext(os.path.basename(FLAGS.spiece_model_file))[0]
  case = ".uncased" if FLAGS.uncased else ""
  return os.path.join(
      FLAGS.output_dir,
      f"{data}.{spiece}.slen-{FLAGS.max_seq_length}."
      f"qlen-{FLAGS.max_query_length}.stride-{FLAGS.doc_stride}{case}")


def train_record_path(FLAGS, proc_id, num_proc):  # pylint: disable=invalid-name
  """Path of training shard `proc_id` of `num_proc`; the name holds the
  order seed and the options that change the targets, so records of
  other settings are not reused."""
  seed = qa_records.order_seed(FLAGS.seed)
  options = ((".trim" if FLAGS.trim_answer_whitespace else "") +
             (".keep-unaligned" if FLAGS.keep_unaligned else ""))
  return (f"{_record_stem(FLAGS, FLAGS.train_file)}."
          f"train-{proc_id}-of-{num_proc}.seed-{seed}{options}.tf_record")


def predict_record_path(FLAGS):  # pylint: disable=invalid-name
  """Path of the prediction records."""
  return f"{_record_stem(FLAGS, FLAGS.predict_file)}.predict.tf_record"


def _converter(FLAGS, sp_model, paragraphs, is_training):  # pylint: disable=invalid-name
  """A squad_utils.FeatureConverter with the flags' settings."""
  return squad_utils.FeatureConverter(
      sp_model, paragraphs, FLAGS.max_seq_length, FLAGS.max_query_length,
      FLAGS.doc_stride, FLAGS.uncased, is_training,
      trim_answer_whitespace=FLAGS.trim_answer_whitespace,
      keep_unaligned=FLAGS.keep_unaligned)


def prepro_train_shard(FLAGS, sp_model, proc_id, num_proc):  # pylint: disable=invalid-name
  """Writes the training records of one shard.

  Shard `proc_id` holds the questions of every `num_proc`-th paragraph, in
  an order shuffled once with `qa_records.order_seed(--seed)` (and the
  shard).

  Returns:
    the records' path.
  """
  paragraphs, examples, _ = squad_utils.read_squad_examples(
      FLAGS.train_file, is_training=True, flag_name="train_file")
  shard = [e for e in examples if e.paragraph_index % num_proc == proc_id]
  shard = qa_records.shuffled(shard, qa_records.order_seed(FLAGS.seed),
                              proc_id)
  path = train_record_path(FLAGS, proc_id, num_proc)
  converter = _converter(FLAGS, sp_model, paragraphs, is_training=True)
  count = qa_records.write_records(path, converter.iter_features(shard))
  logging.info("Wrote %d training features of %d questions to %s", count,
               len(shard), path)
  if not count:
    logging.warning("%s holds no training feature (shard %d of %d has no "
                    "usable question)", path, proc_id, num_proc)
  return path


def release_train_records(FLAGS):  # pylint: disable=invalid-name
  """Training records the release's preprocessing wrote to --output_dir:
  `{spiece file name}.{proc_id}.slen-L.qlen-Q.train.tf_record`, sorted."""
  spiece = os.path.basename(FLAGS.spiece_model_file)
  return sorted(tf.io.gfile.glob(os.path.join(
      FLAGS.output_dir, f"{spiece}.*.slen-{FLAGS.max_seq_length}."
      f"qlen-{FLAGS.max_query_length}.train.tf_record")))


def train_record_paths(FLAGS, sp_model):  # pylint: disable=invalid-name
  """Paths of every training shard: ours, else the release's (see
  `release_train_records`), else written now when --num_proc=1.

  Raises:
    ValueError: when shards of a sharded preprocessing are missing.
  """
  paths = [train_record_path(FLAGS, i, FLAGS.num_proc)
           for i in range(FLAGS.num_proc)]
  missing = [i for i, path in enumerate(paths)
             if not tf.io.gfile.exists(path)]
  release = release_train_records(FLAGS) if missing else []
  if release:
    logging.info("Training on the release's records: %s (their order, "
                 "doc stride and casing are the release run's)",
                 ", ".join(release))
    return release
  if missing and FLAGS.num_proc == 1:
    prepro_train_shard(FLAGS, sp_model, 0, 1)
  elif missing:
    raise ValueError(
        f"--output_dir={FLAGS.output_dir}: training records of shard(s) "
        f"{missing} of --num_proc={FLAGS.num_proc} are missing (expected "
        f"{paths[missing[0]]}); run --do_prepro with those --proc_id values "
        "first (scripts/prepro_squad.sh)")
  return paths


def prepro_predict(FLAGS, sp_model):  # pylint: disable=invalid-name
  """Reads --predict_file and writes its window records.

  Returns:
    (paragraphs, examples, converter, records path); the converter holds
    the windows that map predictions back to the paragraphs.
  """
  paragraphs, examples, _ = squad_utils.read_squad_examples(
      FLAGS.predict_file, is_training=False, flag_name="predict_file")
  converter = _converter(FLAGS, sp_model, paragraphs, is_training=False)
  path = predict_record_path(FLAGS)
  count = qa_records.write_records(path, converter.iter_features(examples))
  logging.info("Wrote %d prediction features of %d questions to %s", count,
               len(examples), path)
  return paragraphs, examples, converter, path


def score_checkpoint(FLAGS, checkpoint, prepared, input_fn, dataset):  # pylint: disable=invalid-name
  """Predictions of one checkpoint and their official evaluation.

  Args:
    checkpoint: a checkpoint prefix.
    prepared: (paragraphs, examples, converter) from `prepro_predict`.
    input_fn: the prediction records' input function.
    dataset: the `data` list of --predict_file.

  Returns:
    (predictions, nbest, null_odds, metrics): dicts keyed by question id
    (see `squad_utils.get_predictions`) and the metrics dict.
  """
  paragraphs, examples, converter = prepared
  predictions, nbest, null_odds = squad_utils.get_predictions(
      examples, paragraphs, converter, predict(FLAGS, input_fn, checkpoint),
      FLAGS.n_best_size, FLAGS.max_answer_length,
      answer_on_last_piece=FLAGS.answer_on_last_piece,
      skip_empty_answers=FLAGS.skip_empty_answers)
  metrics = squad_eval.evaluate(dataset, predictions, null_odds)
  return predictions, nbest, null_odds, metrics


def write_prediction_files(FLAGS, predictions, nbest, null_odds, metrics):  # pylint: disable=invalid-name
  """Writes predictions.json, null_odds.json, nbest_predictions.json and
  eval_results.json to the prediction directory."""
  predict_dir = FLAGS.predict_dir or FLAGS.model_dir
  for name, content in (("predictions.json", predictions),
                        ("null_odds.json", null_odds),
                        ("nbest_predictions.json", nbest),
                        ("eval_results.json", metrics)):
    io_utils.atomic_write(os.path.join(predict_dir, name),
                          json.dumps(content, indent=4) + "\n")
  logging.info("Wrote the predictions of %d questions and their evaluation "
               "to %s", len(predictions), predict_dir)


def record_checkpoint(FLAGS, checkpoint, metrics):  # pylint: disable=invalid-name
  """Logs a checkpoint's metrics and rating, and adds them to
  eval_results.txt (see `checkpoint_eval.update_eval_results`).

  Returns:
    the best entry so far by --target_eval_key (values as str), or None.
  """
  for key, value in metrics.items():
    logging.info("  %s = %s", key, value)
  target = FLAGS.target_eval_key
  if target in metrics:
    logging.info("Checkpoint rating (--target_eval_key=%s): %s (%s)", target,
                 metrics[target], checkpoint)
  else:
    logging.warning("--target_eval_key=%s: %s has no such metric (no "
                    "answerable question?)", target, FLAGS.predict_file)
  split = os.path.splitext(os.path.basename(FLAGS.predict_file))[0]
  return checkpoint_eval.update_eval_results(
      os.path.join(FLAGS.predict_dir or FLAGS.model_dir, EVAL_RESULTS),
      "squad", split, checkpoint, metrics, target)


def latest_index(model_dir, prefixes):
  """Index in `prefixes` (checkpoints of `model_dir`, oldest first) of the
  latest checkpoint by the directory's state file, else the last one."""
  latest = tf.train.latest_checkpoint(model_dir)
  names = [os.path.basename(p) for p in prefixes]
  if latest and os.path.basename(latest) in names:
    return names.index(os.path.basename(latest))
  return len(prefixes) - 1


def evaluate_checkpoints(FLAGS, prepared, input_fn):  # pylint: disable=invalid-name
  """Predicts with and evaluates the latest checkpoint of --model_dir
  (every one, oldest first, with --eval_all_ckpt); the prediction files
  are the latest's, and the best by --target_eval_key is logged.

  Returns:
    the latest checkpoint's metrics dict.
  """
  dataset = squad_utils.load_squad_json(FLAGS.predict_file, "predict_file")
  prefixes = checkpoint_eval.checkpoints_to_evaluate(FLAGS)
  shown = latest_index(FLAGS.model_dir, prefixes)
  shown_metrics = best = None
  for n, prefix in enumerate(prefixes):
    logging.info("Evaluating checkpoint %d of %d: %s", n + 1, len(prefixes),
                 prefix)
    predictions, nbest, null_odds, metrics = score_checkpoint(
        FLAGS, prefix, prepared, input_fn, dataset)
    best = record_checkpoint(FLAGS, prefix, metrics)
    if n == shown:
      write_prediction_files(FLAGS, predictions, nbest, null_odds, metrics)
      shown_metrics = metrics
  if best is not None:
    logging.info("Best checkpoint by --target_eval_key=%s: %s (%s)",
                 FLAGS.target_eval_key, best["checkpoint"],
                 best[FLAGS.target_eval_key])
  return shown_metrics


# Variables of the SQuAD heads, which a pretrained checkpoint lacks.
NEW_VARIABLE_PATTERNS = (r"^start_logits/", r"^end_logits/",
                         r"^answer_class/")


def train(FLAGS, input_fn):  # pylint: disable=invalid-name
  """Fine-tunes for --train_steps steps into --model_dir (see
  `finetune.train`): the loss of a batch is `squad_heads.get_qa_loss`."""
  return finetune.train(
      FLAGS, input_fn,
      lambda features, is_training: squad_heads.get_qa_loss(
          FLAGS, features)[0], allow_missing=NEW_VARIABLE_PATTERNS)


def predict(FLAGS, input_fn, checkpoint):  # pylint: disable=invalid-name
  """Runs a checkpoint over every prediction record.

  Returns:
    list of dicts of NumPy values, one per record (see
    `squad_utils.get_predictions`).
  """
  outputs = finetune.predict(
      FLAGS, checkpoint, input_fn,
      lambda features, is_training: squad_heads.get_qa_predictions(
          FLAGS, features),
      finetune_flags.global_batch_size(FLAGS, FLAGS.predict_batch_size))
  return [dict(zip(outputs, values)) for values in zip(*outputs.values())]


def run(FLAGS):  # pylint: disable=invalid-name
  """Runs the steps the flags ask for.

  Returns:
    the evaluation metrics with --do_predict, else None.
  """
  validate_flags(FLAGS)
  sp_model = prepro_utils.load_sp_model(FLAGS.spiece_model_file,
                                        "spiece_model_file")
  if FLAGS.do_prepro:
    prepro_train_shard(FLAGS, sp_model, FLAGS.proc_id, FLAGS.num_proc)
  if FLAGS.do_train:
    input_fn = qa_records.make_input_fn(
        train_record_paths(FLAGS, sp_model),
        squad_utils.feature_spec(FLAGS.max_seq_length, is_training=True),
        is_training=True, drop_remainder=True,
        shuffle_buffer=FLAGS.shuffle_buffer, seed=FLAGS.seed)
    train(FLAGS, input_fn)
  if not FLAGS.do_predict:
    return None
  paragraphs, examples, converter, path = prepro_predict(FLAGS, sp_model)
  input_fn = qa_records.make_input_fn(
      [path], squad_utils.feature_spec(FLAGS.max_seq_length,
                                       is_training=False),
      is_training=False, drop_remainder=False)
  return evaluate_checkpoints(FLAGS, (paragraphs, examples, converter),
                              input_fn)


def main(_):
  run(flags.FLAGS)


def entry_point():
  """The `run_squad.py` command."""
  cli.run(main, define_flags)
