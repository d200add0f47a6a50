"""The pretraining records on disk: names, metadata files and integrity.

A record writer run fills a save_dir:

  {save_dir}/corpus_info.json
      the settings the records were written with (written by task 0);
  {save_dir}/tfrecords/{split}-{task}-{pass_id}.{settings}.tfrecords
      the examples, `bsz_per_host` per row offset;
  {save_dir}/tfrecords/record_info-{split}-{task}-{pass_id}.{settings}.json
      {"filenames": [record file names], "num_batch": host batches,
       "file_bytes": {record file name: size in bytes}}.

`{settings}` spells out the record settings, e.g.
`bsz-32.seqlen-512.reuse-256.bi.alpha-6.beta-1.fnp-85`; `format_filename`
writes such names and `parse_filename` reads them back, both from one table
(`_NAME_FIELDS`). See docs/data.md.
"""
import collections
import json
import os
import re

import numpy as np
import tensorflow as tf

from xlnet import errors
from xlnet import gfile_io
from xlnet import io_utils

CORPUS_INFO = "corpus_info.json"
RECORD_DIR = "tfrecords"
INFO_PREFIX = "record_info-"
RECORD_SUFFIX = "tfrecords"
INFO_SUFFIX = "json"

# Record settings that name files and that corpus_info.json records.
SETTING_KEYS = ("bsz_per_host", "seq_len", "reuse_len", "uncased", "bi_data",
                "mask_alpha", "mask_beta", "num_predict")
# The settings of the span-mask draws: fixed in example records; token
# records are drawn at run time, so there the reader's values hold (their
# names carry the writer's, the defaults).
SAMPLING_KEYS = ("mask_alpha", "mask_beta", "num_predict")
# Keys every corpus_info.json must hold (readers resolve flags from them).
CORPUS_INFO_KEYS = SETTING_KEYS + ("num_core_per_host",)

_NameField = collections.namedtuple(
    "_NameField", ["key", "to_token", "pattern", "from_group", "optional"])


def _num_str(x):
  """Formats a mask_alpha/beta value the way file names use it ('6', '0.5')."""
  return str(int(x)) if float(x).is_integer() else str(x)


def _num_value(text):
  """Inverse of `_num_str`: '6' -> 6, '0.5' -> 0.5."""
  return int(text) if text.isdigit() else float(text)


def _count_field(key, tag, optional=False):
  """A whole-number setting written `{tag}-{value}` (left out when None, if
  `optional`)."""
  return _NameField(key, lambda v: None if v is None else f"{tag}-{v}",
                    rf"{tag}-(?P<{key}>\d+)", int, optional)


def _mask_field(key, tag):
  """A span-mask setting written `{tag}-{_num_str(value)}`."""
  return _NameField(key, lambda v: f"{tag}-{_num_str(v)}",
                    rf"{tag}-(?P<{key}>[0-9.]+?)", _num_value, False)


# One dot-separated token per setting, in file-name order. `to_token` maps a
# value to its token (None: the token is left out); `pattern` matches the
# token with a named group that `from_group` turns back into the value.
_NAME_FIELDS = (
    _count_field("bsz_per_host", "bsz"),
    _count_field("seq_len", "seqlen"),
    _count_field("reuse_len", "reuse", optional=True),
    _NameField("uncased", lambda v: "uncased" if v else None,
               r"(?P<uncased>uncased)", lambda g: True, True),
    _NameField("bi_data", lambda v: "bi" if v else "uni",
               r"(?P<bi_data>bi|uni)", lambda g: g == "bi", False),
    _mask_field("mask_alpha", "alpha"),
    _mask_field("mask_beta", "beta"),
    _count_field("num_predict", "fnp", optional=True),
)
_NAME_RE = re.compile(
    rf"(?P<info>{INFO_PREFIX})?(?P<split>.+?)-(?P<task>\d+)-(?P<pass_id>\d+)"
    + "".join(rf"(?:\.{f.pattern})?" if f.optional else rf"\.{f.pattern}"
              for f in _NAME_FIELDS)
    + rf"\.(?P<suffix>{RECORD_SUFFIX}|{INFO_SUFFIX})$")


def format_filename(prefix, bsz_per_host, seq_len, bi_data, suffix,
                    mask_alpha=5, mask_beta=1, reuse_len=None, uncased=False,
                    fixed_num_predict=None):
  """Builds a record (info) file name, as the released tool names them.

  Args:
    prefix: '{split}-{task}-{pass_id}', with 'record_info-' in front for a
      record info.
    bsz_per_host, seq_len, bi_data, mask_alpha, mask_beta, reuse_len,
      uncased, fixed_num_predict: the record settings (None reuse_len or
      fixed_num_predict leave their token out, as the release allowed).
    suffix: 'tfrecords' or 'json'.

  Returns:
    str, e.g. 'train-0-0.bsz-32.seqlen-512.reuse-256.bi.alpha-6.beta-1.fnp-85
    .tfrecords'.
  """
  values = dict(bsz_per_host=bsz_per_host, seq_len=seq_len,
                reuse_len=reuse_len, uncased=uncased, bi_data=bi_data,
                mask_alpha=mask_alpha, mask_beta=mask_beta,
                num_predict=fixed_num_predict)
  tokens = [f.to_token(values[f.key]) for f in _NAME_FIELDS]
  return ".".join([prefix] + [t for t in tokens if t is not None] + [suffix])


def parse_filename(basename):
  """Reads the settings back from a record or record-info file name.

  Returns:
    dict with `is_info` (bool), `split` (str), `task`, `pass_id` (int) and
    every SETTING_KEYS entry (None where the name leaves it out); None when
    the name does not follow the scheme.
  """
  m = _NAME_RE.match(basename)
  is_info = m is not None and m.group("info") is not None
  if not m or is_info != (m.group("suffix") == INFO_SUFFIX):
    return None
  out = dict(is_info=is_info, split=m.group("split"),
             task=int(m.group("task")), pass_id=int(m.group("pass_id")))
  for f in _NAME_FIELDS:
    group = m.group(f.key)
    out[f.key] = None if group is None else f.from_group(group)
  if out["uncased"] is None:
    out["uncased"] = False
  return out


def record_file_names(split, task, pass_id, settings):
  """Names of one (task, pass) output: (record file, record info).

  Args:
    split, task, pass_id: the output's identity.
    settings: dict with every SETTING_KEYS entry.

  Returns:
    (str, str) basenames.
  """
  args = dict(bsz_per_host=settings["bsz_per_host"],
              seq_len=settings["seq_len"], bi_data=settings["bi_data"],
              mask_alpha=settings["mask_alpha"],
              mask_beta=settings["mask_beta"],
              reuse_len=settings["reuse_len"], uncased=settings["uncased"],
              fixed_num_predict=settings["num_predict"])
  stem = f"{split}-{task}-{pass_id}"
  return (format_filename(stem, suffix=RECORD_SUFFIX, **args),
          format_filename(INFO_PREFIX + stem, suffix=INFO_SUFFIX, **args))


def same_setting(key, a, b):
  """True when two values of setting `key` name the same records."""
  if key in ("mask_alpha", "mask_beta") and a is not None and b is not None:
    return _num_str(a) == _num_str(b)
  return a == b


# ----------------------------------------------------------------------------
# Metadata files.
# ----------------------------------------------------------------------------
def read_json(path, what):
  """Reads a JSON object; a ValueError names the file when it is malformed.

  Args:
    path: local path or tf.io.gfile URL.
    what: what the file is, for messages (e.g. 'record info').

  Returns:
    dict.
  """
  try:
    with tf.io.gfile.GFile(path, "rb") as f:
      raw = f.read()
  except tf.errors.OpError as e:
    raise ValueError(f"cannot read {what} {path}: {e.message}") from None
  try:
    value = json.loads(raw.decode("utf-8"))
  except UnicodeDecodeError:
    raise ValueError(f"{path} is not a valid {what}: not UTF-8 text; "
                     "rerun data_utils.py to rewrite it") from None
  except json.JSONDecodeError as e:
    raise ValueError(f"{path} is not a valid {what}: {e.msg} (line "
                     f"{e.lineno} column {e.colno}; truncated?); rerun "
                     "data_utils.py to rewrite it") from None
  if not isinstance(value, dict):
    raise ValueError(f"{path} is not a valid {what}: expected a JSON object, "
                     f"got {type(value).__name__}")
  return value


def _require(info, path, what, types):
  """Checks that `info` has each key of `types` with a value of that type."""
  for key, expected in types.items():
    if key not in info:
      raise ValueError(f"{path} is not a valid {what}: it has no '{key}'")
    value = info[key]
    if isinstance(value, bool) and expected is not bool:
      ok = False  # JSON true is not a number here
    else:
      ok = isinstance(value, expected)
    if not ok:
      raise ValueError(f"{path} is not a valid {what}: '{key}' is "
                       f"{value!r}")


def is_token_info(info):
  """Whether a record info lists token records (data_utils.py
  --record_kind=tokens: the rows, sampled online)."""
  return info.get("record_kind", "examples") == "tokens"


def read_record_info(path):
  """Reads and checks a record_info-*.json.

  Returns:
    dict with `filenames` (list of str), `num_batch` (int) and `file_bytes`
    (dict name -> int; empty for records written by the release).
  """
  info = read_json(path, "record info")
  _require(info, path, "record info", {"filenames": list, "num_batch": int})
  if not all(isinstance(n, str) for n in info["filenames"]):
    raise ValueError(f"{path} is not a valid record info: 'filenames' must "
                     "be a list of file names")
  info.setdefault("file_bytes", {})
  chunks = info.get("row_chunks", 1)
  if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
    raise ValueError(f"{path} is not a valid record info: 'row_chunks' is "
                     f"{chunks!r}")
  return info


def corpus_info_candidates(path_or_dir):
  """Where a corpus_info.json for a path may be: itself, inside, or beside.

  Args:
    path_or_dir: the json file, the save_dir holding it, or the tfrecords dir
      whose parent holds it.

  Returns:
    list of candidate paths, in the order they are tried.
  """
  path_or_dir = path_or_dir.rstrip("/")
  if path_or_dir.endswith(".json"):
    return [path_or_dir]
  # No os.path.normpath: it would turn "gs://b/x" into "gs:/b/x".
  return [os.path.join(path_or_dir, CORPUS_INFO),
          os.path.join(os.path.dirname(path_or_dir), CORPUS_INFO)]


def load_corpus_info(path_or_dir):
  """Reads corpus_info.json.

  Args:
    path_or_dir: the json file, the save_dir holding it, or the tfrecords dir
      whose parent holds it.

  Returns:
    dict, or None when no corpus_info.json is found.

  Raises:
    ValueError: naming the file when it is malformed or lacks a setting.
  """
  if not path_or_dir:
    return None
  for path in corpus_info_candidates(path_or_dir):
    if tf.io.gfile.exists(path):
      info = read_json(path, "corpus info")
      _require(info, path, "corpus info",
               {key: (bool if key in ("uncased", "bi_data") else
                      (int, float) if key.startswith("mask_") else int)
                for key in CORPUS_INFO_KEYS if key != "num_predict"})
      return info
  return None


def find_record_infos(record_dir):
  """Every record info of a directory whose name follows the scheme.

  Returns:
    list of (path, parsed name from `parse_filename`), sorted by path.
  """
  pattern = os.path.join(gfile_io.glob_escape(record_dir),
                         f"{INFO_PREFIX}*.{INFO_SUFFIX}")
  found = []
  for path in sorted(tf.io.gfile.glob(pattern)):
    name = parse_filename(os.path.basename(path))
    if name is not None and name["is_info"]:
      found.append((path, name))
  return found


def listed_files(info_path, info):
  """The record files a record info lists, each with its size problem.

  Record files live next to their record info (the release stored full
  paths; only their base names are used).

  Args:
    info_path: the record info's path.
    info: its content from `read_record_info`.

  Returns:
    list of (path, one-line error or None when the file is present with
    the size its record info says).
  """
  record_dir = os.path.dirname(info_path)
  out = []
  for name in info["filenames"]:
    path = os.path.join(record_dir, os.path.basename(name))
    if not tf.io.gfile.exists(path):
      out.append((path, f"missing (listed by {info_path})"))
      continue
    want = info["file_bytes"].get(name)
    got = tf.io.gfile.stat(path).length
    if want is not None and got != want:
      out.append((path, f"truncated or corrupt: {got} bytes, its record "
                        f"info says {want}"))
    else:
      out.append((path, None))
  return out


# ----------------------------------------------------------------------------
# Integrity.
# ----------------------------------------------------------------------------
def token_id_error(top, vocab_size, low=0):
  """Why a token file whose ids run from `low` to `top` cannot be read
  with a vocabulary of `vocab_size` pieces (None when it can; a
  `vocab_size` of None checks only that no id is negative)."""
  if low < 0:
    return f"holds token id {low}, below 0 (a damaged record?)"
  if vocab_size is None or top < vocab_size:
    return None
  return (f"holds token id {top}, beyond the {vocab_size} pieces of the "
          "corpus info's SentencePiece model (written with another model?)")


def checked_ids(tensors, vocab_size):
  """`tensors` (a list of integer tensors of token ids), once an assertion
  saw every id at least 0 and below `vocab_size`; else the read fails with
  an InvalidArgumentError of `errors.BAD_TOKEN_ID`, the smallest and
  largest ids and the vocabulary (the trainers then name the file:
  `data_loss_message`). Ids that changed after the record info was
  written failed later, inside a lookup, with TensorFlow's error (or read
  another row, on a GPU)."""
  ids = [tf.cast(t, tf.int64) for t in tensors]
  low = tf.reduce_min([tf.reduce_min(t) for t in ids])
  top = tf.reduce_max([tf.reduce_max(t) for t in ids])
  with tf.control_dependencies([tf.debugging.Assert(
      tf.logical_and(low >= 0, top < vocab_size),
      [errors.BAD_TOKEN_ID, low, top, vocab_size])]):
    return [tf.identity(t) for t in tensors]


# The features that hold token ids: of token records, of example records.
_ID_FEATURES = ("tokens", "input", "target")


def _id_range(record):
  """(smallest, largest) token id of a token or example record ((0, -1)
  when it holds none)."""
  values = tf.io.parse_single_example(
      record, {name: tf.io.RaggedFeature(tf.int64) for name in _ID_FEATURES})
  ids = list(values.values())
  return (tf.reduce_min(tf.concat([[np.int64(0)]] + ids, 0)),
          tf.reduce_max(tf.concat([[np.int64(-1)]] + ids, 0)))


class _RecordCounter:
  """Counts the records of files, checking every record's CRC, in C++, and
  finds their smallest and largest token ids."""

  def __init__(self):
    self._graph = tf.Graph()
    with self._graph.as_default():
      self._path = tf.compat.v1.placeholder(tf.string, [])
      records = tf.data.TFRecordDataset(self._path)
      self._tokens = records.map(_id_range).reduce(
          (np.int64(0), np.int64(0), np.int64(-1)),
          lambda state, ids: (state[0] + 1, tf.minimum(state[1], ids[0]),
                              tf.maximum(state[2], ids[1])))
    self._sess = tf.compat.v1.Session(graph=self._graph)

  def count_tokens(self, path):
    """(number of records, smallest and largest token id) of the record
    file `path`; raises tf.errors.OpError when bad."""
    count, low, top = self._sess.run(self._tokens, {self._path: path})
    return int(count), int(low), int(top)

  def close(self):
    self._sess.close()


def verify_records(paths, num_records=None, vocab_sizes=None):
  """Reads every record of every file and reports the bad files.

  A file is bad when it is missing, unreadable, truncated, has a record
  whose length or data checksum (CRC) is wrong, (when `num_records`
  gives its expected count) holds a different number of records, holds a
  negative token id or (a file of `vocab_sizes`) one beyond its
  vocabulary.

  Args:
    paths: record files (local paths or tf.io.gfile URLs).
    num_records: optional dict path -> expected number of records.
    vocab_sizes: optional dict path -> the vocabulary size of a file's
      token ids (token or example records).

  Returns:
    list of (path, one-line error) for the bad files, in `paths` order.
  """
  bad = []
  counter = _RecordCounter()
  try:
    for path in paths:
      if not tf.io.gfile.exists(path):
        bad.append((path, "file not found"))
        continue
      vocab_size = (vocab_sizes or {}).get(path)
      try:
        got, low, top = counter.count_tokens(path)
      except tf.errors.OpError as e:
        bad.append((path, errors.op_error_cause(e)))
        continue
      want = (num_records or {}).get(path)
      if want is not None and got != want:
        bad.append((path, f"{got} records, its record info says {want}"))
      elif token_id_error(top, vocab_size, low):
        bad.append((path, token_id_error(top, vocab_size, low)))
  finally:
    counter.close()
  return bad


def data_loss_message(paths, vocab_size=None, err=None):
  """One line naming the corrupted files among `paths`, for the trainer.

  Meant to be called after training stopped on bad data (`errors.
  is_bad_data`: a tf.errors.DataLossError, whose message names an offset
  but no file, or a token id beyond the vocabulary).

  Args:
    paths: the input files of this host (e.g. the input function's
      record_info["host_filenames"][host]).
    vocab_size: the vocabulary their token ids must be below (the corpus
      info's), or None.
    err: the error that stopped the run, or None.

  Returns:
    str, one line.
  """
  bad = verify_records(paths, vocab_sizes=dict.fromkeys(
      paths, vocab_size) if vocab_size else None)
  if not bad:
    cause = f" ({errors.op_error_cause(err)})" if err is not None else ""
    return (f"a record could not be read{cause}, but all {len(paths)} input "
            "files verify cleanly now (a transient storage error?)")
  listed = "; ".join(f"{path}: {error}" for path, error in bad)
  return (f"{len(bad)} of {len(paths)} record files are corrupt ({listed}); "
          "rewrite them with data_utils.py (same flags, --task and "
          "--pass_id) or move their record_info-*.json away")


def verify_record_dirs(dirs):
  """Checks every record file the record infos of some directories list.

  Args:
    dirs: list of save_dirs or tfrecords dirs.

  Returns:
    (number of record files checked, list of (path, one-line error) for the
    bad record infos and record files).
  """
  bad, paths, counts, vocab_sizes, num_files = [], [], {}, {}, 0
  for d in dirs:
    record_dir = d
    if tf.io.gfile.isdir(os.path.join(d, RECORD_DIR)):
      record_dir = os.path.join(d, RECORD_DIR)
    if not tf.io.gfile.isdir(record_dir):
      raise ValueError(f"--save_dir: {d} is not a directory")
    vocab_size = (load_corpus_info(record_dir) or {}).get("vocab_size")
    infos = find_record_infos(record_dir)
    if not infos:
      raise ValueError(f"--save_dir: {record_dir} holds no "
                       f"{INFO_PREFIX}*.{INFO_SUFFIX}")
    for info_path, name in infos:
      try:
        info = read_record_info(info_path)
      except ValueError as e:
        bad.append((info_path, str(e)))
        continue
      files = listed_files(info_path, info)
      num_files += len(files)
      for path, error in files:
        if error:
          bad.append((path, error))
        else:
          paths.append(path)
      if len(files) == 1:  # num_batch counts the batches of all its files
        # A token file holds its rows, each in row_chunks records.
        counts[files[0][0]] = name["bsz_per_host"] * (
            info.get("row_chunks", 1) if is_token_info(info)
            else info["num_batch"])
      if vocab_size is not None:
        vocab_sizes.update((path, vocab_size) for path, _ in files)
  return num_files, bad + verify_records(paths, counts, vocab_sizes)
