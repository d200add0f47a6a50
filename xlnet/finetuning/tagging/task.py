"""Tagging with typed settings (`TaggingConfig`, `ModelConfig`,
`EngineConfig`): the tags and their scheme, the training records,
fine-tuning, evaluation with conlleval's figures, and the predictions file.

`xlnet.finetuning.api.run_ner` chains them as `run_ner.py` does.
"""
import json
import os
import time

from absl import logging
import tensorflow as tf

from xlnet import io_utils
from xlnet.finetuning import checkpoint_eval
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning import finetune
from xlnet.finetuning import qa_records
from xlnet.finetuning import record_cache
from xlnet.finetuning.tagging import features as tagging_features
from xlnet.finetuning.tagging import head as tagging_head
from xlnet.finetuning.tagging import layouts
from xlnet.finetuning.tagging import schemes
from xlnet.training import checkpoint_io
from xlnet.training import train_state

KIND = "tagging"
EVAL_RESULTS = "eval_results.txt"
# Windows serialized per batch of the training records' writer.
_CHUNK = 256


def read(task, path):
  """The tagged file at `path`, in the task's layout."""
  return layouts.read(path, task.file_layout, task.conllu_column)


def _places(tagged, sentence):
  return [f"{tagged.path}:{line}" for line in sentence.lines]


def file_scheme(task, tagged, model_scheme):
  """The scheme a file's tags are read (and its predictions written) in:
  --tag_scheme, else the model's when that is "none" or the file has no
  chunk tags (unlabelled, or all O), else the file's own (`detect`); its
  tags are checked against it."""
  scheme = task.tag_scheme or model_scheme
  if tagged.labelled and not task.tag_scheme and model_scheme != "none":
    found = schemes.detect(s.tags for s in tagged.sentences)
    scheme = model_scheme if found == "none" else found
  if tagged.labelled:
    for sentence in tagged.sentences:
      schemes.check_tags(sentence.tags, scheme, _places(tagged, sentence))
  return scheme


def resolve_labels(task, train):
  """The model's tags and scheme from the training file.

  Returns:
    (label_list, scheme): --label_list, else the training file's tags
    sorted; --tag_scheme, else the training file's (`schemes.detect`).

  Raises:
    ValueError: one line naming the file and line of a tag outside the
      scheme or the label list, or an unlabelled training file.
  """
  if not train.labelled:
    raise ValueError(f"--train_file={train.path}: its tokens carry no tags "
                     "(a labelled file has the tag in its last column)")
  scheme = task.tag_scheme or schemes.detect(s.tags for s in
                                             train.sentences)
  labels = task.label_list or tuple(sorted({t for s in train.sentences
                                            for t in s.tags}))
  known = set(labels)
  for sentence in train.sentences:
    schemes.check_tags(sentence.tags, scheme, _places(train, sentence))
    for tag, place in zip(sentence.tags, _places(train, sentence)):
      if tag not in known:
        raise ValueError(f"{place}: tag {tag!r} is not in --label_list="
                         f"{','.join(labels)}")
  logging.info("%d tags in the %s scheme: %s", len(labels), scheme,
               " ".join(labels))
  return tuple(labels), scheme


def recorded_tags(task, model_dir):
  """The tags and scheme of the tagger fine-tuned into `model_dir` (its
  `config.TASK_FILE`), else of --train_file.

  Raises:
    ValueError: one line when neither gives them.
  """
  path = os.path.join(model_dir, finetune_config.TASK_FILE)
  record = train_state.read_run_record(path)
  if isinstance(record, dict) and record.get("kind") == KIND:
    labels = tuple(record["label_list"])
    # An HF import records the tags alone.
    return labels, (record.get("tag_scheme")
                    or schemes.scheme_of_labels(labels))
  if task.train_file:
    return resolve_labels(task, read(task, task.train_file))
  raise ValueError(f"--model_dir={model_dir} holds no tagger's {path} (its "
                   "tags), and no --train_file gives them")


def task_record(task, model, labels, scheme):
  """What a fine-tuned tagger's model_dir records of its task
  (`config.TASK_FILE`): how `loaded_model` turns words into windows and
  logits into tags."""
  return {"kind": KIND, "label_list": list(labels), "tag_scheme": scheme,
          "max_seq_length": task.max_seq_length,
          "window_stride": task.window_stride, "uncased": task.uncased,
          "clamp_len": model.run.clamp_len}


################################################################################
# Records.
################################################################################
# The dtype the model reads each feature of a window as.
DTYPES = {"input_ids": tf.int32, "input_mask": tf.float32,
          "segment_ids": tf.int32, "label_ids": tf.int32,
          "label_weights": tf.float32}


def feature_spec(max_seq_length):
  """The window records' layout for `qa_records.make_input_fn`."""
  return {name: (max_seq_length, DTYPES[name])
          for name in tagging_features.RECORD_FEATURES}


def make_windows(task, encoder, tagged, labels):
  """The windows of a tagged file (`features.make_windows`)."""
  return tagging_features.make_windows(
      tagged.sentences, encoder, labels, task.max_seq_length,
      task.window_stride, task.document_context)


def record_path(task, seed):
  """`{output_dir}/{train file name}.len-L.stride-S[.doc][.uncased].{spiece}
  .seed-N.tf_record`."""
  spiece = os.path.splitext(os.path.basename(task.spiece_model_file))[0]
  name = os.path.basename(task.train_file)
  extra = (".doc" if task.document_context else "") + (
      ".uncased" if task.uncased else "")
  return os.path.join(
      task.output_dir, f"{name}.len-{task.max_seq_length}.stride-"
      f"{task.window_stride}{extra}.{spiece}.seed-{seed}.tf_record")


def train_record_key(task, labels, seed):
  """What the training records are made from (`record_cache`)."""
  return {"source": record_cache.file_digest(task.train_file),
          "spiece_sha1": record_cache.file_digest(task.spiece_model_file),
          "file_layout": task.file_layout,
          "conllu_column": task.conllu_column, "labels": list(labels),
          "max_seq_length": task.max_seq_length,
          "window_stride": task.window_stride,
          "document_context": task.document_context,
          "uncased": task.uncased, "seed": qa_records.order_seed(seed)}


def prepare_train_records(task, encoder, train, labels, seed, wait=None):
  """The training windows' records, shuffled once with the run's seed,
  written when missing or made otherwise (`record_cache.prepare`).

  Returns:
    (record path, number of windows).
  """
  path = record_path(task, qa_records.order_seed(seed))

  def write(out):
    windows = qa_records.shuffled(make_windows(task, encoder, train, labels),
                                  seed)
    count = qa_records.write_records(out, (
        tagging_features.stacked(windows[i:i + _CHUNK])
        for i in range(0, len(windows), _CHUNK)))
    logging.info("Wrote %d windows of %d sentences to %s", count,
                 len(train.sentences), out)
    return count

  return path, record_cache.prepare(path, train_record_key(task, labels,
                                                           seed),
                                    write, task.overwrite_data, wait)


################################################################################
# The head on the engine.
################################################################################
def loss_fn(model, n_class):
  """`loss_fn(features, is_training)` -> the training loss of a batch
  (dropout on, whatever `is_training` says)."""
  return lambda features, is_training: tagging_head.get_tagging_loss(
      model.xlnet_config, model.run_config(True), features, n_class)


def outputs_fn(model, n_class):
  """`outputs_fn(features, is_training)` -> {"logits": [B, L, n_class]},
  dropout off."""
  return lambda features, is_training: {
      "logits": tagging_head.get_tagging_logits(
          model.xlnet_config, model.run_config(False), features, n_class)}


def windows_input_fn(windows):
  """`input_fn(params)` over in-memory windows, in order, once."""
  batch = tagging_features.stacked(windows)

  def input_fn(params):
    tensors = {name: tf.constant(value, DTYPES[name])
               for name, value in batch.items()}
    return tf.data.Dataset.from_tensor_slices(tensors).batch(
        params["batch_size"])

  return input_fn


def tag_file(model, engine, checkpoint, windows, tagged, labels, batch_size):
  """Every word's predicted tag and logits (`features.stitch`) by
  `checkpoint`."""
  outputs = finetune.predict(engine, checkpoint, windows_input_fn(windows),
                             outputs_fn(model, len(labels)), batch_size)
  return tagging_features.stitch(windows, outputs["logits"],
                                 tagged.sentences, labels)


################################################################################
# Evaluation and prediction.
################################################################################
def flat_metrics(scores):
  """conlleval's figures as `eval_*` scalars: overall, then per type."""
  out = {f"eval_{k}": v for k, v in scores.items() if k != "per_type"}
  for kind, values in scores.get("per_type", {}).items():
    out.update({f"eval_{k}_{kind}": v for k, v in values.items()})
  return out


def evaluate(task, model, engine, encoder, labels, model_scheme):
  """Scores `task.eval_file` with the latest (every, with eval_all_ckpt)
  checkpoint: `model_dir/eval_results.txt` (one line per checkpoint, the
  best by F1, or accuracy without chunks) and
  `model_dir/eval_results_{file name}.json` (the last one's figures, per
  type too).

  Returns:
    list of (checkpoint, scores of `schemes.score`).
  """
  tagged = read(task, task.eval_file)
  if not tagged.labelled:
    raise ValueError(f"--eval_file={task.eval_file}: its tokens carry no "
                     "tags to score against (use --do_predict alone)")
  scheme = file_scheme(task, tagged, model_scheme)
  windows = make_windows(task, encoder, tagged, labels)
  gold = [list(s.tags) for s in tagged.sentences]
  primary = "eval_accuracy" if scheme == "none" else "eval_f1"
  name = os.path.basename(task.eval_file)
  prefixes = checkpoint_eval.checkpoints_to_evaluate(engine.model_dir,
                                                     task.eval_all_ckpt)
  out, start = [], time.time()
  for n, prefix in enumerate(prefixes):
    tags, _ = tag_file(model, engine, prefix, windows, tagged, labels,
                       task.eval_batch_size)
    scores = schemes.score(gold, [schemes.convert(t, scheme) for t in tags],
                           scheme)
    checkpoint_eval.update_eval_results(
        os.path.join(engine.model_dir, EVAL_RESULTS), KIND, name, prefix,
        flat_metrics(scores), primary)
    elapsed = time.time() - start
    logging.info("[%d/%d checkpoints, ETA %.0fs] %s on %s: %s", n + 1,
                 len(prefixes), elapsed / (n + 1) * (len(prefixes) - n - 1),
                 prefix, name, {k: v for k, v in scores.items()
                                if k != "per_type"})
    out.append((prefix, scores))
  io_utils.atomic_write(
      os.path.join(engine.model_dir, f"eval_results_{name}.json"),
      json.dumps(dict(out[-1][1], checkpoint=out[-1][0], scheme=scheme),
                 indent=2) + "\n")
  return out


def predictions_path(predict_dir, path):
  """`{predict_dir}/{stem}.predictions{ext}` of the tagged file `path`."""
  stem, ext = os.path.splitext(os.path.basename(path))
  return os.path.join(predict_dir, f"{stem}.predictions{ext}")


def predict(task, model, engine, encoder, labels, model_scheme):
  """Tags `task.file_to_predict` with the latest checkpoint into
  `predictions_path` (its lines, each token's predicted tag added, in the
  file's scheme: `layouts.predictions_text`).

  Returns:
    the path written.
  """
  checkpoint = tf.train.latest_checkpoint(engine.model_dir)
  if not checkpoint:
    raise ValueError(f"--model_dir={engine.model_dir} holds no checkpoint "
                     "to predict with (train first with --do_train)")
  tagged = read(task, task.file_to_predict)
  scheme = file_scheme(task, tagged, model_scheme)
  windows = make_windows(task, encoder, tagged, labels)
  tags, _ = tag_file(model, engine, checkpoint, windows, tagged, labels,
                     task.predict_batch_size)
  path = predictions_path(task.predict_dir, tagged.path)
  io_utils.atomic_write(path, layouts.predictions_text(
      tagged, [schemes.convert(t, scheme) for t in tags]))
  logging.info("Predicted %d words of %s with %s: %s", tagged.num_words,
               tagged.path, checkpoint_io.step_of(checkpoint), path)
  return path

