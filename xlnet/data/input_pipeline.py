"""The pretraining input function: records to two-stream model features.

`get_input_fn` finds the record files that match the training settings
(`find_record_files`), gives each host its share in a fixed order, and turns
every example into the features of permutation language modelling
(`perm_features.py`: a factorization order sampled per example, the
attention mask `perm_mask` it implies, and the one-hot `target_mapping` of
the positions to predict).

Every random draw is a stateless function of (seed, host, position of the
example in the host's stream, counting across epochs): the same example
index always gets the same factorization order, whatever happened before,
so a resumed run that skips the batches it already consumed continues
exactly like an uninterrupted one. Token records (data_utils.py
--record_kind=tokens) hold rows instead of examples: the A/B split and span
masks of host batch b are drawn online from a key folded from (seed, host,
b). See docs/data.md.

Messages name each setting as the calling program's user sets it: the
`flag_names` a program passes (e.g. `{"split": "--eval_split"}`), else the
argument's own name (`bsz_per_host`).
"""
import functools
import os

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet.data import online_examples
from xlnet.data import perm_features
from xlnet.data import prepro_utils
from xlnet.data import pretrain_examples
from xlnet.data import record_format
from xlnet import configs
from xlnet import validation


# ----------------------------------------------------------------------------
# Finding the records.
# ----------------------------------------------------------------------------
def namer(flag_names=None):
  """How messages name a setting: `namer(names)("split")` is
  `names["split"]` when given (the caller's flag, e.g. "--eval_split"),
  else "split"."""
  names = dict(flag_names or {})
  return lambda key: names.get(key, key)


def _describe_mismatch(record_dir, wanted, num_passes, name):
  """One-line description of the record infos in a dir vs the wanted ones
  (`name`: a `namer`)."""
  infos = record_format.find_record_infos(record_dir)
  if not infos:
    return (f"{record_dir} holds no record_info-*.json that data_utils.py "
            "writes")
  seen = {}
  for path, got in infos:
    diffs = [f"{name(key)}={wanted[key]} (data: {got[key]})"
             for key in wanted
             if not record_format.same_setting(key, wanted[key], got[key])]
    if not diffs and num_passes is not None and got["pass_id"] >= num_passes:
      diffs = [f"pass_id {got['pass_id']} >= {name('num_passes')}="
               f"{num_passes}"]
    seen.setdefault(", ".join(diffs), os.path.basename(path))
  return f"{record_dir}: " + "; ".join(f"{name} differs in {d}"
                                        for d, name in seen.items())


def check_token_ids(info_path, info, vocab_size):
  """Raises a one-line ValueError when a token record info says its file
  holds ids beyond a vocabulary of `vocab_size` pieces: a file written with
  another SentencePiece model, which would fail inside the sampler's
  lookups. Its `max_token_id` is recorded when the file is written (a
  record info without it passes here; data_utils.py --verify scans the
  file)."""
  top = info.get("max_token_id")
  error = None if top is None else record_format.token_id_error(top,
                                                                vocab_size)
  if error:
    files = ", ".join(path for path, _ in record_format.listed_files(
        info_path, info))
    raise ValueError(f"{files}: {error} ({info_path}); rewrite it with "
                     "data_utils.py and the corpus info's sp_path, or move "
                     "its record info away")


def find_record_files(record_dirs, split, settings, num_passes=None,
                      flag_names=None, vocab_size=None):
  """The record files of some directories that match the settings.

  Args:
    record_dirs: list of `{save_dir}/tfrecords` directories.
    split: split name of the records.
    settings: dict of record_format.SETTING_KEYS entries; a file matches
      when its name has these values (keys left out: any value).
    num_passes: use only passes with pass_id < num_passes (None: all).
    flag_names: how messages name the settings (see `namer`).
    vocab_size: token records: the pieces of the reader's vocabulary
      (`check_token_ids`; None: no check).

  Returns:
    (list of record file paths in directory and name order, total number of
    host batches they hold, dict path -> its host batches for the files
    whose record info lists only them).

  Raises:
    ValueError: when a directory holds no matching record info (the message
      says which settings differ), or a record info is malformed or lists a
      missing or truncated file.
  """
  wanted = dict(split=split, **settings)
  filenames, num_batch, file_batches = [], 0, {}
  for record_dir in record_dirs:
    matched = 0
    for path, got in record_format.find_record_infos(record_dir):
      if any(not record_format.same_setting(key, wanted[key], got[key])
             for key in wanted):
        continue
      if num_passes is not None and got["pass_id"] >= num_passes:
        continue
      info = record_format.read_record_info(path)
      if vocab_size is not None:
        check_token_ids(path, info, vocab_size)
      listed = record_format.listed_files(path, info)
      for file_path, error in listed:
        if error:
          raise ValueError(f"{file_path}: {error}")
        filenames.append(file_path)
      if len(listed) == 1:
        file_batches[listed[0][0]] = info["num_batch"]
      num_batch += info["num_batch"]
      matched += 1
    if not matched:
      raise ValueError("No record info matches the flags. " +
                       _describe_mismatch(record_dir, wanted, num_passes,
                                          namer(flag_names)))
  return filenames, num_batch, file_batches


def host_file_order(filenames, host_id, num_hosts, seed):
  """The files one host reads, in the order it reads them.

  Host h takes every num_hosts-th file from h (all files when there are
  fewer files than hosts) and reads them in an order drawn from (seed, h),
  the same in every run.

  Returns:
    list of paths.
  """
  files = (filenames[host_id::num_hosts] if len(filenames) >= num_hosts
           else list(filenames))
  order = np.random.RandomState(
      [seed & 0xFFFFFFFF, seed >> 32, host_id]).permutation(len(files))
  return [files[i] for i in order]


# ----------------------------------------------------------------------------
# The input function.
# ----------------------------------------------------------------------------
def _regroup_perm(bsz_per_host, data_cores, reader_cores):
  """Row permutation mapping the data's core layout to the reader's.

  Both layouts hold, per core, forward rows then their backward copies.

  Returns:
    list of int: new row r takes old row perm[r].
  """
  half_d = bsz_per_host // data_cores // 2
  fwd = [c * 2 * half_d + k for c in range(data_cores) for k in range(half_d)]
  half_r = bsz_per_host // reader_cores // 2
  perm = []
  for c in range(reader_cores):
    rows = fwd[c * half_r:(c + 1) * half_r]
    perm += rows + [r + half_d for r in rows]
  return perm


def check_perm_size(perm_size, seq_len, reuse_len, name):
  """Raises unless the factorization blocks of `perm_size` positions tile
  both parts of a row, the `reuse_len` reused tokens and the
  `seq_len - reuse_len` others (`local_permutation` permutes each part
  block by block); `name` (a `namer`) names the settings."""
  rest_len = seq_len - reuse_len
  if not 0 < perm_size <= min(reuse_len, rest_len) or reuse_len % perm_size \
      or rest_len % perm_size:
    raise ValueError(
        f"{name('perm_size')}={perm_size} must be <= and divide both "
        f"{name('reuse_len')}={reuse_len} and {name('seq_len')} - "
        f"{name('reuse_len')} = {rest_len}")


def _check_settings(bsz_per_host, seq_len, reuse_len, bi_data,
                    num_core_per_host, perm_size, seed, name):
  """Validates the reader's settings; ValueError names the setting as
  `name` (a `namer`) does.

  Returns:
    the per-core batch, bsz_per_host / num_core_per_host (what
    `BatchLayout.bsz_per_core` is for the trainers' layouts).
  """
  check_perm_size(perm_size, seq_len, reuse_len, name)
  bsz, cores = name("bsz_per_host"), name("num_core_per_host")
  if num_core_per_host < 1 or bsz_per_host % num_core_per_host:
    raise ValueError(f"{bsz}={bsz_per_host} must be a multiple of "
                     f"{cores}={num_core_per_host}")
  bsz_per_core = bsz_per_host // num_core_per_host
  if bi_data and bsz_per_core % 2:
    raise ValueError(f"{name('bi_data')} needs an even per-core batch: "
                     f"{bsz}={bsz_per_host} / {cores}={num_core_per_host} = "
                     f"{bsz_per_core}")
  if not 0 <= seed < 2**63:
    raise ValueError(f"{name('seed')}={seed} must be in [0, 2**63)")
  return bsz_per_core


def _corpus_infos(record_dirs, corpus_info):
  """The corpus info that describes each record dir.

  Args:
    record_dirs: list of tfrecords dirs.
    corpus_info: the dict the trainer resolved its flags from, or None to
      read the corpus_info.json next to each dir.

  Returns:
    list of dict or None (not found), one per dir.
  """
  if corpus_info is not None:
    return [corpus_info] * len(record_dirs)
  return [record_format.load_corpus_info(d) for d in record_dirs]


def _fill_settings(settings, infos, tfrecord_dir, name):
  """Takes unset mask_alpha/mask_beta/num_predict from the corpus info.

  Args:
    settings: dict of the record settings (record_format.SETTING_KEYS).
    infos: from `_corpus_infos`.
    tfrecord_dir: the record dirs, for messages.
    name: a `namer`, for messages.

  Returns:
    the settings, completed.
  """
  known = [info for info in infos if info is not None]
  settings = dict(settings)
  for key in record_format.SAMPLING_KEYS:
    if settings[key] is None:
      if not known:
        raise ValueError(f"{name(key)} is not set and no corpus_info.json "
                         f"was found for {tfrecord_dir}: give {name(key)} "
                         f"or {name('corpus_info_path')}")
      settings[key] = known[0][key]
  return settings


def _data_core_count(record_dirs, infos, bi_data, bsz_per_host,
                     num_core_per_host, name):
  """The num_core_per_host the records were written for.

  Only bi_data records depend on it (each core's rows are forward then
  backward); for them an unknown layout is an error, never a guess.

  Returns:
    int (the reader's own count when the layout does not matter).
  """
  cores = [info.get("num_core_per_host") if info else None for info in infos]
  if bi_data and None in cores:
    unknown = record_dirs[cores.index(None)]
    raise ValueError(
        f"{name('bi_data')}: the core layout of the records in {unknown} is "
        "unknown (no corpus_info.json with num_core_per_host for them), so "
        "forward and backward rows cannot be told apart; give "
        f"{name('corpus_info_path')}")
  data_cores = sorted({c for c in cores if c is not None})
  if len(data_cores) > 1:
    raise ValueError(f"{','.join(record_dirs)}: the record dirs were written "
                     f"with different num_core_per_host {data_cores} "
                     "(data_utils.py --num_core_per_host)")
  data_core = data_cores[0] if data_cores else num_core_per_host
  if bi_data and bsz_per_host % (2 * data_core):
    raise ValueError(f"the corpus info says num_core_per_host={data_core}, "
                     f"which does not divide {name('bsz_per_host')}="
                     f"{bsz_per_host} into forward/backward halves")
  return data_core


def _record_kind(record_dirs, infos, name):
  """"tokens" when the corpus infos say the dirs hold token records
  (data_utils.py --record_kind=tokens), else "examples". Each dir's kind is
  that of its own corpus_info.json when it has one (the trainers pass the
  first dir's for all); mixed kinds are a one-line ValueError (read as one
  kind, the others' records fail inside TensorFlow)."""
  kinds = [(record_format.load_corpus_info(d) or info or {}).get(
      "record_kind", "examples") for d, info in zip(record_dirs, infos)]
  if len(set(kinds)) > 1:
    held = ", ".join(f"{d} holds {kind[:-1]} records"
                     for d, kind in zip(record_dirs, kinds))
    raise ValueError(f"{name('record_info_dir')}={','.join(record_dirs)} "
                     f"mixes record kinds: {held} (data_utils.py "
                     "--record_kind); train on one kind at a time")
  return kinds[0]


SAMPLE_STRATEGIES = validation.CHOICES["sample_strategy"]


def _span_starts(infos, sample_strategy, name):
  """Where the online span walk may start a span: np.bool_ [vocab].

  word_span (the release's rule): the word starts of the token records'
  SentencePiece model (the corpus info's sp_path, `word_start_table`);
  token_span: every piece.
  """
  if sample_strategy not in SAMPLE_STRATEGIES:
    raise ValueError(f"{name('sample_strategy')}={sample_strategy} must be "
                     f"one of {', '.join(SAMPLE_STRATEGIES)}")
  info = next(info for info in infos if info)
  if sample_strategy == "token_span":
    return np.ones(info["vocab_size"], dtype=bool)
  sp_model = prepro_utils.load_sp_model(
      info.get("sp_path"), "the corpus info's sp_path (token records sample "
      "span masks at word starts)")
  return pretrain_examples.word_start_table(sp_model)


def get_input_fn(tfrecord_dir, split, bsz_per_host, seq_len, reuse_len,
                 bi_data, num_hosts=1, num_core_per_host=1, perm_size=None,
                 mask_alpha=None, mask_beta=None, uncased=False,
                 num_passes=None, use_bfloat16=False, num_predict=None,
                 corpus_info=None, *, seed=configs.DEFAULT_SEED,
                 flag_names=None,
                 sample_strategy=validation.first_choice("sample_strategy")):
  """Builds the pretraining input function.

  Args:
    tfrecord_dir: comma-separated `{save_dir}/tfrecords` dirs, of example
      records or of token records (their corpus info says
      "record_kind": "tokens"; their examples are then sampled online,
      `online_examples.make_batch`, with new draws every epoch).
    split: split name of the records.
    bsz_per_host, seq_len, reuse_len, bi_data, mask_alpha, mask_beta,
      uncased, num_predict: must match the records (None values of
      mask_alpha/mask_beta/num_predict are taken from the corpus info).
    num_hosts: hosts sharing the files.
    num_core_per_host: per-core batches per host step.
    perm_size: factorization block size (default reuse_len); must divide and
      not exceed both part lengths.
    num_passes: use only passes with pass_id < num_passes.
    use_bfloat16: masks in bfloat16.
    corpus_info: the corpus info (dict) the trainer's flags were resolved
      from; it tells the core layout the records were written for. None:
      read the corpus_info.json next to each record dir.
    seed: non-negative int keying every random draw (the trainers pass
      their --seed, whose default is this one's: a call with the release's
      arguments reads the stream our programs read by default).
    sample_strategy: token records only: where span masks may start,
      "word_span" (at word starts, the release's rule) or "token_span" (at
      any piece, as Model Garden's token_span).
    flag_names: how messages name the arguments (`tfrecord_dir` as
      "record_info_dir"): argument -> the calling program's flag, e.g.
      {"split": "--eval_split"}; an argument left out is named as itself.

  Returns:
    (input_fn, record_info). input_fn(params) -> tf.data.Dataset of per-core
    batches of params["batch_size"] examples (features of
    `perm_features.make_parser` with a leading batch axis; label [B]);
    params["host"] (or TPUEstimator's params["context"].current_host)
    picks the host (default 0) and params["start_host_batch"] (default 0)
    starts the stream after that many host batches, as if they had been
    consumed. record_info = {"num_batch": total host batches of all hosts,
    "filenames": all files, "host_filenames": per host, its files in the
    order it reads them, "sampling": how the examples are made, the
    records' kind ("record_kind": "tokens" or "examples") and the span-mask
    settings (mask_alpha, mask_beta, num_predict; sample_strategy, None for
    example records), "vocab_size": the bound every token id read is
    checked below (the corpus info's; None when unknown: unchecked), whose
    breach stops the read with an InvalidArgumentError of
    `errors.BAD_TOKEN_ID` (`record_format.data_loss_message` names the
    file)}.
  """
  name = namer(flag_names)
  perm_size = reuse_len if perm_size is None else perm_size
  bsz_per_core = _check_settings(bsz_per_host, seq_len, reuse_len, bi_data,
                                 num_core_per_host, perm_size, seed, name)
  record_dirs = [d for d in tfrecord_dir.split(",") if d]
  if not record_dirs:
    raise ValueError(f"{name('record_info_dir')} is empty")
  infos = _corpus_infos(record_dirs, corpus_info)
  data_core = _data_core_count(record_dirs, infos, bi_data, bsz_per_host,
                               num_core_per_host, name)
  settings = _fill_settings(
      dict(bsz_per_host=bsz_per_host, seq_len=seq_len, reuse_len=reuse_len,
           uncased=uncased, bi_data=bi_data, mask_alpha=mask_alpha,
           mask_beta=mask_beta, num_predict=num_predict), infos, tfrecord_dir,
      name)
  regroup = bi_data and data_core != num_core_per_host
  kind = _record_kind(record_dirs, infos, name)
  named, is_start, sampling = _sampling(kind, settings, infos,
                                        sample_strategy, name)
  vocab_size = _vocab_bound(is_start, infos)
  filenames, num_batch, file_batches = find_record_files(
      record_dirs, split, named, num_passes, flag_names,
      vocab_size=None if is_start is None else vocab_size)
  logging.info("Input: %d files, %d batches%s%s", len(filenames), num_batch,
               f", rows regrouped from {data_core} to {num_core_per_host} "
               "cores" if regroup else "",
               ", token records: examples sampled online"
               if kind == "tokens" else "")
  regroup_perm = (_regroup_perm(bsz_per_host, data_core, num_core_per_host)
                  if regroup else None)
  stream, parse = _example_source(settings, is_start, num_core_per_host,
                                  perm_size, use_bfloat16)
  # Example records' ids, checked batch by batch (token records check
  # theirs as each file is read, before the sampler looks them up).
  check = _id_check(vocab_size) if is_start is None else None

  def input_fn(params):
    """tf.data pipeline of per-core batches (see get_input_fn)."""
    batch_size = params.get("batch_size", bsz_per_core)
    if batch_size != bsz_per_core:  # rows must reach the same core
      raise ValueError(f"params['batch_size']={batch_size} must be "
                       f"{name('bsz_per_host')} / {name('num_core_per_host')}"
                       f" = {bsz_per_core}")
    host_id = _host_of(params, num_hosts, name)
    files = host_file_order(filenames, host_id, num_hosts, seed)
    host_key = tf.constant([seed, host_id], dtype=tf.int64)
    dataset = stream(files, params.get("start_host_batch", 0), host_key,
                     file_batches, bsz_per_host, regroup_perm)
    keyed_parser = tf.autograph.experimental.do_not_convert(
        lambda index, example: parse(
            example, tf.random.experimental.stateless_fold_in(host_key,
                                                              index)))
    dataset = dataset.map(keyed_parser, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    if check is not None:
      dataset = dataset.map(check)
    return dataset.prefetch(tf.data.AUTOTUNE)

  host_filenames = [host_file_order(filenames, h, num_hosts, seed)
                    for h in range(num_hosts)]
  return input_fn, {"num_batch": num_batch, "filenames": filenames,
                    "host_filenames": host_filenames, "sampling": sampling,
                    "vocab_size": vocab_size}


def _vocab_bound(is_start, infos):
  """The bound of the records' token ids: the size of token records'
  sampler table, else the corpus infos' vocab_size (None: unknown, so
  unchecked)."""
  if is_start is not None:
    return len(is_start)
  return next((i["vocab_size"] for i in infos if i and "vocab_size" in i),
              None)


def _sampling(kind, settings, infos, sample_strategy, name):
  """How the examples of records of `kind` are made.

  Example records hold their span masks, so their sampling settings must
  match the records' names; token records are sampled online now, with any
  valid settings (checked here) and span starts by `sample_strategy`.

  Args:
    kind: "examples" or "tokens" (`_record_kind`).
    settings: the record settings, completed (`_fill_settings`).
    infos: from `_corpus_infos`.
    sample_strategy: token records' span starts (`_span_starts`).
    name: a `namer`, for messages.

  Returns:
    (the settings the record files' names must match, the span-start table
     np.bool_ [vocab] or None for example records, the input function's
     record info "sampling": the kind, the span-mask settings and
     sample_strategy, None for example records).
  """
  sampling = dict(record_kind=kind, **{
      k: settings[k] for k in record_format.SAMPLING_KEYS})
  if kind != "tokens":
    return settings, None, dict(sampling, sample_strategy=None)
  pretrain_examples.check_sampling(
      *(settings[k] for k in record_format.SAMPLING_KEYS),
      settings["seq_len"], settings["reuse_len"], name=name)
  named = {k: v for k, v in settings.items()
           if k not in record_format.SAMPLING_KEYS}
  is_start = _span_starts(infos, sample_strategy, name)
  return named, is_start, dict(sampling, sample_strategy=sample_strategy)


def _example_source(settings, is_start, num_core_per_host, perm_size,
                    use_bfloat16):
  """What reads a host's examples, and what turns each into features.

  Args:
    settings: the record settings, completed (`_fill_settings`).
    is_start: token records' span-start table (`_sampling`), or None for
      example records.
    num_core_per_host: the reader's cores (the sampler's rows are
      regrouped for them).
    perm_size, use_bfloat16: the factorization blocks, the masks' dtype.

  Returns:
    (stream(files, start_batch, host_key, file_batches, bsz_per_host,
     regroup_perm) -> Dataset of (example index, example):
     `online_examples.host_examples` or `_record_examples`,
     parse(example, key) -> features: `perm_features.make_features` or
     `make_parser`).
  """
  layout = (settings["seq_len"], settings["reuse_len"], perm_size,
            settings["num_predict"], use_bfloat16)
  if is_start is None:
    return _record_examples, perm_features.make_parser(*layout)
  sampler_cfg = {key: settings[key] for key in (
      "bsz_per_host", "seq_len", "reuse_len", "num_predict", "mask_alpha",
      "mask_beta", "bi_data")}
  sampler_cfg["num_core_per_host"] = num_core_per_host  # rows regrouped
  stream = functools.partial(online_examples.host_examples,
                             sampler_cfg=sampler_cfg, is_start=is_start)
  return stream, perm_features.make_features(*layout)


def _id_check(vocab_size):
  """The map of a batch of features that checks its token ids (`input_k`,
  `target`) are at least 0 and below `vocab_size` (none, when it is None:
  unknown) (`record_format.checked_ids`)."""
  bound = np.iinfo(np.int64).max if vocab_size is None else vocab_size

  @tf.autograph.experimental.do_not_convert
  def check(features):
    features = dict(features)
    features["input_k"], features["target"] = record_format.checked_ids(
        [features["input_k"], features["target"]], bound)
    return features

  return check


def _host_of(params, num_hosts, name):
  """The host an input function call reads for: params["host"], else
  TPUEstimator's params["context"].current_host, else 0."""
  host_id = (params["host"] if "host" in params else
             params["context"].current_host if "context" in params else 0)
  if not 0 <= host_id < num_hosts:
    raise ValueError(f"host {host_id} is not below {name('num_hosts')}="
                     f"{num_hosts}")
  return host_id


def _record_examples(files, start_batch, host_key, file_batches,
                     bsz_per_host, regroup_perm):
  """Enumerated serialized examples of example records (their draws are
  keyed by the parser, not here: `host_key` is unused).

  Args: as `online_examples.host_examples`.

  Returns:
    tf.data.Dataset of (example index, serialized example).
  """
  del host_key
  dataset = tf.data.TFRecordDataset(files)
  if regroup_perm is not None:
    regroup_fn = tf.autograph.experimental.do_not_convert(
        lambda records: tf.gather(records, regroup_perm))
    dataset = dataset.batch(bsz_per_host, drop_remainder=True).map(
        regroup_fn).unbatch()
  # The files are read again every epoch, in the same order, while the
  # example index (counted across epochs) gives new factorization orders.
  # (No `cache()`: a corpus need not fit in memory, and a cache that is
  # not read to its end - held-out evaluation, a run that stops - is
  # discarded with a warning.) A resumed stream skips at most one epoch
  # of raw records and numbers the rest from where it starts.
  start = start_batch * bsz_per_host
  counts = [file_batches.get(f) for f in files]
  epoch = None if None in counts else sum(counts) * bsz_per_host
  dataset = dataset.repeat()
  dataset = dataset.skip(start % epoch if epoch else start)
  return dataset.enumerate(start=start)
