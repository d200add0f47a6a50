"""A fine-tuned tagger from its model_dir alone, tagging sentences in memory.

    tagger = loaded_model.load("ner/model")
    tagger.predict(["EU rejects German call", ["Peter", "Blackburn"]])
    # [['B-ORG', 'O', 'B-MISC', 'O'], ['B-PER', 'I-PER']]

A tagger's model_dir records what tagging needs (`finetune.train`'s
`config.ModelRecord`): `config.json` (the sizes), `task.json` (the tags,
their scheme, the windows' length and stride, casing) and `spiece.model`.
`predict` makes the windows `run_ner.py` makes of a file
(`features.make_windows`) and stitches their predictions the same way, so
a sentence gets the tags its predictions file holds.
"""
import dataclasses

import tensorflow as tf

from xlnet.finetuning import config as finetuning_config
from xlnet.finetuning import saved_run
from xlnet.finetuning.tagging import features as tagging_features
from xlnet.finetuning.tagging import head as tagging_head
from xlnet.finetuning.tagging import layouts
from xlnet.finetuning.tagging import task as tagging_task
from xlnet.training import config as train_config
from xlnet.training import predictor as predictor_lib
from xlnet.training import strategies


def load(model_dir, checkpoint=None):
  """The tagger fine-tuned into `model_dir`, its weights loaded on first
  use.

  Args:
    model_dir: a fine-tuned tagger's directory (`run_ner.py --model_dir`).
    checkpoint: a prefix or directory (its newest), or None: model_dir's
      newest.

  Returns:
    a `Tagger`.

  Raises:
    ValueError: one line naming the missing or malformed file.
  """
  prefix, xlnet_config, task, sp_model = saved_run.read(
      model_dir, checkpoint, tagging_task.KIND, "run_ner.py")
  return Tagger(xlnet_config, task, sp_model, prefix)


class Tagger:
  """A fine-tuned tagging head with its weights.

  Attributes:
    xlnet_config: the model's `XLNetConfig`.
    task: the recorded task settings (`tagging_task.task_record`).
    label_list: the tags, in the head's order.
    checkpoint: the prefix the weights come from.
  """

  def __init__(self, xlnet_config, task, sp_model, prefix):
    self.xlnet_config = xlnet_config
    self.task = task
    self.label_list = tuple(task["label_list"])
    self.checkpoint = prefix
    self._encode = tagging_features.Encoder(sp_model, task["uncased"])
    run = dataclasses.replace(finetuning_config.DEFAULT_RUN,
                              clamp_len=task["clamp_len"])
    n_class = len(self.label_list)

    def outputs_fn(features):
      return {"logits": tagging_head.get_tagging_logits(
          xlnet_config, run.for_training(False), features, n_class)}

    self._predictor = predictor_lib.Predictor(
        strategies.for_inference(train_config.DeviceConfig()), outputs_fn)
    self._restored = False

  def windows(self, sentences):
    """The windows of `sentences` (str: split at whitespace, or lists of
    words), as `run_ner.py` makes them of a file's sentences.

    Returns:
      (the `layouts.Sentence`s, the `features.Window`s).
    """
    rows = []
    for i, sentence in enumerate(sentences):
      words = sentence.split() if isinstance(sentence, str) else sentence
      words = tuple(str(w) for w in words)
      if not words or not all(w.strip() for w in words):
        raise ValueError(f"sentences[{i}] holds no words, or an empty one")
      rows.append(layouts.Sentence(words, None, tuple(range(len(words))),
                                   None))
    return rows, tagging_features.make_windows(
        rows, self._encode, self.label_list, self.task["max_seq_length"],
        self.task["window_stride"])

  def predict(self, sentences, batch_size=8):
    """Each word's predicted tag.

    Args:
      sentences: list of str (words split at whitespace) or of word lists.
      batch_size: windows per step.

    Returns:
      list, per sentence, of one tag per word.
    """
    return self.predict_logits(sentences, batch_size)[0]

  def predict_logits(self, sentences, batch_size=8):
    """`predict`'s tags and each word's logits (a float32 `[words,
    n_class]` array per sentence; the classes are `label_list`)."""
    if not sentences:
      raise ValueError("predict needs at least one sentence")
    rows, windows = self.windows(sentences)
    batch = tagging_features.stacked(windows)
    dataset = tf.data.Dataset.from_tensor_slices({
        name: tf.constant(batch[name], tagging_task.DTYPES[name])
        for name in ("input_ids", "input_mask", "segment_ids")}).batch(
            batch_size)
    self._restore(batch_size)
    logits = self._predictor.predict(dataset, batch_size)["logits"]
    return tagging_features.stitch(windows, logits, rows, self.label_list)

  def _restore(self, batch_size):
    """Builds the model (once) and loads the checkpoint's weights."""
    if not self._restored:
      length = self.task["max_seq_length"]
      spec = {name: tf.TensorSpec([batch_size, length],
                                  tagging_task.DTYPES[name])
              for name in ("input_ids", "input_mask", "segment_ids")}
      self._predictor.restore(self.checkpoint, spec)
      self._restored = True
