"""The demo's closing report (`python scripts/demo_report.py`).

After `scripts/demo.sh` has pretrained a model with held-out evaluation, this
prints
  1. the unigram baseline of the held-out targets (`unigram_baseline`), the
     level the held-out loss of a model that ignores context would reach;
  2. a few held-out sentences with whole words hidden and the checkpoint's
     top predictions for every hidden piece (`demo_predict`).
"""
import os

import numpy as np

from xlnet.data import record_format
from xlnet.demo import demo_corpus
from xlnet.demo import demo_predict
from xlnet import model as model_lib
from xlnet.data import prepro_utils
from xlnet.data import pretrain_examples
from xlnet.data import token_stream
from xlnet.demo import unigram_baseline
from xlnet.training import checkpoint_io


def pick_sentences(text, num, min_words=8, max_words=30):
  """Evenly spaced sentences of a text, each with the lines before it in its
  document.

  Only lines of `min_words` to `max_words` words that are not the first line
  of their document are candidates.

  Returns:
    list of (list of preceding lines, sentence), at most `num`.
  """
  candidates = []
  for doc in demo_corpus.documents(text):
    lines = doc.split("\n")
    candidates += [(lines[:i], line) for i, line in enumerate(lines)
                   if i and min_words <= len(line.split()) <= max_words]
  if not candidates or num < 1:
    return []
  picks = np.unique(np.linspace(0, len(candidates) - 1, num).round())
  return [candidates[int(k)] for k in picks]


def render(pieces, hidden_numbers):
  """The sentence as text, each hidden piece shown as `[k]`.

  Args:
    pieces: list of str pieces.
    hidden_numbers: dict position -> number shown.
  """
  out = []
  for pos, piece in enumerate(pieces):
    if pos in hidden_numbers:
      lead = prepro_utils.SPIECE_UNDERLINE if piece.startswith(
          prepro_utils.SPIECE_UNDERLINE) else ""
      piece = f"{lead}[{hidden_numbers[pos]}]"
    out.append(piece)
  return "".join(out).replace(prepro_utils.SPIECE_UNDERLINE, " ").strip()


class Report:
  """Hides words in held-out sentences and describes the model's guesses.

  Args:
    predictor: a `demo_predict.MaskedPredictor`.
    encoder: `token_stream.LineEncoder` of the records' settings.
    max_len: pieces of text per input (the records' seq_len - 2).
    top_k: guesses shown per hidden piece.
  """

  def __init__(self, predictor, encoder, max_len, top_k):
    self.predictor = predictor
    self.encoder = encoder
    self.sp_model = encoder.sp_model
    self.is_start = pretrain_examples.word_start_table(self.sp_model)
    self.max_len = max_len
    self.top_k = top_k
    self.right = self.in_top_k = self.total = 0

  def encode(self, lines):
    """Piece ids of some lines, concatenated (np.int32)."""
    if not lines:
      return np.zeros(0, np.int32)
    return self.encoder(lines, "held-out text")[0]

  def show(self, context_lines, sentence, fraction, rng):
    """One sentence with hidden words and the model's guesses, as text.

    Args:
      context_lines: the lines before the sentence in its document; their
        last pieces fill the input up to `max_len`.
      sentence: str.
      fraction, rng: as `demo_predict.choose_hidden_words`.

    Returns:
      list of lines to print (none when the sentence is too long or has no
      word to hide).
    """
    ids = self.encode([sentence])
    if len(ids) > self.max_len:
      return []
    pieces = [self.sp_model.id_to_piece(int(i)) for i in ids]
    hidden = demo_predict.choose_hidden_words(
        pieces, demo_predict.word_spans(ids, self.is_start), fraction, rng)
    if not hidden:
      return []
    context = self.encode(context_lines)
    context = context[max(0, len(context) - (self.max_len - len(ids))):]
    offset = len(context)
    probs = self.predictor.predict(demo_predict.masked_features(
        np.concatenate([context, ids]), [offset + p for p in hidden]))
    guesses, guess_probs = demo_predict.top_k(probs, self.top_k)
    numbers = {p: k + 1 for k, p in enumerate(hidden)}
    lines = [f"  \"{render(pieces, numbers)}\"  ({offset} pieces of "
             "context before it)"]
    for k, pos in enumerate(hidden):
      truth = int(ids[pos])
      shown = "  ".join(f"{self.sp_model.id_to_piece(int(g))} {q:.2f}"
                        for g, q in zip(guesses[k], guess_probs[k]))
      mark = "right" if guesses[k][0] == truth else (
          f"in top {self.top_k}" if truth in guesses[k] else "")
      lines.append(f"    [{k + 1}] {pieces[pos]:<12} -> {shown}"
                   f"{'   (' + mark + ')' if mark else ''}")
      self.total += 1
      self.right += int(guesses[k][0] == truth)
      self.in_top_k += int(truth in guesses[k])
    return lines

  def summary(self):
    """One line: how many hidden words the model got."""
    return (f"  top-1 right for {self.right} of {self.total} hidden words, "
            f"in the top {self.top_k} for {self.in_top_k}")


def run_report(*, model_dir, record_info_dir, eval_split, train_text,
               heldout_text, num_sentences, hide_fraction, top_k, seed):
  """Prints the baseline and the predictions (see the module docstring).

  Args:
    model_dir: str, a checkpoint prefix or a model directory (its latest
      checkpoint); config.json is read from the checkpoint's directory.
    record_info_dir: str, `{save_dir}/tfrecords` of the held-out records,
      with corpus_info.json beside them.
    eval_split: str, split name of the held-out records.
    train_text: str, path of the training text (the baseline's piece
      frequencies).
    heldout_text: str, path of the held-out text (sentences to hide words
      in).
    num_sentences: int, held-out sentences shown.
    hide_fraction: float in (0, 1], words hidden per word of a sentence.
    top_k: int, predictions shown per hidden piece.
    seed: int, seed of the choice of hidden words.
  """
  if not 0 < hide_fraction <= 1:
    raise ValueError(f"--hide_fraction={hide_fraction} must be in (0, 1]")
  prefix = checkpoint_io.resolve_checkpoint(model_dir, "--model_dir")
  config = model_lib.XLNetConfig(json_path=os.path.join(
      os.path.dirname(prefix), "config.json"))
  info = record_format.load_corpus_info(record_info_dir)
  if info is None:
    raise ValueError(f"--record_info_dir={record_info_dir}: no "
                     "corpus_info.json beside it")
  sp_model = prepro_utils.load_sp_model(
      info["sp_path"], f"the sp_path of {record_info_dir}'s corpus info")
  if sp_model.get_piece_size() != config.n_token:
    raise ValueError(f"{info['sp_path']} has {sp_model.get_piece_size()} "
                     f"pieces but the checkpoint's n_token is {config.n_token}")

  counts, targets = unigram_baseline.counts_and_targets(
      train_text, record_info_dir, eval_split, sp_model, info)
  print(unigram_baseline.describe(counts, targets), flush=True)

  with open(heldout_text, encoding="utf-8") as f:
    sentences = pick_sentences(f.read(), num_sentences)
  encoder = token_stream.LineEncoder(sp_model.serialized_model_proto(),
                                     info["uncased"], from_raw_text=True)
  predictor = demo_predict.MaskedPredictor(config, prefix)
  print(f"Hidden words in held-out sentences, predicted by "
        f"{os.path.basename(prefix)} from the visible text only (top "
        f"{top_k} pieces with their probabilities):")
  report = Report(predictor, encoder, info["seq_len"] - 2, top_k)
  rng = np.random.RandomState(seed)
  for context_lines, sentence in sentences:
    for line in report.show(context_lines, sentence, hide_fraction, rng):
      print(line)
  print(report.summary(), flush=True)
  predictor.close()

