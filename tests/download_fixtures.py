"""A loopback HTTP server that misbehaves on request, and tiny archives in
the real layouts of the released checkpoints and the data sets, for the
downloader's tests (tests/finetuning/test_downloads.py).

The server (`Server`) serves `routes` (URL path -> `Route`) under
`http://127.0.0.1:PORT/`, the layout of `download.py --mirror`: the file
of `https://host/path` is at `/host/path`. A route's `mode` makes it
misbehave: ignore Range, close early, stall, answer with a status or an
HTML page; every request is recorded (path, query, Range header).
"""
import dataclasses
import hashlib
import http.server
import io
import json
import tarfile
import threading
import time
import urllib.parse
import zipfile


@dataclasses.dataclass
class Route:
  """What the server answers for one path.

  Attributes:
    body: bytes of the file.
    mode: "ok" (Range supported), "no_range" (Range ignored: always 200),
      "truncate" (announces the whole length, sends `cut` bytes and closes;
      `times` times, then "ok"), "stall" (sends `cut` bytes then nothing
      until the server stops), "drip" (sends in 1 kB pieces, `delay`
      seconds apart), "status" (answers `status` `times` times, then "ok";
      times=None: always), "html" (a 200 HTML page), "silent" (accepts the
      request and answers nothing until the server stops).
    content_type: the file's Content-Type.
    headers: extra headers (e.g. x-goog-hash).
  """
  body: bytes
  mode: str = "ok"
  cut: int = 0
  times: object = 1
  status: int = 404
  delay: float = 0.02
  content_type: str = "application/octet-stream"
  headers: dict = dataclasses.field(default_factory=dict)


class Server:
  """A loopback server in a thread (port from the OS); use as a context
  manager. `url` is its base, `requests` the (path, query, Range) seen."""

  def __init__(self):
    self.routes = {}
    self.requests = []
    self.stop = threading.Event()
    server = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def log_message(self, *args):
        pass

      def do_GET(self):
        server.handle(self)

    self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    self.httpd.daemon_threads = True
    self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

  def __enter__(self):
    threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
    return self

  def __exit__(self, *exc):
    self.stop.set()
    self.httpd.shutdown()
    self.httpd.server_close()

  def ranges(self, path):
    """The Range headers of the requests for `path` (None: none sent)."""
    return [r for p, _, r in self.requests if p == path]

  def handle(self, h):
    path = route_key(h.path)
    query = urllib.parse.urlsplit(h.path).query
    wanted = h.headers.get("Range")
    self.requests.append((path, query, wanted))
    route = self.routes.get(path)
    if route is None:
      return _send(h, 404, b"<html>not found</html>", "text/html")
    if route.mode == "status" and (route.times is None or route.times > 0):
      if route.times is not None:
        route.times -= 1
      return _send(h, route.status, b"<html>error</html>", "text/html")
    if route.mode == "silent":
      self.stop.wait(30)
      return
    if route.mode == "html":
      return _send(h, 200, b"<!DOCTYPE html><html>sign in</html>",
                   "text/html")
    body, start = route.body, 0
    if wanted and route.mode != "no_range":
      start = int(wanted.split("=")[1].split("-")[0])
    status = 206 if start else 200
    h.send_response(status)
    h.send_header("Content-Type", route.content_type)
    h.send_header("Content-Length", str(len(body) - start))
    h.send_header("ETag", '"v1"')
    if status == 206:
      h.send_header("Content-Range",
                    f"bytes {start}-{len(body) - 1}/{len(body)}")
    for key, value in route.headers.items():
      h.send_header(key, value)
    h.end_headers()
    rest = body[start:]
    if route.mode == "truncate" and route.times > 0:
      route.times -= 1
      h.wfile.write(rest[:route.cut])
      return
    if route.mode == "stall":
      h.wfile.write(rest[:route.cut])
      h.wfile.flush()
      self.stop.wait(30)
      return
    if route.mode == "drip":
      for i in range(0, len(rest), 1000):
        if self.stop.is_set():
          return
        h.wfile.write(rest[i:i + 1000])
        h.wfile.flush()
        time.sleep(route.delay)
      return
    h.wfile.write(rest)


def _send(h, status, body, content_type):
  h.send_response(status)
  h.send_header("Content-Type", content_type)
  h.send_header("Content-Length", str(len(body)))
  h.end_headers()
  h.wfile.write(body)


def route_key(path):
  """The route of a request path: the path, and `?id=` of a Google Drive
  file (its links differ only in the query)."""
  parts = urllib.parse.urlsplit(path)
  ids = urllib.parse.parse_qs(parts.query).get("id")
  key = urllib.parse.unquote(parts.path)
  return f"{key}?id={ids[0]}" if ids else key


def mirror_path(url):
  """The route of `url` on the server (`--mirror` layout: /host/path)."""
  parts = urllib.parse.urlsplit(url)
  return route_key(f"/{parts.netloc}{parts.path}?{parts.query}")


################################################################################
# Archives in the real layouts.
################################################################################
def zip_bytes(files):
  """A zip archive of {member name: bytes or str}."""
  out = io.BytesIO()
  with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
    for name, data in files.items():
      archive.writestr(name, data)
  return out.getvalue()


def tar_gz_bytes(files):
  """A tar.gz archive of {member name: bytes or str}."""
  out = io.BytesIO()
  with tarfile.open(fileobj=out, mode="w:gz") as archive:
    for name, data in files.items():
      data = data.encode() if isinstance(data, str) else data
      info = tarfile.TarInfo(name)
      info.size = len(data)
      archive.addfile(info, io.BytesIO(data))
  return out.getvalue()


def noise(size, seed):
  """`size` bytes that do not compress (a SHA-256 chain from `seed`)."""
  out, block = [], str(seed).encode()
  while sum(map(len, out)) < size:
    block = hashlib.sha256(block).digest()
    out.append(block)
  return b"".join(out)[:size]


def checkpoint_files(directory, seed=0):
  """A released model's zip members: the checkpoint's 3 files, spiece.model
  and xlnet_config.json (a few kB each, distinct bytes)."""
  names = ("xlnet_model.ckpt.index", "xlnet_model.ckpt.data-00000-of-00001",
           "xlnet_model.ckpt.meta", "spiece.model", "xlnet_config.json")
  return {f"{directory}/{name}": noise(2000 + 100 * i, f"{seed}{name}")
          for i, name in enumerate(names)}


def glue_files(label):
  """A GLUE task's zip members (MNLI: its matched/mismatched dev files)."""
  names = (["train.tsv", "dev_matched.tsv", "dev_mismatched.tsv"]
           if label == "MNLI" else ["train.tsv", "dev.tsv", "test.tsv"])
  return {f"{label}/{n}": f"header\n{label} {n} row\n" for n in names}


MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"
MRPC_TRAIN_ROWS = [["1", "10", "11", "A b .", "A c ."],
                   ["0", "20", "21", "D e .", "F g ."],
                   ["1", "30", "31", "H i .", "H j ."]]
MRPC_TEST_ROWS = [["1", "40", "41", "K l .", "K m ."]]
MRPC_DEV_IDS = "20\t21\n"


def mrpc_sources():
  """SentEval's two files and GLUE's dev ids: {file name: bytes}."""
  def table(rows):
    return ("\r\n".join([MRPC_HEADER] + ["\t".join(r) for r in rows])
            + "\r\n").encode()
  return {"msr_paraphrase_train.txt": table(MRPC_TRAIN_ROWS),
          "msr_paraphrase_test.txt": table(MRPC_TEST_ROWS),
          "mrpc_dev_ids.tsv": MRPC_DEV_IDS.encode()}


def imdb_files():
  files = {"aclImdb/README": "Large Movie Review Dataset v1.0\n"}
  for split in ("train", "test"):
    for label in ("pos", "neg"):
      files[f"aclImdb/{split}/{label}/0_9.txt"] = f"{split} {label} review"
  return files


def zhang_files(directory):
  return {f"{directory}/train.csv": '"1","a title","a text"\n',
          f"{directory}/test.csv": '"2","b title","b text"\n',
          f"{directory}/readme.txt": "readme\n"}


def squad_json(version, split):
  return json.dumps({"version": version, "data": [
      {"title": split, "paragraphs": []}]}).encode()


def race_files():
  return {f"RACE/{split}/{level}/1.txt": json.dumps(
      {"article": "a", "questions": ["q"], "options": [["a", "b", "c", "d"]],
       "answers": ["A"], "id": f"{level}1.txt"})
          for split in ("train", "dev", "test")
          for level in ("middle", "high")}


def drive_page(file_id):
  """Google Drive's confirmation page for a large file (its download form
  submits to drive.usercontent.google.com with hidden inputs)."""
  return (
      '<!DOCTYPE html><html><body><p>Google Drive can\'t scan this file for '
      'viruses.</p><form id="download-form" '
      'action="https://drive.usercontent.google.com/download" method="get">'
      '<input type="submit" value="Download anyway"/>'
      f'<input type="hidden" name="id" value="{file_id}">'
      '<input type="hidden" name="export" value="download">'
      '<input type="hidden" name="confirm" value="t">'
      '<input type="hidden" name="uuid" value="0a1b2c"></form></body></html>'
  ).encode()


DRIVE_FILE_PATH = "/drive.usercontent.google.com/download"


# The archives' real top-level directories, by the name of the download
# (release README: the zips unpack to xlnet_cased_...; the GLUE script's
# zips to the task's directory, QNLIv2.zip and QQP-clean.zip included).
_GLUE_ZIPS = {"MNLI.zip": "MNLI", "QNLIv2.zip": "QNLI", "QQP-clean.zip": "QQP",
              "RTE.zip": "RTE", "SST-2.zip": "SST-2", "CoLA.zip": "CoLA",
              "STS-B.zip": "STS-B"}


def fake_body(name):
  """The bytes served for the download named `name`, in its real layout."""
  if name == "cased_L-24_H-1024_A-16.zip":
    return zip_bytes(checkpoint_files("xlnet_cased_L-24_H-1024_A-16", 1))
  if name == "cased_L-12_H-768_A-12.zip":
    return zip_bytes(checkpoint_files("xlnet_cased_L-12_H-768_A-12", 2))
  if name in _GLUE_ZIPS:
    return zip_bytes(glue_files(_GLUE_ZIPS[name]))
  if name in mrpc_sources():
    return mrpc_sources()[name]
  if name == "aclImdb_v1.tar.gz":
    return tar_gz_bytes(imdb_files())
  if name == "RACE.tar.gz":
    return tar_gz_bytes(race_files())
  if name.endswith("_csv.tar.gz"):
    return tar_gz_bytes(zhang_files(name[:-len(".tar.gz")]))
  if name.endswith(".json"):
    split, version = name[:-len(".json")].split("-v")
    return squad_json(version, split)
  raise KeyError(name)


def serve(server, files):
  """Routes every `downloads.File` of `files` on `server` (a Google Drive
  file behind its confirmation page). Returns {file name: bytes}."""
  bodies = {}
  for file in files:
    body = bodies[file.name] = fake_body(file.name)
    if file.drive:
      key = mirror_path(file.url)
      file_id = key.split("?id=")[1]
      server.routes[key] = Route(drive_page(file_id),
                                 content_type="text/html")
      server.routes[f"{DRIVE_FILE_PATH}?id={file_id}"] = Route(body)
    else:
      server.routes[mirror_path(file.url)] = Route(body)
  return bodies
