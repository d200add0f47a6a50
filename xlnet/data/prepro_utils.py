"""Text normalization and SentencePiece encoding (see docs/data.md)."""
import unicodedata

import sentencepiece as spm

from xlnet import io_utils

SPIECE_UNDERLINE = "\u2581"

# Special symbols fixed by the released SentencePiece model and the data format.
SPECIAL_SYMBOLS = ("<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>",
                   "<eod>", "<eop>")
(UNK_ID, BOS_ID, EOS_ID, CLS_ID, SEP_ID, PAD_ID, MASK_ID, EOD_ID,
 EOP_ID) = range(9)


def preprocess_text(inputs, lower=False, remove_space=True, keep_accents=False):
  """Normalizes one piece of text before SentencePiece encoding.

  Args:
    inputs: str (or UTF-8 bytes).
    lower: lowercase the result (uncased models).
    remove_space: strip and collapse every run of whitespace to one space.
    keep_accents: when False, NFKD-normalize and drop combining marks.

  Returns:
    The normalized str.
  """
  if isinstance(inputs, bytes):
    inputs = inputs.decode("utf-8")
  outputs = " ".join(inputs.strip().split()) if remove_space else inputs
  outputs = outputs.replace("``", '"').replace("''", '"')
  if not keep_accents and not outputs.isascii():  # ASCII: nothing to strip
    outputs = unicodedata.normalize("NFKD", outputs)
    outputs = "".join(c for c in outputs if not unicodedata.combining(c))
  if lower:
    outputs = outputs.lower()
  return outputs


def ends_with_digit_comma(piece):
  """True for pieces such as '▁1999,' that the digit-comma rule splits."""
  return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def encode_pieces(sp_model, text, return_unicode=True, sample=False):
  """Encodes text to SentencePiece pieces, splitting a comma off digits.

  A piece that ends in ',' right after a digit is re-encoded without the comma
  and the comma becomes its own piece; when the original piece did not start
  with '▁', a leading '▁' of the re-encoded part is dropped.

  Args:
    sp_model: a sentencepiece.SentencePieceProcessor.
    text: str to encode (already normalized by `preprocess_text`).
    return_unicode: kept for API compatibility (pieces are always str).
    sample: use subword regularization (`sample_encode_as_pieces(text, 64,
      0.1)`).

  Returns:
    list of str pieces.
  """
  del return_unicode  # Python 3: pieces are always unicode str.
  if sample:
    pieces = sp_model.sample_encode_as_pieces(text, 64, 0.1)
  else:
    pieces = sp_model.encode_as_pieces(text)
  new_pieces = []
  for piece in pieces:
    if not ends_with_digit_comma(piece):
      new_pieces.append(piece)
      continue
    cur_pieces = sp_model.encode_as_pieces(
        piece[:-1].replace(SPIECE_UNDERLINE, ""))
    if (piece[0] != SPIECE_UNDERLINE and cur_pieces
        and cur_pieces[0][0] == SPIECE_UNDERLINE):
      if len(cur_pieces[0]) == 1:
        cur_pieces = cur_pieces[1:]
      else:
        cur_pieces[0] = cur_pieces[0][1:]
    cur_pieces.append(piece[-1])
    new_pieces.extend(cur_pieces)
  return new_pieces


def encode_ids(sp_model, text, sample=False):
  """Encodes text to SentencePiece ids with the digit-comma rule.

  Args:
    sp_model: a sentencepiece.SentencePieceProcessor.
    text: str to encode.
    sample: use subword regularization.

  Returns:
    list of int ids, one per piece of `encode_pieces`.
  """
  pieces = encode_pieces(sp_model, text, return_unicode=False, sample=sample)
  return [sp_model.piece_to_id(piece) for piece in pieces]


def digit_comma_table(sp_model):
  """Per-vocab bool table: pieces the digit-comma rule would re-encode.

  Returns:
    list of bool of length vocab size.
  """
  return [ends_with_digit_comma(sp_model.id_to_piece(i))
          for i in range(sp_model.get_piece_size())]


def check_special_symbols(sp_model, sp_path):
  """Raises ValueError unless ids 0..8 are exactly XLNet's special symbols.

  Args:
    sp_model: a loaded sentencepiece.SentencePieceProcessor.
    sp_path: path shown in the error message.
  """
  size = sp_model.get_piece_size()
  for idx, symbol in enumerate(SPECIAL_SYMBOLS):
    got = sp_model.id_to_piece(idx) if idx < size else None
    if got != symbol:
      raise ValueError(
          f"{sp_path} is not an XLNet SentencePiece model: id {idx} is "
          f"{got!r}, expected {symbol!r} (train it with spm_train.py)")


def load_sp_model(sp_path, name):
  """Loads a SentencePiece model and checks the XLNet special ids.

  Args:
    sp_path: local path or gs:// URL of a `.model` file.
    name: how messages name the path: the flag that gave it ("--sp_path")
      or where it comes from.

  Returns:
    sentencepiece.SentencePieceProcessor.
  """
  if not sp_path:
    raise ValueError(f"{name} is required: the SentencePiece model (the "
                     ".model file spm_train.py writes)")
  if not io_utils.exists(sp_path):
    raise ValueError(f"{name}={sp_path}: SentencePiece model not found")
  proto = io_utils.read_file(sp_path, binary=True)
  sp_model = spm.SentencePieceProcessor()
  try:
    sp_model.load_from_serialized_proto(proto)
  except (RuntimeError, OSError) as e:
    raise ValueError(f"{name}={sp_path}: not a SentencePiece model "
                     f"({str(e).splitlines()[0]})") from None
  check_special_symbols(sp_model, f"{name}={sp_path}")
  return sp_model
