"""A fine-tuned classifier from its model_dir alone, predicting in memory.

    model = loaded_model.load("sst-2/model")
    out = model.predict(["a fine film", "a dull plot"])
    out["labels"], out["probabilities"]          # ['1', '0'], [2, n_class]

A classifier's model_dir records what prediction needs (written by
`finetune.train` since fine-tuning records it, `config.ModelRecord`):
`config.json` (the sizes), `task.json` (task name, labels, sequence length,
casing), `head.json` (the sequence summary) and `spiece.model`. `predict`
turns texts into the features `run_classifier.py` writes
(`classifier_features.convert_single_example`) and runs the head as its
prediction does (`finetune.predict`'s `Predictor`, dropout off), so the
logits are those of its `{task}.logits.json` for the same texts.

A multi-label classifier (`--multi_label`) predicts label sets:

    out = model.predict(["rates rise as the club wins"])
    out["labels"], out["probabilities"]    # [('business', 'sport')], [1, n]

at the threshold it was fine-tuned with (`Classifier.threshold`), or for
`--multi_label_threshold=dev` the one evaluation or prediction chose on
the dev split for the checkpoint loaded (`multi_label_task`).
"""
import dataclasses
import os

import numpy as np
import tensorflow as tf

from xlnet.finetuning import config as finetuning_config
from xlnet.finetuning import saved_run
from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.classifier import multi_label as multi_label_lib
from xlnet.finetuning.classifier import multi_label_task
from xlnet.finetuning.classifier import processors as classifier_processors
from xlnet.finetuning.classifier import task as classifier_task
from xlnet.finetuning.long_documents import memory_forward
from xlnet.finetuning.long_documents import records as long_document_records
from xlnet.finetuning.long_documents import settings as long_documents
from xlnet.training import config as train_config
from xlnet.training import predictor as predictor_lib
from xlnet.training import strategies
from xlnet.training import train_state


def load(model_dir, checkpoint=None):
  """The classifier fine-tuned into `model_dir`, its weights loaded.

  Args:
    model_dir: a fine-tuned classifier's directory (`run_classifier.py
      --model_dir`, `api.run_classifier`).
    checkpoint: the checkpoint to load (a prefix, or a directory: its
      newest), or None: model_dir's newest.

  Returns:
    a `Classifier`.

  Raises:
    ValueError: one line naming the missing or malformed file.
  """
  prefix, xlnet_config, task, sp_model = saved_run.read(
      model_dir, checkpoint, "classifier", "run_classifier.py")
  head = train_state.read_run_record(os.path.join(
      model_dir, finetuning_config.HEAD_FILE)) or {}
  return Classifier(xlnet_config, task, head, sp_model, prefix)


def softmax(logits):
  """Row-wise softmax of float logits `[n, n_class]`, float32."""
  x = np.asarray(logits, np.float64)
  e = np.exp(x - x.max(axis=-1, keepdims=True))
  return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


class Classifier:
  """A fine-tuned classification, regression or multi-label head with its
  weights.

  Attributes:
    xlnet_config: the model's `XLNetConfig`.
    task: the recorded task settings (`classifier_task.task_record`).
    label_list: the labels, or None for regression.
    checkpoint: the prefix the weights come from.
    multi_label: the head predicts a set of labels per text.
    threshold: a multi-label head's decision threshold (a probability; may
      be set), or None: none was chosen yet for this checkpoint.
  """

  def __init__(self, xlnet_config, task, head, sp_model, prefix):
    self.xlnet_config = xlnet_config
    self.task = task
    self.label_list = task["label_list"]
    self.checkpoint = prefix
    self.multi_label = bool(task.get("multi_label"))
    self.threshold = None
    if self.multi_label:
      recorded = task["multi_label_threshold"]
      self.threshold = (multi_label_task.recorded_threshold(prefix)
                        if recorded == multi_label_lib.ON_DEV else recorded)
    self.long_documents = long_documents.LongDocuments.from_record(task)
    self._tokenize = classifier_features.make_tokenize_fn(sp_model,
                                                          task["uncased"])
    model = finetuning_config.ModelConfig(
        xlnet_config, dataclasses.replace(finetuning_config.DEFAULT_RUN,
                                          clamp_len=task["clamp_len"]),
        summary_type=head.get("summary_type", "last"),
        use_summ_proj=head.get("use_summ_proj", True))
    n_class = None if self.label_list is None else len(self.label_list)
    summarize = memory_forward.summarize_fn(self.long_documents,
                                            task["max_seq_length"])

    def outputs_fn(features):
      out = classifier_head.get_head_outputs(
          xlnet_config, model.run_config(False), features, n_class,
          task["task_name"], task["cls_scope"], model.summary_type,
          model.use_summ_proj, self.multi_label, summarize)
      return {"logits": out["logits"]}

    self._predictor = predictor_lib.Predictor(
        strategies.for_inference(train_config.DeviceConfig()), outputs_fn)
    self._restored = False

  def features(self, texts):
    """The model inputs of `texts` (str, or (text_a, text_b) pairs): dict
    of NumPy arrays `input_ids`, `segment_ids` int32 [n, L], `input_mask`
    float32 [n, L] (1 = padding), `label_ids` [n] (zeros; a multi-label
    head's [n, n_labels]); a model that reads long documents as windows:
    the windows [n, W, L] and `window_mask` [n, W]
    (`long_documents/records.py`).

    Raises:
      ValueError: naming the first text that is a pair for a model
        fine-tuned on single texts, or the reverse (`task.json`'s "pairs";
        a model_dir fine-tuned before it was recorded takes either).
    """
    rows = []
    pairs = self.task.get("pairs")
    layout = long_document_records.layout(self.long_documents)
    for i, text in enumerate(texts):
      text_a, text_b = (text, None) if isinstance(text, str) else text
      if pairs is not None and (text_b is not None) != pairs:
        raise ValueError(
            f"texts[{i}] is {'a pair' if text_b is not None else 'one text'}"
            f" but {self.task['task_name']} was fine-tuned on "
            f"{'pairs (text_a, text_b)' if pairs else 'single texts'}; give "
            f"{'(text_a, text_b) pairs' if pairs else 'strings'}")
      example = classifier_processors.InputExample(str(i), text_a, text_b)
      if layout:
        rows.append(layout.example_features(
            example, self.label_list, self.task["max_seq_length"],
            self._tokenize))
        continue
      rows.append(classifier_features.convert_single_example(
          i, example, self.label_list, self.task["max_seq_length"],
          self._tokenize, self.multi_label))
    label_dtype = np.float32 if self.label_list is None else np.int32
    if layout:
      return {k: np.array([r[k] for r in rows],
                          label_dtype if k == "label_ids" else None)
              for k in self._input_spec(1)}
    return {
        "input_ids": np.array([r.input_ids for r in rows], np.int32),
        "input_mask": np.array([r.input_mask for r in rows], np.float32),
        "segment_ids": np.array([r.segment_ids for r in rows], np.int32),
        "label_ids": np.array([r.label_id for r in rows], label_dtype)}

  def predict(self, texts, batch_size=8):
    """The head's outputs for `texts`, in order.

    Args:
      texts: list of str, or of (text_a, text_b) pairs.
      batch_size: examples per step.

    Returns:
      dict: `logits` float32 [n, n_class] (regression: [n], the scores);
      classification: `probabilities` float32 [n, n_class] (softmax of the
      logits; multi-label: the sigmoid of each); `labels`: list of n
      labels (`predicted_labels`, with the task's predict_threshold;
      regression: the scores as floats; multi-label: tuples of labels,
      each whose probability exceeds `threshold`).

    Raises:
      ValueError: a multi-label head without a threshold (`threshold`).
    """
    return self.predict_features(self.features(texts), batch_size)

  def predict_features(self, features, batch_size=8):
    """`predict`'s outputs for the model inputs `features(texts)` gave
    (the same dict of [n, ...] arrays)."""
    n = len(features["input_ids"])
    if not n:
      raise ValueError("predict needs at least one text")
    dataset = tf.data.Dataset.from_tensor_slices(features).batch(batch_size)
    self._restore(batch_size)
    logits = self._predictor.predict(dataset, batch_size)["logits"]
    if self.multi_label:
      return self._label_sets(logits)
    out = {"logits": logits, "labels": classifier_task.predicted_labels(
        logits, self.label_list, self.task["predict_threshold"])}
    if self.label_list is not None:
      out["probabilities"] = softmax(logits)
    return out

  def _label_sets(self, logits):
    """`predict`'s outputs of a multi-label head."""
    if self.threshold is None:
      raise ValueError(
          f"{self.checkpoint}: no threshold chosen on the dev split yet "
          "(run_classifier.py --multi_label_threshold=dev chooses it with "
          "--do_eval or --do_predict), or set the model's threshold")
    return {"logits": logits,
            "probabilities": multi_label_lib.probabilities(logits).astype(
                np.float32),
            "labels": multi_label_lib.label_sets(
                multi_label_lib.predict(logits, self.threshold),
                self.label_list)}

  def _restore(self, batch_size):
    """Builds the model (once) and loads the checkpoint's weights."""
    if not self._restored:
      self._predictor.restore(self.checkpoint, self._input_spec(batch_size))
      self._restored = True

  def _input_spec(self, batch_size):
    """{name: tf.TensorSpec} of a batch of `features`."""
    windows = ([self.long_documents.max_windows]
               if self.long_documents.in_windows else [])
    shape = [batch_size] + windows + [self.task["max_seq_length"]]
    spec = {k: tf.TensorSpec(shape, dtype)
            for k, dtype in (("input_ids", tf.int32),
                             ("input_mask", tf.float32),
                             ("segment_ids", tf.int32))}
    if windows:
      spec["window_mask"] = tf.TensorSpec([batch_size] + windows, tf.float32)
    spec["label_ids"] = tf.TensorSpec(
        [batch_size] + ([len(self.label_list)] if self.multi_label else []),
        tf.float32 if self.label_list is None else tf.int32)
    return spec

  def variables(self):
    """dict checkpoint name -> NumPy value of the loaded model's weights
    (built by a first `predict`)."""
    self._restore(1)
    return self._predictor.weights()
