"""HF's fast tokenizer of a SentencePiece model: `tokenizer.json`.

transformers loads `tokenizer.json` as it is (the `tokenizers` library's
format), without converting `spiece.model`: that conversion needs a
protobuf newer than TensorFlow 2.15 allows. The file is built here from
the model's pieces and scores and XLNet's text handling:

  normalizer      `` and '' -> ", NFKD, accents stripped, (lower case),
                  then SentencePiece's own character map (`precompiled`)
  pre-tokenizer   split on whitespace, `▁` in front of every word
  model           Unigram: our pieces, scores and ids
  post-processor  `A <sep> <cls>`, pairs `A <sep> B <sep> <cls>`, segment
                  ids as our features (A and its <sep> 0, B and its <sep>
                  1, <cls> 2)
  padding         on the left, with <pad>

`check_ids` compares it with our `encode_ids` when the `tokenizers`
library is installed. Two differences remain (docs/interop.md): the
release's digit-comma rule (`▁2000,` -> `▁2000` `,`), which HF does not
have, and splits of equal score, which the two order differently.
"""
import base64
import json

from absl import logging
import sentencepiece as spm

from xlnet.data import prepro_utils

SPIECE_UNDERLINE = prepro_utils.SPIECE_UNDERLINE
# HF's XLNetTokenizer pads the segment ids with 3 (ours: 4); the model
# masks padding as a key, so `<cls>` never sees either.
PAD_TYPE_ID = 3
# Single texts and pairs the export checks (no digit before a comma).
CHECK_TEXTS = (
    "The quick brown fox jumped over the lazy dog.",
    "  Ce café naïve près de l'hôtel — “Zoë”\tsang ``Ångström'' à neuf h. ",
    "A man (who?) said: \"it's 1999 - or 2000!\"",
)


def _varint(data, pos):
  """(value, next position) of the protobuf varint at `data[pos]`."""
  value = shift = 0
  while True:
    byte = data[pos]
    value |= (byte & 0x7F) << shift
    pos += 1
    shift += 7
    if not byte & 0x80:
      return value, pos


def _fields(data):
  """(field number, value) of a protobuf message's fields in order: ints
  for varints, bytes for length-delimited fields (fixed-size ones are
  skipped)."""
  pos = 0
  while pos < len(data):
    key, pos = _varint(data, pos)
    wire = key & 7
    if wire == 0:
      value, pos = _varint(data, pos)
    elif wire == 2:
      size, pos = _varint(data, pos)
      value, pos = data[pos:pos + size], pos + size
    elif wire in (1, 5):
      value, pos = None, pos + (8 if wire == 1 else 4)
    else:
      raise ValueError(f"protobuf wire type {wire}")
    yield key >> 3, value


def normalizer_spec(model_bytes):
  """(precompiled character map bytes, add_dummy_prefix) of a serialized
  SentencePiece `ModelProto`: its `normalizer_spec` (field 3) holds the
  map in field 2 and add_dummy_prefix (default true) in field 3. Read
  from the wire format so that no protobuf version is needed."""
  charsmap, dummy_prefix = b"", True
  for number, value in _fields(model_bytes):
    if number != 3:
      continue
    for inner, inner_value in _fields(value):
      if inner == 2:
        charsmap = inner_value
      elif inner == 3:
        dummy_prefix = bool(inner_value)
  return charsmap, dummy_prefix


def _normalizer(uncased, charsmap):
  steps = [{"type": "Replace", "pattern": {"String": "``"}, "content": '"'},
           {"type": "Replace", "pattern": {"String": "''"}, "content": '"'},
           {"type": "NFKD"}, {"type": "StripAccents"}]
  if uncased:
    steps.append({"type": "Lowercase"})
  if charsmap:
    steps.append({"type": "Precompiled",
                  "precompiled_charsmap": base64.b64encode(charsmap).decode()})
  return {"type": "Sequence", "normalizers": steps}


def _metaspace(dummy_prefix):
  return {"type": "Metaspace", "replacement": SPIECE_UNDERLINE,
          "prepend_scheme": "always" if dummy_prefix else "never",
          "split": True}


def _template(ids):
  """XLNet's special tokens at the end, with our segment ids."""
  def seq(name, type_id):
    return {"Sequence": {"id": name, "type_id": type_id}}

  def special(token, type_id):
    return {"SpecialToken": {"id": token, "type_id": type_id}}

  return {"type": "TemplateProcessing",
          "single": [seq("A", 0), special("<sep>", 0), special("<cls>", 2)],
          "pair": [seq("A", 0), special("<sep>", 0), seq("B", 1),
                   special("<sep>", 1), special("<cls>", 2)],
          "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]}
                             for t in ("<sep>", "<cls>")}}


def _added_tokens(ids):
  """The special symbols, matched as a whole before normalization
  (`<mask>` takes the space before it, as HF's XLNet)."""
  return [{"id": i, "content": s, "single_word": False,
           "lstrip": s == "<mask>", "rstrip": False, "normalized": False,
           "special": True}
          for s, i in sorted(ids.items(), key=lambda item: item[1])]


def tokenizer_json(spiece_model_file, uncased):
  """The `tokenizer.json` (a dict) of a SentencePiece model.

  Args:
    spiece_model_file: the model's path.
    uncased: the model lower-cases its text (--uncased).
  """
  sp = spm.SentencePieceProcessor()
  sp.Load(spiece_model_file)
  with open(spiece_model_file, "rb") as f:
    charsmap, dummy_prefix = normalizer_spec(f.read())
  ids = {s: sp.PieceToId(s) for s in prepro_utils.SPECIAL_SYMBOLS}
  vocab = [[sp.IdToPiece(i), sp.GetScore(i)]
           for i in range(sp.GetPieceSize())]
  return {
      "version": "1.0", "truncation": None,
      "padding": {"strategy": "BatchLongest", "direction": "Left",
                  "pad_to_multiple_of": None, "pad_id": ids["<pad>"],
                  "pad_type_id": PAD_TYPE_ID, "pad_token": "<pad>"},
      "added_tokens": _added_tokens(ids),
      "normalizer": _normalizer(uncased, charsmap),
      "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
          {"type": "WhitespaceSplit"}, _metaspace(dummy_prefix)]},
      "post_processor": _template(ids),
      "decoder": _metaspace(dummy_prefix),
      "model": {"type": "Unigram", "unk_id": sp.unk_id(), "vocab": vocab,
                "byte_fallback": False},
  }


def _our_features(sp, text_a, text_b, uncased):
  """(ids, segment ids) of our fine-tuning features, unpadded."""
  def encode(text):
    return prepro_utils.encode_ids(
        sp, prepro_utils.preprocess_text(text, lower=uncased))

  a = encode(text_a) + [prepro_utils.SEP_ID]
  b = [] if text_b is None else encode(text_b) + [prepro_utils.SEP_ID]
  return (a + b + [prepro_utils.CLS_ID],
          [0] * len(a) + [1] * len(b) + [2])


def _same_split(sp, ids, other):
  """Two splits of one text with the same total score (a tie)."""
  def score(x):
    return sum(sp.GetScore(i) for i in x)

  return (sp.DecodeIds(list(ids)) == sp.DecodeIds(list(other))
          and abs(score(ids) - score(other)) <= 1e-4)


def check_ids(config, spiece_model_file, uncased, texts=CHECK_TEXTS):
  """Refuses a `tokenizer_json` that gives other ids or segments than our
  features on `texts`, alone and in pairs (splits of equal score allowed).

  Returns:
    True when checked, False when the `tokenizers` library is absent.

  Raises:
    ValueError: one line naming the text and both ids.
  """
  try:
    import tokenizers  # pylint: disable=g-import-not-at-top
  except ImportError:
    logging.info("tokenizer.json not checked: the tokenizers library is not "
                 "installed (pip install tokenizers)")
    return False
  hf = tokenizers.Tokenizer.from_str(json.dumps(config))
  sp = spm.SentencePieceProcessor()
  sp.Load(spiece_model_file)
  for a, b in [(t, None) for t in texts] + list(zip(texts, texts[1:])):
    encoding = hf.encode(a, b) if b is not None else hf.encode(a)
    ids, segments = _our_features(sp, a, b, uncased)
    if encoding.type_ids != segments or (
        encoding.ids != ids and not _same_split(sp, encoding.ids, ids)):
      raise ValueError(
          f"--spiece_model_file={spiece_model_file}: the tokenizer.json "
          f"built from it encodes {(a, b) if b else a!r} as "
          f"{encoding.ids} (segments {encoding.type_ids}), ours as {ids} "
          f"(segments {segments}); nothing written")
  return True
