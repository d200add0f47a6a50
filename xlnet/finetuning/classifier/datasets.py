"""The processor of each family of datasets, and `make_processor`, which
makes a task's processor from its entry of `classifier/tasks.py` (the base
classes: `classifier/processors.py`).

  * GLUE (tab-separated, no quoting): cola, sst-2, mrpc, qqp, sts-b,
    mnli_matched, mnli_mismatched, qnli, rte, wnli.
  * The CSV datasets of Zhang et al. (2015): yelp5, yelp2, amazon5, amazon2,
    dbpedia, ag_news.
  * aclImdb: imdb.
  * Your own files: tsv / csv.
"""
import hashlib
import os

from absl import logging
import tensorflow as tf

from xlnet.finetuning import record_cache
from xlnet.finetuning.classifier import multi_label as multi_label_lib
from xlnet.finetuning.classifier import processors as classifier_processors
from xlnet.finetuning.classifier import tasks as classifier_tasks


class GlueProcessor(classifier_processors.TableProcessor):
  """GLUE tasks: tab-separated tables, no quoting; test ids in column 0
  (predictions in the GLUE submission format)."""

  glue_task = True


################################################################################
# The CSV datasets of Zhang et al. (2015): Yelp, Amazon, DBpedia, AG News.
################################################################################
class ZhangCsvProcessor(classifier_processors.TableProcessor):
  """`train.csv` / `test.csv` with the class index (1-based) in column 0.

  The dev split is the test file (these datasets have no dev set). Texts are
  cleaned as the release cleaned Yelp-5 (see `clean_text`); the files'
  `\\n` escapes stay literal. With a title column, the title and the body
  form a pair (the body alone when the title is blank).
  """

  delimiter = ","
  quoting = True

  def clean_text(self, text):
    """The release's Yelp-5 cleaning of a parsed CSV field: `""` -> `"`,
    then `\\"` -> `"`, in that order (so `\\""` becomes `"`)."""
    return text.replace('""', '"').replace('\\"', '"')

  def _make_example(self, fields, cols, index, where):
    example = super()._make_example(fields, cols, index, where)
    if example.text_b is not None and not example.text_a.strip():
      example.text_a, example.text_b = example.text_b, None
    return example


################################################################################
# IMDB (aclImdb).
################################################################################
class ImdbProcessor(classifier_processors.DataProcessor):
  """aclImdb: one review per file under `{train,test}/{neg,pos}/`.

  The dev split (and test) is the `test` directory. `<br />` line breaks
  become spaces. Ids are `{neg|pos}/{file name}`; files are read in sorted
  order.
  """

  def _label_dirs(self, data_dir, split):
    """{label: directory} of `split`, checked to exist."""
    classifier_processors.check_split(split)
    dirs = {}
    for label in self.labels:
      path = os.path.join(data_dir, self.files[split], label)
      if not tf.io.gfile.isdir(path):
        raise ValueError(f"--data_dir={data_dir}: expected the directory "
                         f"{path} ({self.layout}), not found")
      dirs[label] = path
    return dirs

  def _files(self, data_dir, split):
    """Sorted [(label, file name, path)] of `split`."""
    out = []
    for label, path in self._label_dirs(data_dir, split).items():
      names = sorted(n for n in tf.io.gfile.listdir(path) if n.endswith(".txt"))
      out.extend((label, n, os.path.join(path, n)) for n in names)
    return out

  def source_signature(self, data_dir, split):
    """sha1 over every review's label, file name and bytes, in read order."""
    files = self._files(data_dir, split)
    hasher = hashlib.sha1()
    for label, name, path in files:
      hasher.update(f"{label}/{name}\0".encode())
      record_cache.update_digest(hasher, path)
      hasher.update(b"\0")
    return f"{len(files)} files, sha1 {hasher.hexdigest()}"

  def get_examples(self, data_dir, split):
    files = self._files(data_dir, split)
    examples = []
    for label, name, path in files:
      try:
        with classifier_processors.open_text(path) as f:
          text = f.read()
      except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
      text = text.strip().replace("<br />", " ")
      examples.append(classifier_processors.InputExample(
          f"{label}/{name}", text, None, label))
    return examples


################################################################################
# Your own TSV / CSV files.
################################################################################
def _natural_key(label):
  """Sorts numeric labels by value ('2' < '10'), others by text after them."""
  try:
    return (0, float(label), label)
  except ValueError:
    return (1, 0.0, label)


class UserTableProcessor(classifier_processors.TableProcessor):
  """`{train,dev,test}.{tsv,csv}` with columns chosen by index or name.

  Columns given by name (the default: `label`, `text_a`, and `text_b` when
  present) are looked up in the header row, which then must exist; columns
  given by index count from 0 and the file has a header row only with
  `contains_header`. TSV files are split at tabs literally; CSV files use
  standard quoting. The label list is `label_list` or, when not given, the
  sorted distinct labels of the train file. Test files need no label column.
  With `multi_label` the label column holds a set of labels separated by
  `label_delimiter` (`classifier/multi_label.py`).
  """

  def __init__(self, task, label_column="label", text_a_column="text_a",
               text_b_column=None, contains_header=None, label_list=None,
               is_regression=False, multi_label=False,
               label_delimiter=multi_label_lib.DEFAULT_DELIMITER):
    super().__init__(task)
    kind = task.name
    self.delimiter = "\t" if kind == "tsv" else ","
    self.quoting = kind == "csv"
    self.layout = (f"{kind} task: {{train,dev,test}}.{kind} with label "
                   f"column {label_column!r}, text_a {text_a_column!r}, "
                   f"text_b {text_b_column!r}")
    self._spec = {"label": classifier_processors.parse_column(label_column, "label_column"),
                  "text_a": classifier_processors.parse_column(text_a_column, "text_a_column"),
                  "text_b": classifier_processors.parse_column(text_b_column, "text_b_column")}
    if self._spec["text_a"] is None:
      raise ValueError(f"--text_a_column is required for --task_name={kind}")
    if self._spec["label"] is None:
      raise ValueError(f"--label_column is required for --task_name={kind}")
    by_name = any(isinstance(v, str) for v in self._spec.values())
    if contains_header is False and by_name:
      raise ValueError("--contains_header=False but columns are given by "
                       f"name ({self._spec}); use column indices")
    self.header = by_name or bool(contains_header)
    self._label_list = label_list
    self._is_regression = is_regression
    self.metrics = (("pearsonr", "spearmanr") if is_regression
                    else ("accuracy",))
    self.multi_label = multi_label
    self.label_delimiter = label_delimiter
    if multi_label:
      self.layout += f", label sets separated by {label_delimiter!r}"
      self.metrics = ("micro_f1", "macro_f1", "exact_match")
      if label_list:
        multi_label_lib.check_labels(label_list, label_delimiter,
                                     "--label_list")
    self.primary_metric = self.metrics[0]

  @property
  def is_regression(self):
    return self._is_regression

  @property
  def pairs(self):
    return self._spec["text_b"] is not None

  def options(self):
    """The settings that shape the examples (part of the records' key)."""
    options = dict(self._spec, header=self.header, labels=self.labels)
    if self.multi_label:
      options.update(multi_label=True, label_delimiter=self.label_delimiter)
    return options

  def resolve(self, data_dir):
    """Fixes the label list: `label_list`, or the sorted distinct labels of
    the train file (numbers by value). Returns self."""
    if self._is_regression or self.labels is not None:
      return self
    if self._label_list:
      self.labels = list(self._label_list)
      return self
    path = self.path(data_dir, "train")
    cols = self.table_columns(path, "train")
    seen = set()
    for number, fields in self._data_rows(path, cols):
      cell = fields[cols.label].strip()
      seen.update(multi_label_lib.parse_label_set(
          cell, self.label_delimiter, None, f"{path} line {number}")
                  if self.multi_label else (cell,))
    if not seen:
      raise ValueError(f"{path} holds no examples to read the labels from; "
                       "give --label_list")
    self.labels = sorted(seen, key=_natural_key)
    logging.info("Labels of %s (from %s): %s", self.name, path, self.labels)
    return self

  def get_labels(self):
    if not self._is_regression and self.labels is None:
      raise ValueError(f"task {self.name}: call resolve(data_dir) first")
    return super().get_labels()

  def check_label(self, label, where):
    """A multi-label task's label set (a tuple, `multi_label.
    parse_label_set`), else the one label (`DataProcessor.check_label`)."""
    if self.multi_label:
      return multi_label_lib.parse_label_set(label, self.label_delimiter,
                                             self.labels, where)
    return super().check_label(label, where)

  def _columns_for(self, path, with_label):
    """Columns of the table at `path`, names resolved against its header."""
    spec = dict(self._spec)
    if not with_label:
      spec["label"] = None
    if self.header and any(isinstance(v, str) for v in spec.values()):
      first = next(classifier_processors.read_rows(
          path, self.delimiter, self.quoting), None)
      header = [h.strip() for h in first[1]] if first else []
      for key, value in spec.items():
        if isinstance(value, str):
          if value not in header:
            raise ValueError(f"{path}: no column named {value!r} in the "
                             f"header row {header} (--{key}_column)")
          spec[key] = header.index(value)
    return classifier_tasks.Columns(spec["text_a"], spec["text_b"],
                                    spec["label"], header=self.header)

  def table_columns(self, path, split):
    return self._columns_for(path, with_label=split != "test")

  def labelled(self, split):
    classifier_processors.check_split(split)
    return split != "test"


################################################################################
# Registry.
################################################################################
# Each family of `classifier/tasks.py`: the processor of its tasks.
PROCESSORS = {classifier_tasks.GLUE: GlueProcessor,
              classifier_tasks.ZHANG_CSV: ZhangCsvProcessor,
              classifier_tasks.ACL_IMDB: ImdbProcessor,
              classifier_tasks.YOURS: UserTableProcessor}


def make_processor(task_name, **user_options):
  """The processor of `task_name` (case-insensitive).

  Args:
    task_name: one of `classifier_tasks.NAMES`.
    **user_options: for "tsv"/"csv" only, the `UserTableProcessor` options
      (label_column, text_a_column, text_b_column, contains_header,
      label_list, is_regression, multi_label, label_delimiter); ignored
      for the other tasks.

  Raises:
    ValueError: on an unknown task.
  """
  task = classifier_tasks.get(task_name)
  if task.family == classifier_tasks.YOURS:
    return UserTableProcessor(task, **user_options)
  return PROCESSORS[task.family](task)
