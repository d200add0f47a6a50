"""The chain's models in HF transformers: the same predictions?

Run in an environment with TensorFlow, PyTorch and transformers (the
`interop` one), after `convert_checkpoint.py --to=hf` wrote
`work_dir/hf/pretrained` and `work_dir/hf/finetuned`
(`bench/chain_hf_check.py`):

* the fine-tuned classifier: the dev texts through HF's tokenizer (from the
  export) and `XLNetForSequenceClassification`, against our
  `load_classifier(model_dir)` on the same texts: the labels predicted
  (agreement) and the logits (largest difference). HF's tokenizer may
  split a word differently where two splits score exactly the same
  (SentencePiece and HF's `tokenizers` break such ties differently; the
  release reads text with SentencePiece, as we do), and shorten a long
  pair by another rule (`cut_as_the_release`). Such texts are counted and
  named, and their logits are compared with HF's model given our ids; a
  different split that is neither fails the check;
* the pretrained model: words hidden in held-out sentences
  (`demo_report.Report`, the demo's masked-word predictions), predicted by
  `XLNetLMHeadModel` given the same `perm_mask` and `target_mapping`,
  against our two-stream model: the top piece (agreement) and the
  probabilities (largest difference).
"""
import csv
import json
import os

import numpy as np

from xlnet import io_utils
from xlnet import model as model_lib
from xlnet.data import record_format
from xlnet.data import prepro_utils
from xlnet.data import token_stream
from xlnet.demo import demo_predict
from xlnet.demo import demo_report
from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.classifier import loaded_model
from xlnet.training import checkpoint_io

AGREEMENT = 0.999
TOLERANCE = 1e-4


def _compare(ours, theirs, counts):
  """Adds one batch's [n, k] scores to `counts` (top-1 agreement and the
  largest absolute difference)."""
  counts["total"] += len(ours)
  counts["agree"] += int((ours.argmax(-1) == theirs.argmax(-1)).sum())
  counts["max_diff"] = max(counts["max_diff"], _largest(ours, theirs))


def _verdict(counts):
  counts["agreement"] = counts["agree"] / max(1, counts["total"])
  counts["passed"] = bool(counts["total"] and
                          counts["agreement"] >= AGREEMENT and
                          counts["max_diff"] <= TOLERANCE)
  return counts


def _differing_span(ours, theirs):
  """The parts of two id lists between their common prefix and suffix."""
  p = 0
  while p < min(len(ours), len(theirs)) and ours[p] == theirs[p]:
    p += 1
  q = 0
  while (q < min(len(ours), len(theirs)) - p and
         ours[len(ours) - 1 - q] == theirs[len(theirs) - 1 - q]):
    q += 1
  return ours[p:len(ours) - q], theirs[p:len(theirs) - q]


def _first_stretch(ours, theirs, piece_length, most=8):
  """The first differing pieces of two splits of one text: from their
  first difference to where both have spelt as many characters again
  (at most `most` pieces each)."""
  i = j = a = b = 0
  while a != b or not a:
    if a <= b and i < len(ours):
      a, i = a + piece_length(ours[i]), i + 1
    elif j < len(theirs):
      b, j = b + piece_length(theirs[j]), j + 1
    else:
      break
    if max(i, j) >= most:
      break
  return ours[:i], theirs[:j]


def _pair_lengths(ids, sep_id):
  """"A + B pieces" of a pair's ids laid out as `A <sep> B <sep> <cls>`."""
  first = ids.index(sep_id)
  return f"{first} + {len(ids) - first - 3} pieces"


def compare_splits(counts, rows, ours_ids, hf_ids, sp_model, recut=None):
  """Which texts HF's tokenizer split or shortened differently from ours.

  Args:
    counts: the classifier check's running dict; gets `split_differently`
      (ties: the same text, the same total score), `cut_differently` (pairs
      whose ids differ only where they were shortened), `not_ties` (a
      different text or score) and up to 3 `examples` of each kind.
    rows: the dev rows of the texts (ints).
    ours_ids, hf_ids: per text, the ids without padding (lists of ints).
    sp_model: a `SentencePieceProcessor` (IdToPiece, DecodeIds, GetScore,
      PieceToId).
    recut: a function of a text's index here giving, for a pair, HF's
      pieces shortened by the release's rule (`cut_as_the_release`), and
      None for a single text; or None when all are single texts.

  Returns:
    bool NumPy array [n]: whether each text got our ids from HF.
  """
  alike = np.array([a == b for a, b in zip(ours_ids, hf_ids)], bool)
  for k, (row, a, b) in enumerate(zip(rows, ours_ids, hf_ids)):
    if a == b:
      continue
    cut = recut(k) if recut else None
    if cut is not None:
      hf_cut, b = b, cut
      if a == b:
        sep = sp_model.PieceToId("<sep>")
        _add_example(counts, "cut_differently", row, _pair_lengths(a, sep),
                     _pair_lengths(hf_cut, sep))
        continue
    a, b = _differing_span(a, b)
    tie = (sp_model.DecodeIds(a) == sp_model.DecodeIds(b) and
           abs(sum(map(sp_model.GetScore, a)) -
               sum(map(sp_model.GetScore, b))) <= 1e-4)
    a, b = _first_stretch(a, b, lambda i: len(sp_model.IdToPiece(i)))
    _add_example(counts, "split_differently" if tie else "not_ties", row,
                 " ".join(map(sp_model.IdToPiece, a)),
                 " ".join(map(sp_model.IdToPiece, b)))
  return alike


def _add_example(counts, kind, row, ours, hf):
  """Counts one text of `kind`, and keeps it if fewer than 3 are kept."""
  counts[kind] += 1
  if sum(e["kind"] == kind for e in counts["examples"]) < 3:
    counts["examples"].append(
        {"row": int(row), "kind": kind, "ours": ours, "hf": hf})


def cut_as_the_release(tokenizer, pair, max_len):
  """HF's pieces of a text pair, shortened by the release's rule and laid
  out as `A <sep> B <sep> <cls>`.

  The release (`truncate_seq_pair`) drops the last piece of the longer
  text until the pair fits, of the second when equally long, so the first
  keeps the odd piece. HF's tokenizer (transformers 5, `tokenizers`'
  longest_first) gives the shorter text half the room, rounded down, and
  the longer (the second when equally long) the rest: the two differ by
  one piece when both texts are longer than about half the room.

  Args:
    tokenizer: HF's tokenizer of the export.
    pair: (text_a, text_b).
    max_len: the model's max_seq_length.

  Returns:
    list of ints; None when the second text is empty (a single text).
  """
  if not pair[1]:
    return None
  a, b = (tokenizer(t, add_special_tokens=False)["input_ids"] for t in pair)
  classifier_features.truncate_seq_pair(a, b, max_len - 3)
  sep = tokenizer.sep_token_id
  return a + [sep] + b + [sep, tokenizer.cls_token_id]


def _hf_encode(tokenizer, batch, max_len):
  """HF's tokenizer on a batch of texts or (text_a, text_b) pairs, as its
  user gets them (`truncation=True`, padded to the longest), one text at
  a time: given lists, HF's tokenizer (transformers 5) lays a pair with an
  empty second text out as `A <sep> <sep> <cls>`, given the one pair as
  `A <sep> <cls>`, the release's single text (Amazon's and DBpedia's rows
  without a title).

  Returns:
    BatchEncoding of torch tensors [n, longest].
  """
  rows = [tokenizer(*([t] if isinstance(t, str) else t), truncation=True,
                    max_length=max_len) for t in batch]
  return tokenizer.pad(rows, return_tensors="pt")


def dev_texts(dev_csv):
  """The texts of a chain's dev table (`labelled.write_subsets`).

  Returns:
    (texts: list of text_a, or of (text_a, text_b) pairs when the table has
    a text_b column; pairs: whether it has).
  """
  with open(dev_csv, newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  pairs = bool(rows) and "text_b" in rows[0]
  return ([(r["text_a"], r["text_b"]) if pairs else r["text_a"]
           for r in rows], pairs)


def check_classifier(model_dir, hf_dir, dev_csv, batch_size=32):
  """Our fine-tuned classifier and HF's export on the dev table's texts.

  The labels come through HF's tokenizer (as an HF user gets them); the
  logits are compared there on the texts it splits as we do, and on every
  text with HF's model given our features.

  Returns:
    dict: total, agree, agreement, max_diff (logits), split_differently,
      cut_differently, not_ties, examples (`compare_splits`),
      max_diff_split (the logits of the texts HF gave other ids, through
      HF's tokenizer), passed.
  """
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  texts, pairs = dev_texts(dev_csv)
  ours = loaded_model.load(model_dir)
  max_len = ours.task["max_seq_length"]
  sp_model = prepro_utils.load_sp_model(
      os.path.join(hf_dir, "spiece.model"), "the HF export's spiece.model")
  tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
  model = transformers.XLNetForSequenceClassification.from_pretrained(
      hf_dir).eval()
  counts = {"what": "fine-tuned classifier, dev logits", "total": 0,
            "agree": 0, "max_diff": 0.0, "split_differently": 0,
            "cut_differently": 0, "not_ties": 0, "examples": [],
            "max_diff_split": 0.0}
  for i in range(0, len(texts), batch_size):
    batch = texts[i:i + batch_size]
    features = ours.features(batch)
    mine = ours.predict_features(features, batch_size=len(batch))["logits"]
    encoded = _hf_encode(tokenizer, batch, max_len)
    with torch.no_grad():
      theirs = model(**encoded).logits.numpy()
      on_our_ids = model(
          input_ids=torch.tensor(features["input_ids"]).long(),
          token_type_ids=torch.tensor(features["segment_ids"]).long(),
          input_mask=torch.tensor(features["input_mask"])).logits.numpy()
    alike = compare_splits(
        counts, range(i, i + len(batch)),
        [r[m == 0].tolist() for r, m in zip(features["input_ids"],
                                            features["input_mask"])],
        [r[m == 1].tolist() for r, m in zip(encoded["input_ids"].numpy(),
                                            encoded["attention_mask"].numpy())],
        sp_model, recut=(lambda k: cut_as_the_release(
            tokenizer, batch[k], max_len)) if pairs else None)
    counts["total"] += len(batch)
    counts["agree"] += int((mine.argmax(-1) == theirs.argmax(-1)).sum())
    counts["max_diff"] = max(counts["max_diff"],
                             _largest(mine, on_our_ids),
                             _largest(mine[alike], theirs[alike]))
    counts["max_diff_split"] = max(counts["max_diff_split"],
                                   _largest(mine[~alike], theirs[~alike]))
  verdict = _verdict(counts)
  verdict["passed"] = verdict["passed"] and not counts["not_ties"]
  return verdict


def _largest(a, b):
  """The largest absolute difference of two arrays (0 when empty)."""
  return float(np.max(np.abs(a - b))) if a.size else 0.0


class _BothPredictors:
  """A `MaskedPredictor` that also asks HF's model, and counts how the two
  agree; it returns ours (so the report's own counts are our model's)."""

  def __init__(self, ours, hf_model):
    self.ours = ours
    self.hf_model = hf_model
    self.counts = {"what": "pretrained model, hidden held-out words "
                   "(probabilities)", "total": 0, "agree": 0,
                   "max_diff": 0.0}

  def predict(self, features):
    import torch  # pylint: disable=g-import-not-at-top
    mine = self.ours.predict(features)
    with torch.no_grad():
      logits = self.hf_model(
          input_ids=torch.tensor(features["input_k"][None]).long(),
          token_type_ids=torch.tensor(features["seg_id"][None]).long(),
          perm_mask=torch.tensor(features["perm_mask"][None]),
          target_mapping=torch.tensor(features["target_mapping"][None]),
      ).logits[0]
    _compare(mine, torch.softmax(logits, -1).numpy(), self.counts)
    return mine


def check_pretrained(pretrain_dir, hf_dir, record_info_dir, heldout_text,
                     num_sentences=200, hide_fraction=0.15, seed=0):
  """Our pretrained model and HF's export on hidden held-out words.

  Returns:
    dict: total, agree, agreement, max_diff (probabilities), passed.
  """
  import transformers  # pylint: disable=g-import-not-at-top
  prefix = checkpoint_io.resolve_checkpoint(pretrain_dir, "--work_dir")
  config = model_lib.XLNetConfig(json_path=os.path.join(
      os.path.dirname(prefix), "config.json"))
  info = record_format.load_corpus_info(record_info_dir)
  sp_model = prepro_utils.load_sp_model(info["sp_path"], "spiece.model")
  encoder = token_stream.LineEncoder(sp_model.serialized_model_proto(),
                                     info["uncased"], from_raw_text=True)
  both = _BothPredictors(
      demo_predict.MaskedPredictor(config, prefix),
      transformers.XLNetLMHeadModel.from_pretrained(hf_dir).eval())
  report = demo_report.Report(both, encoder, info["seq_len"] - 2, top_k=1)
  with open(heldout_text, encoding="utf-8") as f:
    sentences = demo_report.pick_sentences(f.read(), num_sentences)
  rng = np.random.RandomState(seed)
  for context_lines, sentence in sentences:
    report.show(context_lines, sentence, hide_fraction, rng)
  both.ours.close()
  return _verdict(both.counts)


def run(work_dir, model_dir, dev_csv, heldout_text):
  """Both checks; writes `work_dir/hf/check.json` and returns its dict."""
  hf = os.path.join(work_dir, "hf")
  results = {
      "pretrained": check_pretrained(
          os.path.join(work_dir, "pretrain"), os.path.join(hf, "pretrained"),
          os.path.join(work_dir, "records", "valid", "tfrecords"),
          heldout_text),
      "finetuned": check_classifier(model_dir, os.path.join(hf, "finetuned"),
                                    dev_csv)}
  results["passed"] = all(r["passed"] for r in results.values())
  io_utils.atomic_write(os.path.join(hf, "check.json"),
                        json.dumps(results, indent=1) + "\n")
  return results
