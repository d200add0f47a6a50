"""Creates XLNet pretraining TFRecords from text files.

One run writes one (task, pass_id) of a save_dir: it validates every input
first (flags, globs, files, the SentencePiece model, save_dir), encodes the
task's files into one token stream, cuts it into `bsz_per_host` rows, builds
the examples of every row offset (`pretrain_examples`) and writes them, then
the record info, then (task 0) corpus_info.json, each atomically. All
randomness derives from (task, pass_id), so a rerun writes identical bytes,
whatever the number of worker processes. See docs/data.md.

Command line: `python data_utils.py --help`.
"""
import json
import os
import time

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet import errors
from xlnet import signals
from xlnet.data import example_proto
from xlnet import io_utils
from xlnet import validation
from xlnet.data import prepro_utils
from xlnet.data import pretrain_examples
from xlnet.data import record_format
from xlnet.data import token_stream
from xlnet.data import worker_pool

_SEED_MARK = 0x584C4E  # "XLN": part of every (task, pass_id) seed
# Lines per encoding job of a worker process; a job spans files, so that
# many small files do not cost one job (a pipe round trip and a
# SentencePiece call) each.
_LINES_PER_TASK = 2000
_LOG_SECONDS = 10
# corpus_info.json entries a later run into the same save_dir must match:
# flags, and the vocabulary size of the --sp_path model.
_LAYOUT_FLAGS = record_format.CORPUS_INFO_KEYS + ("use_eod",)
# How the span-mask checks name the settings (`check_sampling`).
_SAMPLING_FLAGS = {"mask_alpha": "--mask_alpha", "mask_beta": "--mask_beta",
                   "num_predict": "--num_predict", "reuse_len": "--reuse_len"}


# ----------------------------------------------------------------------------
# Validation (before anything is written).
# ----------------------------------------------------------------------------
def _check_config(cfg):
  """Validates record-creation settings; ValueError names the flag."""
  bsz, ncore = cfg["bsz_per_host"], cfg["num_core_per_host"]
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  for name in ("bsz_per_host", "num_core_per_host"):
    validation.check_value(name, cfg[name])
  if bsz % ncore:
    raise ValueError(f"--bsz_per_host={bsz} must be a multiple of "
                     f"--num_core_per_host={ncore}")
  if cfg["bi_data"] and bsz % (2 * ncore):
    raise ValueError(f"--bi_data needs --bsz_per_host={bsz} to be a multiple "
                     f"of 2 * --num_core_per_host = {2 * ncore}")
  if not 0 < reuse_len < seq_len - 3:
    raise ValueError(f"--reuse_len={reuse_len} must be in [1, --seq_len - 3) "
                     f"= [1, {seq_len - 3}) to leave room for A, B and "
                     "<sep> <sep> <cls>")
  pretrain_examples.check_sampling(cfg["mask_alpha"], cfg["mask_beta"],
                                   cfg["num_predict"], seq_len, reuse_len,
                                   _SAMPLING_FLAGS.get)
  if not 0 <= cfg["task"] < cfg["num_task"]:
    raise ValueError(f"--task={cfg['task']} must be in [0, --num_task="
                     f"{cfg['num_task']})")
  if cfg["pass_id"] < 0:
    raise ValueError(f"--pass_id={cfg['pass_id']} must be >= 0")
  split = cfg["split"]
  if not split or any(c in split for c in "/*?[]"):
    raise ValueError(f"--split={split!r} must be a non-empty name without "
                     "'/' or glob characters")


def _input_files(input_glob):
  """Expands the comma-separated globs into sorted, distinct text files."""
  if not input_glob:
    raise ValueError("--input_glob is empty: give the text files to process")
  paths = set()
  for pattern in input_glob.split(","):
    if not pattern:
      continue
    matched = tf.io.gfile.glob(pattern)
    if not matched:
      raise ValueError(f"--input_glob={pattern} matches no file")
    for path in matched:
      if tf.io.gfile.isdir(path):
        raise ValueError(f"--input_glob={pattern} matches the directory "
                         f"{path}; give text files (e.g. {path}/*.txt)")
    paths.update(matched)
  return sorted(paths)


def _task_files(input_glob, task, num_task):
  """The input files of one task: sorted(glob)[task::num_task]."""
  paths = _input_files(input_glob)
  mine = paths[task::num_task]
  if not mine:
    raise ValueError(f"--task={task} of --num_task={num_task} gets no file: "
                     f"--input_glob={input_glob} matches only {len(paths)}")
  return mine


def _check_save_dir(save_dir, info):
  """Checks that save_dir can take this run's output; creates its dirs.

  An existing corpus_info.json must describe the same record layout, so a
  run with other flags cannot leave a save_dir whose files disagree.

  Args:
    save_dir: the --save_dir flag.
    info: the corpus info this run would write.
  """
  if not save_dir:
    raise ValueError("--save_dir is empty")
  record_dir = os.path.join(save_dir, record_format.RECORD_DIR)
  for path in (save_dir, record_dir):
    if tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
      raise ValueError(f"--save_dir={save_dir}: {path} exists and is not a "
                       "directory")
  old = record_format.load_corpus_info(
      os.path.join(save_dir, record_format.CORPUS_INFO))
  if old is not None:
    diffs = [f"--{key}={info[key]} (it has {old.get(key)})"
             for key in _LAYOUT_FLAGS
             if key in old and not record_format.same_setting(
                 key, old[key], info[key])]
    kinds = [d.get("record_kind", "examples") for d in (info, old)]
    if kinds[0] != kinds[1]:
      diffs.append(f"--record_kind={kinds[0]} (it has {kinds[1]})")
    if old.get("vocab_size", info["vocab_size"]) != info["vocab_size"]:
      diffs.append(f"a --sp_path of {info['vocab_size']} pieces (it has "
                   f"{old['vocab_size']})")
    if diffs:
      raise ValueError(
          f"--save_dir={save_dir} holds records written with other settings "
          f"({', '.join(diffs)}); write to another --save_dir")
  try:
    tf.io.gfile.makedirs(record_dir)
    probe = io_utils.tmp_path_for(os.path.join(record_dir, "probe"))
    with tf.io.gfile.GFile(probe, "w") as f:
      f.write("")
    tf.io.gfile.remove(probe)
  except (tf.errors.OpError, OSError) as e:
    text = e.message if isinstance(e, tf.errors.OpError) else str(e)
    raise ValueError(f"--save_dir={save_dir} is not writable ({text})"
                     ) from None


# ----------------------------------------------------------------------------
# Corpus to rows.
# ----------------------------------------------------------------------------
def _read_lines(path):
  """The lines of one input file (ValueError names the file)."""
  try:
    raw = _read_bytes(path)
  except (tf.errors.OpError, OSError) as e:
    raise ValueError(f"--input_glob: cannot read {path}: "
                     f"{errors.error_text(e)}") from None
  return token_stream.split_lines(raw, path)


def _read_bytes(path):
  """Every byte of `path`, read once. A local pipe (bash's `<(...)`,
  /dev/stdin) is read as a stream: TensorFlow's reader takes its size, 0,
  and would find it empty."""
  if "://" not in path and os.path.exists(path) and not os.path.isfile(path):
    with open(path, "rb") as f:
      return f.read()
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read()


def build_stream(paths, workers, use_eod, rng):
  """Encodes the task's files, in an order drawn from `rng`, into one stream.

  Args:
    paths: the task's input files.
    workers: `worker_pool.worker_processes` that encode the lines.
    use_eod: blank lines add <eod>.
    rng: np.random.RandomState; its first draw orders the files.

  Returns:
    (ids np.int32 [n], sent_ids np.bool_ [n]).
  """
  files, texts = [], []  # (path, is_text) and text lines, in reading order
  for j in rng.permutation(len(paths)):
    lines, is_text = token_stream.text_lines(_read_lines(paths[j]))
    if not lines:
      raise ValueError(f"--input_glob: {paths[j]} holds no text (it is empty "
                       "or has only blank lines)")
    files.append((paths[j], is_text))
    texts.append(lines)
  jobs = _encoding_jobs([path for path, _ in files], texts)
  encoded = _with_progress(
      workers.imap(worker_pool.encode_job, jobs),
      [sum(len(lines) for lines, _ in job) for job in jobs], "encoding",
      "lines")
  ids = np.concatenate([e[0] for e in encoded])
  lengths = np.concatenate([e[1] for e in encoded])
  line_end = np.cumsum([np.count_nonzero(t) for _, t in files])
  id_end = np.concatenate([[0], np.cumsum(lengths)])[line_end]
  streams = []
  for n, (path, is_text) in enumerate(files):
    line_begin = line_end[n - 1] if n else 0
    id_begin = id_end[n - 1] if n else 0
    streams.append(token_stream.file_stream(
        is_text, ids[id_begin:id_end[n]], lengths[line_begin:line_end[n]],
        use_eod))
    logging.info("[%d/%d files] %s: %d tokens", n + 1, len(files), path,
                 len(streams[-1][0]))
  return token_stream.join_streams(streams)


def _encoding_jobs(paths, texts):
  """Cuts the files' text lines, in order, into jobs of `_LINES_PER_TASK`
  lines (the last may be shorter); a job may span files.

  Args:
    paths: the files, in reading order.
    texts: per file, its list of text lines.

  Returns:
    list of jobs, each a list of (lines, path) (see
    `worker_pool.encode_job`).
  """
  jobs, job, job_size = [], [], 0
  for path, lines in zip(paths, texts):
    k = 0
    while k < len(lines):
      take = min(len(lines) - k, _LINES_PER_TASK - job_size)
      job.append((lines[k:k + take], path))
      job_size += take
      k += take
      if job_size == _LINES_PER_TASK:
        jobs.append(job)
        job, job_size = [], 0
  return jobs + [job] if job else jobs


def _with_progress(results, sizes, what, unit):
  """Collects `results` into a list, logging progress and an ETA.

  Args:
    results: iterable of the jobs' results.
    sizes: the size of each job, in `unit`s.
    what, unit: words for the log lines.
  """
  out, done, start, last = [], 0, time.time(), time.time()
  size_total = sum(sizes)
  for result in results:
    signals.raise_if_terminated()
    done += sizes[len(out)]
    out.append(result)
    now = time.time()
    if now - last > _LOG_SECONDS:
      last = now
      rate = done / (now - start)
      logging.info("%s: %d/%d %s (%.0f %s/s), ETA %.0fs", what, done,
                   size_total, unit, rate, unit,
                   (size_total - done) / max(rate, 1e-9))
  return out


# ----------------------------------------------------------------------------
# Rows to records.
# ----------------------------------------------------------------------------
def _batches(rows, sent_rows, cfg, is_start, rng):
  """Yields the example batch of each row offset, in order, until one fails.

  Yields:
    dicts from `pretrain_examples.make_batch`.
  """
  row_len = rows.shape[1]
  bounds = [pretrain_examples.boundaries(s) for s in sent_rows]
  offset = 0
  while offset + cfg["seq_len"] <= row_len:
    batch = pretrain_examples.make_batch(rows, bounds, offset, cfg, is_start,
                                         rng)
    if batch is None:
      return
    yield batch
    offset += cfg["reuse_len"]


def write_records(record_path, rows, sent_rows, cfg, is_start, rng,
                  workers):
  """Walks the rows in steps of reuse_len and writes every full batch.

  Args:
    record_path: output .tfrecords path (appears only when complete).
    rows, sent_rows: [bsz_per_host, row_len] from `token_stream.batchify`.
    cfg: record settings (see `create_data`).
    is_start: word-start table.
    rng: np.random.RandomState.
    workers: `worker_pool.worker_processes` that serialize the examples.

  Returns:
    number of batches written (>= 1).
  """
  bsz, row_len = rows.shape
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  total = max(0, (row_len - seq_len) // reuse_len + 1)
  num_batch, start, last = 0, time.time(), time.time()
  with io_utils.atomic_output(record_path) as tmp:
    with tf.io.TFRecordWriter(tmp) as writer:
      batches = _batches(rows, sent_rows, cfg, is_start, rng)
      for records in workers.imap(example_proto.serialize_examples, batches):
        signals.raise_if_terminated()
        for record in records:
          writer.write(record)
        num_batch += 1
        now = time.time()
        if now - last > _LOG_SECONDS or num_batch == total:
          last = now
          rate = num_batch / (now - start)
          logging.info("batch %d/%d (%.1f batches/s, %.0f tokens/s), ETA "
                       "%.0fs", num_batch, total, rate, rate * bsz * reuse_len,
                       (total - num_batch) / max(rate, 1e-9))
    if not num_batch:  # raised inside: the empty file never appears
      raise ValueError(f"--input_glob: the corpus is too short for one batch "
                       f"of --bsz_per_host={bsz} rows: {row_len} tokens per "
                       f"row, --seq_len={seq_len} needs more")
  return num_batch


def create_data(input_glob, sp_path, save_dir, bsz_per_host=32,
                num_core_per_host=8, seq_len=512, reuse_len=256, uncased=False,
                bi_data=True, mask_alpha=6, mask_beta=1, num_predict=85,
                use_eod=True, from_raw_text=True, split="train", pass_id=0,
                num_task=1, task=0, num_workers=None,
                record_kind=validation.first_choice("record_kind")):
  """Creates the TFRecords of one (task, pass_id).

  Every input is checked before anything is written; the record file, its
  record info and (task 0) corpus_info.json then appear in that order, each
  only when complete. All randomness derives from (task, pass_id): reruns
  are identical, with any `num_workers`.

  Args:
    input_glob: comma-separated globs of text files.
    sp_path: SentencePiece model.
    save_dir: output dir (gets tfrecords/ and corpus_info.json).
    bsz_per_host ... task: the record settings (the flags of data_utils.py,
      `xlnet/flags/tool_catalog.define_record_flags`).
    num_workers: processes that encode and serialize (None: one per CPU).
    record_kind: "examples" (the release's records: examples with their
      span masks) or "tokens" (the rows and their sentence ids, for online
      sampling: `write_token_records`).

  Returns:
    path of the written record info json.
  """
  cfg = dict(bsz_per_host=bsz_per_host, num_core_per_host=num_core_per_host,
             seq_len=seq_len, reuse_len=reuse_len, uncased=uncased,
             bi_data=bi_data, mask_alpha=mask_alpha, mask_beta=mask_beta,
             num_predict=num_predict, use_eod=use_eod, task=task,
             num_task=num_task, pass_id=pass_id, split=split)
  _check_config(cfg)
  validation.check_value("record_kind", record_kind)
  if num_workers is None:
    num_workers = os.cpu_count() or 1
  if num_workers < 1:
    raise ValueError(f"--num_workers={num_workers} must be >= 1")
  paths = _task_files(input_glob, task, num_task)
  sp_model = prepro_utils.load_sp_model(sp_path, "--sp_path")
  info = dict(vocab_size=sp_model.get_piece_size(), **{
      k: cfg[k] for k in ("bsz_per_host", "num_core_per_host", "seq_len",
                          "reuse_len", "uncased", "bi_data", "mask_alpha",
                          "mask_beta", "num_predict", "use_eod")},
              sp_path=sp_path, input_glob=input_glob)
  if record_kind != "examples":  # (the release's corpus info stays as is)
    info["record_kind"] = record_kind
  _check_save_dir(save_dir, info)
  encoder = token_stream.LineEncoder(sp_model.serialized_model_proto(),
                                     uncased, from_raw_text)
  rng = np.random.RandomState([task, pass_id, _SEED_MARK])
  record_dir = os.path.join(save_dir, record_format.RECORD_DIR)
  record_name, info_name = record_format.record_file_names(
      split, task, pass_id, cfg)
  record_path = os.path.join(record_dir, record_name)
  info_path = os.path.join(record_dir, info_name)
  corpus_info_path = os.path.join(save_dir, record_format.CORPUS_INFO)
  for path in (record_path, info_path, corpus_info_path):
    io_utils.remove_stale_tmp(path)
  with worker_pool.worker_processes(num_workers, encoder) as workers:
    data, sent_ids = build_stream(paths, workers, use_eod, rng)
    rows, sent_rows = token_stream.batchify(data, bsz_per_host, sent_ids,
                                            num_core_per_host, bi_data)
    if record_kind == "tokens":
      num_batch, chunks = write_token_records(record_path, rows, sent_rows,
                                              cfg)
    else:
      num_batch = write_records(record_path, rows, sent_rows, cfg,
                                pretrain_examples.word_start_table(sp_model),
                                rng, workers)
  record_info = {
      "filenames": [record_name], "num_batch": num_batch,
      "file_bytes": {record_name: tf.io.gfile.stat(record_path).length}}
  if record_kind != "examples":  # max_token_id: `check_token_ids`
    record_info.update(record_kind=record_kind, row_chunks=chunks,
                       max_token_id=int(rows.max()))
  io_utils.atomic_write(info_path, json.dumps(record_info))
  if task == 0:
    io_utils.atomic_write(corpus_info_path, json.dumps(info, indent=2))
  logging.info("Wrote %d batches to %s and %s", num_batch, record_path,
               info_path)
  return info_path


# Longest piece of a row in one token record: about 4 bytes per piece (ids
# below 2**21 take 3 varint bytes, a sentence id 1), so a record stays near
# 64 MB, far below the 2 GB that one protocol buffer (and the reader's
# parse) can hold, however long a host's rows grow.
ROW_CHUNK = 1 << 24


def row_chunks(row_len):
  """How many token records one row of `row_len` pieces takes (>= 1)."""
  return max(1, -(-row_len // ROW_CHUNK))


def write_token_records(record_path, rows, sent_rows, cfg):
  """Writes the rows themselves: row after row, each in `row_chunks`
  records of at most ROW_CHUNK pieces, features `tokens` and `sent_id`
  (0/1), both int64; no masks, no A/B split. The records' values, joined in
  file order, are the rows joined in row order.

  Args:
    record_path: output .tfrecords path (appears only when complete).
    rows, sent_rows: [bsz_per_host, row_len] from `token_stream.batchify`.
    cfg: record settings (see `create_data`).

  Returns:
    (number of host batches the rows yield whatever the draws
    (`pretrain_examples.sure_batches`, >= 1), records per row).
  """
  bsz, row_len = rows.shape
  num_batch = pretrain_examples.sure_batches(
      row_len, [pretrain_examples.boundaries(s) for s in sent_rows], cfg)
  if not num_batch:
    raise ValueError(f"--input_glob: the corpus is too short for one batch "
                     f"of --bsz_per_host={bsz} rows: {row_len} tokens per "
                     f"row, --seq_len={cfg['seq_len']} needs more")
  sent_rows = sent_rows.astype(np.int64)
  with io_utils.atomic_output(record_path) as tmp:
    with tf.io.TFRecordWriter(tmp) as writer:
      for r in range(bsz):
        for begin in range(0, row_len, ROW_CHUNK):
          piece = slice(begin, begin + ROW_CHUNK)
          (record,) = example_proto.serialize_examples(
              {"tokens": rows[r:r + 1, piece],
               "sent_id": sent_rows[r:r + 1, piece]})
          writer.write(record)
  return num_batch, row_chunks(row_len)


# ----------------------------------------------------------------------------
# Checking written records.
# ----------------------------------------------------------------------------
def verify(save_dirs):
  """`data_utils.py --verify`: checks records, prints the bad files.

  Args:
    save_dirs: comma-separated save_dirs or tfrecords dirs.

  Raises:
    ValueError: when a file is bad (after printing one line per bad file).
  """
  dirs = [d for d in save_dirs.split(",") if d]
  if not dirs:
    raise ValueError("--verify needs --save_dir")
  num_files, bad = record_format.verify_record_dirs(dirs)
  for path, error in bad:
    print(f"BAD {path}: {error}", flush=True)
  if bad:
    raise ValueError(f"{len(bad)} of {num_files} record files under "
                     f"{save_dirs} are bad (listed above)")
  print(f"OK: {num_files} record files under {save_dirs} verified",
        flush=True)

