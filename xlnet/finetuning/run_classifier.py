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

Training and inference run on the shared fine-tuning driver
(`xlnet/finetuning/finetune.py`).
"""
import functools
import json
import os
import socket
import time
import uuid

from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from xlnet.flags import catalog as flag_catalog
from xlnet.flags import finetuning as finetune_flags
from xlnet import classifier_heads
from xlnet.finetuning import classifier_processors
from xlnet.finetuning import classifier_utils
from xlnet import cli
from xlnet.finetuning.checkpoint_eval import checkpoint_step
from xlnet.finetuning.checkpoint_eval import checkpoints_to_evaluate
from xlnet.finetuning.checkpoint_eval import list_checkpoints  # noqa: F401
from xlnet.finetuning.checkpoint_eval import update_eval_results
from xlnet.finetuning import finetune
from xlnet import io_utils
from xlnet.finetuning import metrics as metrics_lib
from xlnet.data import prepro_utils
from xlnet.training import checkpoint_io
from xlnet.training import warm_start

EVAL_RESULTS = "eval_results.txt"


def define_flags(flag_values=flags.FLAGS):
  """Defines the common fine-tuning flags and the task flags."""
  flag_catalog.define_common_flags(flag_values)
  if "task_name" in flag_values:
    return
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("task_name", None,
                      "Task: " + ", ".join(classifier_processors.TASK_NAMES)
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


################################################################################
# Flags and paths.
################################################################################
def make_task_processor(FLAGS):  # pylint: disable=invalid-name
  """The task's processor, with its labels settled.

  Raises:
    ValueError: on an unknown task or an --is_regression that contradicts
      the task.
  """
  user_options = dict(
      label_column=FLAGS.label_column, text_a_column=FLAGS.text_a_column,
      text_b_column=FLAGS.text_b_column,
      contains_header=FLAGS.contains_header, label_list=FLAGS.label_list,
      is_regression=bool(FLAGS.is_regression))
  processor = classifier_processors.make_processor(FLAGS.task_name,
                                                   **user_options)
  if (FLAGS.is_regression is not None and
      FLAGS.is_regression != processor.is_regression):
    kind = "a regression" if processor.is_regression else "a classification"
    raise ValueError(f"--is_regression={FLAGS.is_regression} but "
                     f"--task_name={FLAGS.task_name} is {kind} task")
  return processor.resolve(FLAGS.data_dir)


def check_task_flags(FLAGS):  # pylint: disable=invalid-name
  """Validates the task flags; raises a one-line ValueError naming one."""
  if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict):
    raise ValueError("nothing to do: set --do_train, --do_eval and/or "
                     "--do_predict")
  if not FLAGS.task_name:
    raise ValueError("--task_name is required (one of "
                     f"{', '.join(classifier_processors.TASK_NAMES)})")
  for name, why in (("data_dir", "the task's data"),
                    ("output_dir", "where the feature records are cached")):
    if not getattr(FLAGS, name):
      raise ValueError(f"--{name} is required ({why})")
  if not tf.io.gfile.isdir(FLAGS.data_dir):
    raise ValueError(f"--data_dir={FLAGS.data_dir} is not a directory")
  if FLAGS.do_predict and not FLAGS.predict_dir:
    raise ValueError("--predict_dir is required with --do_predict")
  if FLAGS.max_seq_length < classifier_utils.MIN_SEQ_LENGTH:
    raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} must be >= "
                     f"{classifier_utils.MIN_SEQ_LENGTH} (one piece, <sep> "
                     "and <cls>)")
  if FLAGS.max_seq_length > classifier_utils.PRETRAIN_SEQ_LENGTH:
    logging.warning(
        "--max_seq_length=%d exceeds the released models' pretraining "
        "length %d: relative distances beyond that were never trained",
        FLAGS.max_seq_length, classifier_utils.PRETRAIN_SEQ_LENGTH)
  for name in ("eval_batch_size", "predict_batch_size", "num_passes"):
    if getattr(FLAGS, name) < 1:
      raise ValueError(f"--{name}={getattr(FLAGS, name)} must be >= 1")


def check_init_checkpoint(FLAGS, n_class):  # pylint: disable=invalid-name
  """Checks that `--init_checkpoint` holds the whole backbone, by name and
  shape, building the fine-tuning graph once in a scratch graph. Only the
  pooler and the task head may be missing.

  Raises:
    ValueError: naming the missing or mismatched variables.
  """
  prefix = checkpoint_io.resolve_checkpoint(FLAGS.init_checkpoint,
                                          "--init_checkpoint")
  with tf.Graph().as_default():
    length = FLAGS.max_seq_length
    features = {
        "input_ids": tf.compat.v1.placeholder(tf.int32, [None, length]),
        "segment_ids": tf.compat.v1.placeholder(tf.int32, [None, length]),
        "input_mask": tf.compat.v1.placeholder(tf.float32, [None, length]),
        "label_ids": tf.compat.v1.placeholder(
            tf.float32 if n_class is None else tf.int32, [None])}
    classifier_heads.get_head_outputs(FLAGS, features, n_class, False)
    warm_start.get_assignment_map_from_checkpoint(
        tf.compat.v1.trainable_variables(), prefix,
        allow_missing=classifier_heads.NEW_VARIABLE_PATTERNS)


################################################################################
# Results: eval_results.txt, TensorBoard, predictions.
################################################################################
def write_scalar_summaries(logdir, step, scalars):
  """Writes scalars at `step` as a TensorBoard event file in `logdir`.

  One new, complete `events.out.tfevents.*` file per call (TensorBoard
  reads every event file of a directory), written as TFRecords of Event
  protos so that it works in graph and eager mode alike.
  """
  wall_time = time.time()
  # Names sort in time order (to the microsecond), as TensorBoard reads them.
  name = (f"events.out.tfevents.{wall_time:.6f}.{socket.gethostname()}."
          f"{os.getpid()}.{uuid.uuid4().hex[:8]}")
  summary = tf.compat.v1.Summary(value=[
      tf.compat.v1.Summary.Value(tag=tag, simple_value=float(value))
      for tag, value in scalars.items()])
  events = [tf.compat.v1.Event(wall_time=wall_time,
                               file_version="brain.Event:2"),
            tf.compat.v1.Event(wall_time=wall_time, step=step,
                               summary=summary)]
  with io_utils.atomic_output(os.path.join(logdir, name)) as tmp:
    with tf.io.TFRecordWriter(tmp) as writer:
      for event in events:
        writer.write(event.SerializeToString())


def check_eval_split(FLAGS, processor):  # pylint: disable=invalid-name
  """Raises a one-line ValueError when --do_eval is asked on a split
  without labels (GLUE test sets, the test file of a tsv/csv task)."""
  if FLAGS.do_eval and not processor.labelled(FLAGS.eval_split):
    raise ValueError(
        f"--do_eval with --eval_split={FLAGS.eval_split}: the "
        f"{FLAGS.eval_split} split of --task_name={FLAGS.task_name} has no "
        "labels to evaluate against (use --do_predict alone, or "
        "--eval_split=dev)")


def predicted_labels(logits, label_list, threshold=0.0):
  """The prediction of each example.

  Args:
    logits: float array `[n, n_class]`, or `[n]` scores for regression.
    label_list: list of label strings, or None for regression.
    threshold: binary tasks: the second label wins when its logit minus the
      first one's exceeds this (0: the larger logit, the first on ties).

  Returns:
    list of n label strings, or of n floats for regression.
  """
  logits = np.asarray(logits, dtype=np.float64)
  if label_list is None:
    return [float(x) for x in logits.reshape(len(logits))]
  if len(label_list) == 2:
    second = logits[:, 1] - logits[:, 0] > threshold
    return [label_list[int(s)] for s in second]
  return [label_list[i] for i in np.argmax(logits, axis=-1)]


def write_predictions(predict_dir, task, guids, logits, label_list,
                      threshold=0.0):
  """Writes the release's prediction files, and the example ids, into
  `predict_dir`.

    * `{task}.tsv`: a header `index<TAB>prediction`, then one line per
      example in input order: its running index from 0 and the predicted
      label (regression: the score as Python prints the float).
    * `{task}.logits.json`: a JSON list (indent 4) of per-example lists of
      logits (regression: one value).
    * `{task}.ids.tsv`: a header `index<TAB>id`, then each running index
      with the example's id (GLUE test files: their `index` column; IMDB:
      `pos/123_9.txt`; CSV and tsv/csv tasks: the row number).

  Args:
    predict_dir: str.
    task: str, the file name stem (the lower-case task name).
    guids: list of n example ids.
    logits: float32 `[n, n_class]` or `[n]` (regression), real examples
      only.
    label_list: list of labels, or None for regression.
    threshold: see `predicted_labels`.

  Returns:
    (tsv path, json path, ids path).
  """
  labels = predicted_labels(logits, label_list, threshold)
  if len(labels) != len(guids):
    raise ValueError(f"{len(labels)} predictions for {len(guids)} examples")
  # float32 values as Python floats, as the release's `float(x)`.
  rows = np.asarray(logits, np.float32).reshape(len(guids), -1).tolist()
  paths = [os.path.join(predict_dir, f"{task}{suffix}")
           for suffix in (".tsv", ".logits.json", ".ids.tsv")]
  io_utils.atomic_write(paths[0], "index\tprediction\n" + "".join(
      f"{i}\t{label}\n" for i, label in enumerate(labels)))
  io_utils.atomic_write(paths[1], json.dumps(rows, indent=4))
  io_utils.atomic_write(paths[2], "index\tid\n" + "".join(
      f"{i}\t{guid}\n" for i, guid in enumerate(guids)))
  return tuple(paths)


################################################################################
# The calls into the shared training engine.
################################################################################
def train(FLAGS, input_fn, head_fn):  # pylint: disable=invalid-name
  """Fine-tunes the model into FLAGS.model_dir (see `finetune.train`):
  resumes from model_dir, else starts from --init_checkpoint, whose lack of
  the new head (`classifier_heads.NEW_VARIABLE_PATTERNS`) is expected.

  Args:
    FLAGS: the flags.
    input_fn: `input_fn(params)` of `classifier_utils.input_fn_builder`.
    head_fn: `head_fn(features, is_training)` -> dict of
      `classifier_heads.get_head_outputs`.
  """
  return finetune.train(
      FLAGS, input_fn, lambda f, is_training: head_fn(f, is_training)[
          "total_loss"], allow_missing=classifier_heads.NEW_VARIABLE_PATTERNS)


def run_inference(FLAGS, checkpoint, input_fn, head_fn, batch_size):  # pylint: disable=invalid-name
  """The head's outputs for every example of `input_fn` (`batch_size`
  examples per step over all devices; the dataset is finite and padded).

  Returns:
    dict of NumPy arrays over every example produced (fakes included):
    `logits` [n, n_class] (or [n] for regression), `per_example_loss` [n],
    `label_ids` [n], `is_real_example` [n].
  """
  def outputs_fn(features, is_training):
    out = dict(head_fn(features, is_training))
    del out["total_loss"]  # a scalar, not per example
    return out

  return finetune.predict(FLAGS, checkpoint, input_fn, outputs_fn,
                          batch_size)


################################################################################
# The program.
################################################################################
def real_example_mask(outputs, num_examples, what):
  """The bool mask of real examples in engine outputs, checked to count
  exactly `num_examples` (each real example once)."""
  real = np.asarray(outputs["is_real_example"]).reshape(-1) != 0
  if int(real.sum()) != num_examples:
    raise RuntimeError(f"{what}: the engine returned {int(real.sum())} real "
                       f"examples, expected {num_examples}")
  return real


def evaluate(FLAGS, processor, record_file, num_examples, head_fn):  # pylint: disable=invalid-name
  """Evaluates the checkpoints of model_dir; writes and returns results.

  Returns:
    list of (checkpoint, results dict) in evaluation order.
  """
  is_regression = processor.is_regression
  batch_size = finetune_flags.global_batch_size(FLAGS, FLAGS.eval_batch_size)
  input_fn = classifier_utils.input_fn_builder(
      record_file, FLAGS.max_seq_length, False, is_regression,
      num_examples=num_examples, pad_to_multiple=batch_size)
  primary = f"eval_{processor.primary_metric}"
  results_path = os.path.join(FLAGS.model_dir, EVAL_RESULTS)
  logdir = os.path.join(FLAGS.model_dir,
                        f"eval_{processor.name}_{FLAGS.eval_split}")
  all_results = []
  prefixes = checkpoints_to_evaluate(FLAGS)
  start = time.time()
  for n, prefix in enumerate(prefixes):
    outputs = run_inference(FLAGS, prefix, input_fn, head_fn, batch_size)
    real_example_mask(outputs, num_examples, f"evaluating {prefix}")
    results = metrics_lib.evaluation_metrics(
        processor.metrics, outputs["logits"], outputs["label_ids"],
        outputs["is_real_example"], outputs["per_example_loss"],
        is_regression)
    step = checkpoint_step(prefix)
    elapsed = time.time() - start
    logging.info("[%d/%d checkpoints, ETA %.0fs] %s: %s", n + 1,
                 len(prefixes), elapsed / (n + 1) * (len(prefixes) - n - 1),
                 prefix, results)
    best = update_eval_results(results_path, processor.name,
                               FLAGS.eval_split, prefix, results, primary)
    write_scalar_summaries(logdir, step or 0, {
        k: v for k, v in results.items() if k.startswith("eval_")})
    all_results.append((prefix, results))
  if best is not None:
    logging.info("Best of %s: %s = %s (%s)", processor.name, primary,
                 best[primary], best["checkpoint"])
  return all_results


def predict(FLAGS, processor, record_file, num_examples, head_fn):  # pylint: disable=invalid-name
  """Labels the --eval_split examples; returns the paths written."""
  checkpoint = (checkpoint_io.resolve_checkpoint(FLAGS.predict_ckpt,
                                               "--predict_ckpt")
                if FLAGS.predict_ckpt else
                tf.train.latest_checkpoint(FLAGS.model_dir))
  if not checkpoint:
    raise ValueError(f"--model_dir={FLAGS.model_dir} holds no checkpoint to "
                     "predict with (or give --predict_ckpt)")
  examples = processor.get_examples(FLAGS.data_dir, FLAGS.eval_split)
  if len(examples) != num_examples:
    raise ValueError(f"the {FLAGS.eval_split} split has {len(examples)} "
                     "examples but its "
                     f"records {record_file} hold {num_examples}; rerun "
                     "with --overwrite_data")
  batch_size = finetune_flags.global_batch_size(FLAGS,
                                                FLAGS.predict_batch_size)
  input_fn = classifier_utils.input_fn_builder(
      record_file, FLAGS.max_seq_length, False, processor.is_regression,
      num_examples=num_examples, pad_to_multiple=batch_size)
  outputs = run_inference(FLAGS, checkpoint, input_fn, head_fn, batch_size)
  real = real_example_mask(outputs, num_examples, f"predicting with "
                           f"{checkpoint}")
  paths = write_predictions(
      FLAGS.predict_dir, processor.name, [e.guid for e in examples],
      np.asarray(outputs["logits"])[real], processor.get_labels(),
      FLAGS.predict_threshold)
  logging.info("Predictions of %s for %d examples: %s", checkpoint,
               num_examples, ", ".join(paths))
  return paths


def run(FLAGS):  # pylint: disable=invalid-name
  """Validates the flags, prepares the records, then trains, evaluates and
  predicts as asked."""
  check_task_flags(FLAGS)
  xlnet_config = finetune_flags.check_common_flags(FLAGS)
  sp_model = prepro_utils.load_sp_model(FLAGS.spiece_model_file,
                                        "spiece_model_file")
  if sp_model.get_piece_size() > xlnet_config.n_token:
    raise ValueError(
        f"--spiece_model_file={FLAGS.spiece_model_file} has "
        f"{sp_model.get_piece_size()} pieces but --model_config_path="
        f"{FLAGS.model_config_path} has n_token={xlnet_config.n_token}: "
        "they belong to different models")
  processor = make_task_processor(FLAGS)
  labels = processor.get_labels()
  n_class = None if labels is None else len(labels)
  check_eval_split(FLAGS, processor)
  if FLAGS.do_train and FLAGS.init_checkpoint:
    check_init_checkpoint(FLAGS, n_class)
  prepare = functools.partial(
      classifier_utils.prepare_records, processor, FLAGS.data_dir,
      output_dir=FLAGS.output_dir, max_seq_length=FLAGS.max_seq_length,
      sp_model=sp_model, spiece_model_file=FLAGS.spiece_model_file,
      uncased=FLAGS.uncased, overwrite=FLAGS.overwrite_data)
  # Every split's records exist before the (long) training starts.
  if FLAGS.do_train:
    # A seeded order (--seed unset: 0), so a rerun writes the same records.
    train_file, _ = prepare("train", shuffle_seed=FLAGS.seed or 0)
  if FLAGS.do_eval or FLAGS.do_predict:
    eval_records = prepare(FLAGS.eval_split)

  def head_fn(features, is_training):
    """The task's head on batch-major features (see get_head_outputs)."""
    return classifier_heads.get_head_outputs(FLAGS, features, n_class,
                                             is_training)

  if FLAGS.do_train:
    train(FLAGS, classifier_utils.input_fn_builder(
        train_file, FLAGS.max_seq_length, True, processor.is_regression,
        shuffle_buffer=FLAGS.shuffle_buffer, seed=FLAGS.seed), head_fn)
  if FLAGS.do_eval:
    evaluate(FLAGS, processor, *eval_records, head_fn)
  if FLAGS.do_predict:
    predict(FLAGS, processor, *eval_records, head_fn)


def main(unused_argv):
  """absl main: runs the program on the parsed global flags."""
  run(flags.FLAGS)


def entry_point():
  """`python run_classifier.py ...`: defines the flags and runs `main`."""
  cli.run(main, define_flags)
