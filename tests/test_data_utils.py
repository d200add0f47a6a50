"""Tests of the record creator against a slow re-derivation from SPEC.md §4."""
import glob
import itertools
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from tests.data_fixtures import (REPO_ROOT, TINY_CONFIG, corpus_slice,
                                 demo_corpus, make_records, read_records,
                                 tiny_data, train_tiny_spm)  # noqa: F401
from xlnet import data_utils
from xlnet import prepro_utils

SEP, CLS, EOD = 4, 3, 7


# ----------------------------------------------------------------------------
# Slow reference helpers, written from the SPEC text.
# ----------------------------------------------------------------------------
def ref_file_stream(path, sp, use_eod=True):
  """Token ids and sentence ids of one file, line by line."""
  ids, sids, sid = [], [], True
  with open(path, encoding="utf-8", newline="\n") as f:
    for line in f:  # lines end at "\n" only
      if not line.strip():
        if not use_eod:
          continue
        sid = not sid
        toks = [EOD]
      else:
        toks = prepro_utils.encode_ids(
            sp, prepro_utils.preprocess_text(line.strip()))
      ids += toks
      sids += [sid] * len(toks)
      sid = not sid
  return ids, sids


def ref_stream(paths, sp):
  """Concatenation of files, flipping sentence ids to alternate at joins."""
  ids, sids = [], []
  for path in paths:
    i, s = ref_file_stream(path, sp)
    if sids and s and s[0] == sids[-1]:
      s = [not x for x in s]
    ids += i
    sids += s
  return ids, sids


def ref_rows(ids, sids, bsz, ncore, bi_data):
  """Rows (ids, sentence ids) per SPEC's batchify."""
  nf = bsz // 2 if bi_data else bsz
  n = len(ids) // nf
  fwd = [(ids[k * n:(k + 1) * n], sids[k * n:(k + 1) * n]) for k in range(nf)]
  if not bi_data:
    return fwd
  rows, half = [], bsz // ncore // 2
  for c in range(ncore):
    chunk = fwd[c * half:(c + 1) * half]
    rows += chunk + [(r[::-1], s[::-1]) for r, s in chunk]
  return rows


def check_example(ex, row, bounds, offset, cfg):
  """Asserts SPEC §4's layout of one example; returns its label."""
  seq_len, reuse_len = cfg["seq_len"], cfg["reuse_len"]
  tot_len = seq_len - reuse_len - 3
  inp, tgt, seg = ex["input"], ex["target"], ex["seg_id"]
  begin = offset + reuse_len
  la = int(np.sum(seg == 0)) - reuse_len - 1
  lb = tot_len - la
  assert la >= 1 and lb >= 1
  # Layout [reuse, A, <sep>, B, <sep>, <cls>] and segment ids.
  assert list(inp[:begin - offset + la]) == row[offset:begin + la]
  assert inp[reuse_len + la] == SEP and inp[-2] == SEP and inp[-1] == CLS
  assert list(seg) == [0] * (reuse_len + la + 1) + [1] * (lb + 1) + [2]
  b = list(inp[reuse_len + la + 1:seq_len - 2])
  # Targets: next token in the row for reuse + A.
  assert list(tgt[:reuse_len + la]) == row[offset + 1:begin + la + 1]
  assert list(tgt[-2:]) == [CLS, CLS]
  label = int(ex["label"][0])
  if label == 1:
    cuts = [k for k in bounds if begin < k < begin + tot_len]
    starts = [k for k in cuts if k >= begin + la]
  else:
    starts = [0] + bounds
  ok = [s for s in starts if row[s] == b[0] and row[s:s + lb] == b
        and tgt[reuse_len + la] == row[s]
        and list(tgt[reuse_len + la + 1:seq_len - 2]) == row[s + 1:s + lb + 1]]
  assert ok, f"B not found at a valid sentence start (label {label})"
  return label


def check_masks(ex, cfg):
  goal_1 = cfg["num_predict"] // 2
  goal_0 = cfg["num_predict"] - goal_1
  assert ex["is_masked"][:cfg["reuse_len"]].sum() == goal_0
  assert ex["is_masked"][cfg["reuse_len"]:].sum() == goal_1


def check_walk_direction(examples, cfg, is_start):
  """Spans start at word starts; in backward rows, in the reversed order.

  Runs of >= 2 masked pieces are walk spans (possibly merged with a top-up
  single): forward rows' runs begin with a word start, backward rows' runs
  end with one (they were walked on the reversed sequence).
  """
  bpc = cfg["bsz_per_host"] // cfg["num_core_per_host"]
  rates = {False: [], True: []}
  for n, ex in enumerate(examples):
    backward = (n % cfg["bsz_per_host"]) % bpc >= bpc // 2
    for part in (slice(0, cfg["reuse_len"]), slice(cfg["reuse_len"], None)):
      x, m = ex["input"][part], ex["is_masked"][part].astype(bool)
      rates[backward] += [(is_start[x[s]], is_start[x[s + n - 1]])
                          for s, n in runs_of(m) if n >= 2]
  fwd, bwd = np.mean(rates[False], axis=0), np.mean(rates[True], axis=0)
  assert fwd[0] > 0.85 and bwd[1] > 0.85, (fwd, bwd)
  assert fwd[0] > bwd[0] + 0.1 and bwd[1] > fwd[1] + 0.1, (fwd, bwd)


def check_records(record_dir, corpus_paths, cfg):
  """Re-derives every example of a record dir from the corpus."""
  sp = spm.SentencePieceProcessor(model_file=train_tiny_spm())
  examples = read_records(record_dir)
  bsz = cfg["bsz_per_host"]
  candidates = []
  for order in ([corpus_paths] if len(corpus_paths) == 1
                else [corpus_paths, corpus_paths[::-1]]):
    ids, sids = ref_stream(order, sp)
    candidates.append(ref_rows(ids, sids, bsz, cfg["num_core_per_host"],
                               cfg["bi_data"]))
  # The file order is shuffled: pick the order the first example fits.
  rows = next(r for r in candidates
              if list(examples[0]["input"][:cfg["reuse_len"]])
              == r[0][0][:cfg["reuse_len"]])
  assert len(examples) % bsz == 0 and examples
  num_batch = len(examples) // bsz
  row_len = len(rows[0][0])
  # Batches stop at the first offset where some row cannot split.
  assert (num_batch - 1) * cfg["reuse_len"] + cfg["seq_len"] <= row_len
  bounds = [[k for k in range(1, len(s)) if s[k] != s[k - 1]]
            for _, s in rows]
  labels = []
  for n, ex in enumerate(examples):
    labels.append(check_example(ex, rows[n % bsz][0], bounds[n % bsz],
                                (n // bsz) * cfg["reuse_len"], cfg))
    check_masks(ex, cfg)
  if cfg["bi_data"]:
    check_walk_direction(examples, cfg, data_utils.word_start_table(sp))
  info_path, = glob.glob(os.path.join(record_dir, "record_info-*.json"))
  with open(info_path) as f:
    assert json.load(f)["num_batch"] == num_batch
  return np.array(labels), examples


# ----------------------------------------------------------------------------
# Records.
# ----------------------------------------------------------------------------
def test_records_bi_data_one_core(tiny_data):
  labels, _ = check_records(tiny_data.record_dir, [tiny_data.corpus],
                            tiny_data.config)
  # label 1 needs a cut point and a coin flip: about 40-50% of examples.
  assert 0.3 < labels.mean() < 0.5, labels.mean()
  name = ("train-0-0.bsz-4.seqlen-64.reuse-32.bi.alpha-6.beta-1.fnp-12"
          ".tfrecords")
  assert sorted(os.listdir(tiny_data.record_dir)) == [
      "record_info-" + name.replace(".tfrecords", ".json"), name]
  with open(os.path.join(os.path.dirname(tiny_data.record_dir),
                         "corpus_info.json")) as f:
    info = json.load(f)
  assert info == dict(TINY_CONFIG, vocab_size=1000, sp_path=tiny_data.sp_path,
                      input_glob=tiny_data.corpus)
  assert data_utils.load_corpus_info(tiny_data.record_dir) == info


@pytest.mark.parametrize("cfg", [
    dict(num_core_per_host=2, bsz_per_host=8, seq_len=48, reuse_len=16,
         num_predict=10),
    dict(num_core_per_host=2, bsz_per_host=4, seq_len=40, reuse_len=24,
         num_predict=7, bi_data=False),
])
def test_records_multi_core_and_uneven_parts(tmp_path, cfg):
  cfg = dict(TINY_CONFIG, **cfg)
  record_dir = make_records(str(tmp_path), num_lines=500, **cfg)
  check_records(record_dir, [corpus_slice(500)], cfg)


def test_multiple_files_tasks_and_determinism(tmp_path):
  lines = open(demo_corpus(), encoding="utf-8").read().splitlines()
  src = tmp_path / "src"
  src.mkdir()
  for k in range(3):
    (src / f"part{k}.txt").write_text(
        "\n".join(lines[k * 151:(k + 1) * 151]) + "\n", encoding="utf-8")
  paths = sorted(str(p) for p in src.glob("*.txt"))
  sp = spm.SentencePieceProcessor(model_file=train_tiny_spm())
  ids, sids = data_utils.build_stream(paths, sp, False, True, True,
                                      np.random.RandomState(0))
  refs = [ref_stream(list(order), sp)
          for order in itertools.permutations(paths)]
  assert (list(ids), list(sids)) in refs
  raw = [ref_file_stream(p, sp)[1] for p in paths]
  assert all(r[-1] for r in raw)  # each join needs a flip
  cfg = dict(TINY_CONFIG, seq_len=32, reuse_len=16, num_predict=6)
  kw = dict(input_glob=str(src / "*.txt"), sp_path=train_tiny_spm(), **cfg)
  for task, files in [(0, [paths[0], paths[2]]), (1, [paths[1]])]:
    d = str(tmp_path / f"task{task}")
    data_utils.create_data(save_dir=d, num_task=2, task=task, **kw)
    check_records(os.path.join(d, "tfrecords"), files, cfg)
    assert os.path.exists(os.path.join(d, "corpus_info.json")) == (task == 0)
  # Same (task, pass_id): identical bytes; other pass_id: other B and masks.
  runs = {}
  for name, pass_id in [("a", 0), ("b", 0), ("c", 1)]:
    d = str(tmp_path / name)
    data_utils.create_data(save_dir=d, pass_id=pass_id, **kw)
    (path,) = glob.glob(os.path.join(d, "tfrecords", "*.tfrecords"))
    runs[name] = (open(path, "rb").read(),
                  read_records(os.path.join(d, "tfrecords")))
  assert runs["a"][0] == runs["b"][0]
  ex_a, ex_c = runs["a"][1], runs["c"][1]
  n = min(len(ex_a), len(ex_c))
  same_mask = np.mean([np.array_equal(ex_a[i]["is_masked"],
                                      ex_c[i]["is_masked"]) for i in range(n)])
  same_input = np.mean([np.array_equal(ex_a[i]["input"], ex_c[i]["input"])
                        for i in range(n)])
  assert same_mask < 0.05 and same_input < 0.9
  assert not glob.glob(str(tmp_path / "*" / "tfrecords" / "*.tmp-*"))


def test_crash_leaves_no_record_info(tmp_path, monkeypatch):
  calls = []

  def failing(features):
    calls.append(1)
    if len(calls) > 3:
      raise RuntimeError("killed")
    return real(features)

  real = data_utils.serialize_examples
  monkeypatch.setattr(data_utils, "serialize_examples", failing)
  with pytest.raises(RuntimeError, match="killed"):
    make_records(str(tmp_path), num_lines=300)
  assert os.listdir(tmp_path / "tfrecords") == []


def test_serialize_examples_matches_tf_example():
  rng = np.random.RandomState(0)
  feats = {"input": rng.randint(0, 2**62, size=(3, 50), dtype=np.int64),
           "is_masked": rng.randint(0, 2, size=(3, 50)),
           "label": np.array([[0], [1], [127]])}
  feats["input"][0, :8] = [0, 127, 128, 16383, 16384, 2**21, 2**35, 2**63 - 1]
  for i, raw in enumerate(data_utils.serialize_examples(feats)):
    expected = tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v[i]))
        for k, v in feats.items()}))
    assert tf.train.Example.FromString(raw) == expected


# ----------------------------------------------------------------------------
# Span masking.
# ----------------------------------------------------------------------------
def runs_of(mask):
  """(start, length) of maximal runs of True."""
  padded = np.concatenate([[0], mask.astype(int), [0]])
  d = np.diff(padded)
  starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
  return list(zip(starts, ends - starts))


def test_span_walk_statistics():
  rng = np.random.RandomState(1)
  vocab = 50
  is_start = rng.rand(vocab) < 0.4
  seg = rng.randint(0, vocab, size=200000)
  mask = data_utils.sample_mask(seg, is_start, None, 6, 1,
                                np.random.RandomState(2))
  spans = runs_of(mask)
  assert all(is_start[seg[s]] for s, _ in spans)
  lengths = np.bincount([n for _, n in spans], minlength=6)[1:]
  p = 1.0 / np.arange(1, 6)
  expected = p / p.sum() * len(spans)
  assert len(spans) > 5000
  assert np.all(np.abs(lengths - expected) < 5 * np.sqrt(expected)), (
      lengths, expected)
  # With every piece a word start, each span of n takes n + ctx pieces.
  all_start = np.ones(vocab, dtype=bool)
  for alpha, beta in [(6, 1), (3, 2)]:
    mask = data_utils.sample_mask(seg, all_start, None, alpha, beta,
                                  np.random.RandomState(3))
    n = np.arange(1, 6)
    want = (p * n).sum() / (p * (n + n * alpha // beta)).sum()
    assert abs(mask.mean() - want) < 0.01, (alpha, beta, mask.mean(), want)


def test_span_walk_end_goal_and_reverse():
  rng = np.random.RandomState(4)
  is_start = np.ones(10, dtype=bool)
  for trial in range(300):
    seg = rng.randint(0, 10, size=20)
    walk = data_utils.sample_mask(seg, is_start, None, 1, 1,
                                  np.random.RandomState(trial))
    assert not walk[-1]  # a span ending at the part's end is not taken
    for goal in (0, 3, 11, 20):
      m = data_utils.sample_mask(seg, is_start, goal, 6, 1,
                                 np.random.RandomState(trial))
      assert m.sum() == goal
    fwd = data_utils.sample_mask(seg[::-1], is_start, 5, 2, 1,
                                 np.random.RandomState(trial))
    bwd = data_utils.sample_mask(seg, is_start, 5, 2, 1,
                                 np.random.RandomState(trial), reverse=True)
    assert np.array_equal(bwd, fwd[::-1])


def test_word_start_table():
  sp = spm.SentencePieceProcessor(model_file=train_tiny_spm())
  table = data_utils.word_start_table(sp)
  for i in range(sp.get_piece_size()):
    piece = sp.id_to_piece(i)
    want = (piece[0] in ("\u2581", "<") or
            (len(piece) == 1 and piece in '!"#$%&()*+,-./:;?@[\\]^_`{|}~'))
    assert table[i] == want, piece
  assert table[sp.piece_to_id("<sep>")] and table[sp.piece_to_id(",")]
  assert not table[sp.piece_to_id("s")]


# ----------------------------------------------------------------------------
# Bad input.
# ----------------------------------------------------------------------------
def test_bad_input_errors(tmp_path):
  sp_path = train_tiny_spm()
  corpus = corpus_slice(100)
  bad = tmp_path / "bad.txt"
  bad.write_bytes(b"fine line\nbad \xff byte\n")
  plain = str(tmp_path / "plain")
  spm.SentencePieceTrainer.train(input=corpus, model_prefix=plain,
                                 vocab_size=200, minloglevel=2)

  def err(match, **kw):
    args = dict(input_glob=corpus, sp_path=sp_path,
                save_dir=str(tmp_path / "out"), **TINY_CONFIG)
    args.update(kw)
    with pytest.raises(ValueError, match=match) as e:
      data_utils.create_data(**args)
    assert "\n" not in str(e.value)

  err("--input_glob is empty", input_glob="")
  err(r"--input_glob=.*nothing\*.txt matches no file",
      input_glob=str(tmp_path / "nothing*.txt"))
  err(r"bad.txt line 2 is not UTF-8", input_glob=str(bad))
  err(r"--sp_path=.*missing.model: SentencePiece model not found",
      sp_path=str(tmp_path / "missing.model"))
  err(r"plain.model is not an XLNet SentencePiece model",
      sp_path=plain + ".model")
  err(r"--num_predict=70 .* a part cannot hold", num_predict=70)
  err(r"--num_predict=0 must be >= 1 \(no target, no loss\)", num_predict=0)
  err(r"--bsz_per_host=6 must be a multiple of --num_core_per_host=4",
      bsz_per_host=6, num_core_per_host=4)
  err(r"--bi_data needs --bsz_per_host=6 to be a multiple of 2 \* "
      r"--num_core_per_host = 4", bsz_per_host=6, num_core_per_host=2)
  err(r"--reuse_len=61 must be in \[1, --seq_len - 3\)", reuse_len=61)
  err(r"--mask_alpha=1 must be >= --mask_beta=2", mask_alpha=1, mask_beta=2)
  assert not os.path.exists(tmp_path / "out" / "tfrecords" / "x")


def _run_cli(args, cwd):
  env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="3")
  return subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "data_utils.py")] + args,
      cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_readme_command_verbatim_and_error(tmp_path):
  shutil.copy(corpus_slice(1200), tmp_path / "botchan.txt")
  shutil.copy(train_tiny_spm(), tmp_path / "spiece.model")
  save_dir = str(tmp_path / "proc")
  # The released README's command, verbatim.
  cmd = ("--bsz_per_host=32 --num_core_per_host=16 --seq_len=512 "
         "--reuse_len=256 --input_glob=*.txt --save_dir=${SAVE_DIR} "
         "--num_passes=20 --bi_data=True --sp_path=spiece.model "
         "--mask_alpha=6 --mask_beta=1 --num_predict=85")
  res = _run_cli(cmd.replace("${SAVE_DIR}", save_dir).split(), tmp_path)
  assert res.returncode == 0, res.stderr[-2000:]
  info = data_utils.load_corpus_info(save_dir)
  assert info["num_core_per_host"] == 16 and info["bsz_per_host"] == 32
  (info_path,) = glob.glob(os.path.join(save_dir, "tfrecords",
                                        "record_info-train-0-0.bsz-32.seqlen-"
                                        "512.reuse-256.bi.alpha-6.beta-1."
                                        "fnp-85.json"))
  with open(info_path) as f:
    assert json.load(f)["num_batch"] >= 1
  assert "ETA" in res.stderr
  res = _run_cli(["--input_glob=missing/*.txt", "--sp_path=spiece.model",
                  f"--save_dir={save_dir}"], tmp_path)
  assert res.returncode != 0 and "Traceback" not in res.stderr
  assert "--input_glob=missing/*.txt matches no file" in res.stderr


def test_encode_file_eod_ids_input_and_uncased(tmp_path):
  sp = spm.SentencePieceProcessor(model_file=train_tiny_spm())
  dc = np.asarray(prepro_utils.digit_comma_table(sp))
  ids_file = tmp_path / "ids.txt"
  ids_file.write_text("5 6 7\n\n9 10\n  \n11\n")
  t, f = True, False
  ids, sids = data_utils.encode_file(str(ids_file), sp, dc, False, False, True)
  assert list(ids) == [5, 6, 7, EOD, 9, 10, EOD, 11]
  assert list(sids) == [t, t, t, t, f, f, f, t]
  ids, sids = data_utils.encode_file(str(ids_file), sp, dc, False, False,
                                     False)
  assert list(ids) == [5, 6, 7, 9, 10, 11]
  assert list(sids) == [t, t, t, f, f, t]
  text_file = tmp_path / "text.txt"
  text_file.write_text("Hello  WORLD, in 1999, Café\n")
  ids, _ = data_utils.encode_file(str(text_file), sp, dc, True, True, True)
  assert list(ids) == prepro_utils.encode_ids(sp, "hello world, in 1999, cafe")


def test_encode_file_breaks_lines_only_at_newline(tmp_path):
  # Only "\n" ends a line (as iterating a tf.io.gfile file does): "\r\n" is a
  # line end whose "\r" is stripped, while U+2028, U+2029, \x0b, \x0c,
  # \x1c-\x1e, \x85 and a lone "\r" stay inside the line (whitespace).
  t, f = True, False
  ids_file = tmp_path / "ids.txt"
  ids_file.write_bytes("5 6\u2028 7\r\n8\x0c9\x1c10\x0b11\n\n12\u2029"
                       "13\r14\x8515\n".encode("utf-8"))
  sp = spm.SentencePieceProcessor(model_file=train_tiny_spm())
  dc = np.asarray(prepro_utils.digit_comma_table(sp))
  ids, sids = data_utils.encode_file(str(ids_file), sp, dc, False, False, True)
  assert list(ids) == [5, 6, 7, 8, 9, 10, 11, EOD, 12, 13, 14, 15]
  assert list(sids) == [t, t, t, f, f, f, f, f, t, t, t, t]
  text_file = tmp_path / "text.txt"
  text_file.write_bytes("Hello\u2028world.\nIt\x0cis\u2029me.\n".encode())
  ids, sids = data_utils.encode_file(str(text_file), sp, dc, False, True,
                                     True)
  first = prepro_utils.encode_ids(sp, "Hello world.")
  second = prepro_utils.encode_ids(sp, "It is me.")
  assert list(ids) == first + second
  assert list(sids) == [t] * len(first) + [f] * len(second)


@pytest.mark.parametrize("bad_id", ["1000", "-3", "99999999999"])
def test_ids_input_outside_vocabulary_is_rejected(tmp_path, bad_id):
  ids_file = tmp_path / "ids.txt"
  ids_file.write_text("5 6 7\n\n" + " ".join(["9"] * 200) + f" {bad_id} 9\n")
  with pytest.raises(ValueError, match=(
      rf"--from_raw_text=False but .*ids.txt holds id {bad_id}, outside the "
      r"vocabulary \[0, 1000\) of --sp_path")) as e:
    data_utils.create_data(str(ids_file), train_tiny_spm(),
                           str(tmp_path / "out"), from_raw_text=False,
                           **dict(TINY_CONFIG, seq_len=16, reuse_len=8,
                                  num_predict=4))
  assert "\n" not in str(e.value)


# ----------------------------------------------------------------------------
# A/B split and span walk replayed against SPEC §4 with the same draws.
# ----------------------------------------------------------------------------
class RecordingRng:
  """np.random.RandomState wrapper that logs every draw."""

  def __init__(self, seed):
    self.rng, self.draws = np.random.RandomState(seed), []

  def random_sample(self, *shape):
    value = self.rng.random_sample(*shape)
    self.draws.append(np.copy(value))
    return value

  def randint(self, high):
    value = self.rng.randint(high)
    self.draws.append((value, high))
    return value


def spec_split(sent, begin, tot_len, draws):
  """SPEC §4's A/B rule for one row, consuming the logged draws in order."""
  row_len = len(sent)
  if begin + tot_len >= row_len:
    return None
  bounds = [k for k in range(1, row_len) if sent[k] != sent[k - 1]]
  stop = next((k for k in bounds if k >= begin + tot_len), row_len)
  cuts = [k for k in bounds if begin < k < stop]

  def choice(n):
    value, high = draws.pop(0)
    assert high == n
    return value

  if not cuts or draws.pop(0) < 0.5:
    label = 0
    a_end = cuts[choice(len(cuts))] if cuts else stop
    b_len = max(1, tot_len - (a_end - begin))
    b_begin = choice(row_len - b_len)  # B may start anywhere (its target too)
    b_end = b_begin + b_len
    b_begin = max([0] + [k for k in bounds if k <= b_begin])  # sentence start
    b_end = min([k for k in bounds if k >= b_end] + [row_len - 1])  # end/cap
  else:
    label = 1
    a_end = cuts[choice(len(cuts))]
    b_begin, b_end = a_end, stop
  while (a_end - begin) + (b_end - b_begin) > tot_len:
    if a_end - begin > b_end - b_begin:
      a_end -= 1
    else:
      b_end -= 1
  assert not draws
  if a_end >= row_len or b_end >= row_len:  # no next-token target
    return None
  return a_end, b_begin, b_end, label


def test_split_a_and_b_replayed_against_spec():
  rs = np.random.RandomState(0)
  results = set()
  for trial in range(3000):
    row_len = rs.randint(5, 50)
    flips = rs.rand(row_len) < rs.choice([0.03, 0.2, 0.6, 1.0])
    flips[0] = False
    sent = np.cumsum(flips) % 2 == 0
    begin, tot_len = rs.randint(0, row_len), rs.randint(1, 20)
    rng = RecordingRng(trial)
    got = data_utils.split_a_and_b(row_len, data_utils._boundaries(sent),
                                   begin, tot_len, rng)
    want = spec_split(sent, begin, tot_len, [
        d if isinstance(d, tuple) else float(d) for d in rng.draws])
    assert (None if got is None else tuple(map(int, got))) == want, trial
    results.add(None if want is None else want[3])
  assert results == {None, 0, 1}


def spec_walk(seg, is_start, goal, alpha, beta, draws):
  """SPEC §4's span walk on one part (no top-up), given the (u_n, u_l)."""
  p = 1.0 / np.arange(1, 6)
  cdf = np.cumsum(p / p.sum())
  mask, num, cursor = np.zeros(len(seg), dtype=bool), 0, 0
  for u_n, u_l in draws:
    if (goal is not None and num >= goal) or cursor >= len(seg):
      break
    n = min(int(np.sum(cdf <= u_n)) + 1, 5)
    if goal is not None:
      n = min(n, goal - num)
    ctx = n * alpha // beta
    left = int(u_l * ctx)
    starts = [k for k in range(cursor + left, len(seg)) if is_start[seg[k]]]
    if not starts or starts[0] + n >= len(seg):
      break
    mask[starts[0]:starts[0] + n] = True
    num += n
    cursor = starts[0] + n + ctx - left
  return mask


def test_span_walk_replayed_against_spec():
  rs = np.random.RandomState(5)
  for trial in range(400):
    rows, seg_len = rs.randint(1, 4), rs.randint(1, 40)
    is_start = rs.rand(20) < rs.choice([0.05, 0.4, 1.0])
    segs = rs.randint(0, 20, size=(rows, seg_len))
    alpha, beta = [(6, 1), (1, 1), (3, 2)][trial % 3]
    goal = None if trial % 4 == 0 else rs.randint(0, seg_len + 1, size=rows)
    reverse = rs.rand(rows) < 0.5
    rng = RecordingRng(trial)
    got = data_utils.sample_masks(segs, is_start, goal, alpha, beta, rng,
                                  reverse)
    walks = [d for d in rng.draws if d.shape == (rows, 2)]
    for r in range(rows):
      g = None if goal is None else int(goal[r])
      seg = segs[r][::-1] if reverse[r] else segs[r]
      want = spec_walk(seg, is_start, g, alpha, beta, [w[r] for w in walks])
      want = want[::-1] if reverse[r] else want
      if g is None:
        np.testing.assert_array_equal(got[r], want)
      else:  # the walk's spans, topped up with single positions
        assert got[r].sum() == g and np.all(got[r][want]), trial
