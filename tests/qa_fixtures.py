"""Test helpers for SQuAD and RACE: a tricky synthetic SQuAD set, RACE files,
a tiny model config and random checkpoints written by variable name."""
import json
import os

import numpy as np
import tensorflow as tf

from tests import classifier_fixtures
from tests import data_helpers
from tests import np_reference

# A tiny XLNet (the vocabulary matches tests.data_helpers.train_tiny_spm).
TINY_CONFIG = dict(n_layer=2, d_model=8, n_head=2, d_head=4, d_inner=16,
                   ff_activation="gelu", untie_r=True, n_token=1000)

# Words of the synthetic paragraphs: accents (precomposed and combining),
# CJK, emoji, ligatures, quote pairs, digits with commas, Greek, mixed case.
WORDS = ["the", "Café", "naïve", "Ångström", "Zoë's", "e\u0301cole",
         "man\u0303ana", "東京タワー", "北京", "😀", "🚀🚀", "ﬁsh", "①",
         "``quoted''", "1999,", "2,000", "(note)", "ΟΔΟΣ", "River", "over",
         "Botchan", "said", "a", "school", "teacher", "x\u200dy", "don't",
         "e.g.", "—", "naïveté", "İstanbul", "Straße"]
# Whitespace between words: runs of spaces, tabs, newlines, no-break spaces.
SPACES = [" ", " ", " ", "  ", "\t", "\n\n ", "\u00a0", " \u3000 "]


def write_tiny_config(directory):
  """Writes TINY_CONFIG as `{directory}/xlnet_config.json`; returns it."""
  config_path = os.path.join(str(directory), "xlnet_config.json")
  with open(config_path, "w") as f:
    json.dump(TINY_CONFIG, f)
  return config_path


def tiny_model(tmp_path, **overrides):
  """A ModelConfig of a tiny model (its config written to `tmp_path`),
  without dropout (`classifier_fixtures.head_model`'s other settings)."""
  return classifier_fixtures.head_model(
      write_tiny_config(tmp_path),
      **dict(dict(dropout=0.0, dropatt=0.0), **overrides))


def session_predict(make_outputs):
  """A stand-in for a task's prediction: runs `make_outputs(task,
  model)(features, False)` over the whole input with the given checkpoint,
  else the latest of the engine's model_dir, or with fresh variables when
  there is none.

  Returns:
    predict(task, model, engine, input_fn, checkpoint=None) -> list of
    per-record dicts of NumPy values.
  """
  def predict(task, model, engine, input_fn, checkpoint=None):
    outputs_fn = make_outputs(task, model)
    rows = []
    with tf.Graph().as_default():
      dataset = input_fn({"batch_size": 3})
      features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
      outputs = outputs_fn(features, False)
      with tf.compat.v1.Session() as sess:
        checkpoint = checkpoint or tf.train.latest_checkpoint(
            engine.model_dir)
        if checkpoint:
          tf.compat.v1.train.Saver().restore(sess, checkpoint)
        else:
          sess.run(tf.compat.v1.global_variables_initializer())
        while True:
          try:
            batch = sess.run(outputs)
          except tf.errors.OutOfRangeError:
            return rows
          size = len(next(iter(batch.values())))
          rows.extend({k: v[i] for k, v in batch.items()}
                      for i in range(size))
  return predict


def fresh_checkpoint(outputs_fn, spec, prefix, seed=0):
  """Saves the freshly initialized variables of `outputs_fn(features,
  False)` as checkpoint `prefix`, the latest of its directory.

  Args:
    spec: the records' layout, name -> (width, dtype) (see
      `qa_records.make_input_fn`).
  """
  with tf.Graph().as_default():
    tf.compat.v1.set_random_seed(seed)
    features = {name: tf.compat.v1.placeholder(
        dtype, [None] if width == 1 else [None, width])
                for name, (width, dtype) in spec.items()}
    outputs_fn(features, False)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      tf.compat.v1.train.Saver().save(sess, prefix)


def first_batch(input_fn, batch_size, build=None):
  """Runs one batch of `input_fn` (and `build(features)` on it, with fresh
  variables); returns (features, built) as NumPy."""
  with tf.Graph().as_default():
    dataset = input_fn({"batch_size": batch_size})
    features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    built = build(features) if build else {}
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      return sess.run((features, built))


def backbone_shapes(config=None):
  """Variable name -> shape of the fine-tuning backbone (with segments)."""
  return np_reference.variable_shapes(
      dict(TINY_CONFIG if config is None else config), two_stream=False,
      lm_loss=False)


def synthetic_squad(rng, num_paragraphs, questions_per_paragraph,
                    words_per_paragraph=(20, 60), impossible_rate=0.2):
  """A SQuAD 2.0 `data` list over tricky text; answers are runs of whole
  words (spaces between them kept as in the paragraph)."""
  paragraphs = []
  for p in range(num_paragraphs):
    n = int(rng.integers(*words_per_paragraph))
    words = [WORDS[k] for k in rng.integers(0, len(WORDS), n)]
    spans, text = [], ""
    for w, word in enumerate(words):
      if w:
        text += SPACES[int(rng.integers(0, len(SPACES)))]
      spans.append((len(text), len(text) + len(word)))
      text += word
    qas = []
    for q in range(questions_per_paragraph):
      qid = f"p{p}q{q}"
      question = " ".join(WORDS[k] for k in rng.integers(0, len(WORDS), 5))
      if rng.random() < impossible_rate:
        qas.append(dict(id=qid, question=question + "?", answers=[],
                        is_impossible=True))
        continue
      first = int(rng.integers(0, n))
      last = min(n - 1, first + int(rng.integers(0, 4)))
      start, end = spans[first][0], spans[last][1]
      qas.append(dict(id=qid, question=question + "?", is_impossible=False,
                      answers=[dict(text=text[start:end],
                                    answer_start=start)]))
    paragraphs.append(dict(context=text, qas=qas))
  return [dict(title="synthetic", paragraphs=paragraphs)]


def write_json(path, content):
  """Writes `content` as JSON; returns the path as str."""
  with open(path, "w", encoding="utf-8") as f:
    json.dump(content, f, ensure_ascii=False)
  return str(path)


def write_race_dir(root, files):
  """Writes RACE files: `files` maps "split/level/name.txt" -> JSON object."""
  for rel, content in files.items():
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_json(path, content)
  return str(root)


def write_protobuf_records(path, rows, float_names=()):
  """Writes records with the protobuf classes, as the release did.

  Args:
    path: TFRecord path.
    rows: list of dicts name -> list of numbers (one dict per record).
    float_names: names written as FloatList (the rest as Int64List).
  """
  with tf.io.TFRecordWriter(str(path)) as writer:
    for row in rows:
      feature = {}
      for name, values in row.items():
        if name in float_names:
          feature[name] = tf.train.Feature(float_list=tf.train.FloatList(
              value=[float(v) for v in values]))
        else:
          feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(
              value=[int(v) for v in values]))
      writer.write(tf.train.Example(features=tf.train.Features(
          feature=feature)).SerializeToString())


def _record_bytes(path):
  """The records of an uncompressed TFRecord file (frames: uint64 length,
  uint32 CRC, data, uint32 CRC)."""
  with open(path, "rb") as f:
    while True:
      header = f.read(12)
      if not header:
        return
      data = f.read(int.from_bytes(header[:8], "little"))
      f.read(4)
      yield data


def read_records(path):
  """Every record of a file as a dict name -> (kind, list of values), read
  with the protobuf classes."""
  out = []
  for raw in _record_bytes(path):
    features = tf.train.Example.FromString(raw).features.feature
    out.append({name: (f.WhichOneof("kind"),
                       list(getattr(f, f.WhichOneof("kind")).value))
                for name, f in features.items()})
  return out


def assert_read_alike(make_input_fn, spec, paths):
  """Reads each record file of `paths` with `make_input_fn([path], spec,
  ...)` (qa_records') and checks that every later one gives the first's
  features, values and dtypes alike.

  Returns:
    the first file's features (dict name -> array).
  """
  ours, *others = [data_helpers.all_batches(make_input_fn(
      [str(p)], spec, is_training=False, drop_remainder=False))
                   for p in paths]
  for other in others:
    assert other.keys() == ours.keys()
    for name in ours:
      np.testing.assert_array_equal(other[name], ours[name])
      assert other[name].dtype == ours[name].dtype
  return ours


def assert_rewritten_for(caplog, path, differing):
  """The log says, once, that the records at `path` are rewritten because
  the field(s) `differing` of what made them changed."""
  assert [r.getMessage() for r in caplog.records
          if "rewriting" in r.getMessage()] == [
              f"{path} was made from other data or settings (differing: "
              f"{differing}); rewriting it"]
