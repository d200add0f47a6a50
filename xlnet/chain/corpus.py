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


def example_documents(examples):
  """The training documents of labelled examples (text_a, then text_b;
  labels unused), in XLNet's format, cut as the corpus's files are
  (`to_xlnet_format`): an example of more than 40 sentences gives several
  documents.

  Returns:
    list of str.
  """
  docs = []
  for e in examples:
    text = "\n".join(t for t in (e.text_a, e.text_b) if t)
    docs.extend(demo_corpus.documents(demo_corpus.to_xlnet_format(text)))
  return docs


def spread(docs, extra):
  """`docs` with `extra` spread evenly among them, both in their order
  (each item at its rank / (count + 1) of the way, `docs` first on a tie):
  the trainer cuts the text into one stream per batch row, so text
  appended at the end would feed the last rows only."""
  n, m = len(docs), len(extra)
  keyed = ([((i + 1) * (m + 1), 0, d) for i, d in enumerate(docs)] +
           [((j + 1) * (n + 1), 1, e) for j, e in enumerate(extra)])
  return [item for _, _, item in sorted(keyed, key=lambda k: k[:2])]


def write_text(corpus_glob, text_dir, heldout_every, task_docs=()):
  """Writes `text_dir/train.txt` and `text_dir/valid.txt` (atomically):
  the corpus split by `split_documents`, `task_docs` (the labelled sets'
  training texts, `example_documents`) spread in the training part.

  Returns:
    dict: the files read, the documents and bytes of each part, the task
    documents among the training ones.
  """
  files = corpus_files(corpus_glob)
  texts = []
  for path in files:
    with open(path, encoding="utf-8", errors="replace") as f:
      texts.append(f.read())
  train, heldout = split_documents(texts, heldout_every)
  if not (train and heldout):
    raise ValueError(f"--corpus_glob={corpus_glob}: {len(train)} "
                     f"training and {len(heldout)} held-out documents; "
                     "both need at least one")
  parts = (spread(train, task_docs), heldout)
  info = {"files": len(files), "task_documents": len(task_docs)}
  for name, docs in zip(("train", "valid"), parts):
    text = "\n\n".join(docs) + "\n"
    io_utils.atomic_write(os.path.join(text_dir, f"{name}.txt"), text)
    info[name] = {"documents": len(docs), "bytes": len(text.encode())}
  return info
