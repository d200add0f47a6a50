"""Sequence classification and regression: records, fine-tuning,
evaluation and prediction with typed settings (`ClassifierConfig`,
`ModelConfig`, `EngineConfig` of `xlnet/finetuning/config.py`).

  make_task_processor  the task's examples and labels
  train                fine-tunes from init_checkpoint into model_dir
  evaluate             every (or the latest) checkpoint on eval_split ->
                       model_dir/eval_results.txt and TensorBoard
  predict              the release's {task}.tsv / .logits.json (+ .ids.tsv)

A multi-label task (`--multi_label`) runs the same steps with its own
metrics, decision threshold and label sets (`classifier/multi_label.py`,
`classifier/multi_label_task.py`). `xlnet.finetuning.api.run_classifier`
chains them as `run_classifier.py` does.
"""
import json
import os
import socket
import time
import uuid

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet import io_utils
from xlnet.finetuning import checkpoint_eval
from xlnet.finetuning import finetune
from xlnet.finetuning.classifier import datasets as classifier_datasets
from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.classifier import metrics as metrics_lib
from xlnet.finetuning.classifier import multi_label as multi_label_lib
from xlnet.finetuning.classifier import multi_label_task
from xlnet.finetuning.long_documents import memory_forward
from xlnet.finetuning.long_documents import records as long_document_records
from xlnet.training import checkpoint_io
from xlnet.training import warm_start

EVAL_RESULTS = "eval_results.txt"


def make_task_processor(task):
  """The task's processor, with its labels settled.

  Args:
    task: a `ClassifierConfig`.

  Raises:
    ValueError: on an unknown task or an is_regression that contradicts
      the task.
  """
  user_options = dict(
      label_column=task.label_column, text_a_column=task.text_a_column,
      text_b_column=task.text_b_column,
      contains_header=task.contains_header,
      label_list=None if task.label_list is None else list(task.label_list),
      is_regression=bool(task.is_regression), multi_label=task.multi_label,
      label_delimiter=task.label_delimiter)
  processor = classifier_datasets.make_processor(task.task_name,
                                                   **user_options)
  if (task.is_regression is not None and
      task.is_regression != processor.is_regression):
    kind = "a regression" if processor.is_regression else "a classification"
    raise ValueError(f"--is_regression={task.is_regression} but "
                     f"--task_name={task.task_name} is {kind} task")
  return processor.resolve(task.data_dir)


def n_labels_of(processor):
  """A multi-label task's labels (the width of its multi-hot `label_ids`),
  else None."""
  return len(processor.get_labels()) if processor.multi_label else None


def head_fn(task, model, n_class):
  """The task's head as `head_fn(features, is_training)` -> dict of
  `classifier_head.get_head_outputs`.

  Args:
    task: a `ClassifierConfig` (task_name, cls_scope, how it reads long
      documents).
    model: a `ModelConfig`.
    n_class: int, or None for regression.
  """
  summarize = memory_forward.summarize_fn(task.long_document_settings,
                                          task.max_seq_length)

  def fn(features, is_training):
    return classifier_head.get_head_outputs(
        model.xlnet_config, model.run_config(is_training), features,
        n_class, task.task_name, task.cls_scope, model.summary_type,
        model.use_summ_proj, task.multi_label, summarize)
  return fn


def record_layout(task):
  """The layout of the task's feature records: None (one sequence per
  example), or its documents' windows (`long_documents/records.py`)."""
  return long_document_records.layout(task.long_document_settings)


def task_record(task, model, labels, pairs):
  """What a fine-tuned classifier's model_dir records of its task
  (`config.TASK_FILE`): how `loaded_model` turns texts into the features
  the head was trained on and its outputs into labels.

  Args:
    task: a `ClassifierConfig`.
    model: a `ModelConfig` (its `clamp_len`; the summary is in HEAD_FILE).
    labels: the task's label list, or None for regression.
    pairs: whether the task's examples are text pairs (the processor's).
  """
  record = {"kind": "classifier", "task_name": task.task_name,
            "pairs": pairs, "cls_scope": task.cls_scope,
            "label_list": None if labels is None else list(labels),
            "max_seq_length": task.max_seq_length, "uncased": task.uncased,
            "predict_threshold": task.predict_threshold,
            "clamp_len": model.run.clamp_len,
            **task.long_document_settings.record()}
  if task.multi_label:
    record.update(multi_label_task.task_record(task))
  return record


def check_init_checkpoint(init_checkpoint, max_seq_length, head,
                          is_regression, layout=None):
  """Checks that `init_checkpoint` holds the whole backbone, by name and
  shape, building the fine-tuning graph once in a scratch graph. Only the
  pooler and the task head may be missing.

  Args:
    init_checkpoint: a checkpoint prefix, directory or DIR/latest.
    max_seq_length: int, L.
    head: `head_fn(task, model, n_class)`.
    is_regression: bool, float labels.
    layout: the records' layout (`record_layout`).

  Raises:
    ValueError: naming the missing or mismatched variables.
  """
  prefix = checkpoint_io.resolve_checkpoint(init_checkpoint,
                                          "--init_checkpoint")
  with tf.Graph().as_default():
    windows = [layout.max_windows] if layout else []
    shape = [None] + windows + [max_seq_length]
    features = {
        "input_ids": tf.compat.v1.placeholder(tf.int32, shape),
        "segment_ids": tf.compat.v1.placeholder(tf.int32, shape),
        "input_mask": tf.compat.v1.placeholder(tf.float32, shape),
        "label_ids": tf.compat.v1.placeholder(
            tf.float32 if is_regression else tf.int32, [None])}
    if layout:
      features["window_mask"] = tf.compat.v1.placeholder(tf.float32,
                                                         [None] + windows)
    head(features, False)
    warm_start.get_assignment_map_from_checkpoint(
        tf.compat.v1.trainable_variables(), prefix,
        allow_missing=classifier_head.NEW_VARIABLE_PATTERNS)


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


def check_eval_split(task, processor):
  """Raises a one-line ValueError when evaluation is asked on a split
  without labels (GLUE test sets, the test file of a tsv/csv task)."""
  if not processor.labelled(task.eval_split):
    raise ValueError(
        f"--do_eval with --eval_split={task.eval_split}: the "
        f"{task.eval_split} split of --task_name={task.task_name} has no "
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
                      threshold=0.0, predictions=None):
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
    predictions: the n predictions as `{task}.tsv` writes them, or None:
      `predicted_labels` (a multi-label task's label sets:
      `multi_label_task.predictions`).

  Returns:
    (tsv path, json path, ids path).
  """
  labels = (predicted_labels(logits, label_list, threshold)
            if predictions is None else predictions)
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
def train(engine, input_fn, head, head_record, record=None):
  """Fine-tunes the model into engine.model_dir (see `finetune.train`):
  resumes from model_dir, else starts from init_checkpoint, whose lack of
  the new head (`classifier_head.NEW_VARIABLE_PATTERNS`) is expected.

  Args:
    engine: an `EngineConfig`.
    input_fn: `input_fn(params)` of `classifier_features.input_fn_builder`.
    head: `head(features, is_training)` -> dict of
      `classifier_head.get_head_outputs` (see `head_fn`).
    head_record: `ModelConfig.head_record()`, recorded in model_dir.
    record: a `config.ModelRecord`, recorded in model_dir, or None.
  """
  return finetune.train(
      engine, input_fn, lambda f, is_training: head(f, is_training)[
          "total_loss"], allow_missing=classifier_head.NEW_VARIABLE_PATTERNS,
      head=head_record, record=record)


def run_inference(engine, checkpoint, input_fn, head, batch_size):
  """The head's outputs for every example of `input_fn` (`batch_size`
  examples per step over all devices; the dataset is finite and padded).

  Returns:
    dict of NumPy arrays over every example produced (fakes included):
    `logits` [n, n_class] (or [n] for regression), `per_example_loss` [n],
    `label_ids` [n], `is_real_example` [n].
  """
  def outputs_fn(features, is_training):
    out = dict(head(features, is_training))
    del out["total_loss"]  # a scalar, not per example
    return out

  return finetune.predict(engine, checkpoint, input_fn, outputs_fn,
                          batch_size)


################################################################################
# Evaluation and prediction.
################################################################################
def real_example_mask(outputs, num_examples, what):
  """The bool mask of real examples in engine outputs, checked to count
  exactly `num_examples` (each real example once)."""
  real = np.asarray(outputs["is_real_example"]).reshape(-1) != 0
  if int(real.sum()) != num_examples:
    raise RuntimeError(f"{what}: the engine returned {int(real.sum())} real "
                       f"examples, expected {num_examples}")
  return real


def outputs_on(task, engine, processor, head, records, checkpoint,
               batch_size, what):
  """The head's outputs with `checkpoint` for every example of `records`
  ((record file, number of examples) of
  `classifier_features.prepare_records`), each real example checked to be
  there once (`real_example_mask`; `what` the check's message, e.g.
  "evaluating")."""
  record_file, num_examples = records
  input_fn = classifier_features.input_fn_builder(
      record_file, task.max_seq_length, False, processor.is_regression,
      num_examples=num_examples, pad_to_multiple=batch_size,
      n_labels=n_labels_of(processor), layout=record_layout(task))
  outputs = run_inference(engine, checkpoint, input_fn, head, batch_size)
  real_example_mask(outputs, num_examples, f"{what} {checkpoint}")
  return outputs


def needs_dev_records(task):
  """Whether evaluation and prediction read the dev split besides
  eval_split: a multi-label threshold chosen on dev, eval_split another
  split."""
  return (task.multi_label and task.eval_split != "dev" and
          task.multi_label_threshold == multi_label_lib.ON_DEV)


def multi_label_threshold(task, engine, processor, head, checkpoint, outputs,
                          dev_records, batch_size):
  """A multi-label checkpoint's decision threshold: the task's number, or
  the one chosen on the dev split's outputs (`outputs` when eval_split is
  dev, else those of `dev_records`), recorded beside the checkpoint
  (`multi_label_task.choose_on_dev`)."""
  if task.multi_label_threshold != multi_label_lib.ON_DEV:
    return task.multi_label_threshold
  if task.eval_split != "dev":
    outputs = outputs_on(task, engine, processor, head, dev_records,
                         checkpoint, batch_size, "choosing the threshold of")
  return multi_label_task.choose_on_dev(checkpoint, outputs)


def evaluate(task, engine, processor, record_file, num_examples, head,
             dev_records=None):
  """Evaluates the checkpoints of model_dir; writes and returns results.

  Args:
    task: a `ClassifierConfig`.
    engine: an `EngineConfig`.
    processor: the task's processor (`make_task_processor`).
    record_file, num_examples: the eval_split's records
      (`classifier_features.prepare_records`).
    head: see `head_fn`.
    dev_records: the dev split's records when `needs_dev_records`.

  Returns:
    list of (checkpoint, results dict) in evaluation order.
  """
  batch_size = task.eval_batch_size
  primary = f"eval_{processor.primary_metric}"
  results_path = os.path.join(engine.model_dir, EVAL_RESULTS)
  logdir = os.path.join(engine.model_dir,
                        f"eval_{processor.name}_{task.eval_split}")
  all_results = []
  prefixes = checkpoint_eval.checkpoints_to_evaluate(engine.model_dir,
                                                     task.eval_all_ckpt)
  start = time.time()
  for n, prefix in enumerate(prefixes):
    outputs = outputs_on(task, engine, processor, head,
                         (record_file, num_examples), prefix, batch_size,
                         "evaluating")
    scores = (outputs["logits"], outputs["label_ids"],
              outputs["is_real_example"], outputs["per_example_loss"])
    if processor.multi_label:
      results = multi_label_lib.evaluation_metrics(
          *scores, multi_label_threshold(task, engine, processor, head,
                                         prefix, outputs, dev_records,
                                         batch_size))
    else:
      results = metrics_lib.evaluation_metrics(
          processor.metrics, *scores, processor.is_regression)
    step = checkpoint_io.step_of(prefix)
    elapsed = time.time() - start
    logging.info("[%d/%d checkpoints, ETA %.0fs] %s: %s", n + 1,
                 len(prefixes), elapsed / (n + 1) * (len(prefixes) - n - 1),
                 prefix, results)
    best = checkpoint_eval.update_eval_results(
        results_path, processor.name, task.eval_split, prefix, results,
        primary)
    write_scalar_summaries(logdir, step or 0, {
        k: v for k, v in results.items() if k.startswith("eval_")})
    all_results.append((prefix, results))
  if best is not None:
    logging.info("Best of %s: %s = %s (%s)", processor.name, primary,
                 best[primary], best["checkpoint"])
  return all_results


def predict(task, engine, processor, record_file, num_examples, head,
            dev_records=None):
  """Labels the eval_split examples (arguments as `evaluate`) with
  task.predict_ckpt, else the latest checkpoint of model_dir.

  Returns:
    the paths written (see `write_predictions`).
  """
  checkpoint = (checkpoint_io.resolve_checkpoint(task.predict_ckpt,
                                               "--predict_ckpt")
                if task.predict_ckpt else
                tf.train.latest_checkpoint(engine.model_dir))
  if not checkpoint:
    raise ValueError(f"--model_dir={engine.model_dir} holds no checkpoint to "
                     "predict with (or give --predict_ckpt)")
  examples = processor.get_examples(task.data_dir, task.eval_split)
  if len(examples) != num_examples:
    raise ValueError(f"the {task.eval_split} split has {len(examples)} "
                     "examples but its "
                     f"records {record_file} hold {num_examples}; rerun "
                     "with --overwrite_data")
  batch_size = task.predict_batch_size
  outputs = outputs_on(task, engine, processor, head,
                       (record_file, num_examples), checkpoint, batch_size,
                       "predicting with")
  real = np.asarray(outputs["is_real_example"]).reshape(-1) != 0
  logits = np.asarray(outputs["logits"])[real]
  predictions = None
  if processor.multi_label:
    predictions = multi_label_task.predictions(
        logits, processor.get_labels(), task.label_delimiter,
        multi_label_threshold(task, engine, processor, head, checkpoint,
                              outputs, dev_records, batch_size))
  paths = write_predictions(
      task.predict_dir, processor.name, [e.guid for e in examples], logits,
      processor.get_labels(), task.predict_threshold, predictions)
  logging.info("Predictions of %s for %d examples: %s", checkpoint,
               num_examples, ", ".join(paths))
  return paths
