"""Tag schemes, entities and their scores, with conlleval's semantics (no
TensorFlow).

  iob1   I-TYPE inside a chunk; B-TYPE only to start a chunk right after
         one of the same type (CoNLL-2003's original files)
  iob2   B-TYPE starts every chunk, I-TYPE continues it (BIO)
  iobes  B- begins, I- continues, E- ends a chunk; S- is a chunk of one
  none   plain tags (POS): scored by token accuracy alone

Chunks are read from a sentence's tags by one rule for all three schemes,
conlleval's (`conlleval.pl`'s startOfChunk and endOfChunk) with IOBES's
E- and S- given their meaning: a chunk starts at B- or S-, at I- or E-
after O, E- or S-, and at any tag whose type differs from the previous
tag's; it ends before B-, S- or O after B- or I-, after E- or S-, and
before a tag of another type. On IOB1 and IOB2 tags this is conlleval's
rule exactly (an I- without a B- before it starts a chunk); on IOBES tags
it is seqeval's default (conlleval itself runs an S- chunk into the next
one). A chunk is (type, first token, last token + 1): entities so
compared are the same whatever scheme either side is written in.
Precision, recall and F1 count whole chunks (type and both ends equal),
per type and overall, as conlleval; accuracy counts tokens whose tag
string is equal.
"""
from xlnet import validation

SCHEMES = validation.CHOICES["tag_scheme"]
_PREFIXES = {"iob1": "BI", "iob2": "BI", "iobes": "BIES"}
OUTSIDE = "O"


def split_tag(tag):
  """(prefix, type) of a chunk tag: `O` -> ("O", ""), `B-PER` -> ("B",
  "PER"); None for a tag of no chunk scheme (`NN`, `X-PER`)."""
  if tag == OUTSIDE:
    return OUTSIDE, ""
  prefix, dash, kind = tag.partition("-")
  if dash and kind and prefix in "BIES" and len(prefix) == 1:
    return prefix, kind
  return None


def detect(tag_sequences):
  """The scheme tags are written in.

  Args:
    tag_sequences: iterable of lists of tags (one per sentence).

  Returns:
    "none" when a tag is no chunk tag (POS tags) or every tag is O; else
    "iobes" when one has an E- or S- prefix; else "iob1" when an I- tag
    starts a chunk (after O or another type); else "iob2".
  """
  scheme, chunky = "iob2", False
  for tags in tag_sequences:
    prev = (OUTSIDE, "")
    for tag in tags:
      parts = split_tag(tag)
      if parts is None:
        return "none"
      chunky |= parts[0] != OUTSIDE
      if parts[0] in "ES":
        scheme = "iobes"
      elif (parts[0] == "I" and scheme == "iob2"
            and (prev[0] == OUTSIDE or prev[1] != parts[1])):
        scheme = "iob1"
      prev = parts
  return scheme if chunky else "none"


def scheme_of_labels(labels):
  """The scheme a tag set belongs to, read from the tags alone (a model's
  labels): "iobes" with an E- or S- tag, "none" with a tag of no chunk
  scheme or only O, else "iob2" (IOB1 and IOB2 have the same tags; they
  read the same chunks, `chunks`)."""
  parts = [split_tag(label) for label in labels]
  if None in parts or all(p[0] == OUTSIDE for p in parts):
    return "none"
  return "iobes" if any(p[0] in "ES" for p in parts) else "iob2"


def check_tags(tags, scheme, where):
  """Raises unless every tag belongs to `scheme` ("none" takes any).

  Args:
    tags: list of tags.
    scheme: one of SCHEMES.
    where: list of the place of each tag (`file:line`), for the message.
  """
  if scheme == "none":
    return
  allowed = _PREFIXES[scheme]
  for tag, place in zip(tags, where):
    parts = split_tag(tag)
    if parts is None or (parts[0] != OUTSIDE and parts[0] not in allowed):
      raise ValueError(
          f"{place}: tag {tag!r} is not of the {scheme} scheme (O or "
          f"{', '.join(p + '-TYPE' for p in allowed)}); give --tag_scheme")


def _ends(prev, cur):
  """Whether a chunk open at tag `prev` ends before tag `cur` (both
  (prefix, type))."""
  if prev[0] == OUTSIDE:
    return False
  return (prev[0] in "ES" or cur[0] in "BSO" or prev[1] != cur[1])


def _starts(prev, cur):
  """Whether a chunk starts at tag `cur` after tag `prev`."""
  if cur[0] == OUTSIDE:
    return False
  return (cur[0] in "BS" or prev[0] in "OES" or prev[1] != cur[1])


def chunks(tags):
  """The chunks of one sentence's tags.

  Args:
    tags: list of chunk tags (`split_tag` not None).

  Returns:
    list of (type, start, end): tokens start .. end - 1, in order.
  """
  out = []
  prev, start = (OUTSIDE, ""), None
  for i, tag in enumerate(list(tags) + [OUTSIDE]):
    cur = split_tag(tag)
    if cur is None:
      raise ValueError(f"tag {tag!r} is not a chunk tag (O, B-, I-, E-, S-)")
    if start is not None and _ends(prev, cur):
      out.append((prev[1], start, i))
      start = None
    if _starts(prev, cur):
      start = i
    prev = cur
  return out


def encode(spans, length, scheme):
  """The tags of `spans` (`chunks`' output) over `length` tokens in
  `scheme` (not "none")."""
  tags = [OUTSIDE] * length
  last_end = {}
  for kind, start, end in spans:
    inside = ["I-" + kind] * (end - start)
    if scheme == "iobes":
      inside[0], inside[-1] = "B-" + kind, "E-" + kind
      if end - start == 1:
        inside[0] = "S-" + kind
    elif scheme == "iob2" or last_end.get(kind) == start:
      inside[0] = "B-" + kind
    tags[start:end] = inside
    last_end[kind] = end
  return tags


def convert(tags, scheme):
  """One sentence's chunk tags rewritten in `scheme` (the same chunks);
  unchanged for "none"."""
  if scheme == "none":
    return list(tags)
  return encode(chunks(tags), len(tags), scheme)


def _ratios(correct, guessed, gold):
  """(precision, recall, F1) of chunk counts, 0 where undefined."""
  precision = correct / guessed if guessed else 0.0
  recall = correct / gold if gold else 0.0
  f1 = (2 * precision * recall / (precision + recall)
        if precision + recall else 0.0)
  return precision, recall, f1


def score(gold, predicted, scheme):
  """conlleval's figures of predicted tags against gold ones.

  Args:
    gold, predicted: lists of sentences' tag lists, of equal lengths.
    scheme: one of SCHEMES; "none" scores the token accuracy alone.

  Returns:
    dict: `accuracy` (tokens with the gold tag), `num_tokens`; unless
    "none": `precision`, `recall`, `f1` over all chunks, `num_gold`,
    `num_predicted`, `num_correct` chunks, and `per_type`: type ->
    {precision, recall, f1, num_gold, num_predicted} for each type in
    either side, sorted.
  """
  tokens = hits = 0
  counts = {}  # type -> [correct, guessed, gold]
  for gold_tags, pred_tags in zip(gold, predicted, strict=True):
    if len(gold_tags) != len(pred_tags):
      raise ValueError(f"{len(pred_tags)} predicted tags for a sentence of "
                       f"{len(gold_tags)}")
    tokens += len(gold_tags)
    hits += sum(g == p for g, p in zip(gold_tags, pred_tags))
    if scheme == "none":
      continue
    gold_chunks, pred_chunks = set(chunks(gold_tags)), set(chunks(pred_tags))
    for index, found in ((1, pred_chunks), (2, gold_chunks)):
      for chunk in found:
        counts.setdefault(chunk[0], [0, 0, 0])[index] += 1
    for chunk in gold_chunks & pred_chunks:
      counts[chunk[0]][0] += 1
  out = {"accuracy": hits / tokens if tokens else 0.0, "num_tokens": tokens}
  if scheme == "none":
    return out
  correct, guessed, total = (sum(c[i] for c in counts.values())
                             for i in range(3))
  out.update(zip(("precision", "recall", "f1"),
                 _ratios(correct, guessed, total)))
  out.update(num_gold=total, num_predicted=guessed, num_correct=correct)
  out["per_type"] = {
      kind: dict(zip(("precision", "recall", "f1"), _ratios(*c)),
                 num_gold=c[2], num_predicted=c[1])
      for kind, c in sorted(counts.items())}
  return out
