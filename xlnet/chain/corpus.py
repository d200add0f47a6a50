"""The pretraining text of the chain: raw text files (books, speeches,
articles) -> XLNet's input format (a sentence per line, documents
separated by an empty line), split into training and held-out documents.
"""
import glob
import os

from xlnet import io_utils
from xlnet.demo import demo_corpus


def corpus_files(corpus_glob):
  """The sorted files matched by `corpus_glob` (comma-separated globs).

  Raises:
    ValueError: naming --corpus_glob when it matches no file.
  """
  files = sorted({path for pattern in corpus_glob.split(",")
                  for path in glob.glob(pattern) if os.path.isfile(path)})
  if not files:
    raise ValueError(f"--corpus_glob={corpus_glob}: matches no file")
  return files


def split_documents(texts, heldout_every):
  """Every document of `texts` (raw str, in order), the `heldout_every`-th
  ones held out: spread over every source, none sharing a document with
  training.

  Returns:
    (training documents, held-out documents), lists of str in XLNet's
    format (a sentence per line).
  """
  train, heldout = [], []
  index = 0
  for text in texts:
    for doc in demo_corpus.documents(demo_corpus.to_xlnet_format(text)):
      index += 1
      (heldout if index % heldout_every == 0 else train).append(doc)
  return train, heldout


def write_text(corpus_glob, text_dir, heldout_every):
  """Writes `text_dir/train.txt` and `text_dir/valid.txt` (atomically).

  Returns:
    dict: the files read, the documents and bytes of each part.
  """
  files = corpus_files(corpus_glob)
  texts = []
  for path in files:
    with open(path, encoding="utf-8", errors="replace") as f:
      texts.append(f.read())
  parts = split_documents(texts, heldout_every)
  if not all(parts):
    raise ValueError(f"--corpus_glob={corpus_glob}: {len(parts[0])} "
                     f"training and {len(parts[1])} held-out documents; "
                     "both need at least one")
  info = {"files": len(files)}
  for name, docs in zip(("train", "valid"), parts):
    text = "\n\n".join(docs) + "\n"
    io_utils.atomic_write(os.path.join(text_dir, f"{name}.txt"), text)
    info[name] = {"documents": len(docs), "bytes": len(text.encode())}
  return info
