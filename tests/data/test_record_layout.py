"""Tests of the written records: every example re-derived from the corpus,
file names and corpus_info.json (the Example bytes: test_example_proto)."""
import glob
import json
import os

import numpy as np
import pytest
import sentencepiece as spm

from tests import data_helpers
from tests.data_reference import CLS, SEP, ref_rows, ref_stream, runs_of
from xlnet.data import pretrain_examples
from xlnet.data import record_format


def check_example(ex, row, bounds, offset, cfg):
  """Asserts the layout of one example; returns its label."""
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
  sp = spm.SentencePieceProcessor(model_file=data_helpers.train_tiny_spm())
  examples = data_helpers.read_records(record_dir)
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
    check_walk_direction(examples, cfg,
                         pretrain_examples.word_start_table(sp))
  info_path, = glob.glob(os.path.join(record_dir, "record_info-*.json"))
  with open(info_path) as f:
    assert json.load(f)["num_batch"] == num_batch
  return np.array(labels), examples


@pytest.mark.quick
def test_examples_bi_data_one_core(tiny_data):
  labels, _ = check_records(tiny_data.record_dir, [tiny_data.corpus],
                            tiny_data.config)
  # label 1 needs a cut point and a coin flip: about 40-50% of examples.
  assert 0.3 < labels.mean() < 0.5, labels.mean()


@pytest.mark.parametrize("cfg", [
    dict(num_core_per_host=2, bsz_per_host=8, seq_len=48, reuse_len=16,
         num_predict=10),
    dict(num_core_per_host=2, bsz_per_host=4, seq_len=40, reuse_len=24,
         num_predict=7, bi_data=False),
])
def test_examples_multi_core_and_uneven_parts(tmp_path, cfg):
  cfg = dict(data_helpers.TINY_CONFIG, **cfg)
  record_dir = data_helpers.make_records(str(tmp_path), num_lines=500, **cfg)
  check_records(record_dir, [data_helpers.corpus_slice(500)], cfg)


def test_file_names_and_corpus_info(tiny_data):
  name = ("train-0-0.bsz-4.seqlen-64.reuse-32.bi.alpha-6.beta-1.fnp-12"
          ".tfrecords")
  assert sorted(os.listdir(tiny_data.record_dir)) == [
      "record_info-" + name.replace(".tfrecords", ".json"), name]
  with open(os.path.join(tiny_data.record_dir, "record_info-" +
                         name.replace(".tfrecords", ".json"))) as f:
    info = json.load(f)
  assert info == {"filenames": [name], "num_batch": info["num_batch"],
                  "file_bytes": {name: os.path.getsize(
                      os.path.join(tiny_data.record_dir, name))}}
  with open(os.path.join(os.path.dirname(tiny_data.record_dir),
                         "corpus_info.json")) as f:
    corpus_info = json.load(f)
  assert corpus_info == dict(data_helpers.TINY_CONFIG, vocab_size=1000,
                             sp_path=tiny_data.sp_path,
                             input_glob=tiny_data.corpus)
  assert record_format.load_corpus_info(tiny_data.record_dir) == corpus_info


@pytest.mark.parametrize("kw,name", [
    (dict(prefix="train-0-0", bsz_per_host=32, seq_len=512, bi_data=True,
          suffix="tfrecords", mask_alpha=6, mask_beta=1, reuse_len=256,
          fixed_num_predict=85),
     "train-0-0.bsz-32.seqlen-512.reuse-256.bi.alpha-6.beta-1.fnp-85"
     ".tfrecords"),
    (dict(prefix="record_info-my-dev-3-12", bsz_per_host=8, seq_len=128,
          bi_data=False, suffix="json", mask_alpha=4.5, mask_beta=2.0,
          uncased=True),
     "record_info-my-dev-3-12.bsz-8.seqlen-128.uncased.uni.alpha-4.5.beta-2"
     ".json"),
])
def test_file_name_scheme_round_trip(kw, name):
  assert record_format.format_filename(**kw) == name
  parsed = record_format.parse_filename(name)
  stem = kw["prefix"].replace("record_info-", "")
  split, task, pass_id = stem.rsplit("-", 2)
  assert parsed == dict(
      is_info=kw["suffix"] == "json", split=split, task=int(task),
      pass_id=int(pass_id), bsz_per_host=kw["bsz_per_host"],
      seq_len=kw["seq_len"], reuse_len=kw.get("reuse_len"),
      uncased=kw.get("uncased", False), bi_data=kw["bi_data"],
      mask_alpha=kw["mask_alpha"], mask_beta=kw["mask_beta"],
      num_predict=kw.get("fixed_num_predict"))
  for bad in (name.replace(".bsz-", ".bsz-x"), "notes.json",
              name.replace("record_info-", "") if parsed["is_info"]
              else "record_info-" + name):
    assert record_format.parse_filename(bad) is None, bad
