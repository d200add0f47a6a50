"""Installing downloads: the entries of `sources.py` (the released
checkpoints and the paper's data sets; `run(config)` is `download.py`'s
run), each where `reproduce.py` looks for it and the checkpoints where
`--init_checkpoint` points, and parts made of a registry's packages
(`registry.py`: the chain's data, `install` under `holding`):

  {model_root}/xlnet_cased_L-24_H-1024_A-16/   xlnet-large (and L-12 base)
  {data_root}/glue_data/{MNLI,QNLI,...}/       the GLUE tasks
  {data_root}/aclImdb/  RACE/  yelp_review_full_csv/ ...
  {data_root}/squad/{train,dev}-v{2.0,1.1}.json
  {root}/downloads/         partial downloads ({name}.part), kept archives
  {root}/download_manifest.json   URL, bytes, SHA-256, MD5 and check of
                                  every file downloaded, and its terms

How an entry is installed (`install`): each file is fetched resumably
(`http_fetch`), its format checked (a zip or gzip signature, JSON), a
checksum compared where one is known (the SHA-256 recorded for a
registry's package; the server's published MD5; the MD5 torchtext records
for the same URL, when not fetched through a mirror); archives are
unpacked into a fresh directory under `downloads/` (packages, then written
into their part's layout), the expected layout checked there (e.g.
`xlnet_model.ckpt.index`, `train/pos`), and the result renamed into
place: it appears complete or not at all. Data already in place (found
with its layout) is skipped; a directory in the way without the layout is
an error, never overwritten.
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
from xlnet import validation
from xlnet.downloads import http_fetch
from xlnet.downloads import sources
from xlnet.downloads import unpack
from xlnet.training import run_lock

DOWNLOADS = "downloads"
MANIFEST = "download_manifest.json"
_STAGING_MARK = ".unpack-"
# Where a part's packages are unpacked in its staging directory, beside the
# member their `write` makes.
_UNPACKED = ".unpacked"


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

  def __post_init__(self):
    # --timeout and --retries, by their rules (`xlnet/validation.py`).
    validation.check_fields(self.options)

  def root(self, kind):
    """The directory entries of `kind` (`sources.MODELS` or `DATA`) land
    in."""
    return (self.model_root or self.data_root) if (
        kind == sources.MODELS) else self.data_root


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
  file: sources.File
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
                 _check_known(file, path, url, digests, config))


def _manual_step(file, path):
  """What a user can do when a Google Drive file cannot be fetched."""
  if not file.drive:
    return None
  return (f"or download it in a browser from {file.url}, save it as {path} "
          "and rerun (it is then checked and unpacked)")


def _check_known(file, path, url, digests, config):
  """Compares the file with the SHA-256 recorded for it (a registry's
  package: those bytes, from any server), or the MD5 known for its URL
  (unless fetched through a mirror, which may serve other bytes); returns
  the words for the manifest."""
  if file.sha256:
    if digests.sha256 != file.sha256:
      raise unpack.bad(path, url, f"has SHA-256 {digests.sha256}, not the "
                       f"{file.sha256} recorded for it")
    return "SHA-256 matches the one recorded for it"
  if digests.published:
    return "MD5 matches the one the server published (x-goog-hash)"
  if file.md5 and not config.options.mirror:
    if digests.md5 != file.md5:
      raise unpack.bad(path, file.url, f"has MD5 {digests.md5}, not "
                       f"{file.md5} ({sources.TORCHTEXT})")
    return f"MD5 matches {sources.TORCHTEXT}"
  return "no checksum published; SHA-256 recorded"


def _build(part, fetched, dest):
  """Makes the part's `member` inside the empty directory `dest` from the
  `Fetched` files (one per file of the part)."""
  paths, urls = [f.path for f in fetched], [f.url for f in fetched]
  if part.build == "archive":
    unpack.unpack_archive(paths[0], dest, urls[0])
  elif part.build == "packages":
    unpacked = [os.path.join(dest, _UNPACKED, os.path.basename(p))
                for p in paths]
    for path, url, directory in zip(paths, urls, unpacked):
      unpack.unpack_archive(path, directory, url)
    part.write(*unpacked, os.path.join(dest, part.member))
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
      "removed: check the URL and rerun")


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
        f"{', '.join(unpack.missing(target, part.layout))}: it was not "
        "installed by this download (or is damaged); move it away and "
        "rerun")
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
  """Removes unpack directories a killed run left (the root is locked:
  `holding`)."""
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
    if entry.root != sources.MODELS:
      continue
    directory = os.path.abspath(os.path.join(config.root(sources.MODELS),
                                             entry.parts[0].target))
    lines.append(f"{entry.name}: --init_checkpoint={directory}/"
                 f"xlnet_model.ckpt --model_config_path={directory}/"
                 f"xlnet_config.json --spiece_model_file={directory}/"
                 "spiece.model" + (" --model_size=base" if entry.name ==
                                   "xlnet-base" else ""))
  if any(e.root == sources.DATA for e in entries):
    lines.append(f"data: --data_root={os.path.abspath(config.data_root)}")
  return lines


@contextlib.contextmanager
def holding(root, flag, program):
  """Holds the download lock of `root` (one run of `program` per directory;
  `flag` names it) and removes the unpack directories a killed run left
  there."""
  root = os.path.abspath(root)
  with run_lock.hold(root, flag=flag, user=f"{program} run"):
    _remove_stale_staging(root)
    yield


@contextlib.contextmanager
def _locked(config, kinds):
  """Holds the download lock of the root of every kind in `kinds` (one
  download.py per directory; --model_root may be --data_root)."""
  data_root = os.path.abspath(config.root(sources.DATA))
  model_root = os.path.abspath(config.root(sources.MODELS))
  with contextlib.ExitStack() as stack:
    if sources.DATA in kinds:
      stack.enter_context(holding(data_root, "data_root", "download.py"))
    if sources.MODELS in kinds and not (sources.DATA in kinds and
                                        model_root == data_root):
      stack.enter_context(holding(model_root, "model_root", "download.py"))
    yield


def _not_tried(entries):
  """Words naming the downloads a run left untried after a host could not
  be reached (offline, every other one would fail the same way)."""
  if not entries:
    return ""
  return f"; not tried after it: {','.join(e.name for e in entries)}"


def _with_flag_remedies(config):
  """`config` with download.py's --mirror and --timeout among a failure's
  remedies (`http_fetch.Remedies`)."""
  return dataclasses.replace(config, options=dataclasses.replace(
      config.options, remedies=http_fetch.Remedies(
          unreachable=("fetch from a copy of the files with --mirror=URL",),
          timeout=("raise --timeout",))))


def run(config, out=None):
  """Downloads, checks and installs the entries `config.only` selects;
  prints what it did and the flags to pass. Returns the failed entries'
  errors (each one line), [] when all are in place."""
  out = out or sys.stdout
  config = _with_flag_remedies(config)
  entries = sources.select(config.only)
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
