"""RACE with typed settings (`RaceConfig`, `ModelConfig`, `EngineConfig`
of `xlnet/finetuning/config.py`): records, fine-tuning and the accuracy on
middle, high and all.

`xlnet.finetuning.api.run_race` chains them as `run_race.py` does.
"""
import json
import os

from absl import logging
import tensorflow as tf

from xlnet import io_utils
from xlnet.finetuning import finetune
from xlnet.finetuning import qa_records
from xlnet.finetuning import record_cache
from xlnet.finetuning.race import features as race_features
from xlnet.finetuning.race import head as race_head

# Variables of the RACE head (and the pooler), which a pretrained
# checkpoint lacks.
NEW_VARIABLE_PATTERNS = (r"^logits/", r"^model/sequnece_summary/")


def record_path(task, split, seed=None):
  """`{output_dir}/{spiece}.len-L.qa-Q[.uncased].{levels}.{split}.tf_record`,
  with `.seed-S` before `.tf_record` for the training split, shuffled with
  `seed` (the run's)."""
  spiece = os.path.splitext(os.path.basename(task.spiece_model_file))[0]
  case = ".uncased" if task.uncased else ""
  levels = "-".join(race_features.race_levels(task.high_only,
                                              task.middle_only))
  seed = f".seed-{qa_records.order_seed(seed)}" if split == "train" else ""
  return os.path.join(
      task.output_dir,
      f"{spiece}.len-{task.max_seq_length}.qa-{task.max_qa_length}{case}."
      f"{levels}.{split}{seed}.tf_record")


def release_train_record(task):
  """Where the release wrote its training records:
  `{output_dir}/{spiece file name}.len-L.train.tf_record`."""
  spiece = os.path.basename(task.spiece_model_file)
  return os.path.join(task.output_dir,
                      f"{spiece}.len-{task.max_seq_length}.train.tf_record")


def train_record_key(task, seed):
  """What the training records are made from (see `record_cache`): the
  digests of the training files and of the SentencePiece model, and every
  setting that changes the records or their order.

  Returns:
    dict (JSON-able).
  """
  levels = race_features.race_levels(task.high_only, task.middle_only)
  return {"source": race_features.source_signature(task.data_dir, "train",
                                                   levels),
          "spiece_sha1": record_cache.file_digest(task.spiece_model_file),
          "levels": list(levels), "max_seq_length": task.max_seq_length,
          "max_qa_length": task.max_qa_length, "uncased": bool(task.uncased),
          "seed": qa_records.order_seed(seed)}


def prepro(task, sp_model, split, wait=None, seed=None):
  """Reads one split and writes its records (training records: waits up to
  `wait` seconds, when given, for the chief of a multi-host run to write
  them; `record_cache.prepare`).

  Training questions are shuffled once with `qa_records.order_seed(seed)`
  (`seed`: the run's, `TrainConfig.seed`, the programs' --seed); their
  records are reused while made from the same files and settings
  (`train_record_key`, `record_cache.prepare`). When none of ours exist, the
  release's training records are used if --output_dir holds them
  (`release_train_record`). Evaluation records are always rewritten, so
  they match the questions read now.

  Returns:
    (examples, records path).
  """
  levels = race_features.race_levels(task.high_only, task.middle_only)
  articles, examples = race_features.read_race_examples(task.data_dir, split,
                                                        levels)
  if split == "train":
    examples = qa_records.shuffled(examples, qa_records.order_seed(seed))
  path = record_path(task, split, seed)
  release = release_train_record(task)
  if (split == "train" and not tf.io.gfile.exists(path) and
      tf.io.gfile.exists(release)):
    logging.warning("Training on the release's records %s: their order, "
                    "levels and max_qa_length are the release run's, and "
                    "they keep its fault (when the article fitted, each "
                    "option also holds the earlier options)", release)
    return examples, release

  def write(out):
    converter = race_features.FeatureConverter(
        sp_model, articles, task.max_seq_length, task.max_qa_length,
        task.uncased)
    count = qa_records.write_records(out, converter.iter_features(examples))
    logging.info("Wrote %d %s questions to %s", count, split, out)
    return count

  if split == "train":
    record_cache.prepare(path, train_record_key(task, seed), write, wait=wait)
  else:
    write(path)
  return examples, path


def write_eval_results(task, model_dir, metrics):
  """Writes `eval_results_{eval_split}.json` to `model_dir` and logs it."""
  path = os.path.join(model_dir,
                      f"eval_results_{task.eval_split}.json")
  io_utils.atomic_write(path, json.dumps(metrics, indent=4) + "\n")
  for key, value in metrics.items():
    logging.info("  %s = %s", key, value)


def loss_fn(model):
  """`loss_fn(features, is_training)` -> the RACE loss of a batch
  (`race_head.get_race_loss`): always the training graph (dropout on),
  whatever `is_training` says."""
  return lambda features, is_training: race_head.get_race_loss(
      model.xlnet_config, model.run_config(True), features,
      model.summary_type, model.use_summ_proj)[0]


def outputs_fn(model):
  """`outputs_fn(features, is_training)` -> the option logits of a batch
  (`race_head.get_race_predictions`), always without dropout."""
  return lambda features, is_training: race_head.get_race_predictions(
      model.xlnet_config, model.run_config(False), features,
      model.summary_type, model.use_summ_proj)


def predict(task, model, engine, input_fn):
  """Runs the latest checkpoint of model_dir over every record.

  Returns:
    list of dicts of NumPy values (`logits [4]`), one per question, in
    record order.
  """
  return finetune.predict_records(engine, input_fn, outputs_fn(model),
                                  task.eval_batch_size)
