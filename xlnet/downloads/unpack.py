"""Checking and unpacking downloaded files (`installer.py`): a file's
signature (zip, gzip, JSON; an HTML page is refused), zip and tar.gz
archives, wheels and npm tarballs among them (every member inside the
unpack directory, regular files and directories only, zip CRCs checked),
SQuAD JSON, GLUE's MRPC split and the layout a directory must hold.

A file that is not what was expected is removed and reported as a
`BadDownload` (one line naming the file, its URL and what is wrong).
"""
import glob
import json
import os
import shutil
import tarfile
import zipfile
import zlib

from xlnet import errors
from xlnet import io_utils


def missing(path, layout):
  """The `layout` paths (globs) absent under `path` (all, when `path` is
  not a directory); for a file part (no layout), [] when `path` is a
  file."""
  if not layout:
    return [] if os.path.isfile(path) else [os.path.basename(path)]
  base = glob.escape(path)
  return [p for p in layout if not glob.glob(os.path.join(base, p))]


class BadDownload(errors.Stop):
  """A downloaded file is not what was expected (format, checksum,
  layout); it was removed. Exit code 1."""


# A wheel is a zip archive, npm's tarball (.tgz) a gzip-compressed tar.
_ZIP, _TAR_GZ = (".zip", ".whl"), (".tar.gz", ".tgz")
_SIGNATURES = {_ZIP: (b"PK\x03\x04", "a zip archive"),
               _TAR_GZ: (b"\x1f\x8b", "a gzip-compressed tar archive")}


def check_signature(path, name, url):
  """Checks that the file `path` starts as its name says (zip, tar.gz,
  JSON, text); a wrong one (an HTML error page saved with 200, ...) is a
  `BadDownload`."""
  with open(path, "rb") as f:
    head = f.read(64)
  for suffixes, (magic, what) in _SIGNATURES.items():
    if name.endswith(suffixes) and not head.startswith(magic):
      raise bad(path, url, f"is not {what} (it starts with {head[:24]!r})")
  if name.endswith(".json") and not head.lstrip(b"\xef\xbb\xbf \t\r\n"
                                                ).startswith(b"{"):
    raise bad(path, url, f"is not JSON (it starts with {head[:24]!r})")
  if head.lstrip().lower().startswith((b"<!doctype html", b"<html")):
    raise bad(path, url, "is an HTML page, not the file")


def bad(path, url, problem):
  """A `BadDownload` for `path` (removed first)."""
  if os.path.exists(path):
    os.remove(path)
  return BadDownload(f"{os.path.basename(path)} from {url} {problem}; it was "
                     "removed: check the URL and rerun")


def _safe_member(name):
  """Whether an archive member's name stays inside the unpack directory."""
  norm = os.path.normpath(name)
  return bool(name) and not os.path.isabs(name) and not norm.startswith(
      "..") and "\\" not in name


def unpack_archive(path, dest, url):
  """Unpacks the zip (.zip, .whl) or tar.gz (.tar.gz, .tgz) archive `path`
  into `dest` (made if missing)."""
  (unpack_zip if path.endswith(_ZIP) else unpack_tar)(path, dest, url)


def unpack_zip(path, dest, url):
  try:
    with zipfile.ZipFile(path) as archive:
      unsafe = [n for n in archive.namelist() if not _safe_member(n)]
      if unsafe:
        raise bad(path, url, f"has a member outside its directory "
                   f"({unsafe[0]!r})")
      broken = archive.testzip()
      if broken is not None:
        raise bad(path, url, f"is damaged (member {broken!r} fails its "
                   "CRC)")
      archive.extractall(dest)
  except (zipfile.BadZipFile, EOFError) as e:
    raise bad(path, url, f"is not a complete zip archive "
               f"({errors.error_text(e)})") from None


def unpack_tar(path, dest, url):
  try:
    with tarfile.open(path, "r:gz") as archive:
      for member in archive:
        if not _safe_member(member.name) or not (member.isfile() or
                                                 member.isdir()):
          raise bad(path, url, f"has an unexpected member {member.name!r} "
                     "(a link or a path outside its directory)")
        if hasattr(tarfile, "data_filter"):
          archive.extract(member, dest, set_attrs=False, filter="data")
        else:
          archive.extract(member, dest, set_attrs=False)
  except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
    if io_utils.resource_cause(e):
      raise
    raise bad(path, url, f"is not a complete tar.gz archive "
               f"({errors.error_text(e)})") from None


def check_squad_json(path, dest, url):
  """Checks that `path` is SQuAD-style JSON (an object with a `data` list)
  and copies it into `dest`."""
  try:
    with open(path, encoding="utf-8-sig") as f:
      value = json.load(f)
  except (ValueError, UnicodeDecodeError) as e:
    raise bad(path, url, f"is not valid JSON ({errors.error_text(e)[:120]})"
               ) from None
  if not isinstance(value, dict) or not isinstance(value.get("data"), list):
    raise bad(path, url, "is not SQuAD JSON (no top-level \"data\" list)")
  shutil.copyfile(path, os.path.join(dest, os.path.basename(path)))


def _read_lines(path, url):
  try:
    with open(path, encoding="utf-8") as f:
      return f.read().splitlines()
  except UnicodeDecodeError as e:
    raise bad(path, url, f"is not UTF-8 text ({errors.error_text(e)[:80]})"
               ) from None


def _mrpc_rows(path, url):
  """(header, rows) of a SentEval MRPC file: each row the five fields
  Quality, #1 ID, #2 ID, #1 String, #2 String."""
  lines = _read_lines(path, url)
  if not lines or not lines[0].lstrip("\ufeff").startswith("Quality"):
    raise bad(path, url, "is not the MRPC corpus (no 'Quality' header)")
  rows = []
  for number, line in enumerate(lines[1:], 2):
    if not line.strip():
      continue
    fields = line.strip().split("\t")
    if len(fields) != 5:
      raise bad(path, url, f"line {number} has {len(fields)} tab-separated "
                 "fields, expected 5 (the MRPC corpus)")
    rows.append(fields)
  return lines[0], rows


def build_mrpc(train_path, test_path, dev_ids_path, dest, urls):
  """Writes GLUE's MRPC split into `dest/MRPC`: train.tsv and dev.tsv (the
  corpus' training pairs, those listed in dev_ids.tsv going to dev.tsv,
  with the corpus' header) and test.tsv (`index`, then the pairs' IDs and
  strings), as the GLUE download script does."""
  header, train = _mrpc_rows(train_path, urls[0])
  _, test = _mrpc_rows(test_path, urls[1])
  dev_ids = {tuple(line.strip().split("\t"))
             for line in _read_lines(dev_ids_path, urls[2]) if line.strip()}
  if not dev_ids or any(len(ids) != 2 for ids in dev_ids):
    raise bad(dev_ids_path, urls[2], "is not a list of MRPC ID pairs")
  unknown = dev_ids - {(r[1], r[2]) for r in train}
  if unknown:
    raise bad(dev_ids_path, urls[2], f"names {len(unknown)} pair(s) not in "
               f"{os.path.basename(train_path)} (e.g. {sorted(unknown)[0]})")
  out = os.path.join(dest, "MRPC")
  os.makedirs(out)
  tables = {
      "train.tsv": [header] + ["\t".join(r) for r in train
                               if (r[1], r[2]) not in dev_ids],
      "dev.tsv": [header] + ["\t".join(r) for r in train
                             if (r[1], r[2]) in dev_ids],
      "test.tsv": ["index\t#1 ID\t#2 ID\t#1 String\t#2 String"] + [
          "\t".join([str(i)] + r[1:]) for i, r in enumerate(test)],
  }
  for name, lines in tables.items():
    with open(os.path.join(out, name), "w", encoding="utf-8") as f:
      f.write("\n".join(lines) + "\n")
