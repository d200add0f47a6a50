"""Task processors: labelled text examples from the public dataset layouts.

A processor turns the files of one task in `data_dir` into `InputExample`s
for the splits "train", "dev" and "test", and knows the task's labels (None
for regression) and metrics. Supported layouts:

  * GLUE (tab-separated, no quoting): cola, sst-2, mrpc, qqp, sts-b,
    mnli_matched, mnli_mismatched, qnli, rte, wnli: `{train,dev,test}.tsv`
    (MNLI: `dev_matched.tsv`, `test_matched.tsv`, ... ).
  * aclImdb: imdb, `{train,test}/{neg,pos}/*.txt` (dev = test).
  * The CSV datasets of Zhang et al. (2015): yelp5, yelp2, amazon5, amazon2,
    dbpedia, ag_news, `{train,test}.csv` (dev = test).
  * Your own files: tsv / csv (`make_processor` options choose the columns).

Every error about the data is a one-line ValueError naming the file, the
line and what was expected.
"""
import csv
import hashlib
import os

from absl import logging
import tensorflow as tf

SPLITS = ("train", "dev", "test")
_DELIMITER_NAMES = {"\t": "tab", ",": "comma"}


class InputExample:
  """One labelled (or, in test files, unlabelled) text example.

  Attributes:
    guid: str, a unique id; for GLUE test files the `index` column, so
      predictions can be submitted as they are.
    text_a: str, the first text.
    text_b: str or None, the second text of a pair.
    label: str (a member of the task's labels, or a number for regression)
      or None when the split carries no labels.
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
  """Base class: the splits, labels and metrics of one task.

  Attributes:
    name: the task name (`--task_name`).
    labels: list of label strings, or None for a regression task.
    metrics: names of the metrics reported on the dev split, see
      `xlnet.finetuning.metrics`.
    primary_metric: the metric that picks the best checkpoint.
    glue_task: True for GLUE tasks (predictions in the GLUE submission
      format).
  """

  name = None
  labels = None
  metrics = ("accuracy",)
  primary_metric = "accuracy"
  glue_task = False

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
    _check_split(split)
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


def _check_split(split):
  if split not in SPLITS:
    raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")


def _open_text(path):
  """Opens a UTF-8 text file (local or any tf.io.gfile URL)."""
  return tf.io.gfile.GFile(path, "r")


def _require_file(path, data_dir, layout):
  """Raises a one-line ValueError unless `path` exists."""
  if not tf.io.gfile.exists(path):
    raise ValueError(f"--data_dir={data_dir}: expected {path} ({layout}), "
                     "not found")


_DIGEST_CHUNK = 1 << 20


def update_digest(hasher, path):
  """Feeds the bytes of the file at `path` to `hasher` (a hashlib object),
  1 MiB at a time, so that large files are digested in constant memory."""
  with tf.io.gfile.GFile(path, "rb") as f:
    while True:
      chunk = f.read(_DIGEST_CHUNK)
      if not chunk:
        return
      hasher.update(chunk)


def _file_signature(path):
  """The file name of `path` and the sha1 (hex) of its bytes (one line)."""
  hasher = hashlib.sha1()
  update_digest(hasher, path)
  return f"{os.path.basename(path)}\tsha1 {hasher.hexdigest()}"


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
  with _open_text(path) as f:
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


class Columns:
  """Where the fields of one split live in its table.

  Attributes:
    text_a: int column index (negative counts from the end).
    text_b: int or None.
    label: int or None (test files have no labels).
    guid: int column holding the example id, or None for the 0-based row
      number among the examples.
    min_columns: rows with fewer fields are malformed.
    header: bool, the first row is a header.
  """

  def __init__(self, text_a, text_b=None, label=None, guid=None,
               min_columns=None, header=False):
    self.text_a = text_a
    self.text_b = text_b
    self.label = label
    self.guid = guid
    used = [c for c in (text_a, text_b, label, guid) if c is not None]
    self.min_columns = min_columns or max(
        [c + 1 if c >= 0 else -c for c in used])
    self.header = header


class TableProcessor(DataProcessor):
  """A task stored as one table (TSV or CSV) per split.

  Subclasses set `files` (split -> file name), `columns` (split -> Columns),
  `delimiter`, `quoting`, `layout` (a description for error messages) and
  optionally `skip_bad_lines` (log and skip rows with too few fields instead
  of failing: the GLUE copy of QQP has a few such rows).
  """

  files = None
  columns = None
  delimiter = "\t"
  quoting = False
  layout = None
  skip_bad_lines = False

  def clean_text(self, text):
    """Hook for a dataset's escaping conventions; identity here."""
    return text

  def path(self, data_dir, split):
    """The table file of `split`, checked to exist."""
    _check_split(split)
    path = os.path.join(data_dir, self.files[split])
    _require_file(path, data_dir, self.layout)
    return path

  def source_signature(self, data_dir, split):
    return _file_signature(self.path(data_dir, split))

  def labelled(self, split):
    _check_split(split)
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


################################################################################
# GLUE.
################################################################################
def _glue_files(dev="dev.tsv", test="test.tsv"):
  return {"train": "train.tsv", "dev": dev, "test": test}


class GlueProcessor(TableProcessor):
  """GLUE tasks: tab-separated tables, no quoting; test ids in column 0."""

  glue_task = True
  files = _glue_files()

  @classmethod
  def same_layout(cls, text_a, text_b, label, test_a, test_b,
                  train_header=True):
    """Columns of train/dev (one layout) and test (id in column 0, header
    row, no label)."""
    train = Columns(text_a, text_b, label, header=train_header)
    test = Columns(test_a, test_b, None, guid=0, header=True)
    return {"train": train, "dev": train, "test": test}


class ColaProcessor(GlueProcessor):
  name = "cola"
  labels = ["0", "1"]
  metrics = ("accuracy", "mcc")
  primary_metric = "mcc"
  layout = ("GLUE CoLA: train/dev without header: source, label, mark, "
            "sentence; test: index, sentence")
  columns = GlueProcessor.same_layout(3, None, 1, 1, None,
                                      train_header=False)


class Sst2Processor(GlueProcessor):
  name = "sst-2"
  labels = ["0", "1"]
  layout = "GLUE SST-2: sentence, label; test: index, sentence"
  columns = GlueProcessor.same_layout(0, None, 1, 1, None)


class MrpcProcessor(GlueProcessor):
  name = "mrpc"
  labels = ["0", "1"]
  metrics = ("accuracy", "f1")
  layout = ("GLUE MRPC: Quality, #1 ID, #2 ID, #1 String, #2 String; test: "
            "index, #1 ID, #2 ID, #1 String, #2 String")
  columns = GlueProcessor.same_layout(3, 4, 0, 3, 4)


class QqpProcessor(GlueProcessor):
  name = "qqp"
  labels = ["0", "1"]
  metrics = ("accuracy", "f1")
  layout = ("GLUE QQP: id, qid1, qid2, question1, question2, is_duplicate; "
            "test: id, question1, question2")
  columns = GlueProcessor.same_layout(3, 4, 5, 1, 2)
  # The GLUE copy of QQP holds a few questions broken over two lines.
  skip_bad_lines = True


class StsbProcessor(GlueProcessor):
  name = "sts-b"
  labels = None
  metrics = ("pearsonr", "spearmanr")
  primary_metric = "pearsonr"
  layout = ("GLUE STS-B: index, genre, filename, year, old_index, source1, "
            "source2, sentence1, sentence2, score (test: no score)")
  columns = GlueProcessor.same_layout(7, 8, 9, 7, 8)


class MnliMatchedProcessor(GlueProcessor):
  """MNLI with the matched dev/test sets; the label is the last column."""
  name = "mnli_matched"
  labels = ["contradiction", "entailment", "neutral"]
  files = _glue_files("dev_matched.tsv", "test_matched.tsv")
  layout = ("GLUE MNLI: sentence1 and sentence2 in columns 8 and 9, "
            "gold_label last (12 columns in train, 16 in dev, 10 in test)")
  columns = {"train": Columns(8, 9, -1, header=True, min_columns=12),
             "dev": Columns(8, 9, -1, header=True, min_columns=16),
             "test": Columns(8, 9, None, guid=0, header=True,
                             min_columns=10)}


class MnliMismatchedProcessor(MnliMatchedProcessor):
  name = "mnli_mismatched"
  files = _glue_files("dev_mismatched.tsv", "test_mismatched.tsv")


class QnliProcessor(GlueProcessor):
  name = "qnli"
  labels = ["entailment", "not_entailment"]
  layout = "GLUE QNLI: index, question, sentence, label (test: no label)"
  columns = GlueProcessor.same_layout(1, 2, 3, 1, 2)


class RteProcessor(GlueProcessor):
  name = "rte"
  labels = ["entailment", "not_entailment"]
  layout = "GLUE RTE: index, sentence1, sentence2, label (test: no label)"
  columns = GlueProcessor.same_layout(1, 2, 3, 1, 2)


class WnliProcessor(GlueProcessor):
  name = "wnli"
  labels = ["0", "1"]
  layout = "GLUE WNLI: index, sentence1, sentence2, label (test: no label)"
  columns = GlueProcessor.same_layout(1, 2, 3, 1, 2)


################################################################################
# The CSV datasets of Zhang et al. (2015): Yelp, Amazon, DBpedia, AG News.
################################################################################
class ZhangCsvProcessor(TableProcessor):
  """`train.csv` / `test.csv` with the class index (1-based) in column 0.

  The dev split is the test file (these datasets have no dev set). Texts are
  cleaned as the release cleaned Yelp-5 (see `clean_text`); the files'
  `\\n` escapes stay literal. With a title column, the title and the body
  form a pair (the body alone when the title is blank).
  """

  delimiter = ","
  quoting = True
  files = {"train": "train.csv", "dev": "test.csv", "test": "test.csv"}
  n_class = None
  has_title = False

  def __init__(self):
    self.labels = [str(i) for i in range(1, self.n_class + 1)]
    cols = Columns(1, 2, 0) if self.has_title else Columns(1, None, 0)
    self.columns = {split: cols for split in SPLITS}
    fields = "class, title, text" if self.has_title else "class, text"
    self.layout = (f"{self.name}: CSV rows '{fields}' with class "
                   f"1-{self.n_class}, in train.csv and test.csv")

  def clean_text(self, text):
    """The release's Yelp-5 cleaning of a parsed CSV field: `""` -> `"`,
    then `\\"` -> `"`, in that order (so `\\""` becomes `"`)."""
    return text.replace('""', '"').replace('\\"', '"')

  def _make_example(self, fields, cols, index, where):
    example = super()._make_example(fields, cols, index, where)
    if example.text_b is not None and not example.text_a.strip():
      example.text_a, example.text_b = example.text_b, None
    return example


class Yelp5Processor(ZhangCsvProcessor):
  name = "yelp5"
  n_class = 5


class Yelp2Processor(ZhangCsvProcessor):
  name = "yelp2"
  n_class = 2


class Amazon5Processor(ZhangCsvProcessor):
  name = "amazon5"
  n_class = 5
  has_title = True


class Amazon2Processor(ZhangCsvProcessor):
  name = "amazon2"
  n_class = 2
  has_title = True


class DbpediaProcessor(ZhangCsvProcessor):
  name = "dbpedia"
  n_class = 14
  has_title = True


class AgNewsProcessor(ZhangCsvProcessor):
  name = "ag_news"
  n_class = 4
  has_title = True


################################################################################
# IMDB (aclImdb).
################################################################################
class ImdbProcessor(DataProcessor):
  """aclImdb: one review per file under `{train,test}/{neg,pos}/`.

  The dev split (and test) is the `test` directory. `<br />` line breaks
  become spaces. Ids are `{neg|pos}/{file name}`; files are read in sorted
  order.
  """

  name = "imdb"
  labels = ["neg", "pos"]
  layout = "aclImdb: {train,test}/{neg,pos}/*.txt"
  _dirs = {"train": "train", "dev": "test", "test": "test"}

  def _label_dirs(self, data_dir, split):
    """{label: directory} of `split`, checked to exist."""
    _check_split(split)
    dirs = {}
    for label in self.labels:
      path = os.path.join(data_dir, self._dirs[split], label)
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
      update_digest(hasher, path)
      hasher.update(b"\0")
    return f"{len(files)} files, sha1 {hasher.hexdigest()}"

  def get_examples(self, data_dir, split):
    files = self._files(data_dir, split)
    examples = []
    for label, name, path in files:
      try:
        with _open_text(path) as f:
          text = f.read()
      except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
      text = text.strip().replace("<br />", " ")
      examples.append(InputExample(f"{label}/{name}", text, None, label))
    return examples


################################################################################
# Your own TSV / CSV files.
################################################################################
def _parse_column(value, flag):
  """A column flag: an int index or a header name (None stays None)."""
  if value is None or value == "":
    return None
  value = str(value)
  if value.lstrip("-").isdigit():
    return int(value)
  if not value.strip():
    raise ValueError(f"--{flag}={value!r}: expected a column index or name")
  return value


def _natural_key(label):
  """Sorts numeric labels by value ('2' < '10'), others by text after them."""
  try:
    return (0, float(label), label)
  except ValueError:
    return (1, 0.0, label)


class UserTableProcessor(TableProcessor):
  """`{train,dev,test}.{tsv,csv}` with columns chosen by index or name.

  Columns given by name (the default: `label`, `text_a`, and `text_b` when
  present) are looked up in the header row, which then must exist; columns
  given by index count from 0 and the file has a header row only with
  `contains_header`. TSV files are split at tabs literally; CSV files use
  standard quoting. The label list is `label_list` or, when not given, the
  sorted distinct labels of the train file. Test files need no label column.
  """

  def __init__(self, kind, label_column="label", text_a_column="text_a",
               text_b_column=None, contains_header=None, label_list=None,
               is_regression=False):
    if kind not in ("tsv", "csv"):
      raise ValueError(f"unknown table kind {kind!r}")
    self.name = kind
    self.delimiter = "\t" if kind == "tsv" else ","
    self.quoting = kind == "csv"
    self.files = {split: f"{split}.{kind}" for split in SPLITS}
    self.layout = (f"{kind} task: {{train,dev,test}}.{kind} with label "
                   f"column {label_column!r}, text_a {text_a_column!r}, "
                   f"text_b {text_b_column!r}")
    self._spec = {"label": _parse_column(label_column, "label_column"),
                  "text_a": _parse_column(text_a_column, "text_a_column"),
                  "text_b": _parse_column(text_b_column, "text_b_column")}
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
    self.primary_metric = self.metrics[0]
    self.labels = None
    self.columns = None

  @property
  def is_regression(self):
    return self._is_regression

  def options(self):
    """The settings that shape the examples (part of the records' key)."""
    return dict(self._spec, header=self.header, labels=self.labels)

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
    seen = {fields[cols.label].strip()
            for _, fields in self._data_rows(path, cols)}
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

  def _columns_for(self, path, with_label):
    """Columns of the table at `path`, names resolved against its header."""
    spec = dict(self._spec)
    if not with_label:
      spec["label"] = None
    if self.header and any(isinstance(v, str) for v in spec.values()):
      first = next(read_rows(path, self.delimiter, self.quoting), None)
      header = [h.strip() for h in first[1]] if first else []
      for key, value in spec.items():
        if isinstance(value, str):
          if value not in header:
            raise ValueError(f"{path}: no column named {value!r} in the "
                             f"header row {header} (--{key}_column)")
          spec[key] = header.index(value)
    return Columns(spec["text_a"], spec["text_b"], spec["label"],
                   header=self.header)

  def table_columns(self, path, split):
    return self._columns_for(path, with_label=split != "test")

  def labelled(self, split):
    _check_split(split)
    return split != "test"


################################################################################
# Registry.
################################################################################
PROCESSORS = {p.name: p for p in (
    ColaProcessor, Sst2Processor, MrpcProcessor, QqpProcessor, StsbProcessor,
    MnliMatchedProcessor, MnliMismatchedProcessor, QnliProcessor, RteProcessor,
    WnliProcessor, ImdbProcessor, Yelp5Processor, Yelp2Processor,
    Amazon5Processor, Amazon2Processor, DbpediaProcessor, AgNewsProcessor)}
USER_TASKS = ("tsv", "csv")
TASK_NAMES = tuple(sorted(PROCESSORS)) + USER_TASKS


def make_processor(task_name, **user_options):
  """The processor of `task_name` (case-insensitive).

  Args:
    task_name: one of TASK_NAMES.
    **user_options: for "tsv"/"csv" only, the `UserTableProcessor` options
      (label_column, text_a_column, text_b_column, contains_header,
      label_list, is_regression); ignored for the other tasks.

  Raises:
    ValueError: on an unknown task.
  """
  name = (task_name or "").lower()
  if name in USER_TASKS:
    return UserTableProcessor(name, **user_options)
  if name not in PROCESSORS:
    raise ValueError(f"--task_name={task_name}: unknown task; expected one "
                     f"of {', '.join(TASK_NAMES)}")
  return PROCESSORS[name]()
