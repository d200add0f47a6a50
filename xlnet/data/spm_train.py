"""Trains an XLNet SentencePiece model with the released options.

Command line (the top-level spm_train.py):
  python spm_train.py --input=data/demo/botchan.txt \
      --model_prefix=data/demo/spiece --vocab_size=32000

Special ids are checked after training: <unk> 0, <s> 1, </s> 2, <cls> 3,
<sep> 4, <pad> 5, <mask> 6, <eod> 7, <eop> 8.
"""
import io
import os
import re

from absl import logging
import sentencepiece as spm

from xlnet import io_utils
from xlnet.data import prepro_utils

# The released --control_symbols=<cls>,<sep>,<pad>,<mask>,<eod> and
# --user_defined_symbols=<eop>,.,(,),",-,–,£,€ (passed as lists: in a flag
# string SentencePiece would read '"' as a quote).
CONTROL_SYMBOLS = ["<cls>", "<sep>", "<pad>", "<mask>", "<eod>"]
USER_DEFINED_SYMBOLS = ["<eop>", ".", "(", ")", '"', "-", "\u2013", "\u00a3",
                        "\u20ac"]


def _training_error(err, vocab_size):
  """The ValueError for SentencePiece's failure `err`; a vocabulary larger
  than the text holds (the default 32,000 on a few MB of text) names the
  flag and the largest size that fits."""
  text = str(err).splitlines()[0]
  fits = re.search(r"Vocabulary size too high.*<= (\d+)", text)
  if fits:
    return ValueError(
        f"--vocab_size={vocab_size} is more pieces than this text yields "
        f"(at most {fits.group(1)}): rerun with --vocab_size={fits.group(1)} "
        "or less, or give more text (docs/training.md, \"Pretrain on your "
        "own corpus\")")
  return ValueError(f"SentencePiece training failed: {text}")


def digit_comma_pieces(sp_model):
  """The pieces of `sp_model` (a SentencePieceProcessor) ending in a digit
  and ',' (`▁1999,`, `0,`): the release's encoder splits the comma off them,
  so a model never sees them, and HF's tokenizer of an export keeps them
  whole."""
  return [p for p in (sp_model.id_to_piece(i)
                      for i in range(sp_model.get_piece_size()))
          if prepro_utils.ends_with_digit_comma(p)]


def digit_comma_advice(pieces, model_path):
  """The warning for `digit_comma_pieces` of the model at `model_path`."""
  return (f"{model_path} holds {len(pieces)} piece(s) ending in a digit and "
          f"',' (e.g. {' '.join(pieces[:3])}): the release's encoder splits the "
          "comma off, so the model never sees them, and HF's tokenizer of an "
          "export keeps them whole (its ids differ on text such as '2000,'); "
          "to train a vocabulary without them, rerun spm_train.py with "
          "--split_digits (docs/interop.md, \"Digit + comma\")")


def train_spm(input_files, model_prefix, vocab_size=32000,
              input_sentence_size=10000000, character_coverage=0.99995,
              num_threads=None, split_digits=False):
  """Trains a unigram SentencePiece model and checks its special ids.

  Args:
    input_files: path or list of paths (one sentence per line).
    model_prefix: output prefix; writes `{prefix}.model` and `{prefix}.vocab`.
    vocab_size: number of pieces.
    input_sentence_size: number of (shuffled) sentences used for training.
    character_coverage: fraction of characters covered by the model.
    num_threads: trainer threads (default: SentencePiece's default).
    split_digits: every digit a piece of its own (SentencePiece's option;
      not the release's): no piece then ends in a digit and ','.

  Returns:
    path of the `.model` file.

  The model is trained in memory, checked, and only then written (the
  `.vocab` file first, the `.model` file last, each atomically), so an
  interrupted or failed run leaves no partial or unchecked model behind.
  Training is deterministic: the same input gives the same bytes.
  """
  if isinstance(input_files, str):
    input_files = [p for p in input_files.split(",") if p]
  if not input_files:
    raise ValueError("--input: no input file given")
  for path in input_files:
    if not os.path.isfile(path):
      raise ValueError(f"--input: no such file {path}")
  parent = os.path.dirname(model_prefix)
  if parent:
    os.makedirs(parent, exist_ok=True)
  model = io.BytesIO()
  kwargs = dict(
      input=",".join(input_files), model_writer=model,
      vocab_size=vocab_size, character_coverage=character_coverage,
      model_type="unigram", control_symbols=CONTROL_SYMBOLS,
      user_defined_symbols=USER_DEFINED_SYMBOLS,
      shuffle_input_sentence=True, input_sentence_size=input_sentence_size,
      minloglevel=2)
  if num_threads:
    kwargs["num_threads"] = num_threads
  if split_digits:
    kwargs["split_digits"] = True
  try:
    spm.SentencePieceTrainer.train(**kwargs)
  except RuntimeError as e:
    raise _training_error(e, vocab_size) from None
  model_path = model_prefix + ".model"
  sp_model = spm.SentencePieceProcessor(model_proto=model.getvalue())
  prepro_utils.check_special_symbols(sp_model, model_path)
  io_utils.atomic_write(model_prefix + ".vocab", vocab_text(sp_model))
  io_utils.atomic_write(model_path, model.getvalue())
  logging.info("Wrote %s (%d pieces)", model_path, sp_model.get_piece_size())
  pieces = digit_comma_pieces(sp_model)
  if pieces:
    logging.warning(digit_comma_advice(pieces, model_path))
  return model_path


def vocab_text(sp_model):
  """The `.vocab` file SentencePiece writes beside a model: one line
  `piece<TAB>score` per id (scores with 6 significant digits)."""
  return "".join(f"{sp_model.id_to_piece(i)}\t{sp_model.get_score(i):g}\n"
                 for i in range(sp_model.get_piece_size()))

