"""Tests of text -> token stream -> rows against a line-by-line reference."""
import itertools

import numpy as np
import pytest
import sentencepiece as spm

from tests.data_reference import EOD, ref_file_stream, ref_rows, ref_stream
from xlnet.data import prepro_utils
from xlnet.data import record_writer
from xlnet.data import spm_train
from xlnet.data import token_stream
from xlnet.data import worker_pool


def encoder_for(sp_path, uncased=False, from_raw_text=True):
  with open(sp_path, "rb") as f:
    return token_stream.LineEncoder(f.read(), uncased, from_raw_text)


def encode_file(path, sp_path, uncased=False, from_raw_text=True,
                use_eod=True):
  """One file through the writer's steps: (ids, sentence ids)."""
  with open(path, "rb") as f:
    lines = token_stream.split_lines(f.read(), path)
  texts, is_text = token_stream.text_lines(lines)
  ids, lengths = encoder_for(sp_path, uncased, from_raw_text)(texts, path)
  return token_stream.file_stream(is_text, ids, lengths, use_eod)


def test_ids_input_eod_and_blank_lines(tmp_path, tiny_spm):
  ids_file = tmp_path / "ids.txt"
  ids_file.write_text("\n5 6 7\n\n9 10\n  \n\n11\n")
  t, f = True, False
  ids, sids = encode_file(str(ids_file), tiny_spm, from_raw_text=False)
  # A leading blank line: <eod> with the id before the first line (False).
  assert list(ids) == [EOD, 5, 6, 7, EOD, 9, 10, EOD, EOD, 11]
  assert list(sids) == [f, t, t, t, t, f, f, f, f, t]
  ids, sids = encode_file(str(ids_file), tiny_spm, from_raw_text=False,
                          use_eod=False)
  assert list(ids) == [5, 6, 7, 9, 10, 11]
  assert list(sids) == [t, t, t, f, f, t]


@pytest.mark.parametrize("use_eod", [True, False])
@pytest.mark.quick
def test_text_file_matches_line_by_line_reference(tmp_path, tiny_spm,
                                                  demo_corpus, use_eod):
  lines = open(demo_corpus, encoding="utf-8").read().split("\n")[:300]
  path = tmp_path / "text.txt"
  path.write_text("\n\n" + "\n".join(lines) + "\n\n \n", encoding="utf-8")
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  ids, sids = encode_file(str(path), tiny_spm, use_eod=use_eod)
  want_ids, want_sids = ref_file_stream(str(path), sp, use_eod=use_eod)
  assert list(ids) == want_ids and list(sids) == want_sids


def test_uncased_and_accents(tmp_path, tiny_spm):
  path = tmp_path / "text.txt"
  path.write_text("Hello  WORLD, in 1999, Café\n")
  ids, _ = encode_file(str(path), tiny_spm, uncased=True)
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  assert list(ids) == prepro_utils.encode_ids(sp, "hello world, in 1999, cafe")


def test_digit_comma_pieces_are_re_encoded(tmp_path, demo_corpus):
  # A model with the piece '1999,' (as a user-defined symbol): lines holding
  # it go through the digit-comma rule, like prepro_utils.encode_ids.
  prefix = str(tmp_path / "dc")
  spm.SentencePieceTrainer.train(
      input=demo_corpus, model_prefix=prefix, vocab_size=400,
      control_symbols=spm_train.CONTROL_SYMBOLS,
      user_defined_symbols=spm_train.USER_DEFINED_SYMBOLS + ["1999,"],
      minloglevel=2)
  sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
  lines = ["In 1999, he left.", "No numbers here.", "x1999, and 1999,1999,"]
  assert "1999," in sp.encode_as_pieces(lines[0])
  ids, lengths = encoder_for(prefix + ".model")(lines, "x.txt")
  want = [prepro_utils.encode_ids(sp, line) for line in lines]
  assert list(lengths) == [len(w) for w in want]
  assert list(ids) == sum(want, [])
  assert sp.piece_to_id("1999,") not in ids


def test_lines_break_only_at_newline(tmp_path, tiny_spm):
  # Only "\n" ends a line (as iterating a tf.io.gfile file does): "\r\n" is a
  # line end whose "\r" is stripped, while U+2028, U+2029, \x0b, \x0c,
  # \x1c-\x1e, \x85 and a lone "\r" stay inside the line (whitespace).
  t, f = True, False
  ids_file = tmp_path / "ids.txt"
  ids_file.write_bytes("5 6\u2028 7\r\n8\x0c9\x1c10\x0b11\n\n12\u2029"
                       "13\r14\x8515\n".encode("utf-8"))
  ids, sids = encode_file(str(ids_file), tiny_spm, from_raw_text=False)
  assert list(ids) == [5, 6, 7, 8, 9, 10, 11, EOD, 12, 13, 14, 15]
  assert list(sids) == [t, t, t, f, f, f, f, f, t, t, t, t]
  text_file = tmp_path / "text.txt"
  text_file.write_bytes("Hello\u2028world.\nIt\x0cis\u2029me.\n".encode())
  ids, sids = encode_file(str(text_file), tiny_spm)
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  first = prepro_utils.encode_ids(sp, "Hello world.")
  second = prepro_utils.encode_ids(sp, "It is me.")
  assert list(ids) == first + second
  assert list(sids) == [t] * len(first) + [f] * len(second)


def test_not_utf8_names_file_and_line(tmp_path):
  with pytest.raises(ValueError, match=r"bad.txt line 2 is not UTF-8 text "
                     r"\(byte 0xff at offset 14\)"):
    token_stream.split_lines(b"fine line\nbad \xff byte\n", "bad.txt")


@pytest.mark.parametrize("bad_id", ["1000", "-3", "99999999999", "x"])
def test_ids_outside_vocabulary_are_rejected(tiny_spm, bad_id):
  match = ("holds a line that is not space-separated ids" if bad_id == "x" else
           rf"holds id {bad_id}, outside the vocabulary \[0, 1000\) of "
           "--sp_path")
  with pytest.raises(ValueError, match=r"--from_raw_text=False but ids.txt " +
                     match):
    encoder_for(tiny_spm, from_raw_text=False)(
        ["5 6 7", " ".join(["9"] * 200) + f" {bad_id} 9"], "ids.txt")


@pytest.mark.parametrize("num_workers", [1, 2])
def test_files_are_joined_in_a_seeded_order(tmp_path, tiny_spm, demo_corpus,
                                            num_workers):
  lines = open(demo_corpus, encoding="utf-8").read().splitlines()
  paths = []
  for k in range(3):
    path = tmp_path / f"part{k}.txt"
    path.write_text("\n".join(lines[k * 151:(k + 1) * 151]) + "\n",
                    encoding="utf-8")
    paths.append(str(path))
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  raw = [ref_file_stream(p, sp)[1] for p in paths]
  assert all(r[-1] for r in raw)  # each join needs a flip
  encoder = encoder_for(tiny_spm)
  with worker_pool.worker_processes(num_workers, encoder) as workers:
    ids, sids = record_writer.build_stream(
        paths, workers, True, np.random.RandomState(0))
  order = np.random.RandomState(0).permutation(3)
  assert (list(ids), list(sids)) == ref_stream([paths[i] for i in order], sp)
  others = [ref_stream(list(p), sp) for p in itertools.permutations(paths)]
  assert sum((list(ids), list(sids)) == o for o in others) == 1


def small_mixed_files(tmp_path, demo_corpus, count=9):
  """`count` small files of several kinds of text: prose, short lines with
  years and commas, accents, blank-line runs; sizes 1 to 40 lines."""
  prose = open(demo_corpus, encoding="utf-8").read().split("\n")
  kinds = [lambda k: prose[k * 13:k * 13 + 1 + 4 * k],
           lambda k: [f"Copyright {1990 + k}, {2001 + k}, Ann Caf\u00e9"] * k
           + ["", "License: GPL-2+", "", ""],
           lambda k: ["  Fran\u00e7ois  --  na\u00efve ``quote''", ""] * k
           + ["x"]]
  paths = []
  for k in range(count):
    path = tmp_path / f"f{k}.txt"
    path.write_text("\n".join(kinds[k % 3](k)) + "\n", encoding="utf-8")
    paths.append(str(path))
  return paths


@pytest.mark.parametrize("num_workers", [1, 2])
def test_jobs_that_span_files_give_each_file_its_tokens(
    tmp_path, tiny_spm, demo_corpus, monkeypatch, num_workers):
  # Jobs of 7 lines: most jobs hold the end of one file and the start of
  # the next (or several whole files).
  monkeypatch.setattr(record_writer, "_LINES_PER_TASK", 7)
  paths = small_mixed_files(tmp_path, demo_corpus)
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  with worker_pool.worker_processes(num_workers,
                                    encoder_for(tiny_spm)) as workers:
    ids, sids = record_writer.build_stream(
        paths, workers, True, np.random.RandomState(3))
  order = np.random.RandomState(3).permutation(len(paths))
  assert (list(ids), list(sids)) == ref_stream([paths[i] for i in order], sp)


def test_bad_id_in_a_job_spanning_files_names_its_file(tmp_path, tiny_spm,
                                                        monkeypatch):
  monkeypatch.setattr(record_writer, "_LINES_PER_TASK", 50)
  paths = []
  for k, text in enumerate(["5 6\n7\n", "8 9\n", "10\n2000 3\n", "4\n"]):
    paths.append(str(tmp_path / f"ids{k}.txt"))
    with open(paths[-1], "w") as f:
      f.write(text)
  with worker_pool.worker_processes(1, encoder_for(
      tiny_spm, from_raw_text=False)) as workers:
    with pytest.raises(ValueError, match=r"ids2.txt holds id 2000"):
      record_writer.build_stream(paths, workers, True,
                                 np.random.RandomState(0))


@pytest.mark.parametrize("bsz,ncore,bi_data", [
    (8, 2, True), (4, 1, True), (6, 3, False), (12, 3, True)])
def test_batchify_rows(bsz, ncore, bi_data):
  rng = np.random.RandomState(bsz + ncore)
  ids = rng.randint(9, 100, size=1003).astype(np.int32)
  sids = rng.rand(1003) < 0.5
  rows, sent_rows = token_stream.batchify(ids, bsz, sids, ncore, bi_data)
  want = ref_rows(list(ids), list(sids), bsz, ncore, bi_data)
  assert rows.shape == (bsz, len(want[0][0]))
  for r, (want_ids, want_sids) in enumerate(want):
    assert list(rows[r]) == list(want_ids)
    assert list(sent_rows[r]) == list(want_sids)
