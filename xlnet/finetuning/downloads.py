"""The released checkpoints and the paper's data sets: where each comes
from, where it lands and how it is checked (`download.py`).

Every entry is named as `reproduce.py --tasks` names its task (`mnli`,
`sts-b`, `imdb`, `squad2.0`, `race`, ...), plus `xlnet-large` and
`xlnet-base`; the groups `models`, `glue`, `classification`, `squad` and
`race` name several. Each lands where `reproduce.py` looks for it
(`paper_settings.py`: each task's `data` directories under `--data_root`,
first match wins) and the checkpoints where `--init_checkpoint` points:

  {model_root}/xlnet_cased_L-24_H-1024_A-16/   xlnet-large (and L-12 base)
  {data_root}/glue_data/{MNLI,QNLI,...}/       the GLUE tasks
  {data_root}/aclImdb/  RACE/  yelp_review_full_csv/ ...
  {data_root}/squad/{train,dev}-v{2.0,1.1}.json
  {root}/downloads/         partial downloads ({name}.part), kept archives
  {root}/download_manifest.json   URL, bytes, SHA-256, MD5 and check of
                                  every file downloaded, and its terms

How an entry is installed (`install`): each file is fetched resumably
(`http_fetch`), its format checked (a zip or gzip signature, JSON), a
checksum compared where one is known (the server's published MD5; the MD5
torchtext records for the same URL, when not fetched through a mirror);
archives are unpacked into a fresh directory under `downloads/`, the
expected layout checked there (e.g. `xlnet_model.ckpt.index`,
`train/pos`), and the result renamed into place: it appears complete or
not at all. Data already in place (found with its layout) is skipped; a
directory in the way without the layout is an error, never overwritten.

Where each URL was found and what terms its source states: the `source`
and `terms` of each entry, and docs/reproducing.md.
"""
import contextlib
import dataclasses
import datetime
import glob
import json
import os
import shutil
import sys
import tempfile
from typing import Optional
import urllib.parse

from xlnet import errors
from xlnet import io_utils
from xlnet import signals
from xlnet.finetuning import http_fetch
from xlnet.finetuning import unpack
from xlnet.training import run_lock

MODELS, DATA = "model", "data"
DOWNLOADS = "downloads"
MANIFEST = "download_manifest.json"
_STAGING_MARK = ".unpack-"
# What a released checkpoint's directory holds (release README, "Released
# Models": the checkpoint's 3 files, spiece.model, xlnet_config.json); the
# .meta graph is not needed to load it.
_CHECKPOINT = ("xlnet_model.ckpt.index", "xlnet_model.ckpt.data-*",
               "spiece.model", "xlnet_config.json")
# The MD5s from torchtext are those its dataset modules (pytorch/text,
# torchtext/datasets/*.py, commit a5e6106 of 2025-09-10) check for the same
# URLs; the sources publish none.
_TORCHTEXT = "torchtext's record for this URL"


@dataclasses.dataclass(frozen=True)
class File:
  """One file fetched from one URL.

  Attributes:
    url: where it comes from.
    name: its name in `downloads/`.
    md5: the MD5 torchtext records for `url` (hex), or None.
    drive: a Google Drive link (its confirmation page is followed).
  """
  url: str
  name: str
  md5: Optional[str] = None
  drive: bool = False


@dataclasses.dataclass(frozen=True)
class Part:
  """What lands in one place.

  Attributes:
    files: the `File`s it is made from.
    build: "archive" (unpack; `member` is its top-level directory), "json"
      (one JSON file, `member` its name) or "mrpc" (GLUE's MRPC split built
      from SentEval's files, `member` "MRPC").
    target: where it lands, relative to its root.
    layout: paths (globs) that must exist under it.
    places: other paths (relative to the root) where the same data counts
      as in place (`reproduce.py` looks there too).
  """
  files: tuple
  build: str
  member: str
  target: str
  layout: tuple = ()
  places: tuple = ()


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


################################################################################
# Where things are.
################################################################################
@dataclasses.dataclass(frozen=True)
class Config:
  """A `download.py` run.

  Attributes:
    data_root: where the data sets land (`reproduce.py --data_root`).
    model_root: where the checkpoints land (default: data_root).
    only: entry or group names (None: all).
    options: `http_fetch.Options` (timeouts, retries, mirror).
    keep_archives: keep the downloaded archives in `downloads/`.
    dry_run: list what would be fetched, fetch nothing.
  """
  data_root: str
  model_root: Optional[str] = None
  only: Optional[list] = None
  options: http_fetch.Options = http_fetch.Options()
  keep_archives: bool = False
  dry_run: bool = False

  def root(self, kind):
    """The directory entries of `kind` (MODELS or DATA) land in."""
    return (self.model_root or self.data_root) if kind == MODELS else (
        self.data_root)


def in_place(part, root):
  """The first of the part's `places` and its `target` (relative to
  `root`) that holds its layout, or None."""
  for place in part.places + (part.target,):
    if not unpack.missing(os.path.join(root, place), part.layout):
      return place
  return None


def _downloads_dir(root):
  return os.path.join(root, DOWNLOADS)


################################################################################
# Fetching, checking, installing.
################################################################################
@dataclasses.dataclass
class Fetched:
  """A checked file: its `File`, the `url` it came from (through the
  mirror, if any), local `path`, `http_fetch.Fetched` and how it was
  checked (`check`, words for the manifest)."""
  file: File
  url: str
  path: str
  digests: http_fetch.Fetched
  check: str


def _fetch_file(file, entry, downloads, config):
  """Downloads `file` into `downloads/` (or takes the complete file there:
  an earlier run's, or one put there by hand) and checks it."""
  path = os.path.join(downloads, file.name)
  url = http_fetch.mirrored(file.url, config.options.mirror)
  if os.path.isfile(path):
    print(f"{entry.name}: using {path}", file=sys.stderr, flush=True)
    digests = http_fetch.digests(path)
  else:
    digests = http_fetch.fetch(
        file.url, path, config.options, drive=file.drive,
        label=f"{entry.name}: {file.name}", hint=_manual_step(file, path))
  unpack.check_signature(path, file.name, url)
  return Fetched(file, url, path, digests,
                 _check_known(file, path, digests, config))


def _manual_step(file, path):
  """What a user can do when a Google Drive file cannot be fetched."""
  if not file.drive:
    return None
  return (f"or download it in a browser from {file.url}, save it as {path} "
          "and rerun (it is then checked and unpacked)")


def _check_known(file, path, digests, config):
  """Compares the file with the MD5 known for its URL (unless fetched
  through a mirror, which may serve other bytes); returns the words for
  the manifest."""
  if digests.published:
    return "MD5 matches the one the server published (x-goog-hash)"
  if file.md5 and not config.options.mirror:
    if digests.md5 != file.md5:
      raise unpack.bad(path, file.url, f"has MD5 {digests.md5}, not "
                       f"{file.md5} ({_TORCHTEXT})")
    return f"MD5 matches {_TORCHTEXT}"
  return "no checksum published; SHA-256 recorded"


def _build(part, fetched, dest):
  """Makes the part's `member` inside the empty directory `dest` from the
  `Fetched` files (one per file of the part)."""
  paths, urls = [f.path for f in fetched], [f.url for f in fetched]
  if part.build == "archive":
    extract = (unpack.unpack_zip if paths[0].endswith(".zip") else
               unpack.unpack_tar)
    extract(paths[0], dest, urls[0])
  elif part.build == "json":
    unpack.check_squad_json(paths[0], dest, urls[0])
  elif part.build == "mrpc":
    unpack.build_mrpc(*paths, dest, urls)
  else:
    raise AssertionError(part.build)
  _check_layout(part, paths, urls[0], dest)


def _check_layout(part, paths, url, dest):
  """Checks that `dest/member` holds the part's layout; else the download
  was the wrong file (`BadDownload`, the files removed)."""
  member = os.path.join(dest, part.member)
  missing = unpack.missing(member, part.layout)
  if not missing:
    return
  found = sorted(os.listdir(dest))[:5]
  expected = ", ".join(f"{part.member}/{m}" for m in missing) if (
      part.layout) else part.member
  for path in paths:
    if os.path.exists(path):
      os.remove(path)
  names = ", ".join(os.path.basename(p) for p in paths)
  raise unpack.BadDownload(
      f"{names} from {url} lacks {expected} (it holds "
      f"{', '.join(found) or 'nothing'}): not the expected archive; it was "
      "removed: check the URL (or --mirror) and rerun")


def _read_manifest(root):
  path = os.path.join(root, MANIFEST)
  try:
    with open(path, encoding="utf-8") as f:
      manifest = json.load(f)
  except FileNotFoundError:
    return {}
  except (OSError, ValueError):
    print(f"warning: {path} was unreadable; it is rewritten",
          file=sys.stderr, flush=True)
    return {}
  return manifest if isinstance(manifest, dict) else {}


def _record(manifest, entry, part, fetched):
  """Adds the installed part and its files to `manifest[entry.name]`."""
  record = manifest.setdefault(entry.name, {})
  record.update(source=entry.source, terms=entry.terms)
  installed = record.setdefault("installed", [])
  if part.target not in installed:
    installed.append(part.target)
  files = [f for f in record.get("files", [])
           if f.get("name") not in {x.file.name for x in fetched}]
  stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
      "%Y-%m-%dT%H:%M:%SZ")
  record["files"] = files + [
      {"name": x.file.name, "url": x.file.url, "fetched_from": x.url,
       "bytes": x.digests.size, "sha256": x.digests.sha256,
       "md5": x.digests.md5, "check": x.check, "date": stamp}
      for x in fetched]


def _install_part(entry, part, root, config):
  """Fetches, checks and installs one part (nothing left half-made)."""
  downloads = _downloads_dir(root)
  target = os.path.join(root, part.target)
  if os.path.exists(target):
    raise ValueError(
        f"{target} exists but lacks "
        f"{', '.join(unpack.missing(target, part.layout))}: it was not made "
        "by download.py (or is damaged); move it away and rerun")
  fetched = [_fetch_file(f, entry, downloads, config) for f in part.files]
  staging = None
  try:
    with _room_needed(downloads):
      staging = tempfile.mkdtemp(prefix=f"{part.member}{_STAGING_MARK}",
                                 dir=downloads)
      _build(part, fetched, staging)
      signals.raise_if_terminated()
      with signals.deferred_signals():
        # The record first: a disk full while writing it leaves nothing
        # installed, so the rerun installs and records the part.
        manifest = _read_manifest(root)
        _record(manifest, entry, part, fetched)
        io_utils.atomic_write(os.path.join(root, MANIFEST),
                              json.dumps(manifest, indent=1, sort_keys=True))
        os.makedirs(os.path.dirname(target) or root, exist_ok=True)
        os.rename(os.path.join(staging, part.member), target)
        if not config.keep_archives:
          for f in fetched:
            os.remove(f.path)
  finally:
    if staging is not None:
      shutil.rmtree(staging, ignore_errors=True)
  print(f"{entry.name}: installed {target}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _room_needed(downloads):
  """Turns a resource failure (disk full, ...) while a part is unpacked and
  installed into one line: nothing half-made is left, the downloaded files
  are kept."""
  try:
    yield
  except OSError as e:
    error = io_utils.resource_error(e.filename or downloads, e, (
        "nothing half-unpacked is left and the download is kept: make room "
        "and rerun"))
    if error is None:
      raise
    raise error from None


class Failed(errors.Stop):
  """An entry could not be downloaded (its one line). Exit code 1."""


class Interrupted(errors.Stop):
  """Ctrl-C during a download. Exit code 130."""
  exit_code = 130
  is_error = False


def install(entry, config):
  """Installs every part of `entry` not in place yet.

  Raises:
    http_fetch.FetchError, unpack.BadDownload: this entry failed (one line).
    ValueError: something not ours is in the way.
    io_utils.ResourceError: the disk is full.
    errors.Terminated, Interrupted: SIGTERM or Ctrl-C (partial downloads kept,
      nothing half-unpacked).
  """
  root = config.root(entry.root)
  for part in entry.parts:
    place = in_place(part, root)
    if place is not None:
      print(f"{entry.name}: {os.path.join(root, place)} is in place",
            file=sys.stderr, flush=True)
      continue
    try:
      _install_part(entry, part, root, config)
    except (KeyboardInterrupt, errors.Terminated) as e:
      what = ("stopped by SIGTERM" if isinstance(e, errors.Terminated) else
              "interrupted (Ctrl-C)")
      message = (f"{what} during {entry.name}; partial downloads are kept "
                 f"in {_downloads_dir(root)} and nothing half-unpacked is "
                 "left: rerun the same command to resume")
      if isinstance(e, errors.Terminated):
        raise errors.Terminated(message) from None
      raise Interrupted(message) from None


################################################################################
# The run.
################################################################################
def _remove_stale_staging(root):
  """Removes unpack directories a killed run left (the root is locked)."""
  for path in glob.glob(os.path.join(glob.escape(_downloads_dir(root)),
                                     f"*{_STAGING_MARK}*")):
    shutil.rmtree(path, ignore_errors=True)


def _check_local(path, flag):
  if "://" in path:
    raise ValueError(f"--{flag}={path}: download.py writes local "
                     "directories; copy the result to Cloud Storage "
                     "afterwards (gsutil -m cp -r)")


def _check_mirror(mirror):
  """Refuses a `--mirror` that is no base URL to fetch from."""
  if mirror is None:
    return
  parts = urllib.parse.urlsplit(mirror)
  if (parts.scheme in ("http", "https") and parts.hostname) or (
      parts.scheme == "file" and parts.path.startswith("/")):
    return
  raise ValueError(
      f"--mirror={mirror}: expected the base URL of a copy of the files, "
      "http(s)://HOST[:PORT][/PATH] or file:///DIR (https://host/path is "
      f"then fetched from MIRROR/host/path), got {mirror!r}")


def plan(entries, config):
  """Lines saying, for every part, what would be fetched and where it
  would land (nothing is fetched or written)."""
  lines = []
  for entry in entries:
    root = config.root(entry.root)
    lines.append(f"{entry.name}: terms: {entry.terms}")
    for part in entry.parts:
      place = in_place(part, root)
      if place is not None:
        lines.append(f"{entry.name}: in place: {os.path.join(root, place)}")
        continue
      for file in part.files:
        path = os.path.join(_downloads_dir(root), file.name)
        have = http_fetch.part_size(path, file.url)
        state = ("downloaded, to unpack" if os.path.isfile(path) else
                 f"resumes at byte {have}" if have else "to fetch")
        drive = "; Google Drive" if file.drive else ""
        lines.append(f"{entry.name}: "
                     f"{http_fetch.mirrored(file.url, config.options.mirror)}"
                     f" ({state}{drive})")
      lines.append(f"{entry.name}:   -> {os.path.join(root, part.target)}")
  return lines


def flags_to_pass(config, entries):
  """The flags the fine-tuning programs and reproduce.py take for what is
  in place: lines of text."""
  lines = []
  for entry in entries:
    if entry.root != MODELS:
      continue
    directory = os.path.abspath(os.path.join(config.root(MODELS),
                                             entry.parts[0].target))
    lines.append(f"{entry.name}: --init_checkpoint={directory}/"
                 f"xlnet_model.ckpt --model_config_path={directory}/"
                 f"xlnet_config.json --spiece_model_file={directory}/"
                 "spiece.model" + (" --model_size=base" if entry.name ==
                                   "xlnet-base" else ""))
  if any(e.root == DATA for e in entries):
    lines.append(f"data: --data_root={os.path.abspath(config.data_root)}")
  return lines


@contextlib.contextmanager
def _locked(config, kinds):
  """Holds the download lock of the root of every kind in `kinds` (one
  download.py per directory; --model_root may be --data_root)."""
  data_root = os.path.abspath(config.root(DATA))
  model_root = os.path.abspath(config.root(MODELS))
  with contextlib.ExitStack() as stack:
    if DATA in kinds:
      stack.enter_context(run_lock.hold(data_root, flag="data_root",
                                        user="download.py run"))
      _remove_stale_staging(data_root)
    if MODELS in kinds and not (DATA in kinds and model_root == data_root):
      stack.enter_context(run_lock.hold(model_root, flag="model_root",
                                        user="download.py run"))
      _remove_stale_staging(model_root)
    yield


def _not_tried(entries):
  """Words naming the downloads a run left untried after a host could not
  be reached (offline, every other one would fail the same way)."""
  if not entries:
    return ""
  return f"; not tried after it: {','.join(e.name for e in entries)}"


def run(config, out=None):
  """Downloads, checks and installs the entries `config.only` selects;
  prints what it did and the flags to pass. Returns the failed entries'
  errors (each one line), [] when all are in place."""
  out = out or sys.stdout
  entries = select(config.only)
  _check_local(config.data_root, "data_root")
  if config.model_root:
    _check_local(config.model_root, "model_root")
  _check_mirror(config.options.mirror)
  if config.dry_run:
    for line in plan(entries, config) + ["flags to pass:"] + [
        "  " + f for f in flags_to_pass(config, entries)]:
      print(line, file=out)
    return []
  failed = []
  with _locked(config, {e.root for e in entries}):
    for i, entry in enumerate(entries):
      try:
        install(entry, config)
      except http_fetch.Unreachable as e:
        failed.append(f"{entry.name}: {errors.error_text(e)}"
                      f"{_not_tried(entries[i + 1:])}")
        break
      except (http_fetch.FetchError, unpack.BadDownload) as e:
        failed.append(f"{entry.name}: {errors.error_text(e)}")
  done = [e for e in entries if all(
      in_place(p, config.root(e.root)) is not None for p in e.parts)]
  if done:
    print("flags to pass (run_classifier.py, run_squad.py, run_race.py, "
          "reproduce.py):", file=out)
    for line in flags_to_pass(config, done):
      print("  " + line, file=out)
  return failed
