"""The tagged files run_ner.py reads, and its predictions written in the
same layout with the predicted tag added (no TensorFlow).

  conll2003  one token a line, columns split by whitespace, the token
             first and the tag last (`EU NNP B-NP B-ORG`); a blank line
             ends a sentence; `-DOCSTART-` lines start a document
  columns    one token a line, columns split by tabs (by whitespace when
             the line has no tab), the token first and the tag last; a
             blank line ends a sentence; no documents
  conllu     CoNLL-U: ten tab-separated columns, the tag in UPOS (or
             XPOS); `#` comments, `# newdoc` starts a document; multiword
             token lines (`3-4`) and empty nodes (`5.1`) are kept in the
             predictions but are no words to tag

A file whose token lines hold the token alone (conll2003, columns), or
`_` in the tag's column (conllu), is unlabelled: it can be predicted, not
trained on nor scored. Every token line of a file has the same number of
columns (conlleval reads only such files); a line that breaks that, or
the layout, is refused in one line naming the file and the line.
"""
import dataclasses
import os
from typing import Optional, Tuple

from xlnet import io_utils
from xlnet import validation

LAYOUTS = validation.CHOICES["file_layout"]
# The CoNLL-U columns a tag may come from (0-based).
CONLLU_COLUMNS = dict(zip(validation.CHOICES["conllu_column"], (3, 4)))
DOCSTART = "-DOCSTART-"
_CONLLU_FIELDS = 10


@dataclasses.dataclass(frozen=True)
class Sentence:
  """One sentence of a tagged file.

  Attributes:
    words: the tokens, as the file holds them.
    tags: their tags, or None in an unlabelled file.
    lines: the 1-based line of each token.
    document: its document's index in the file, or None (a layout without
      documents).
  """
  words: Tuple[str, ...]
  tags: Optional[Tuple[str, ...]]
  lines: Tuple[int, ...]
  document: Optional[int]


@dataclasses.dataclass(frozen=True)
class TaggedFile:
  """A tagged file read whole.

  Attributes:
    path: where it was read.
    layout: one of LAYOUTS.
    sentences: its sentences, in file order.
    raw_lines: every line of the file, without its line end (the
      predictions file copies them).
    labelled: whether its tokens carry tags.
  """
  path: str
  layout: str
  sentences: Tuple[Sentence, ...]
  raw_lines: Tuple[str, ...]
  labelled: bool

  @property
  def num_words(self):
    """The tokens of all its sentences."""
    return sum(len(s.words) for s in self.sentences)


def layout_of(path, layout=None):
  """`layout` when given (checked), else the file's by its name: `.conllu`
  is conllu, `.tsv` columns, anything else conll2003."""
  if layout:
    validation.check_choice("file_layout", layout, LAYOUTS)
    return layout
  ext = os.path.splitext(path)[1].lower()
  return {".conllu": "conllu", ".tsv": "columns"}.get(ext, "conll2003")


def _split(layout, line):
  """The columns of a token line."""
  if layout == "conll2003":
    return line.split()
  if layout == "conllu":
    return line.split("\t")
  return line.split("\t") if "\t" in line else line.split()


class _Reader:
  """Collects a file's sentences line by line, checking each line."""

  def __init__(self, path, layout, conllu_column):
    self.path = path
    self.layout = layout
    self.column = CONLLU_COLUMNS[conllu_column]
    self.sentences = []
    self.words, self.tags, self.lines = [], [], []
    self.document = 0 if layout != "columns" else None
    self.width = None  # (columns of the first token line, its line)
    self.labelled = None  # (whether the first token had a tag, its line)

  def fail(self, number, what):
    raise ValueError(f"{self.path}:{number}: {what}")

  def end_sentence(self):
    if self.words:
      self.sentences.append(Sentence(
          tuple(self.words), tuple(self.tags) if self.labelled[0] else None,
          tuple(self.lines), self.document))
    self.words, self.tags, self.lines = [], [], []

  def new_document(self):
    """A document starts: the next sentences get a new index (the first
    document's is 0)."""
    self.end_sentence()
    if self.sentences:
      self.document += 1

  def check_width(self, number, fields):
    if self.width is None:
      self.width = (len(fields), number)
    elif len(fields) != self.width[0]:
      self.fail(number, f"expected {self.width[0]} columns (as line "
                f"{self.width[1]}), got {len(fields)}")

  def add(self, number, word, tag):
    """One token; `tag` None when the file is unlabelled."""
    if not word:
      self.fail(number, "the token (first column) is empty")
    labelled = tag is not None
    if self.labelled is None:
      self.labelled = (labelled, number)
    elif labelled != self.labelled[0]:
      had = "a tag" if self.labelled[0] else "no tag"
      self.fail(number, f"{'a tag' if labelled else 'no tag'} but line "
                f"{self.labelled[1]} has {had}: a file is labelled "
                "throughout or not at all")
    self.words.append(word)
    self.tags.append(tag)
    self.lines.append(number)

  def line(self, number, line):
    """Reads one line (1-based `number`, no line end)."""
    if not line.strip():
      self.end_sentence()
      return
    if self.layout == "conllu":
      self.conllu_line(number, line)
      return
    fields = _split(self.layout, line)
    if self.layout == "conll2003" and fields[0] == DOCSTART:
      self.new_document()
      return
    self.check_width(number, fields)
    self.add(number, fields[0], fields[-1] if len(fields) > 1 else None)

  def conllu_line(self, number, line):
    if line.startswith("#"):
      if line[1:].strip().startswith("newdoc"):
        self.new_document()
      return
    fields = line.split("\t")
    if len(fields) != _CONLLU_FIELDS:
      self.fail(number, f"expected {_CONLLU_FIELDS} tab-separated columns "
                f"(CoNLL-U), got {len(fields)}")
    word_id = fields[0]
    if "-" in word_id or "." in word_id:
      return  # a multiword token's range or an empty node: no word
    if not word_id.isdigit():
      self.fail(number, f"the ID column holds {word_id!r}, expected a "
                "word number")
    tag = fields[self.column]
    self.add(number, fields[1], None if tag == "_" else tag)


def read(path, layout=None, conllu_column="upos"):
  """Reads a tagged file.

  Args:
    path: the file (local or a tf.io.gfile URL).
    layout: one of LAYOUTS, or None: `layout_of(path)`.
    conllu_column: "upos" or "xpos": the tag's CoNLL-U column.

  Returns:
    a `TaggedFile`.

  Raises:
    ValueError: one line naming the file (and the line) at fault: missing,
      not UTF-8, without tokens, or a line that breaks the layout.
  """
  layout = layout_of(path, layout)
  validation.check_choice("conllu_column", conllu_column, CONLLU_COLUMNS)
  if not io_utils.exists(path):
    raise ValueError(f"{path}: no such file")
  try:
    text = io_utils.read_file(path, binary=True).decode("utf-8")
  except UnicodeDecodeError as e:
    raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte "
                     f"{e.start})") from None
  raw_lines = tuple(text.splitlines())
  reader = _Reader(path, layout, conllu_column)
  for number, line in enumerate(raw_lines, 1):
    reader.line(number, line)
  reader.end_sentence()
  if not reader.sentences:
    raise ValueError(f"{path}: no tokens (expected the {layout} layout)")
  return TaggedFile(path, layout, tuple(reader.sentences), raw_lines,
                    reader.labelled[0])


def predictions_text(tagged, predicted):
  """The predictions file: `tagged`'s lines with each token's predicted
  tag added as a last column (conll2003: after a space; columns, conllu:
  after a tab); a conll2003 `-DOCSTART-` line gets `O`, so that every
  token line has as many columns (conlleval's rule); other lines (blank,
  comments, CoNLL-U ranges) are copied.

  Args:
    tagged: a `TaggedFile`.
    predicted: one list of tags per sentence, as long as its words.

  Returns:
    str, ending in a newline.
  """
  added = {}
  for sentence, tags in zip(tagged.sentences, predicted, strict=True):
    if len(tags) != len(sentence.words):
      raise ValueError(f"{len(tags)} predicted tags for the sentence of "
                       f"{len(sentence.words)} words at "
                       f"{tagged.path}:{sentence.lines[0]}")
    added.update(zip(sentence.lines, tags))
  separator = " " if tagged.layout == "conll2003" else "\t"
  out = []
  for number, line in enumerate(tagged.raw_lines, 1):
    if number in added:
      line = f"{line.rstrip()}{separator}{added[number]}"
    elif tagged.layout == "conll2003" and line.split()[:1] == [DOCSTART]:
      line = f"{line.rstrip()}{separator}O"
    out.append(line)
  return "\n".join(out) + "\n"
