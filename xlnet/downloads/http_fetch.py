"""Resumable, checked HTTP downloads with the standard library (urllib).

`fetch(url, path, options)` downloads `url` so that `path` appears only
complete:

* The bytes go to `{path}.part`; beside it `{path}.part.json` remembers the
  URL, the server's validator (ETag or Last-Modified), the announced size
  and a published MD5. A rerun asks for the rest (`Range: bytes=N-`, with
  `If-Range` so that a changed file is sent whole); a server that ignores
  the Range (answers 200) restarts the file from byte 0, cleanly.
* The size is checked: a connection closed before the announced length
  (Content-Length, or the total of Content-Range) is a truncated download,
  retried from where it stopped. `path` appears (a rename) only when every
  announced byte is there.
* A checksum is checked where the server publishes one: Google Cloud
  Storage's `x-goog-hash: md5=...` (the whole object's MD5; the released
  checkpoints come from there) or `Content-MD5` on a whole-file answer. A
  mismatch removes the download.
* Timeouts: `options.timeout` seconds for the connection and for every
  read, so a stalled server is noticed. Transient failures (timeouts,
  refused or reset connections, truncation, HTTP 5xx and 429) are retried
  `options.retries` times, waiting `options.backoff` seconds, doubling;
  then one line (`FetchError`, exit code 1) names the URL, what happened
  and the remedies (and those the program's flags offer:
  `options.remedies`). HTTP 4xx and an HTML page where a file was expected
  fail at once, and so does a host this machine cannot reach at all (its
  name does not resolve, or no route leads to it: `Unreachable`): offline,
  waiting cannot help.
* A `{path}.part` without its `.part.json` (or of another URL) cannot be
  resumed safely: which file, and which version of it, its bytes are is
  unknown, and splicing the rest of another version onto them would make a
  file no server ever sent. It is removed, with one line saying so, and the
  file fetched from byte 0.
* Google Drive: a large file's link answers with a confirmation page; its
  download form is followed once (`drive=True`, `drive_page.py`). Where
  Drive still answers with a page (quota, permissions, a new page layout)
  the error says so and carries the caller's `hint` (the manual step).
* `options.mirror` maps every URL to `{mirror}/{host}/{path}?{query}`: the
  tests serve files from a loopback server, and users may point at a copy
  of the same files.

Progress (bytes, rate, ETA; `progress_line.py`) goes to `options.out`
every `options.progress_every` seconds and at the end.
"""
import base64
import dataclasses
import errno
import hashlib
import http.client
import json
import os
import socket
import time
from typing import Optional
import urllib.error
import urllib.parse
import urllib.request

from xlnet import errors
from xlnet import io_utils
from xlnet import signals
from xlnet.downloads import drive_page
from xlnet.downloads import progress_line

USER_AGENT = "xlnet-tf-download (Python urllib)"
CHUNK_BYTES = 1 << 20
MAX_BACKOFF_SECONDS = 60.0
# HTTP statuses worth retrying: the server is busy or failing for a while.
_TRANSIENT_STATUS = (408, 425, 429, 500, 502, 503, 504)
# The most of a confirmation page read to find Google Drive's form.
_PAGE_BYTES = 2 << 20


@dataclasses.dataclass(frozen=True)
class Remedies:
  """The ways around a failure a program's own flags offer, named in its
  one line beside those that always help (rerun, try later, put the file
  in place by hand): none by default; download.py's `--mirror` and
  `--timeout` (`installer.run`).

  Attributes:
    unreachable: what else helps when a host cannot be reached.
    timeout: what else helps after timeouts.
  """
  unreachable: tuple = ()
  timeout: tuple = ()


@dataclasses.dataclass(frozen=True)
class Options:
  """How `fetch` talks to servers.

  Attributes:
    timeout: seconds to wait for a connection and for each read.
    retries: how often a transient failure is retried (per file).
    backoff: seconds before the first retry; doubles (at most 60 s).
    mirror: None, or a base URL every URL is mapped under (`mirrored`).
    progress_every: seconds between progress lines.
    out: where progress lines go (default: stderr).
    remedies: `Remedies`, what the program's flags offer.
  """
  timeout: float = 60.0
  retries: int = 5
  backoff: float = 2.0
  mirror: Optional[str] = None
  progress_every: float = 10.0
  out: object = None
  remedies: Remedies = Remedies()


@dataclasses.dataclass(frozen=True)
class Fetched:
  """A complete download: `size` bytes, their `sha256` and `md5` (hex), and
  `published` (the server's MD5 that matched, hex, or None)."""
  size: int
  sha256: str
  md5: str
  published: Optional[str]


class FetchError(errors.Stop):
  """A download failed for good (after the retries): one line naming the
  URL, the cause and the remedy. Exit code 1."""


class Unreachable(FetchError):
  """This machine cannot reach the host at all (the name does not resolve,
  the network or the host is unreachable): not retried."""


class _Transient(Exception):
  """A failure worth retrying; `str()` says what happened."""


def mirrored(url, mirror):
  """`url` under `mirror`: `{mirror}/{host}/{path}?{query}` (unchanged
  without a mirror or when it is under the mirror already)."""
  if not mirror or url.startswith(mirror.rstrip("/") + "/"):
    return url
  parts = urllib.parse.urlsplit(url)
  query = f"?{parts.query}" if parts.query else ""
  return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}{query}"


################################################################################
# The partial download and what is known about it.
################################################################################
@dataclasses.dataclass
class _State:
  """What `{path}.part.json` records: the URL, the server's validator
  (strong ETag or Last-Modified, for If-Range), the total size announced
  and the MD5 the server published (base64, as sent), each or None."""
  url: str
  validator: Optional[str] = None
  total: Optional[int] = None
  md5: Optional[str] = None


def _state_path(part):
  return part + ".json"


def _read_state(part, url):
  """(the state of `part`, None) if it belongs to `url`, else (None, why
  not: words for a message)."""
  record = os.path.basename(_state_path(part))
  try:
    with open(_state_path(part), encoding="utf-8") as f:
      state = _State(**json.load(f))
  except FileNotFoundError:
    return None, f"has no {record} (the URL and version its bytes are of)"
  except (OSError, ValueError, TypeError):
    return None, f"has an unreadable {record}"
  if state.url != url:
    return None, f"is of another URL ({state.url})"
  return state, None


def _write_state(part, state):
  io_utils.atomic_write(_state_path(part), json.dumps(dataclasses.asdict(
      state)))


def _discard(part):
  """Removes the partial download and its state."""
  for path in (part, _state_path(part)):
    if os.path.exists(path):
      os.remove(path)


def part_size(path, url):
  """Bytes of `path`'s partial download of `url` a rerun resumes from (0
  when there is none, or none that can be resumed)."""
  part = path + ".part"
  if not os.path.isfile(part) or _read_state(part, url)[0] is None:
    return 0
  return os.path.getsize(part)


def _start_afresh(part, url, label, out):
  """The state to fetch `url` into `part` with: its recorded one, or a
  fresh one (a part that cannot be resumed is removed, with one line)."""
  state, why_not = _read_state(part, url)
  if state is not None and os.path.isfile(part):
    return state
  if os.path.isfile(part):
    progress_line.say(out, (
        f"{label}: {part} {why_not}: its {os.path.getsize(part)} bytes "
        "cannot be resumed safely and were removed; fetching from byte 0 (a "
        f"complete copy saved as {os.path.basename(part).removesuffix('.part')}"
        " is used as it is)"))
  _discard(part)
  return _State(url)


################################################################################
# Requests.
################################################################################
def _request(url, start, validator, timeout):
  """Opens `url` (from byte `start` when > 0). Returns the response.

  Raises:
    _Transient: a timeout, a connection failure, HTTP 5xx/429.
    _NoRoute: the host's name does not resolve, or no route leads to it.
    FetchError: another HTTP error (404, 403, ...).
    urllib.error.HTTPError: 416 (the caller decides).
  """
  headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
  if start:
    headers["Range"] = f"bytes={start}-"
    if validator:
      headers["If-Range"] = validator
  try:
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                  timeout=timeout)
  except urllib.error.HTTPError as e:
    if e.code == 416:
      raise
    status = f"HTTP {e.code} {e.reason}"
    e.close()
    if e.code in _TRANSIENT_STATUS:
      raise _Transient(status) from None
    raise FetchError(f"{url}: {status}; the file is not there (moved, or "
                     "missing on the mirror): check the URL") from None
  except (TimeoutError, socket.timeout, urllib.error.URLError) as e:
    reason = getattr(e, "reason", e)  # urlopen wraps most failures
    if isinstance(reason, (TimeoutError, socket.timeout)):
      raise _Transient(f"no answer within {timeout:g} s (timeout)") from None
    cause = _unreachable_cause(urllib.parse.urlsplit(url).hostname, reason)
    if cause:
      raise _NoRoute(cause) from None
    raise _Transient(f"cannot connect ({reason})") from None
  except (ConnectionError, http.client.HTTPException) as e:
    raise _Transient(f"connection failed ({errors.error_text(e)})") from None


# Socket errors that say no route leads to the host from here: retrying
# within seconds cannot help (a refused or reset connection, a timeout can).
_NO_ROUTE = (errno.ENETUNREACH, errno.ENETDOWN, errno.EHOSTUNREACH)


def _unreachable_cause(host, reason):
  """Why `host` cannot be reached from here at all (the name does not
  resolve, no route), from a connection failure's `reason`; else None."""
  if isinstance(reason, socket.gaierror):
    return (f"the host name {host} does not resolve "
            f"({errors.error_text(reason)})")
  if getattr(reason, "errno", None) in _NO_ROUTE:
    return f"no route to {host} ({errors.error_text(reason)})"
  return None


class _NoRoute(Exception):
  """The host cannot be reached from here (`_unreachable_cause`)."""


def _is_html(response):
  return response.headers.get_content_type() == "text/html"


def _open(url, start, validator, options, drive):
  """The response carrying the file (Google Drive's confirmation followed
  when `drive`).

  Raises:
    _Transient, _NoRoute, FetchError: as `_request`; FetchError also for an
      HTML page where the file was expected.
    drive_page.Refused: Google Drive kept answering with a page.
  """
  where = mirrored(url, options.mirror)
  response = _request(where, start, validator, options.timeout)
  if not _is_html(response):
    return response
  if not drive:
    response.close()
    raise FetchError(
        f"{where}: the server sent an HTML page (Content-Type text/html), "
        "not the file: an error or sign-in page; check the URL")
  with response:
    page = response.read(_PAGE_BYTES).decode("utf-8", "replace")
    confirmed = drive_page.confirmed_url(page, url)
  if confirmed is None:
    raise drive_page.Refused("Google Drive sent a page without its download "
                             "form")
  response = _request(mirrored(confirmed, options.mirror), start, validator,
                      options.timeout)
  if _is_html(response):
    response.close()
    raise drive_page.Refused("Google Drive sent a page again after the "
                             "confirmation")
  return response


################################################################################
# One attempt.
################################################################################
def _content_range(header):
  """(first byte, total or None) of a `Content-Range: bytes a-b/N`."""
  try:
    unit, spec = header.split(" ", 1)
    span, total = spec.split("/", 1)
    first = int(span.split("-", 1)[0])
    return first, (None if total.strip() == "*" else int(total))
  except (AttributeError, ValueError):
    return None, None


def _next_state(state, response, total):
  """The `_State` after `response` (a 200 starts afresh; a 206 keeps what
  the first answer said where this one is silent)."""
  headers, whole = response.headers, response.status == 200
  if whole:
    return _State(state.url, _validator(headers), total,
                  published_md5(headers, True))
  return _State(state.url, _validator(headers) or state.validator,
                total if total is not None else state.total,
                published_md5(headers, False) or state.md5)


def _validator(headers):
  """A validator for If-Range: a strong ETag, else Last-Modified."""
  etag = headers.get("ETag")
  if etag and not etag.startswith("W/"):
    return etag
  return headers.get("Last-Modified")


def published_md5(headers, whole):
  """The MD5 (base64) a server publishes for the whole file: GCS's
  `x-goog-hash: md5=...` (always of the whole object), or `Content-MD5`
  when the answer is the whole file (`whole`); else None."""
  for item in (headers.get("x-goog-hash") or "").split(","):
    key, _, value = item.strip().partition("=")
    if key == "md5" and value:
      return value
  return headers.get("Content-MD5") if whole else None


def _copy(response, part, have, line, timeout):
  """Appends the response body to `part` (holding `have` bytes), updating
  the `progress_line.Line`. Returns the bytes `part` holds when the body
  ends.

  Raises:
    _Transient: the server stalled or the connection broke.
    io_utils.ResourceError: writing failed (disk full, ...).
  """
  try:
    with open(part, "ab") as f:
      while True:
        try:
          chunk = response.read1(CHUNK_BYTES)  # what has arrived
        except (TimeoutError, socket.timeout):
          raise _Transient(f"no data for {timeout:g} s (read timeout: the "
                           "server stalled)") from None
        except (ConnectionError, http.client.HTTPException) as e:
          raise _Transient(f"connection broken ({errors.error_text(e)})"
                           ) from None
        if not chunk:
          return have
        f.write(chunk)
        have += len(chunk)
        line.update(have)
  except OSError as e:
    error = io_utils.resource_error(part, e, (
        f"{os.path.basename(part)} keeps the bytes written so far: make "
        "room and rerun to resume"))
    if error is None:
      raise
    raise error from None


def _attempt(url, path, part, options, drive, label):
  """One try at completing `part`. Returns the published MD5 (base64) or
  None.

  Raises:
    _Transient: retry (the part keeps what arrived).
    FetchError, _NoRoute, drive_page.Refused, io_utils.ResourceError: give
      up.
  """
  state = _start_afresh(part, url, label, options.out)
  have = os.path.getsize(part) if os.path.isfile(part) else 0
  try:
    response = _open(url, have, state.validator, options, drive)
  except urllib.error.HTTPError as e:  # 416: nothing left, or a mismatch
    _, total = _content_range(e.headers.get("Content-Range"))
    e.close()
    if have and total == have and state.total in (None, have):
      return state.md5
    _discard(part)
    raise _Transient("the server refused the range asked for (the file "
                     "changed); starting again") from None
  with response:
    if response.status == 206:
      first, total = _content_range(response.headers.get("Content-Range"))
      if first != have or None not in (total, state.total) and (
          total != state.total):
        _discard(part)
        raise _Transient(f"the server resumed at byte {first} of {total}, "
                         f"not {have} of {state.total}; starting again")
    else:  # 200: the whole file, whatever was asked
      if have:
        progress_line.say(options.out, (
            f"{label}: the server sent the whole file instead of the rest "
            "(no Range support, or the file changed); restarting from byte "
            "0"))
        _discard(part)
        have = 0
      length = response.headers.get("Content-Length")
      total = int(length) if length and length.isdigit() else None
    state = _next_state(state, response, total)
    _write_state(part, state)
    line = progress_line.Line(label, have, total, options.progress_every,
                              options.out)
    have = _copy(response, part, have, line, options.timeout)
  if total is not None and have < total:
    raise _Transient(f"the connection closed after {have} of {total} bytes "
                     "(truncated)")
  if total is not None and have > total:
    _discard(part)
    raise _Transient(f"received {have} bytes, more than the {total} "
                     "announced; starting again")
  line.done()
  return state.md5


def _digests(path):
  """(size, sha256 hex, md5 hex) of the file `path`."""
  sha256, md5, size = hashlib.sha256(), hashlib.md5(), 0
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(CHUNK_BYTES), b""):
      sha256.update(chunk)
      md5.update(chunk)
      size += len(chunk)
  return size, sha256.hexdigest(), md5.hexdigest()


def digests(path):
  """A `Fetched` for a file already here (nothing published)."""
  return Fetched(*_digests(path), published=None)


def _finish(part, path, url, md5_b64):
  """Checks `part` against the published MD5 and renames it to `path`.
  Returns its `Fetched`."""
  size, sha256, md5 = _digests(part)
  published = None
  if md5_b64:
    try:
      published = base64.b64decode(md5_b64, validate=True).hex()
    except ValueError:
      published = None
    if published != md5:
      _discard(part)
      raise FetchError(
          f"{url}: MD5 {md5} of the {size} bytes received differs from the "
          f"MD5 the server publishes ({published or md5_b64}); the download "
          "was removed: rerun to fetch it again")
  signals.raise_if_terminated()
  os.replace(part, path)
  if os.path.exists(_state_path(part)):
    os.remove(_state_path(part))
  return Fetched(size, sha256, md5, published)


def fetch(url, path, options, drive=False, label=None, hint=None):
  """Downloads `url` to `path` (resuming `{path}.part`). Returns `Fetched`.

  Args:
    url: str, the file's URL (mapped under `options.mirror`).
    path: str, the local file; it appears only complete.
    options: `Options`.
    drive: follow Google Drive's confirmation page.
    label: the name in progress lines (default: the file's name).
    hint: what the user can do instead (added to a final error).

  Raises:
    FetchError: one line naming the URL, the cause and the remedy (an
      `Unreachable` at once, without retries).
    io_utils.ResourceError: the disk is full (the part is kept).
  """
  label = label or os.path.basename(path)
  where = mirrored(url, options.mirror)
  part = path + ".part"
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  hint = f"; {hint}" if hint else ""
  for attempt in range(options.retries + 1):
    try:
      md5_b64 = _attempt(url, path, part, options, drive, label)
      return _finish(part, path, where, md5_b64)
    except drive_page.Refused as e:
      raise FetchError(f"{where}: {str(e).rstrip('.')}{hint}") from None
    except FetchError as e:
      raise FetchError(f"{errors.error_text(e)}{hint}") from None
    except _NoRoute as e:
      raise Unreachable(_unreachable(where, e, path, options)) from None
    except _Transient as e:
      if attempt == options.retries:
        raise FetchError(_gave_up(where, e, options, part, hint)) from None
      wait = min(options.backoff * 2 ** attempt, MAX_BACKOFF_SECONDS)
      progress_line.say(options.out, f"{label}: {e}; retry {attempt + 1} of "
                        f"{options.retries} in {wait:g} s")
      time.sleep(wait)


def _unreachable(url, cause, path, options):
  """The one line for a host this machine cannot reach: the cause and the
  ways around it (the network, the program's, the file put in place)."""
  ways = (("connect this machine (or fix its DNS) and rerun",) +
          options.remedies.unreachable +
          (f"put the file in place by hand as {path} and rerun",))
  return (f"{url}: {cause}, not retried (no network here?): "
          f"{', '.join(ways[:-1])}, or {ways[-1]}")


def _gave_up(url, problem, options, part, hint):
  """The one line after the last retry: what happened, what is kept, what
  to do."""
  tries = options.retries + 1
  kept = os.path.getsize(part) if os.path.isfile(part) else 0
  keeps = (f"{part} keeps {kept} bytes: rerun the same command to resume"
           if kept else "rerun the same command to try again")
  timed_out = "timeout" in str(problem) or "stalled" in str(problem)
  remedy = " or ".join((options.remedies.timeout if timed_out else ()) +
                       ("try later",))
  return (f"{url}: {problem}, {tries} attempt{'s' if tries > 1 else ''} "
          f"failed; {keeps} ({remedy}){hint}")
