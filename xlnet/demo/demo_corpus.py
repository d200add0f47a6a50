"""Demo corpus: the public-domain novel Botchan in XLNet's input format.

The text ships as `test/botchan.txt` in the sentencepiece source distribution
on PyPI; it is downloaded at set-up time and never committed. It is converted
to one sentence per line with an empty line between documents (one document
per chapter part of at most `sentences_per_doc` sentences). The demo holds
out the last documents (`split_heldout`): the model is scored on text it has
never trained on.
"""
import math
import os
import re
import subprocess
import sys
import tarfile
import tempfile

from absl import logging

from xlnet import io_utils

SDIST = "sentencepiece==0.2.0"
MEMBER = "sentencepiece-0.2.0/test/botchan.txt"
DEFAULT_DEST = os.path.join("data", "demo")
_CHAPTER = re.compile(r"^CHAPTER [IVXLC]+\.?$")


def fetch_botchan_text():
  """Downloads the sentencepiece sdist and returns botchan.txt as str."""
  with tempfile.TemporaryDirectory() as tmp:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--no-binary", ":all:", SDIST, "-d", tmp, "-q"]
    try:
      subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
      raise RuntimeError(f"could not download {SDIST} from PyPI: {e}") from None
    (archive,) = [os.path.join(tmp, n) for n in os.listdir(tmp)
                  if n.endswith(".tar.gz")]
    with tarfile.open(archive) as tar:
      return tar.extractfile(MEMBER).read().decode("utf-8-sig")


def split_sentences(paragraph):
  """Splits one paragraph of running text into sentences (list of str)."""
  parts = re.split(r"(?<=[.!?])\s+(?=[\"'(]?[A-Z])", paragraph)
  return [p.strip() for p in parts if p.strip()]


def to_xlnet_format(text, sentences_per_doc=40):
  """Converts hard-wrapped Gutenberg text to one sentence per line.

  Args:
    text: the raw book.
    sentences_per_doc: maximum sentences per document; chapters also end
      documents.

  Returns:
    str: sentences one per line, documents separated by one empty line.
  """
  lines = text.splitlines()
  end = next((i for i, l in enumerate(lines) if l.startswith("*** END OF")),
             len(lines))
  start = next((i + 1 for i, l in enumerate(lines)
                if l.startswith("*** START OF")), 0)
  chapters, cur = [], []
  for line in lines[start:end]:
    if _CHAPTER.match(line.strip()):
      chapters.append(cur)
      cur = []
    elif line.strip() and not line.startswith("***"):
      cur.append(line.strip())
  chapters.append(cur)
  docs = []
  for chapter in chapters:
    sentences = split_sentences(" ".join(chapter))
    for i in range(0, len(sentences), sentences_per_doc):
      docs.append(sentences[i:i + sentences_per_doc])
  return "\n\n".join("\n".join(doc) for doc in docs if doc) + "\n"


def get_demo_corpus(dest_dir=DEFAULT_DEST):
  """Writes `{dest_dir}/botchan.txt` (atomically, once) and returns its path."""
  path = os.path.join(dest_dir, "botchan.txt")
  if os.path.exists(path):
    return path
  logging.info("Downloading %s to extract %s", SDIST, MEMBER)
  io_utils.remove_stale_tmp(path)
  io_utils.atomic_write(path, to_xlnet_format(fetch_botchan_text()))
  logging.info("Wrote %s", path)
  return path


def documents(text):
  """The documents of a text in XLNet's input format.

  Returns:
    list of str, each a document's lines joined by newlines (empty lines,
    which separate documents, removed).
  """
  return [d.strip("\n") for d in re.split(r"\n\s*\n", text) if d.strip()]


def split_heldout(text, heldout_fraction):
  """Splits a corpus in XLNet's input format into training and held-out text.

  The held-out part is made of whole documents, the last
  `ceil(heldout_fraction * num_documents)` of them (at least one; at least
  one document is left for training), so no held-out sentence shares a
  document with a training sentence.

  Args:
    text: str, sentences one per line, documents separated by empty lines.
    heldout_fraction: float in (0, 1).

  Returns:
    (train_text, heldout_text), both str in the same format, each ending in
    a newline.

  Raises:
    ValueError: for a fraction outside (0, 1) or a text of fewer than two
      documents.
  """
  if not 0 < heldout_fraction < 1:
    raise ValueError(f"--heldout_fraction={heldout_fraction} must be in "
                     "(0, 1)")
  docs = documents(text)
  if len(docs) < 2:
    raise ValueError(f"the corpus has {len(docs)} document(s); holding some "
                     "out needs at least 2")
  num_heldout = min(max(1, math.ceil(heldout_fraction * len(docs))),
                    len(docs) - 1)
  cut = len(docs) - num_heldout
  return ("\n\n".join(docs[:cut]) + "\n", "\n\n".join(docs[cut:]) + "\n")


def write_heldout_split(corpus_path, split_dir, heldout_fraction):
  """Writes `{split_dir}/train.txt` and `{split_dir}/valid.txt` (atomically)
  from the corpus file, as `split_heldout` divides it.

  Returns:
    (train_path, valid_path).
  """
  with open(corpus_path, encoding="utf-8") as f:
    parts = split_heldout(f.read(), heldout_fraction)
  paths = (os.path.join(split_dir, "train.txt"),
           os.path.join(split_dir, "valid.txt"))
  for path, part in zip(paths, parts):
    io_utils.atomic_write(path, part)
  return paths
