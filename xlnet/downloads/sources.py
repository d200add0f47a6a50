"""The released checkpoints and the paper's data sets: where each comes
from, where it lands and what it must hold (`installer.py` installs them).

Every entry is named as `reproduce.py --tasks` names its task (`mnli`,
`sts-b`, `imdb`, `squad2.0`, `race`, ...), plus `xlnet-large` and
`xlnet-base`; the groups `models`, `glue`, `classification`, `squad` and
`race` name several. Each lands where `reproduce.py` looks for it
(`xlnet/reproduce/paper_settings.py`: each task's `data` directories under
`--data_root`, first match wins) and the checkpoints where
`--init_checkpoint` points (the layout: `installer.py`).

Where each URL was found and what terms its source states: the `source`
and `terms` of each entry, and docs/reproducing.md.
"""
import dataclasses
import os
from typing import Callable, Optional

MODELS, DATA = "model", "data"
# What a released checkpoint's directory holds (release README, "Released
# Models": the checkpoint's 3 files, spiece.model, xlnet_config.json); the
# .meta graph is not needed to load it.
_CHECKPOINT = ("xlnet_model.ckpt.index", "xlnet_model.ckpt.data-*",
               "spiece.model", "xlnet_config.json")
# The MD5s from torchtext are those its dataset modules (pytorch/text,
# torchtext/datasets/*.py, commit a5e6106 of 2025-09-10) check for the same
# URLs; the sources publish none.
TORCHTEXT = "torchtext's record for this URL"


@dataclasses.dataclass(frozen=True)
class File:
  """One file fetched from one URL.

  Attributes:
    url: where it comes from.
    name: its name in `downloads/`.
    md5: the MD5 torchtext records for `url` (hex), or None.
    drive: a Google Drive link (its confirmation page is followed).
    sha256: the SHA-256 its bytes must have (hex; a registry's package,
      `registry.py`), checked through a mirror too, or None.
  """
  url: str
  name: str
  md5: Optional[str] = None
  drive: bool = False
  sha256: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Part:
  """What lands in one place.

  Attributes:
    files: the `File`s it is made from.
    build: "archive" (unpack; `member` is its top-level directory), "json"
      (one JSON file, `member` its name), "mrpc" (GLUE's MRPC split built
      from SentEval's files, `member` "MRPC") or "packages" (each file
      unpacked, then `write` makes `member`).
    target: where it lands, relative to its root.
    layout: paths (globs) that must exist under it.
    places: other paths (relative to the root) where the same data counts
      as in place (`reproduce.py` looks there too).
    write: for "packages", `write(*directories, member_path)`: writes the
      directory `member_path` from the files unpacked (one directory
      each, in order), e.g. the chain's layouts.
  """
  files: tuple
  build: str
  member: str
  target: str
  layout: tuple = ()
  places: tuple = ()
  write: Optional[Callable] = None


@dataclasses.dataclass(frozen=True)
class Entry:
  """One named download (`--only` name).

  Attributes:
    name, group: its name and its group's.
    root: MODELS or DATA (`--model_root` or `--data_root`).
    parts: the `Part`s it installs.
    source: where its URLs come from.
    terms: the licence or terms its source states.
  """
  name: str
  group: str
  root: str
  parts: tuple
  source: str
  terms: str


################################################################################
# The table.
################################################################################
_GCS = "https://storage.googleapis.com/xlnet/released_models/"
_RELEASE_TERMS = ("the release's repository is under Apache-2.0 (its "
                  "LICENSE); its README states no separate terms for the "
                  "checkpoints")


def _model(name, zip_name, directory):
  return Entry(name, "models", MODELS, (Part(
      (File(_GCS + zip_name, zip_name),), "archive", directory, directory,
      _CHECKPOINT),),
               "release README, 'Released Models' (cased; MD5 checked "
               "against the x-goog-hash Cloud Storage sends)",
               _RELEASE_TERMS)


_GLUE = "https://dl.fbaipublicfiles.com/glue/data/"
_GLUE_SOURCE = (
    "the GLUE download script the release README links (gist "
    "W4ngatang/60c2bdb54d156a41194446737ce03e2e); its author moved it to "
    "these copies when the 2019 firebasestorage links were retired "
    "(nyu-mll/GLUE-baselines#21, commit b1c8239 of 2020-12-10); HuggingFace "
    "datasets' glue.py fetches the same files")
_GLUE_TERMS = ("each GLUE task keeps its own licence "
               "(https://gluebenchmark.com/tasks)")
_TSV = ("train.tsv", "dev.tsv")


def _glue(name, label, zip_name, md5=None, layout=_TSV):
  """A GLUE task from its zip: `glue_data/{label}/` (or `{label}/`)."""
  return Entry(name, "glue", DATA, (Part(
      (File(_GLUE + zip_name, zip_name, md5),), "archive", label,
      f"glue_data/{label}", layout, places=(label,)),),
               _GLUE_SOURCE, _GLUE_TERMS)


_SENTEVAL = "https://dl.fbaipublicfiles.com/senteval/senteval_data/"
_MRPC = Entry("mrpc", "glue", DATA, (Part(
    (File(_SENTEVAL + "msr_paraphrase_train.txt", "msr_paraphrase_train.txt",
          "793daf7b6224281e75fe61c1f80afe35"),
     File(_SENTEVAL + "msr_paraphrase_test.txt", "msr_paraphrase_test.txt",
          "e437fdddb92535b820fe8852e2df8a49"),
     File(_GLUE + "mrpc_dev_ids.tsv", "mrpc_dev_ids.tsv")),
    "mrpc", "MRPC", "glue_data/MRPC", ("train.tsv", "dev.tsv", "test.tsv"),
    places=("MRPC",)),),
              "the GLUE download script (above): GLUE does not host MRPC; "
              "the script splits SentEval's copy of the corpus by GLUE's "
              "mrpc_dev_ids.tsv, as here (its 2020 revision no longer fetches "
              "that file; the URL is the one HuggingFace datasets' glue.py "
              "uses)",
              "Microsoft Research Paraphrase Corpus: Microsoft's licence "
              "(the GLUE script notes it cannot host MRPC for legal "
              "reasons)")

_SQUAD = "https://rajpurkar.github.io/SQuAD-explorer/dataset/"


def _squad(name, version, md5s):
  """A SQuAD version: its two JSON files in `squad/`."""
  parts = tuple(
      Part((File(_SQUAD + f"{split}-v{version}.json",
                 f"{split}-v{version}.json", md5),), "json",
           f"{split}-v{version}.json", f"squad/{split}-v{version}.json",
           places=(f"{split}-v{version}.json",
                   f"SQuAD/{split}-v{version}.json"))
      for split, md5 in zip(("train", "dev"), md5s))
  return Entry(name, "squad", DATA, parts,
               "release README, 'SQuAD2.0' (wget lines); v1.1 from the same "
               "site", "CC BY-SA 4.0 (the SQuAD page)")


_ZHANG_SOURCE = (
    "Zhang, Zhao and LeCun (2015), arXiv:1509.01626: the data sets' Google "
    "Drive folder (http://goo.gl/JyCnZq); the file IDs are the ones "
    "torchtext downloads")
_ZHANG_TERMS = ("built from the Yelp Dataset Challenge 2015, Amazon reviews "
                "(SNAP), DBpedia 2014 and AG's news corpus: each archive's "
                "readme.txt names its origin, whose terms apply")


def _zhang(name, directory, drive_id, md5=None):
  """A CSV data set of Zhang et al. (2015), from Google Drive."""
  url = f"https://drive.google.com/uc?export=download&id={drive_id}"
  return Entry(name, "classification", DATA, (Part(
      (File(url, f"{directory}.tar.gz", md5, drive=True),), "archive",
      directory, directory, ("train.csv", "test.csv")),),
               _ZHANG_SOURCE, _ZHANG_TERMS)


ENTRIES = (
    _model("xlnet-large", "cased_L-24_H-1024_A-16.zip",
           "xlnet_cased_L-24_H-1024_A-16"),
    _model("xlnet-base", "cased_L-12_H-768_A-12.zip",
           "xlnet_cased_L-12_H-768_A-12"),
    _glue("mnli", "MNLI", "MNLI.zip",
          layout=("train.tsv", "dev_matched.tsv", "dev_mismatched.tsv")),
    _glue("qnli", "QNLI", "QNLIv2.zip", "b4efd6554440de1712e9b54e14760e82"),
    _glue("qqp", "QQP", "QQP-clean.zip"),
    _glue("rte", "RTE", "RTE.zip", "bef554d0cafd4ab6743488101c638539"),
    _glue("sst-2", "SST-2", "SST-2.zip", "9f81648d4199384278b86e315dac217c"),
    _MRPC,
    _glue("cola", "CoLA", "CoLA.zip"),
    _glue("sts-b", "STS-B", "STS-B.zip"),
    Entry("imdb", "classification", DATA, (Part(
        (File("https://ai.stanford.edu/~amaas/data/sentiment/"
              "aclImdb_v1.tar.gz", "aclImdb_v1.tar.gz",
              "7c2ac02c03563afcf9b574c7e56c153a"),), "archive", "aclImdb",
        "aclImdb", ("train/pos", "train/neg", "test/pos", "test/neg")),),
          "release README, 'IMDB' (its wget line, over https)",
          "the page asks users to cite Maas et al. (2011)"),
    _zhang("yelp2", "yelp_review_polarity_csv", "0Bz8a_Dbh9QhbNUpYQ2N3SGlFaDg",
           "620c8ae4bd5a150b730f1ba9a7c6a4d3"),
    _zhang("yelp5", "yelp_review_full_csv", "0Bz8a_Dbh9QhbZlU4dXhHTFhZQU0",
           "f7ddfafed1033f68ec72b9267863af6c"),
    _zhang("dbpedia", "dbpedia_csv", "0Bz8a_Dbh9QhbQ2Vic1kxMmZZQ1k",
           "dca7b1ae12b1091090db52aa7ec5ca64"),
    _zhang("amazon2", "amazon_review_polarity_csv",
           "0Bz8a_Dbh9QhbaW12WVVZS2drcnM", "fe39f8b653cada45afd5792e0f0e8f9b"),
    _zhang("amazon5", "amazon_review_full_csv", "0Bz8a_Dbh9QhbZVhsUnRWRDhETzA",
           "57d28bd5d930e772930baddf36641c7c"),
    _zhang("ag_news", "ag_news_csv", "0Bz8a_Dbh9QhbUDNpeUdjb0wxRms"),
    _squad("squad2.0", "2.0", ("62108c273c268d70893182d5cf8df740",
                               "246adae8b7002f8679c027697b0b7cf8")),
    _squad("squad1.1", "1.1", ("981b29407e0affa3b1b156f72073b945",
                               "3e85deb501d4e538b6bc56f786231552")),
    Entry("race", "race", DATA, (Part(
        (File("https://www.cs.cmu.edu/~glai1/data/race/RACE.tar.gz",
              "RACE.tar.gz"),), "archive", "RACE", "RACE",
        tuple(f"{split}/{level}" for split in ("train", "dev", "test")
              for level in ("middle", "high"))),),
          "release README, 'RACE reading comprehension' (links the page "
          "https://www.cs.cmu.edu/~glai1/data/race/; the archive's URL as "
          "HuggingFace datasets and TFDS fetch it)",
          "non-commercial research purposes only; no reproduction, sale or "
          "commercial use of the passages or derived data (the RACE page's "
          "notes)"),
)
GROUPS = ("models", "glue", "classification", "squad", "race")


def select(names):
  """The entries `names` (entry or group names, any case) pick, in the
  table's order; all of them for None or [].

  Raises:
    ValueError: an unknown name (one line listing the known ones).
  """
  if not names:
    return list(ENTRIES)
  wanted = {n.strip().lower() for n in names if n.strip()}
  known = {e.name for e in ENTRIES} | set(GROUPS)
  unknown = sorted(wanted - known)
  if unknown:
    raise ValueError(
        f"--only: {', '.join(unknown)} is not a download (expected some of "
        f"{', '.join(GROUPS)}, {', '.join(e.name for e in ENTRIES)})")
  return [e for e in ENTRIES if e.name in wanted or e.group in wanted]


def data_dir(name):
  """Where the entry `name` (a `reproduce.py --tasks` name) puts its data,
  relative to its root (`glue_data/MNLI`, `squad`, `RACE`), or None for a
  name that is no entry."""
  for entry in ENTRIES:
    if entry.name == name:
      return os.path.commonpath([p.target for p in entry.parts])
  return None

