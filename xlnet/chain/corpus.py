"""The pretraining text of the chain: raw text files (books, speeches,
articles) -> XLNet's input format (a sentence per line, documents
separated by an empty line), split into training and held-out documents.
"""
import glob
import os
import random

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


def task_share(task_docs, corpus_bytes, share, seed):
  """The labelled sets' training documents to pretrain on, so that they make
  up about `share` of the training text's bytes (the corpus's training
  part has `corpus_bytes`): whole copies when they fall short of it, every
  text as often as every other (round(wanted / theirs) copies, at least
  one); a draw of them (seeded, in their order) when they exceed it, so a
  set of DBpedia's size does not crowd the corpus out.

  Args:
    task_docs: list of str (`example_documents`).
    share: in [0, 1); 0 gives none.

  Returns:
    list of str.
  """
  if not share or not task_docs:
    return []
  wanted = share / (1 - share) * corpus_bytes
  sizes = [len(d.encode()) for d in task_docs]
  theirs = sum(sizes)
  if theirs <= wanted:
    return list(task_docs) * max(1, round(wanted / theirs))
  order = list(range(len(task_docs)))
  random.Random(seed).shuffle(order)
  chosen, total = set(), 0
  for i in order:
    if total >= wanted:
      break
    chosen.add(i)
    total += sizes[i]
  return [d for i, d in enumerate(task_docs) if i in chosen]


def spread(docs, extra):
  """`docs` with `extra` spread evenly among them, both in their order
  (each item at its rank / (count + 1) of the way, `docs` first on a tie):
  the trainer cuts the text into one stream per batch row, so text
  appended at the end would feed the last rows only."""
  n, m = len(docs), len(extra)
  keyed = ([((i + 1) * (m + 1), 0, d) for i, d in enumerate(docs)] +
           [((j + 1) * (n + 1), 1, e) for j, e in enumerate(extra)])
  return [item for _, _, item in sorted(keyed, key=lambda k: k[:2])]


def write_text(corpus_glob, text_dir, heldout_every, task_docs=(),
               task_text_share=0.0, seed=0):
  """Writes `text_dir/train.txt` and `text_dir/valid.txt` (atomically):
  the corpus split by `split_documents`, `task_docs` (the labelled sets'
  training texts, `example_documents`) to about `task_text_share` of the
  training part (`task_share`, drawn with `seed`), spread in it.

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
  corpus_bytes = len("\n\n".join(train).encode())
  extra = task_share(list(task_docs), corpus_bytes, task_text_share, seed)
  parts = (spread(train, extra), heldout)
  info = {"files": len(files), "task_documents": len(extra)}
  for name, docs in zip(("train", "valid"), parts):
    text = "\n\n".join(docs) + "\n"
    io_utils.atomic_write(os.path.join(text_dir, f"{name}.txt"), text)
    info[name] = {"documents": len(docs), "bytes": len(text.encode())}
  return info
