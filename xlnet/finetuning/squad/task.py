"""SQuAD with typed settings (`SquadConfig`, `ModelConfig`,
`EngineConfig` of `xlnet/finetuning/config.py`): the window records
(sharded training records, prediction records), fine-tuning, prediction and
the official evaluation of one or every checkpoint.

`xlnet.finetuning.api.run_squad` chains them as `run_squad.py` does.
"""
import json
import os

from absl import logging
import tensorflow as tf

from xlnet import io_utils
from xlnet.finetuning import checkpoint_eval
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning import finetune
from xlnet.finetuning import qa_records
from xlnet.finetuning import record_cache
from xlnet.finetuning.squad import features as squad_features
from xlnet.finetuning.squad import head as squad_head
from xlnet.finetuning.squad import official_eval
from xlnet.finetuning.squad import predictions as squad_predictions

# Metrics target_eval_key may name (see official_eval.evaluate).
TARGET_EVAL_KEYS = finetune_config.SQUAD_TARGET_EVAL_KEYS
# Every evaluated checkpoint's metrics and the best (checkpoint_eval).
EVAL_RESULTS = "eval_results.txt"
# Variables of the SQuAD heads, which a pretrained checkpoint lacks.
NEW_VARIABLE_PATTERNS = (r"^start_logits/", r"^end_logits/",
                         r"^answer_class/")


def _record_stem(task, data_file):
  """`{output_dir}/{data}.{spiece}.slen-L.qlen-Q.stride-S[.uncased]`."""
  data = os.path.splitext(os.path.basename(data_file))[0]
  spiece = os.path.splitext(os.path.basename(task.spiece_model_file))[0]
  case = ".uncased" if task.uncased else ""
  return os.path.join(
      task.output_dir,
      f"{data}.{spiece}.slen-{task.max_seq_length}."
      f"qlen-{task.max_query_length}.stride-{task.doc_stride}{case}")


def train_record_path(task, proc_id, num_proc, *, seed):
  """Path of training shard `proc_id` of `num_proc`; the name holds the
  order seed (the run's seed) and the options that change the targets, so
  records of other settings are not reused."""
  seed = qa_records.order_seed(seed)
  options = ((".trim" if task.trim_answer_whitespace else "") +
             (".keep-unaligned" if task.keep_unaligned else ""))
  return (f"{_record_stem(task, task.train_file)}."
          f"train-{proc_id}-of-{num_proc}.seed-{seed}{options}.tf_record")


def predict_record_path(task):
  """Path of the prediction records."""
  return f"{_record_stem(task, task.predict_file)}.predict.tf_record"


def _converter(task, sp_model, paragraphs, is_training):
  """A squad_features.FeatureConverter with the flags' settings."""
  return squad_features.FeatureConverter(
      sp_model, paragraphs, task.max_seq_length, task.max_query_length,
      task.doc_stride, task.uncased, is_training,
      trim_answer_whitespace=task.trim_answer_whitespace,
      keep_unaligned=task.keep_unaligned)


def train_record_key(task, num_proc, *, seed):
  """What the training records are made from (see `record_cache`): the
  digests of --train_file and the SentencePiece model, and every setting
  that changes the windows, their targets or their order. One key for
  every shard (each adds its `proc_id`), so the shards of one
  preprocessing match only when all read the same inputs.

  Returns:
    dict (JSON-able).
  """
  return {"train_file_sha1": record_cache.file_digest(task.train_file),
          "spiece_sha1": record_cache.file_digest(task.spiece_model_file),
          "max_seq_length": task.max_seq_length,
          "max_query_length": task.max_query_length,
          "doc_stride": task.doc_stride, "uncased": bool(task.uncased),
          "trim_answer_whitespace": bool(task.trim_answer_whitespace),
          "keep_unaligned": bool(task.keep_unaligned),
          "seed": qa_records.order_seed(seed), "num_proc": num_proc}


def _shard_key(key, proc_id):
  return dict(key, proc_id=proc_id)


def prepro_train_shard(task, sp_model, proc_id, num_proc, key=None,
                       wait=None, *, seed):
  """Writes the training records of one shard, unless they were made from
  the same inputs and settings (`record_cache.prepare`).

  Shard `proc_id` holds the questions of every `num_proc`-th paragraph, in
  an order shuffled once with `qa_records.order_seed(seed)` (and the
  shard).

  Args:
    key: `train_record_key(task, num_proc, seed=seed)` when known.
    wait: None, or seconds to wait for the chief to write them
      (`record_cache.prepare`).
    seed: the run's seed (`TrainConfig.seed`, the programs' --seed).

  Returns:
    the records' path.
  """
  path = train_record_path(task, proc_id, num_proc, seed=seed)
  key = key or train_record_key(task, num_proc, seed=seed)

  def write(out):
    paragraphs, examples, _ = squad_features.read_squad_examples(
        task.train_file, is_training=True, flag_name="train_file")
    shard = [e for e in examples if e.paragraph_index % num_proc == proc_id]
    shard = qa_records.shuffled(shard, qa_records.order_seed(seed), proc_id)
    converter = _converter(task, sp_model, paragraphs, is_training=True)
    count = qa_records.write_records(out, converter.iter_features(shard))
    logging.info("Wrote %d training features of %d questions to %s", count,
                 len(shard), out)
    if not count:
      logging.warning("%s holds no training feature (shard %d of %d has no "
                      "usable question)", out, proc_id, num_proc)
    return count

  record_cache.prepare(path, _shard_key(key, proc_id), write, wait=wait)
  return path


def release_train_records(task):
  """Training records the release's preprocessing wrote to --output_dir:
  `{spiece file name}.{proc_id}.slen-L.qlen-Q.train.tf_record`, sorted."""
  spiece = os.path.basename(task.spiece_model_file)
  return sorted(tf.io.gfile.glob(os.path.join(
      task.output_dir, f"{spiece}.*.slen-{task.max_seq_length}."
      f"qlen-{task.max_query_length}.train.tf_record")))


def train_record_paths(task, sp_model, wait=None, *, seed):
  """Paths of every training shard: ours when made from the current inputs
  and settings; else, when none of ours exists, the release's (see
  `release_train_records`); else written now when --num_proc=1 (with
  `wait` seconds: written by the chief of a multi-host run, which this
  process waits for; `record_cache.prepare`).

  Raises:
    ValueError: when shards of a sharded preprocessing are missing or were
      made from other inputs or settings.
  """
  n = task.num_proc
  key = train_record_key(task, n, seed=seed)
  paths = [train_record_path(task, i, n, seed=seed) for i in range(n)]
  why = {i: record_cache.check(path, _shard_key(key, i))[1]
         for i, path in enumerate(paths)}
  unusable = [i for i in range(n) if why[i] is not None]
  if not unusable:
    logging.info("Reusing the training records %s (made from the same data "
                 "and settings)", ", ".join(paths))
    return paths
  release = ([] if any(tf.io.gfile.exists(p) for p in paths) else
             release_train_records(task))
  if release:
    logging.info("Training on the release's records: %s (their order, "
                 "doc stride and casing are the release run's)",
                 ", ".join(release))
    return release
  if n == 1:
    prepro_train_shard(task, sp_model, 0, 1, key, wait, seed=seed)
    return paths
  problems = "; ".join(f"shard {i} {why[i]}" for i in unusable)
  raise ValueError(
      f"--output_dir={task.output_dir}: training records of shard(s) "
      f"{unusable} of --num_proc={n} are not ready ({problems}; expected "
      f"{paths[unusable[0]]} made from the current --train_file, "
      "--spiece_model_file and settings); run --do_prepro with those "
      "--proc_id values first (scripts/prepro_squad.sh)")


def prepro_predict(task, sp_model):
  """Reads --predict_file and writes its window records.

  Returns:
    (paragraphs, examples, converter, records path); the converter holds
    the windows that map predictions back to the paragraphs.
  """
  paragraphs, examples, _ = squad_features.read_squad_examples(
      task.predict_file, is_training=False, flag_name="predict_file")
  converter = _converter(task, sp_model, paragraphs, is_training=False)
  path = predict_record_path(task)
  count = qa_records.write_records(path, converter.iter_features(examples))
  logging.info("Wrote %d prediction features of %d questions to %s", count,
               len(examples), path)
  return paragraphs, examples, converter, path


def score_checkpoint(task, model, engine, checkpoint, prepared, input_fn,
                     dataset):
  """Predictions of one checkpoint and their official evaluation.

  Args:
    checkpoint: a checkpoint prefix.
    prepared: (paragraphs, examples, converter) from `prepro_predict`.
    input_fn: the prediction records' input function.
    dataset: the `data` list of --predict_file.

  Returns:
    (predictions, nbest, null_odds, metrics): dicts keyed by question id
    (see `squad_predictions.get_predictions`) and the metrics dict.
  """
  paragraphs, examples, converter = prepared
  predictions, nbest, null_odds = squad_predictions.get_predictions(
      examples, paragraphs, converter,
      predict(task, model, engine, input_fn, checkpoint),
      task.n_best_size, task.max_answer_length,
      answer_on_last_piece=task.answer_on_last_piece,
      skip_empty_answers=task.skip_empty_answers)
  metrics = official_eval.evaluate(dataset, predictions, null_odds)
  return predictions, nbest, null_odds, metrics


def write_prediction_files(predict_dir, predictions, nbest, null_odds,
                           metrics):
  """Writes predictions.json, null_odds.json, nbest_predictions.json and
  eval_results.json to the prediction directory."""
  for name, content in (("predictions.json", predictions),
                        ("null_odds.json", null_odds),
                        ("nbest_predictions.json", nbest),
                        ("eval_results.json", metrics)):
    io_utils.atomic_write(os.path.join(predict_dir, name),
                          json.dumps(content, indent=4) + "\n")
  logging.info("Wrote the predictions of %d questions and their evaluation "
               "to %s", len(predictions), predict_dir)


def record_checkpoint(task, results_dir, checkpoint, metrics):
  """Logs a checkpoint's metrics and rating, and adds them to
  eval_results.txt (see `checkpoint_eval.update_eval_results`).

  Returns:
    the best entry so far by --target_eval_key (values as str), or None.
  """
  for key, value in metrics.items():
    logging.info("  %s = %s", key, value)
  target = task.target_eval_key
  if target in metrics:
    logging.info("Checkpoint rating (--target_eval_key=%s): %s (%s)", target,
                 metrics[target], checkpoint)
  else:
    logging.warning("--target_eval_key=%s: %s has no such metric (no "
                    "answerable question?)", target, task.predict_file)
  split = os.path.splitext(os.path.basename(task.predict_file))[0]
  return checkpoint_eval.update_eval_results(
      os.path.join(results_dir, EVAL_RESULTS),
      "squad", split, checkpoint, metrics, target)


def latest_index(model_dir, prefixes):
  """Index in `prefixes` (checkpoints of `model_dir`, oldest first) of the
  latest checkpoint by the directory's state file, else the last one."""
  latest = tf.train.latest_checkpoint(model_dir)
  names = [os.path.basename(p) for p in prefixes]
  if latest and os.path.basename(latest) in names:
    return names.index(os.path.basename(latest))
  return len(prefixes) - 1


def evaluate_checkpoints(task, model, engine, prepared, input_fn):
  """Predicts with and evaluates the latest checkpoint of --model_dir
  (every one, oldest first, with --eval_all_ckpt); the prediction files
  are the latest's, and the best by --target_eval_key is logged.

  Returns:
    the latest checkpoint's metrics dict.
  """
  dataset = squad_features.load_squad_json(task.predict_file, "predict_file")
  results_dir = task.predict_dir or engine.model_dir
  prefixes = checkpoint_eval.checkpoints_to_evaluate(engine.model_dir,
                                                     task.eval_all_ckpt)
  shown = latest_index(engine.model_dir, prefixes)
  shown_metrics = best = None
  for n, prefix in enumerate(prefixes):
    logging.info("Evaluating checkpoint %d of %d: %s", n + 1, len(prefixes),
                 prefix)
    predictions, nbest, null_odds, metrics = score_checkpoint(
        task, model, engine, prefix, prepared, input_fn, dataset)
    best = record_checkpoint(task, results_dir, prefix, metrics)
    if n == shown:
      write_prediction_files(results_dir, predictions, nbest, null_odds,
                             metrics)
      shown_metrics = metrics
  if best is not None:
    logging.info("Best checkpoint by --target_eval_key=%s: %s (%s)",
                 task.target_eval_key, best["checkpoint"],
                 best[task.target_eval_key])
  return shown_metrics


def loss_fn(model):
  """`loss_fn(features, is_training)` -> the SQuAD loss of a batch
  (`squad_head.get_qa_loss`): always the training graph (dropout on, the
  end head conditioned on the gold start), whatever `is_training` says."""
  return lambda features, is_training: squad_head.get_qa_loss(
      model.xlnet_config, model.run_config(True), features)[0]


def outputs_fn(task, model):
  """`outputs_fn(features, is_training)` -> the beam of a batch
  (`squad_head.get_qa_predictions`), always without dropout."""
  return lambda features, is_training: squad_head.get_qa_predictions(
      model.xlnet_config, model.run_config(False), features,
      task.start_n_top, task.end_n_top)


def predict(task, model, engine, input_fn, checkpoint):
  """Runs a checkpoint over every prediction record.

  Returns:
    list of dicts of NumPy values, one per record (see
    `squad_predictions.get_predictions`).
  """
  outputs = finetune.predict(engine, checkpoint, input_fn,
                             outputs_fn(task, model),
                             task.predict_batch_size)
  return [dict(zip(outputs, values)) for values in zip(*outputs.values())]
