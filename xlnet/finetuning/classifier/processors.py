"""What a task processor is: labelled text examples read from a dataset's
files (`InputExample`, `DataProcessor`, `TableProcessor` and the reading
helpers); the processor of each family of datasets is in
`classifier/datasets.py`, each task's facts in `classifier/tasks.py`.

A processor turns the files of one task in `data_dir` into `InputExample`s
for the splits "train", "dev" and "test", and knows the task's labels (None
for regression) and metrics. Supported layouts:

  * GLUE (tab-separated, no quoting): cola, sst-2, mrpc, qqp, sts-b,
    mnli_matched, mnli_mismatched, qnli, rte, wnli: `{train,dev,test}.tsv`
    (MNLI: `dev_matched.tsv`, `test_matched.tsv`, ... ).
  * aclImdb: imdb, `{train,test}/{neg,pos}/*.txt` (dev = test).
  * The CSV datasets of Zhang et al. (2015): yelp5, yelp2, amazon5, amazon2,
    dbpedia, ag_news, `{train,test}.csv` (dev = test).
  * Your own files: tsv / csv (`classifier_datasets.make_processor`
    options choose the columns).

Every error about the data is a one-line ValueError naming the file, the
line and what was expected.
"""
import csv
import os

from absl import logging
import tensorflow as tf

from xlnet.finetuning import record_cache
from xlnet.finetuning.classifier import tasks as classifier_tasks

_DELIMITER_NAMES = {"\t": "tab", ",": "comma"}


class InputExample:
  """One labelled (or, in test files, unlabelled) text example.

  Attributes:
    guid: str, a unique id; for GLUE test files the `index` column, so
      predictions can be submitted as they are.
    text_a: str, the first text.
    text_b: str or None, the second text of a pair.
    label: str (a member of the task's labels, or a number for regression),
      a tuple of labels (a multi-label task), or None when the split
      carries no labels.
  """

  def __init__(self, guid, text_a, text_b=None, label=None):
    self.guid = guid
    self.text_a = text_a
    self.text_b = text_b
    self.label = label

  def __repr__(self):
    return (f"InputExample(guid={self.guid!r}, text_a={self.text_a!r}, "
            f"text_b={self.text_b!r}, label={self.label!r})")


class DataProcessor:
  """Base class: the splits, labels and metrics of one task, made from its
  entry of `classifier/tasks.py`.

  Attributes:
    name: the task name (`--task_name`).
    labels: list of label strings, or None for a regression task.
    metrics: names of the metrics reported on the dev split, see
      `xlnet.finetuning.classifier.metrics`.
    primary_metric: the metric that picks the best checkpoint.
    layout: the task's files in words (for the errors about its data).
    files: split -> its file or directory (under `data_dir`).
    glue_task: True for GLUE tasks (predictions in the GLUE submission
      format).
    pairs: True when the examples are text pairs (a text_b).
    multi_label: True when an example's label is a set of labels (a tuple
      of them; `classifier/multi_label.py`).
  """

  glue_task = False
  pairs = False
  multi_label = False

  def __init__(self, task):
    """`task`: the task's `classifier_tasks.Task`."""
    self.name = task.name
    self.labels = None if task.labels is None else list(task.labels)
    self.metrics = task.metrics
    self.primary_metric = task.primary_metric
    self.layout = task.layout
    self.files = task.files

  @property
  def is_regression(self):
    """True when the label is a real number (no label list)."""
    return self.labels is None

  def get_labels(self):
    """The task's label strings (None for regression)."""
    return None if self.labels is None else list(self.labels)

  def get_examples(self, data_dir, split):
    """Reads the examples of `split` ("train", "dev" or "test").

    Returns:
      list of InputExample, in file order.

    Raises:
      ValueError: on a missing file or a malformed line (file and line
        named), or a label outside the task's labels.
    """
    raise NotImplementedError

  def options(self):
    """The settings that shape the examples' features (a JSON-able dict)."""
    return {"labels": self.get_labels()}

  def source_signature(self, data_dir, split):
    """A digest of the contents of the files behind `split` (str).

    Feature records made from the split are reused only while it is equal,
    so any edit, even one that keeps the files' sizes, is noticed.
    """
    raise NotImplementedError

  def labelled(self, split):
    """True when the examples of `split` carry labels (GLUE test sets and
    the test files of your own tasks do not)."""
    check_split(split)
    return True

  def resolve(self, data_dir):
    """Settles what depends on the data (user tasks: the label list); call
    before `get_labels`. Returns self."""
    del data_dir
    return self

  def get_train_examples(self, data_dir):
    """The training examples (the release's method name)."""
    return self.get_examples(data_dir, "train")

  def get_dev_examples(self, data_dir):
    """The dev examples (the release's method name)."""
    return self.get_examples(data_dir, "dev")

  def get_test_examples(self, data_dir):
    """The test examples (the release's method name)."""
    return self.get_examples(data_dir, "test")

  def check_label(self, label, where):
    """Validates one label read at `where` (e.g. 'x/train.tsv line 3').

    Returns:
      the label: a str from `labels`, or for regression the str of a finite
      number.

    Raises:
      ValueError: when it is not one of `labels` / not a number.
    """
    if self.labels is None:
      try:
        value = float(label)
      except ValueError:
        value = float("nan")
      if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{where}: label {label!r} is not a finite number "
                         f"(task {self.name} is a regression task)")
      return label
    if label not in self.labels:
      raise ValueError(f"{where}: label {label!r} is not one of the labels "
                       f"{list(self.labels)} of task {self.name}")
    return label


def check_split(split):
  if split not in classifier_tasks.SPLITS:
    raise ValueError(f"unknown split {split!r}; expected one of "
                     f"{classifier_tasks.SPLITS}")


def open_text(path):
  """Opens a UTF-8 text file (local or any tf.io.gfile URL)."""
  return tf.io.gfile.GFile(path, "r")


def _require_file(path, data_dir, layout):
  """Raises a one-line ValueError unless `path` exists."""
  if not tf.io.gfile.exists(path):
    raise ValueError(f"--data_dir={data_dir}: expected {path} ({layout}), "
                     "not found")


def _file_signature(path):
  """The file name of `path` and the sha1 (hex) of its bytes (one line)."""
  return f"{os.path.basename(path)}\tsha1 {record_cache.file_digest(path)}"


def read_rows(path, delimiter, quoting):
  """Yields `(line_number, fields)` for every non-blank row of a table.

  Args:
    path: a text file (local or tf.io.gfile URL), UTF-8, optional BOM.
    delimiter: "\\t" or ",".
    quoting: False: split every line at `delimiter` literally (GLUE files
      contain unbalanced quotes that are text); True: CSV quoting ("..."
      fields, doubled quotes, quoted line breaks).

  Yields:
    (1-based line number where the row starts, list of str fields).

  Raises:
    ValueError: when the file is not UTF-8 or the CSV quoting is broken.
  """
  with open_text(path) as f:
    try:
      if quoting:
        reader = csv.reader(f, delimiter=delimiter, strict=True)
        start = 1
        for fields in reader:
          if start == 1 and fields:
            fields[0] = fields[0].lstrip("\ufeff")
          if fields and not (len(fields) == 1 and not fields[0].strip()):
            yield start, fields
          start = reader.line_num + 1
        return
      for number, line in enumerate(f, 1):
        line = line.rstrip("\r\n")
        if number == 1:
          line = line.lstrip("\ufeff")
        if line.strip():
          yield number, line.split(delimiter)
    except UnicodeDecodeError as e:
      raise ValueError(f"{path} is not UTF-8 text ({e.reason} at byte "
                       f"{e.start} of a chunk)") from None
    except csv.Error as e:
      raise ValueError(f"{path} line {reader.line_num}: malformed CSV "
                       f"({e})") from None


class TableProcessor(DataProcessor):
  """A task stored as one table (TSV or CSV) per split: the task's `files`
  (split -> file name), `columns` (split -> `classifier_tasks.Columns`) and
  `skip_bad_lines` (log and skip rows with too few fields instead of
  failing: the GLUE copy of QQP has a few such rows); a family's
  `delimiter` and `quoting`.
  """

  delimiter = "\t"
  quoting = False

  def __init__(self, task):
    super().__init__(task)
    self.columns = task.columns
    self.skip_bad_lines = task.skip_bad_lines

  @property
  def pairs(self):
    return self.columns["train"].text_b is not None

  def clean_text(self, text):
    """Hook for a dataset's escaping conventions; identity here."""
    return text

  def path(self, data_dir, split):
    """The table file of `split`, checked to exist."""
    check_split(split)
    path = os.path.join(data_dir, self.files[split])
    _require_file(path, data_dir, self.layout)
    return path

  def source_signature(self, data_dir, split):
    return _file_signature(self.path(data_dir, split))

  def labelled(self, split):
    check_split(split)
    return self.columns[split].label is not None

  def table_columns(self, path, split):
    """The Columns of `split`'s table at `path`."""
    del path
    return self.columns[split]

  def get_examples(self, data_dir, split):
    self.resolve(data_dir)
    path = self.path(data_dir, split)
    cols = self.table_columns(path, split)
    return [self._make_example(fields, cols, i, f"{path} line {number}")
            for i, (number, fields) in enumerate(self._data_rows(path, cols))]

  def _data_rows(self, path, cols):
    """Yields (line number, fields) of the data rows (header skipped).

    Rows with fewer than `cols.min_columns` fields raise, or with
    `skip_bad_lines` are logged and skipped.
    """
    rows = read_rows(path, self.delimiter, self.quoting)
    if cols.header:
      next(rows, None)
    skipped = 0
    for number, fields in rows:
      if len(fields) >= cols.min_columns:
        yield number, fields
        continue
      message = (f"{path} line {number}: expected at least "
                 f"{cols.min_columns} {_DELIMITER_NAMES[self.delimiter]}-"
                 f"separated fields ({self.layout}), got {len(fields)}")
      if not self.skip_bad_lines:
        raise ValueError(message)
      logging.warning("skipped: %s", message)
      skipped += 1
    if skipped:
      logging.warning("%s: skipped %d malformed line(s)", path, skipped)

  def _make_example(self, fields, cols, index, where):
    """One InputExample from the fields of a row."""
    label = None
    if cols.label is not None:
      label = self.check_label(fields[cols.label].strip(), where)
    text_a = self.clean_text(fields[cols.text_a])
    text_b = None if cols.text_b is None else self.clean_text(
        fields[cols.text_b])
    guid = str(index) if cols.guid is None else fields[cols.guid].strip()
    return InputExample(guid, text_a, text_b, label)


def parse_column(value, flag):
  """A column flag: an int index or a header name (None stays None)."""
  if value is None or value == "":
    return None
  value = str(value)
  if value.lstrip("-").isdigit():
    return int(value)
  if not value.strip():
    raise ValueError(f"--{flag}={value!r}: expected a column index or name")
  return value
