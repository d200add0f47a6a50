"""XLNet pretraining data: record creation and the input function.

Record creation (SPEC.md section 4) turns text files into TFRecords of
`[reuse, A, <sep>, B, <sep>, <cls>]` examples with span masks; the input
function (section 5) samples factorization orders and builds the
two-stream features. Run `python data_utils.py --help` for the flags.
"""
import bisect
import functools
import itertools
import json
import os
import re
import time

from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from xlnet import prepro_utils
from xlnet.prepro_utils import CLS_ID, EOD_ID, SEP_ID

# ASCII punctuation pieces that start a word (no "'", "<", "=", ">").
_START_PUNCT = frozenset('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
_MAX_GRAM = 5
_GRAM_CDF = np.cumsum(1.0 / np.arange(1, _MAX_GRAM + 1))
_GRAM_CDF = (_GRAM_CDF / _GRAM_CDF[-1]).tolist()
_GRAM_CDF[-1] = 1.0
_INFO_RE = re.compile(
    r"record_info-(?P<split>.+?)-(?P<task>\d+)-(?P<pass_id>\d+)"
    r"\.bsz-(?P<bsz_per_host>\d+)\.seqlen-(?P<seq_len>\d+)\."
    r"(?:reuse-(?P<reuse_len>\d+)\.)?(?P<uncased>uncased\.)?(?P<bi_data>bi|uni)"
    r"\.alpha-(?P<mask_alpha>[^.]+)\.beta-(?P<mask_beta>[^.]+)\."
    r"(?:fnp-(?P<num_predict>\d+)\.)?json$")
CORPUS_INFO = "corpus_info.json"
_FILE_SHUFFLE_SEED = 0x584C4E


# ----------------------------------------------------------------------------
# Names and metadata.
# ----------------------------------------------------------------------------
def _num_str(x):
  """Formats a mask_alpha/beta value the way file names use it ('6', '0.5')."""
  return str(int(x)) if float(x).is_integer() else str(x)


def format_filename(prefix, bsz_per_host, seq_len, bi_data, suffix,
                    mask_alpha=5, mask_beta=1, reuse_len=None, uncased=False,
                    fixed_num_predict=None):
  """Builds a record (info) file name, as the released tool names them.

  Returns:
    str, e.g. 'train-0-0.bsz-32.seqlen-512.reuse-256.bi.alpha-6.beta-1.fnp-85.
    tfrecords'.
  """
  reuse_str = "" if reuse_len is None else f"reuse-{reuse_len}."
  uncased_str = "uncased." if uncased else ""
  bi_str = "bi" if bi_data else "uni"
  fnp_str = "" if fixed_num_predict is None else f"fnp-{fixed_num_predict}."
  return (f"{prefix}.bsz-{bsz_per_host}.seqlen-{seq_len}.{reuse_str}"
          f"{uncased_str}{bi_str}.alpha-{_num_str(mask_alpha)}"
          f".beta-{_num_str(mask_beta)}.{fnp_str}{suffix}")


def _write_atomic(path, text):
  """Writes `text` to `path` through a temporary name and a rename."""
  tmp = f"{path}.tmp-{os.getpid()}"
  with tf.io.gfile.GFile(tmp, "w") as f:
    f.write(text)
  tf.io.gfile.rename(tmp, path, overwrite=True)


def load_corpus_info(path_or_dir):
  """Reads corpus_info.json.

  Args:
    path_or_dir: the json file, the save_dir holding it, or the tfrecords dir
      whose parent holds it.

  Returns:
    dict, or None when no corpus_info.json is found.
  """
  if not path_or_dir:
    return None
  path_or_dir = path_or_dir.rstrip("/")
  if path_or_dir.endswith(".json"):
    candidates = [path_or_dir]
  else:
    candidates = [os.path.join(path_or_dir, CORPUS_INFO),
                  os.path.join(os.path.dirname(path_or_dir), CORPUS_INFO)]
  for path in candidates:
    if tf.io.gfile.exists(path):
      with tf.io.gfile.GFile(path, "r") as f:
        return json.load(f)
  return None


# ----------------------------------------------------------------------------
# Corpus to token stream.
# ----------------------------------------------------------------------------
def word_start_table(sp_model):
  """Per-vocab bool table of word-start pieces (SPEC section 4).

  Returns:
    np.bool_ array [vocab_size].
  """
  table = np.zeros(sp_model.get_piece_size(), dtype=bool)
  for i in range(len(table)):
    piece = sp_model.id_to_piece(i)
    table[i] = (piece.startswith(prepro_utils.SPIECE_UNDERLINE)
                or piece.startswith("<") or piece in _START_PUNCT)
  return table


def _read_lines(path):
  r"""Reads a UTF-8 text file as a list of lines (ValueError names the line).

  Only "\n" ends a line, as when iterating a tf.io.gfile file: U+2028,
  U+2029, \x0b, \x0c, \x1c-\x1e, \x85 and a lone "\r" (which
  `str.splitlines` would also break at) stay inside the line, where the
  normalization treats them as spaces.
  """
  with tf.io.gfile.GFile(path, "rb") as f:
    raw = f.read()
  try:
    text = raw.decode("utf-8")
  except UnicodeDecodeError as e:
    line = raw[:e.start].count(b"\n") + 1
    raise ValueError(f"--input_glob: {path} line {line} is not UTF-8 text "
                     f"(byte {raw[e.start]:#x} at offset {e.start})") from None
  lines = text.split("\n")
  if lines[-1] == "":  # the file's final newline starts no line
    lines.pop()
  return lines


def _encode_lines(sp_model, texts, dc_table):
  """Encodes texts to id arrays with `encode_ids` semantics, in one batch.

  Args:
    sp_model: SentencePieceProcessor.
    texts: list of normalized str.
    dc_table: np.bool_ [vocab]: pieces the digit-comma rule re-encodes.

  Returns:
    list of np.int32 arrays.
  """
  if not texts:
    return []
  encoded = sp_model.encode(texts, out_type=int)
  lengths = np.fromiter((len(x) for x in encoded), dtype=np.int64,
                        count=len(encoded))
  flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=np.int32,
                     count=int(lengths.sum()))
  line_of = np.repeat(np.arange(len(texts)), lengths)
  for j in np.unique(line_of[dc_table[flat]]):
    encoded[j] = prepro_utils.encode_ids(sp_model, texts[j])
  return [np.asarray(x, dtype=np.int32) for x in encoded]


def encode_file(path, sp_model, dc_table, uncased, from_raw_text, use_eod):
  """Turns one input file into ids and alternating sentence ids.

  Each line gets a sentence id that flips from line to line (starting at
  True); an empty line adds one <eod> (when use_eod) carrying the previous
  line's id.

  Returns:
    (ids np.int32 [n], sent_ids np.bool_ [n]).
  """
  lines = _read_lines(path)
  logging.info("Encoding %s (%d lines)", path, len(lines))
  texts, kinds = [], []  # kind: 1 = text line, 0 = empty line
  for line in lines:
    if line.strip():
      texts.append(prepro_utils.preprocess_text(line.strip(), lower=uncased)
                   if from_raw_text else line)
      kinds.append(1)
    elif use_eod:
      kinds.append(0)
  if from_raw_text:
    encoded = _encode_lines(sp_model, texts, dc_table)
  else:
    try:
      encoded = [np.asarray(t.split(), dtype=np.int64) for t in texts]
    except (ValueError, OverflowError):
      raise ValueError(f"--from_raw_text=False but {path} holds a line that "
                       "is not space-separated ids") from None
    vocab_size = sp_model.get_piece_size()
    for ids in encoded:
      bad = ids[(ids < 0) | (ids >= vocab_size)]
      if len(bad):
        raise ValueError(
            f"--from_raw_text=False but {path} holds id {bad[0]}, outside "
            f"the vocabulary [0, {vocab_size}) of --sp_path")
    encoded = [ids.astype(np.int32) for ids in encoded]
  pieces, sids = [], []
  sent_id, k = True, 0
  eod = np.array([EOD_ID], dtype=np.int32)
  for kind in kinds:
    if kind:
      cur, k = encoded[k], k + 1
    else:
      cur, sent_id = eod, not sent_id
    pieces.append(cur)
    sids.append(np.full(len(cur), sent_id))
    sent_id = not sent_id
  if not pieces:
    return np.zeros(0, np.int32), np.zeros(0, bool)
  return np.concatenate(pieces), np.concatenate(sids)


def build_stream(paths, sp_model, uncased, from_raw_text, use_eod, rng):
  """Encodes the task's files in a shuffled order into one token stream.

  The sentence id flips at every file boundary.

  Returns:
    (ids np.int32 [n], sent_ids np.bool_ [n], number of lines read).
  """
  dc_table = np.asarray(prepro_utils.digit_comma_table(sp_model), dtype=bool)
  order = rng.permutation(len(paths))
  all_ids, all_sids = [], []
  prev = None
  for n, j in enumerate(order):
    start = time.time()
    ids, sids = encode_file(paths[j], sp_model, dc_table, uncased,
                            from_raw_text, use_eod)
    if not len(ids):
      continue
    if prev is not None and sids[0] == prev:
      sids = np.logical_not(sids)
    prev = sids[-1]
    all_ids.append(ids)
    all_sids.append(sids)
    logging.info("[%d/%d files] %s: %d tokens in %.1fs", n + 1, len(paths),
                 paths[j], len(ids), time.time() - start)
  if not all_ids:
    return np.zeros(0, np.int32), np.zeros(0, bool)
  return np.concatenate(all_ids), np.concatenate(all_sids)


def batchify(data, sent_ids, bsz_per_host, num_core_per_host=1, bi_data=False):
  """Cuts the stream into parallel rows.

  With bi_data, bsz_per_host/2 forward rows are made and, within each core's
  share of rows, followed by their reversed copies.

  Args:
    data: np.int32 [n].
    sent_ids: np.bool_ [n].
    bsz_per_host: number of rows.
    num_core_per_host: cores sharing the rows.
    bi_data: add backward rows.

  Returns:
    (rows [bsz_per_host, row_len], sent_rows [bsz_per_host, row_len]).
  """
  n_fwd = bsz_per_host // 2 if bi_data else bsz_per_host
  row_len = len(data) // n_fwd
  data = data[:n_fwd * row_len].reshape(n_fwd, row_len)
  sent_ids = sent_ids[:n_fwd * row_len].reshape(n_fwd, row_len)
  if not bi_data:
    return data, sent_ids

  def _interleave(x):
    fwd = x.reshape(num_core_per_host, 1, -1, row_len)
    both = np.concatenate([fwd, fwd[..., ::-1]], axis=1)
    return both.reshape(bsz_per_host, row_len)

  return _interleave(data), _interleave(sent_ids)


# ----------------------------------------------------------------------------
# Examples.
# ----------------------------------------------------------------------------
def split_a_and_b(row_len, boundaries, begin, tot_len, rng):
  """Chooses segments A and B for one row at one offset (SPEC section 4).

  Args:
    row_len: length of the row.
    boundaries: sorted list of sentence-start positions k (0 < k < row_len)
      where the sentence id changes.
    begin: first position of A.
    tot_len: len(A) + len(B) after trimming.
    rng: np.random.RandomState.

  Returns:
    (a_end, b_begin, b_end, label) with A = [begin, a_end), B = [b_begin,
    b_end); None when the row cannot yield an example at this offset.
  """
  if begin + tot_len >= row_len:
    return None
  lo = bisect.bisect_right(boundaries, begin)
  hi = bisect.bisect_left(boundaries, begin + tot_len)
  stop = boundaries[hi] if hi < len(boundaries) else row_len
  cut_points = boundaries[lo:hi]
  if not cut_points or rng.random_sample() < 0.5:
    label = 0
    a_end = cut_points[rng.randint(len(cut_points))] if cut_points else stop
    b_len = max(1, tot_len - (a_end - begin))
    b_begin = rng.randint(row_len - b_len)
    b_end = b_begin + b_len
    j = bisect.bisect_right(boundaries, b_begin)
    b_begin = boundaries[j - 1] if j > 0 else 0
    j = bisect.bisect_left(boundaries, b_end)
    b_end = min(boundaries[j] if j < len(boundaries) else row_len,
                row_len - 1)
  else:
    label = 1
    a_end = cut_points[rng.randint(len(cut_points))]
    b_begin, b_end = a_end, stop
  a_len, b_len = a_end - begin, b_end - b_begin
  while a_len + b_len > tot_len:  # drop the last token of the longer one
    if a_len > b_len:
      a_len -= 1
    else:
      b_len -= 1
  a_end, b_end = begin + a_len, b_begin + b_len
  if a_end >= row_len or b_end >= row_len:
    return None
  return a_end, b_begin, b_end, label


def sample_masks(segs, is_start, goal, mask_alpha, mask_beta, rng,
                 reverse=None):
  """Span masking of equal-length parts, all rows at once (SPEC section 4).

  Per row, a cursor walks from 0: draw n in 1..5 with p(n) ~ 1/n (capped by
  the count still needed), ctx = n * mask_alpha // mask_beta and a left
  context l uniform in [0, ctx); mask the n pieces from the first word start
  at or after cursor + l; move the cursor to beg + n + ctx - l. A row stops
  when its goal is met, the cursor reaches the end, no word start is left or
  the span would end at or past the end. Then random single unmasked
  positions top the row up to exactly `goal`.

  Args:
    segs: int array [rows, part_len] of piece ids.
    is_start: np.bool_ [vocab] word-start table.
    goal: positions to mask, int or int array [rows] (None: walk to the
      end, no top-up).
    mask_alpha, mask_beta: context size factors.
    rng: np.random.RandomState.
    reverse: optional bool [rows]: walk these rows reversed and flip back.

  Returns:
    np.bool_ [rows, part_len].
  """
  segs = np.asarray(segs)
  num_rows, seg_len = segs.shape
  if reverse is not None:
    reverse = np.asarray(reverse, dtype=bool)
    segs = np.where(reverse[:, None], segs[:, ::-1], segs)
  rows = np.arange(num_rows)
  # next_start[r, x]: first word start >= x in row r (seg_len if none).
  cand = np.where(is_start[segs], np.arange(seg_len), seg_len)
  next_start = np.concatenate(
      [np.minimum.accumulate(cand[:, ::-1], axis=1)[:, ::-1],
       np.full((num_rows, 1), seg_len)], axis=1)
  budget = np.broadcast_to(seg_len if goal is None else goal, (num_rows,))
  num = np.zeros(num_rows, dtype=np.int64)
  cur = np.zeros(num_rows, dtype=np.int64)
  active = budget > 0
  span_rows, span_begs, span_lens = [], [], []
  while active.any():
    u = rng.random_sample((num_rows, 2))
    n = np.minimum(np.searchsorted(_GRAM_CDF, u[:, 0], side="right") + 1,
                   budget - num)
    ctx = n * mask_alpha // mask_beta
    l_ctx = (u[:, 1] * ctx).astype(np.int64)
    beg = next_start[rows, np.minimum(cur + l_ctx, seg_len)]
    end = beg + n
    active &= end < seg_len  # (also covers "no word start left")
    span_rows.append(rows[active])
    span_begs.append(beg[active])
    span_lens.append(n[active])
    num = np.where(active, num + n, num)
    cur = np.where(active, end + ctx - l_ctx, cur)
    active &= (cur < seg_len) & (num < budget)
  mask = np.zeros((num_rows, seg_len), dtype=bool)
  if span_rows:
    lens = np.concatenate(span_lens)
    first = np.repeat(np.cumsum(lens) - lens, lens)
    mask[np.repeat(np.concatenate(span_rows), lens),
         np.repeat(np.concatenate(span_begs), lens)
         + np.arange(len(first)) - first] = True
  if goal is not None and (num < budget).any():
    keys = rng.random_sample((num_rows, seg_len))
    keys[mask] = 2.0
    order = np.argsort(keys, axis=1, kind="stable")
    take = np.arange(seg_len)[None, :] < (budget - num)[:, None]
    mask[np.nonzero(take)[0], order[take]] = True
  if reverse is not None:
    mask = np.where(reverse[:, None], mask[:, ::-1], mask)
  return mask


def sample_mask(seg, is_start, goal, mask_alpha, mask_beta, rng,
                reverse=False):
  """`sample_masks` for one part: seg [part_len] -> np.bool_ [part_len]."""
  return sample_masks(np.asarray(seg)[None], is_start, goal, mask_alpha,
                      mask_beta, rng, [reverse])[0]


def _boundaries(sent_row):
  """Sorted list of positions k > 0 where the sentence id changes."""
  return (np.flatnonzero(sent_row[1:] != sent_row[:-1]) + 1).tolist()


def make_batch(rows, boundaries, offset, cfg, is_start, rng):
  """Builds the examples of all rows at one row offset.

  Args:
    rows: np.int32 [bsz_per_host, row_len].
    boundaries: per row, its sentence boundaries (see `split_a_and_b`).
    offset: start of the reuse part.
    cfg: dict with seq_len, reuse_len, num_predict, mask_alpha, mask_beta,
      bi_data, num_core_per_host.
    is_start: word-start table.
    rng: np.random.RandomState.

  Returns:
    dict input/is_masked/target/seg_id [bsz, seq_len], label [bsz, 1]; None
    when some row cannot yield an example at this offset.
  """
  bsz, row_len = rows.shape
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  begin = offset + reuse_len
  inputs = np.empty((bsz, seq_len), dtype=np.int64)
  targets = np.empty((bsz, seq_len), dtype=np.int64)
  seg_ids = np.zeros((bsz, seq_len), dtype=np.int64)
  labels = np.empty((bsz, 1), dtype=np.int64)
  for idx in range(bsz):
    split = split_a_and_b(row_len, boundaries[idx], begin,
                          seq_len - reuse_len - 3, rng)
    if split is None:
      return None
    a_end, b_begin, b_end, labels[idx, 0] = split
    row = rows[idx]
    sep = reuse_len + a_end - begin  # position of the first <sep>
    inputs[idx, :sep] = row[offset:a_end]
    inputs[idx, sep] = SEP_ID
    inputs[idx, sep + 1:seq_len - 2] = row[b_begin:b_end]
    targets[idx, :sep] = row[offset + 1:a_end + 1]
    targets[idx, sep] = row[b_begin]
    targets[idx, sep + 1:seq_len - 2] = row[b_begin + 1:b_end + 1]
    seg_ids[idx, sep + 1:] = 1
  inputs[:, -2:] = [SEP_ID, CLS_ID]
  targets[:, -2:] = CLS_ID
  seg_ids[:, -1] = 2
  num_predict = cfg["num_predict"]
  goal_1 = None if num_predict is None else num_predict // 2
  goal_0 = None if num_predict is None else num_predict - goal_1
  bsz_per_core = bsz // cfg["num_core_per_host"]
  reverse = cfg["bi_data"] & (np.arange(bsz) % bsz_per_core
                              >= bsz_per_core // 2)
  alpha, beta = cfg["mask_alpha"], cfg["mask_beta"]
  if 2 * reuse_len == seq_len:  # equal parts: one walk over 2 * bsz rows
    both = sample_masks(
        np.concatenate([inputs[:, :reuse_len], inputs[:, reuse_len:]]),
        is_start, None if num_predict is None else np.repeat(
            [goal_0, goal_1], bsz), alpha, beta, rng, np.tile(reverse, 2))
    is_masked = np.concatenate([both[:bsz], both[bsz:]], axis=1)
  else:
    is_masked = np.concatenate([
        sample_masks(inputs[:, :reuse_len], is_start, goal_0, alpha, beta,
                     rng, reverse),
        sample_masks(inputs[:, reuse_len:], is_start, goal_1, alpha, beta,
                     rng, reverse)], axis=1)
  return {"input": inputs, "is_masked": is_masked, "target": targets,
          "seg_id": seg_ids, "label": labels}


# ----------------------------------------------------------------------------
# Serialization: tf.train.Example bytes built with NumPy.
# ----------------------------------------------------------------------------
def _varint(n):
  """Protobuf varint of one non-negative int, as bytes."""
  out = bytearray()
  while n >= 0x80:
    out.append((n & 0x7F) | 0x80)
    n >>= 7
  out.append(n)
  return bytes(out)


def _packed_varints(values):
  """Packed varints of non-negative ints, one bytes object per row.

  Args:
    values: int array [rows, n], 0 <= values < 2**63.

  Returns:
    list of bytes, one per row.
  """
  v = np.asarray(values, dtype=np.int64)
  if v.size and v.min() < 0:
    raise ValueError("feature values must be >= 0")
  if not v.size or v.max() < 0x80:  # one byte per value
    flat, n = v.astype(np.uint8).tobytes(), v.shape[1]
    return [flat[i * n:(i + 1) * n] for i in range(v.shape[0])]
  shape, v = v.shape, v.ravel()
  nbytes = np.ones(v.shape, dtype=np.int64)
  k = 1
  while k < 10 and v.max() >= 1 << (7 * k):
    nbytes += v >= 1 << (7 * k)
    k += 1
  ends = np.cumsum(nbytes)
  out = np.empty(int(ends[-1]), dtype=np.uint8)
  starts = ends - nbytes
  for j in range(k):
    sel = nbytes > j if j else slice(None)
    byte = (v[sel] >> (7 * j)) & 0x7F
    more = (nbytes[sel] > j + 1) * 0x80
    out[starts[sel] + j] = byte | more
  flat = out.tobytes()
  row_ends = ends.reshape(shape)[:, -1].tolist()
  return [flat[s:e] for s, e in zip([0] + row_ends[:-1], row_ends)]


@functools.lru_cache(maxsize=4096)
def _entry_prefix(key, packed_len):
  """Bytes before the packed values of one Features.feature map entry.

  The entry is {key: Feature{int64_list: Int64List{value: packed}}}, wrapped
  as field 1 of Features; everything but the values depends only on the key
  and the packed length.
  """
  key = key.encode()
  list_len = 1 + len(_varint(packed_len)) + packed_len  # Int64List
  feature_len = 1 + len(_varint(list_len)) + list_len  # Feature
  entry_len = (1 + len(_varint(len(key))) + len(key)
               + 1 + len(_varint(feature_len)) + feature_len)
  return (b"\x0a" + _varint(entry_len)
          + b"\x0a" + _varint(len(key)) + key
          + b"\x12" + _varint(feature_len)
          + b"\x1a" + _varint(list_len)
          + b"\x0a" + _varint(packed_len))


def serialize_examples(features):
  """Serializes a batch of examples to tf.train.Example bytes.

  Args:
    features: dict name -> int array [batch, n] (all values >= 0).

  Returns:
    list of bytes, one per example (parseable by tf.io.parse_example).
  """
  names = sorted(features)
  packed = {name: _packed_varints(features[name]) for name in names}
  out = []
  for i in range(len(packed[names[0]])):
    body = b"".join(_entry_prefix(name, len(packed[name][i])) + packed[name][i]
                    for name in names)
    out.append(b"\x0a" + _varint(len(body)) + body)
  return out


# ----------------------------------------------------------------------------
# Record creation.
# ----------------------------------------------------------------------------
def _check_config(cfg):
  """Validates record-creation settings; ValueError names the flag."""
  bsz, ncore = cfg["bsz_per_host"], cfg["num_core_per_host"]
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  if ncore < 1 or bsz % ncore:
    raise ValueError(f"--bsz_per_host={bsz} must be a multiple of "
                     f"--num_core_per_host={ncore}")
  if cfg["bi_data"] and bsz % (2 * ncore):
    raise ValueError(f"--bi_data needs --bsz_per_host={bsz} to be a multiple "
                     f"of 2 * --num_core_per_host = {2 * ncore}")
  if not 0 < reuse_len < seq_len - 3:
    raise ValueError(f"--reuse_len={reuse_len} must be in [1, --seq_len - 3) "
                     f"= [1, {seq_len - 3}) to leave room for A, B and "
                     "<sep> <sep> <cls>")
  if cfg["mask_beta"] <= 0 or cfg["mask_alpha"] < cfg["mask_beta"]:
    raise ValueError(f"--mask_alpha={cfg['mask_alpha']} must be >= "
                     f"--mask_beta={cfg['mask_beta']} > 0 (context size "
                     "n * alpha // beta must be >= 1)")
  num_predict = cfg["num_predict"]
  if num_predict is not None:
    if num_predict < 1:
      raise ValueError(f"--num_predict={num_predict} must be >= 1 (no "
                       "target, no loss)")
    goal_1 = num_predict // 2
    goal_0 = num_predict - goal_1
    if goal_0 > reuse_len or goal_1 > seq_len - reuse_len:
      raise ValueError(
          f"--num_predict={num_predict} needs {goal_0} masked tokens in the "
          f"reuse part (--reuse_len={reuse_len}) and {goal_1} in the rest "
          f"({seq_len - reuse_len} tokens); a part cannot hold that many")
  if not 0 <= cfg["task"] < cfg["num_task"]:
    raise ValueError(f"--task={cfg['task']} must be in [0, --num_task="
                     f"{cfg['num_task']})")


def _glob_inputs(input_glob):
  """Expands a comma-separated list of globs (sorted, deduplicated)."""
  if not input_glob:
    raise ValueError("--input_glob is empty: give the text files to process")
  paths = set()
  for pattern in input_glob.split(","):
    if pattern:
      paths.update(tf.io.gfile.glob(pattern))
  if not paths:
    raise ValueError(f"--input_glob={input_glob} matches no file")
  return sorted(paths)


def create_data(input_glob, sp_path, save_dir, bsz_per_host=32,
                num_core_per_host=8, seq_len=512, reuse_len=256, uncased=False,
                bi_data=True, mask_alpha=6, mask_beta=1, num_predict=85,
                use_eod=True, from_raw_text=True, split="train", pass_id=0,
                num_task=1, task=0):
  """Creates the TFRecords of one (task, pass_id) (SPEC section 4).

  All randomness derives from (task, pass_id): reruns are identical.

  Returns:
    path of the written record_info json.
  """
  cfg = dict(bsz_per_host=bsz_per_host, num_core_per_host=num_core_per_host,
             seq_len=seq_len, reuse_len=reuse_len, uncased=uncased,
             bi_data=bi_data, mask_alpha=mask_alpha, mask_beta=mask_beta,
             num_predict=num_predict, use_eod=use_eod, task=task,
             num_task=num_task)
  _check_config(cfg)
  paths = _glob_inputs(input_glob)[task::num_task]
  sp_model = prepro_utils.load_sp_model(sp_path)
  record_dir = os.path.join(save_dir, "tfrecords")
  tf.io.gfile.makedirs(record_dir)
  if task == 0:
    info = dict(vocab_size=sp_model.get_piece_size(), **{
        k: cfg[k] for k in ("bsz_per_host", "num_core_per_host", "seq_len",
                            "reuse_len", "uncased", "bi_data", "mask_alpha",
                            "mask_beta", "num_predict", "use_eod")},
                sp_path=sp_path, input_glob=input_glob)
    _write_atomic(os.path.join(save_dir, CORPUS_INFO),
                  json.dumps(info, indent=2))
  rng = np.random.RandomState([task, pass_id, 0x584C4E])
  data, sent_ids = build_stream(paths, sp_model, uncased, from_raw_text,
                                use_eod, rng)
  rows, sent_rows = batchify(data, sent_ids, bsz_per_host, num_core_per_host,
                             bi_data)
  name_args = dict(bsz_per_host=bsz_per_host, seq_len=seq_len,
                   bi_data=bi_data, mask_alpha=mask_alpha,
                   mask_beta=mask_beta, reuse_len=reuse_len, uncased=uncased,
                   fixed_num_predict=num_predict)
  basename = format_filename(f"{split}-{task}-{pass_id}",
                             suffix="tfrecords", **name_args)
  record_path = os.path.join(record_dir, basename)
  num_batch = write_records(record_path, rows, sent_rows, cfg,
                            word_start_table(sp_model), rng)
  info_path = os.path.join(record_dir, format_filename(
      f"record_info-{split}-{task}-{pass_id}", suffix="json", **name_args))
  _write_atomic(info_path, json.dumps({
      "filenames": [basename], "num_batch": num_batch,
      "file_bytes": {basename: tf.io.gfile.stat(record_path).length}}))
  logging.info("Wrote %d batches to %s and %s", num_batch, record_path,
               info_path)
  return info_path


def write_records(record_path, rows, sent_rows, cfg, is_start, rng):
  """Walks the rows in steps of reuse_len and writes every full batch.

  Args:
    record_path: output .tfrecords path (written via a temporary name).
    rows, sent_rows: [bsz_per_host, row_len] from `batchify`.
    cfg: record settings (see `create_data`).
    is_start: word-start table.
    rng: np.random.RandomState.

  Returns:
    number of batches written.
  """
  row_len = rows.shape[1]
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  boundaries = [_boundaries(s) for s in sent_rows]
  total = max(0, (row_len - seq_len) // reuse_len + 1)
  if total == 0:
    logging.warning("The corpus is too short for one batch (%d tokens per "
                    "row, seq_len %d); writing an empty file", row_len,
                    seq_len)
  tmp_path = f"{record_path}.tmp-{os.getpid()}"
  try:
    num_batch = _write_batches(tmp_path, rows, boundaries, cfg, is_start, rng,
                               total)
  except BaseException:
    if tf.io.gfile.exists(tmp_path):
      tf.io.gfile.remove(tmp_path)
    raise
  tf.io.gfile.rename(tmp_path, record_path, overwrite=True)
  return num_batch


def _write_batches(path, rows, boundaries, cfg, is_start, rng, total):
  """The loop of `write_records`: writes batches to `path`, returns count."""
  bsz, row_len = rows.shape
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  num_batch, offset, start, last_log = 0, 0, time.time(), time.time()
  with tf.io.TFRecordWriter(path) as writer:
    while offset + seq_len <= row_len:
      batch = make_batch(rows, boundaries, offset, cfg, is_start, rng)
      if batch is None:
        break
      for record in serialize_examples(batch):
        writer.write(record)
      num_batch += 1
      offset += reuse_len
      if time.time() - last_log > 10 or num_batch == total:
        last_log = time.time()
        rate = num_batch / (last_log - start)
        logging.info("batch %d/%d (%.1f batches/s, %.0f tokens/s), ETA %.0fs",
                     num_batch, total, rate, rate * bsz * reuse_len,
                     (total - num_batch) / max(rate, 1e-9))
  return num_batch


def define_flags():
  """Defines the record-creation flags (names as in the release)."""
  flags.DEFINE_bool("use_tpu", True, "Accepted for compatibility; the core "
                    "layout follows --num_core_per_host in every case.")
  flags.DEFINE_integer("bsz_per_host", 32, "Batch size (rows) per host.")
  flags.DEFINE_integer("num_core_per_host", 8, "Cores (or GPUs) per host.")
  flags.DEFINE_integer("seq_len", 512, "Sequence length.")
  flags.DEFINE_integer("reuse_len", 256, "Tokens reusable as memory; the "
                       "row step.")
  flags.DEFINE_bool("uncased", False, "Lowercase the text.")
  flags.DEFINE_bool("bi_data", True, "Add backward rows.")
  flags.DEFINE_integer("mask_alpha", 6, "Context size is n*alpha//beta.")
  flags.DEFINE_integer("mask_beta", 1, "See mask_alpha.")
  flags.DEFINE_bool("use_eod", True, "Add <eod> at document ends.")
  flags.DEFINE_bool("from_raw_text", True, "Input is raw text (else lines "
                    "of space-separated ids).")
  flags.DEFINE_integer("num_predict", 85, "Masked tokens per example.")
  flags.DEFINE_string("input_glob", "data/example/*.txt",
                      "Comma-separated globs of input files.")
  flags.DEFINE_string("sp_path", "", "SentencePiece model.")
  flags.DEFINE_string("save_dir", "proc_data/example", "Output directory.")
  flags.DEFINE_string("split", "train", "Split name in file names.")
  flags.DEFINE_integer("pass_id", 0, "Pass written by this run; run once "
                       "per pass_id in [0, num_passes).")
  flags.DEFINE_integer("num_passes", 1, "Accepted for compatibility with the "
                       "released README; one run writes one pass "
                       "(--pass_id).")
  flags.DEFINE_integer("num_task", 1, "Number of parallel tasks.")
  flags.DEFINE_integer("task", 0, "Task id in [0, num_task).")


def main(_):
  """Entry point of `python data_utils.py`."""
  from absl import app  # pylint: disable=g-import-not-at-top
  f = flags.FLAGS
  if f.pass_id >= f.num_passes:
    logging.info("--pass_id=%d >= --num_passes=%d: the input function reads "
                 "only passes below --num_passes", f.pass_id, f.num_passes)
  try:
    create_data(
        f.input_glob, f.sp_path, f.save_dir, f.bsz_per_host,
        f.num_core_per_host, f.seq_len, f.reuse_len, f.uncased, f.bi_data,
        f.mask_alpha, f.mask_beta, f.num_predict, f.use_eod, f.from_raw_text,
        f.split, f.pass_id, f.num_task, f.task)
  except ValueError as e:
    raise app.UsageError(str(e)) from None


# ----------------------------------------------------------------------------
# Input function (SPEC section 5).
# ----------------------------------------------------------------------------
def _local_perm(inputs, targets, is_masked, perm_size, seq_len):
  """Samples a blockwise factorization order of one part and its masks.

  Args:
    inputs: int64 [seq_len] token ids of the part.
    targets: int64 [seq_len] next-token targets of the part.
    is_masked: bool [seq_len].
    perm_size: block size; divides seq_len.
    seq_len: length of the part.

  Returns:
    perm_mask float32 [seq_len, seq_len] (1 = i may not see j), new_targets
    int64 [seq_len], target_mask float32 [seq_len], input_k int64
    [seq_len], input_q float32 [seq_len].
  """
  # order[r * perm_size + c] = r * perm_size + pi(c), one pi for all blocks.
  index = tf.range(seq_len, dtype=tf.int64)
  index = tf.transpose(tf.reshape(index, [-1, perm_size]))
  index = tf.random.shuffle(index)
  index = tf.reshape(tf.transpose(index), [-1])

  functional = tf.logical_or(tf.equal(inputs, SEP_ID), tf.equal(inputs, CLS_ID))
  non_mask = tf.logical_and(tf.logical_not(is_masked),
                            tf.logical_not(functional))
  masked_or_func = tf.logical_not(non_mask)
  rev_index = tf.where(non_mask, -tf.ones_like(index), index)
  target_tokens = tf.logical_and(masked_or_func, tf.logical_not(functional))
  target_mask = tf.cast(target_tokens, tf.float32)
  self_rev_index = tf.where(target_tokens, rev_index, rev_index + 1)
  perm_mask = tf.logical_and(self_rev_index[:, None] <= rev_index[None, :],
                             masked_or_func[None, :])
  perm_mask = tf.cast(perm_mask, tf.float32)
  new_targets = tf.concat([inputs[:1], targets[:-1]], axis=0)
  return perm_mask, new_targets, target_mask, inputs, target_mask


def make_parser(seq_len, reuse_len, perm_size, num_predict=None,
                use_bfloat16=False):
  """Returns a function: serialized example -> model features (batch-free).

  Features: input_k int32 [seq_len], input_q [seq_len], perm_mask [seq_len,
  seq_len], target int32 [num_predict], target_mask [num_predict],
  target_mapping [num_predict, seq_len], seg_id int32 [seq_len], label int32
  [] (masks float32, bfloat16 when use_bfloat16). Without num_predict,
  target/target_mask are [seq_len] and there is no target_mapping.
  """
  spec = {name: tf.io.FixedLenFeature([seq_len], tf.int64)
          for name in ("input", "is_masked", "target", "seg_id")}
  spec["label"] = tf.io.FixedLenFeature([1], tf.int64)
  mask_dtype = tf.bfloat16 if use_bfloat16 else tf.float32

  @tf.autograph.experimental.do_not_convert
  def parser(record):
    ex = tf.io.parse_single_example(record, spec)
    inputs, target = ex["input"], ex["target"]
    is_masked = tf.cast(ex["is_masked"], tf.bool)
    part_0 = _local_perm(inputs[:reuse_len], target[:reuse_len],
                         is_masked[:reuse_len], perm_size, reuse_len)
    part_1 = _local_perm(inputs[reuse_len:], target[reuse_len:],
                         is_masked[reuse_len:], perm_size,
                         seq_len - reuse_len)
    rest_len = seq_len - reuse_len
    perm_mask = tf.concat([
        tf.concat([part_0[0], tf.ones([reuse_len, rest_len])], axis=1),
        tf.concat([tf.zeros([rest_len, reuse_len]), part_1[0]], axis=1)],
                          axis=0)
    perm_mask.set_shape([seq_len, seq_len])
    new_target, target_mask, input_k, input_q = [
        tf.concat([a, b], axis=0) for a, b in zip(part_0[1:], part_1[1:])]
    features = {"perm_mask": perm_mask, "input_k": input_k,
                "input_q": input_q, "seg_id": ex["seg_id"],
                "label": tf.reshape(ex["label"], [])}
    if num_predict is None:
      features["target"], features["target_mask"] = new_target, target_mask
    else:
      is_target = tf.cast(target_mask, tf.bool)
      indices = tf.boolean_mask(tf.range(seq_len, dtype=tf.int64), is_target)
      pad_len = num_predict - tf.shape(indices)[0]
      mapping = tf.one_hot(indices, seq_len, dtype=tf.float32)
      features["target_mapping"] = tf.reshape(
          tf.concat([mapping, tf.zeros([pad_len, seq_len])], axis=0),
          [num_predict, seq_len])
      features["target"] = tf.reshape(tf.concat(
          [tf.boolean_mask(new_target, is_target),
           tf.zeros([pad_len], dtype=tf.int64)], axis=0), [num_predict])
      features["target_mask"] = tf.reshape(tf.concat(
          [tf.ones([num_predict - pad_len]), tf.zeros([pad_len])], axis=0),
                                           [num_predict])
    for name, value in features.items():
      features[name] = tf.cast(
          value, tf.int32 if value.dtype == tf.int64 else mask_dtype)
    return features

  return parser


def _describe_mismatch(record_dir, wanted, split):
  """One-line description of the record infos in a dir vs the wanted flags."""
  names = [os.path.basename(p) for p in tf.io.gfile.glob(
      os.path.join(record_dir, "record_info-*.json"))]
  if not names:
    return f"{record_dir} holds no record_info-*.json (run data_utils.py)"
  seen = {}
  for name in names:
    m = _INFO_RE.match(name)
    if not m:
      continue
    got = m.groupdict()
    got["uncased"] = bool(got["uncased"])
    got["bi_data"] = got["bi_data"] == "bi"
    diffs = []
    for key in ("split", "bsz_per_host", "seq_len", "reuse_len", "uncased",
                "bi_data", "mask_alpha", "mask_beta", "num_predict"):
      want = split if key == "split" else wanted[key]
      if key in ("mask_alpha", "mask_beta") and want is not None:
        want = _num_str(want)
      if str(got[key]) != str(want):
        diffs.append(f"--{key}={want} (data: {got[key]})")
    seen.setdefault(", ".join(diffs), name)
  parts = [f"{name} differs in {d}" if d else
           f"{name} matches but its pass_id is >= --num_passes"
           for d, name in seen.items()]
  return f"{record_dir}: " + "; ".join(parts)


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


def get_input_fn(tfrecord_dir, split, bsz_per_host, seq_len, reuse_len,
                 bi_data, num_hosts=1, num_core_per_host=1, perm_size=None,
                 mask_alpha=None, mask_beta=None, uncased=False,
                 num_passes=None, use_bfloat16=False, num_predict=None):
  """Builds the pretraining input function.

  Args:
    tfrecord_dir: comma-separated `{save_dir}/tfrecords` dirs.
    split: split name of the records.
    bsz_per_host, seq_len, reuse_len, bi_data, mask_alpha, mask_beta,
      uncased, num_predict: must match the records (None values of
      mask_alpha/mask_beta/num_predict are read from corpus_info.json).
    num_hosts: hosts sharing the files.
    num_core_per_host: per-core batches per host step.
    perm_size: factorization block size (default reuse_len); must divide and
      not exceed both part lengths.
    num_passes: use only passes with pass_id < num_passes.
    use_bfloat16: masks in bfloat16.

  Returns:
    (input_fn, record_info): input_fn(params) -> tf.data.Dataset of per-core
    batches of params["batch_size"] examples (features of `make_parser` with
    a leading batch axis; label [B]); record_info = {"num_batch": total
    host batches, "filenames": [...]}.
  """
  rest_len = seq_len - reuse_len
  if perm_size is None:
    perm_size = reuse_len
  if not 0 < perm_size <= min(reuse_len, rest_len) or reuse_len % perm_size \
      or rest_len % perm_size:
    raise ValueError(
        f"--perm_size={perm_size} must be <= and divide both --reuse_len="
        f"{reuse_len} and --seq_len - --reuse_len = {rest_len}")
  if num_core_per_host < 1 or bsz_per_host % num_core_per_host:
    raise ValueError(f"--bsz_per_host={bsz_per_host} must be a multiple of "
                     f"--num_core_per_host={num_core_per_host}")
  bsz_per_core = bsz_per_host // num_core_per_host
  if bi_data and bsz_per_core % 2:
    raise ValueError(f"--bi_data needs an even per-core batch: --bsz_per_host"
                     f"={bsz_per_host} / --num_core_per_host="
                     f"{num_core_per_host} = {bsz_per_core}")
  record_dirs = [d for d in tfrecord_dir.split(",") if d]
  if not record_dirs:
    raise ValueError("--record_info_dir is empty")
  filenames, num_batch, data_cores = [], 0, set()
  for record_dir in record_dirs:
    info = load_corpus_info(record_dir) or {}
    wanted = dict(bsz_per_host=bsz_per_host, seq_len=seq_len,
                  reuse_len=reuse_len, uncased=uncased, bi_data=bi_data,
                  mask_alpha=info.get("mask_alpha", 6) if mask_alpha is None
                  else mask_alpha,
                  mask_beta=info.get("mask_beta", 1) if mask_beta is None
                  else mask_beta,
                  num_predict=info.get("num_predict") if num_predict is None
                  else num_predict)
    num_predict = wanted["num_predict"]
    data_cores.add(info.get("num_core_per_host", num_core_per_host))
    pattern = format_filename(
        f"record_info-{split}-*-*", bsz_per_host, seq_len, bi_data, "json",
        wanted["mask_alpha"], wanted["mask_beta"], reuse_len, uncased,
        num_predict)
    matched = 0
    for path in sorted(tf.io.gfile.glob(os.path.join(record_dir, pattern))):
      m = _INFO_RE.match(os.path.basename(path))
      if not m or m.group("split") != split:
        continue
      if num_passes is not None and int(m.group("pass_id")) >= num_passes:
        continue
      with tf.io.gfile.GFile(path, "r") as f:
        record_info = json.load(f)
      for name in record_info["filenames"]:
        file_path = os.path.join(record_dir, os.path.basename(name))
        want_bytes = record_info.get("file_bytes", {}).get(name)
        if not tf.io.gfile.exists(file_path):
          raise ValueError(f"{path} lists {file_path}, which does not exist")
        got_bytes = tf.io.gfile.stat(file_path).length
        if want_bytes is not None and got_bytes != want_bytes:
          raise ValueError(f"{file_path} is truncated or corrupt: {got_bytes} "
                           f"bytes, its record info says {want_bytes}")
        filenames.append(file_path)
      num_batch += record_info["num_batch"]
      matched += 1
    if not matched:
      raise ValueError("No record info matches the flags. " +
                       _describe_mismatch(record_dir, wanted, split))
  if len(data_cores) > 1:
    raise ValueError(f"{tfrecord_dir}: the record dirs were written with "
                     f"different --num_core_per_host {sorted(data_cores)}")
  (data_core,) = data_cores
  regroup = bi_data and data_core != num_core_per_host
  if regroup and bsz_per_host % (2 * data_core):
    raise ValueError(f"corpus_info.json says num_core_per_host={data_core}, "
                     f"which does not divide --bsz_per_host={bsz_per_host} "
                     "into forward/backward halves")
  logging.info("Input: %d files, %d batches%s", len(filenames), num_batch,
               f", rows regrouped from {data_core} to {num_core_per_host} "
               "cores" if regroup else "")
  parser = make_parser(seq_len, reuse_len, perm_size, num_predict,
                       use_bfloat16)

  def input_fn(params):
    """tf.data pipeline of per-core batches (see get_input_fn)."""
    batch_size = params.get("batch_size", bsz_per_core)
    if batch_size != bsz_per_core:  # rows must reach the same core
      raise ValueError(f"params['batch_size']={batch_size} must be "
                       f"--bsz_per_host / --num_core_per_host = {bsz_per_core}")
    host_id = params["context"].current_host if "context" in params else 0
    files = (filenames[host_id::num_hosts] if len(filenames) >= num_hosts
             else filenames)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if len(files) > 1:
      # A fixed op seed: every run (a resumed one too, which skips the
      # batches already consumed) reads the files in the same order.
      dataset = dataset.shuffle(len(files), seed=_FILE_SHUFFLE_SEED)
    dataset = tf.data.TFRecordDataset(dataset).cache()
    if regroup:
      perm = _regroup_perm(bsz_per_host, data_core, num_core_per_host)
      regroup_fn = tf.autograph.experimental.do_not_convert(
          lambda records: tf.gather(records, perm))
      dataset = dataset.batch(bsz_per_host, drop_remainder=True).map(
          regroup_fn).unbatch()
    dataset = dataset.map(parser, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.repeat().batch(batch_size, drop_remainder=True)
    return dataset.prefetch(tf.data.AUTOTUNE)

  return input_fn, {"num_batch": num_batch, "filenames": filenames}
