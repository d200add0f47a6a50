"""TensorFlow checkpoint -> a HuggingFace transformers XLNet directory.

Writes `config.json`, `model.safetensors` (through the `safetensors`
package's NumPy API: no PyTorch needed), `spiece.model` and the tokenizer
files, so that `XLNet*.from_pretrained(DIR)` and
`AutoTokenizer.from_pretrained(DIR)` load the model and its tokenizer.
"""
import json
import os
import shutil

from absl import logging
import sentencepiece as spm
from safetensors import numpy as safetensors_numpy
import tensorflow as tf

from xlnet.data import prepro_utils
from xlnet.finetuning import config as finetuning_config
from xlnet.interop import hf_names
from xlnet.interop import output_dir as output_dir_lib
from xlnet.training import checkpoint_io
from xlnet.training import checkpoint_tools
from xlnet.training import train_state

# HF's name of each of our activations: the release's GELU is the tanh form.
HF_ACTIVATION = {"gelu": "gelu_new", "relu": "relu"}
# The SQuAD beam sizes of the release (run_squad.py's --start_n_top and
# --end_n_top defaults).
BEAM = 5
LAYER_NORM_EPS = 1e-12


def read_model_weights(checkpoint):
  """The model weights of a checkpoint (prefix, directory or DIR/latest):
  dict TF name -> np.ndarray, optimizer slots and step counters left out."""
  prefix = checkpoint_io.resolve_checkpoint(checkpoint, "--checkpoint")
  names = [n for n, _ in tf.train.list_variables(prefix)
           if not checkpoint_tools.is_model_state(n)]
  return checkpoint_io.read_tensors(prefix, names)


# The heads that pool the sequence (`modeling.summarize_sequence`).
SUMMARY_KINDS = ("classification", "regression", "race")
_ATTN_SUMMARY = "model/sequnece_summary/summary_bias"
_SUMMARY_PROJ = "model/sequnece_summary/summary/kernel"


def summary_settings(prefix, names, kind, summary_type=None):
  """How the checkpoint's head pools the sequence.

  Args:
    prefix: the checkpoint prefix.
    names: its variable names.
    kind: the head (`choose_head`).
    summary_type: --summary_type, or None: what the checkpoint's directory
      records (`finetuning/config.HEAD_FILE`, written by fine-tuning), else
      "last" (the fine-tuning programs' default).

  Returns:
    (summary_type, use_summ_proj), or None for a head without a summary.

  Raises:
    ValueError: one line when --summary_type contradicts the record or the
      checkpoint's variables.
  """
  if kind not in SUMMARY_KINDS:
    return None
  path = os.path.join(os.path.dirname(prefix), finetuning_config.HEAD_FILE)
  recorded = (train_state.read_run_record(path) or {}).get("summary_type")
  if summary_type and recorded and summary_type != recorded:
    raise ValueError(f"--summary_type={summary_type} but {path} records "
                     f"summary_type={recorded}, the one the head was "
                     "fine-tuned with")
  chosen = summary_type or recorded or "last"
  if (_ATTN_SUMMARY in names) != (chosen == "attn"):
    raise ValueError(
        f"--checkpoint={prefix}: summary_type={chosen} but the checkpoint "
        + ("holds" if chosen != "attn" else "lacks")
        + f" the 'attn' summary's {_ATTN_SUMMARY}"
        + ("; pass --summary_type=attn" if chosen != "attn" else ""))
  return chosen, _SUMMARY_PROJ in names


def check_hf_sizes(xlnet_config):
  """HF derives d_head = d_model / n_head: refuses sizes it cannot hold."""
  c = xlnet_config
  if c.d_head * c.n_head != c.d_model:
    raise ValueError(f"--model_config_path: HF XLNet needs d_head * n_head "
                     f"== d_model, got d_head={c.d_head} * n_head={c.n_head} "
                     f"= {c.d_head * c.n_head} != d_model={c.d_model}")


def choose_head(heads, task_name=None, is_regression=None):
  """The head to export.

  Args:
    heads: `hf_names.find_heads` of the checkpoint.
    task_name: the task whose head to take (`squad`, `race` or a
      classification/regression task), or None: the only head, or the LM
      when there is none.
    is_regression: with task_name, take only the regression (True) or only
      the classification (False) head.

  Returns:
    (kind, scope) as in `hf_names.find_heads`, or ("lm", None).

  Raises:
    ValueError: the named head is absent, or several heads and no name.
  """
  have = ", ".join(scope or kind for kind, scope in heads) or "none"
  if task_name is None:
    if len(heads) > 1:
      raise ValueError(f"the checkpoint holds several heads ({have}): name "
                       "one with --task_name")
    return heads[0] if heads else ("lm", None)
  task = task_name.lower()
  if task in ("squad", "race"):
    wanted = [(task, None)]
  else:
    kinds = {None: ("classification", "regression"), True: ("regression",),
             False: ("classification",)}[is_regression]
    wanted = [(k, f"{k}_{task}") for k in kinds]
  for head in wanted:
    if head in heads:
      return head
  raise ValueError(f"--task_name={task_name}: the checkpoint has no "
                   f"{' or '.join(s or k for k, s in wanted)} head (its "
                   f"heads: {have})")


def special_ids(spiece_model_file):
  """{special symbol: id} of a SentencePiece model; ValueError when the
  model lacks one of the release's symbols."""
  sp = spm.SentencePieceProcessor()
  if not sp.Load(spiece_model_file):
    raise ValueError(f"--spiece_model_file={spiece_model_file}: cannot load")
  ids = {s: sp.PieceToId(s) for s in prepro_utils.SPECIAL_SYMBOLS}
  missing = [s for s, i in ids.items() if i == sp.unk_id() and s != "<unk>"]
  if missing:
    raise ValueError(f"--spiece_model_file={spiece_model_file}: lacks the "
                     f"special symbol(s) {missing}")
  return ids


def digit_comma_pieces(spiece_model_file):
  """The vocabulary's pieces ending in a digit and ',': text that
  SentencePiece cuts into one of them is where our tokenizer (which splits
  the comma off, as the release) and HF's (which has no such step) differ."""
  sp = spm.SentencePieceProcessor()
  sp.Load(spiece_model_file)
  return [p for p in (sp.IdToPiece(i) for i in range(sp.GetPieceSize()))
          if prepro_utils.ends_with_digit_comma(p)]


def hf_config(xlnet_config, kind, scope, n_class, ids, summary):
  """config.json of the exported model (a dict).

  Args:
    xlnet_config: the `XLNetConfig`.
    kind, scope: the head (`choose_head`).
    n_class: classes of a classification head (else None).
    ids: `special_ids`.
    summary: `summary_settings`; None for a head without a summary
      (written as "last" without a projection, which HF does not read).
  """
  summary_type, use_summ_proj = summary or ("last", False)
  c = xlnet_config
  config = {
      "model_type": "xlnet", "architectures": [hf_names.HEADS[kind][0]],
      "vocab_size": c.n_token, "d_model": c.d_model, "n_layer": c.n_layer,
      "n_head": c.n_head, "d_head": c.d_head, "d_inner": c.d_inner,
      "ff_activation": HF_ACTIVATION[c.ff_activation], "untie_r": c.untie_r,
      "attn_type": "bi", "initializer_range": 0.02,
      "layer_norm_eps": LAYER_NORM_EPS, "dropout": 0.1, "mem_len": None,
      "reuse_len": None, "use_mems_eval": True, "use_mems_train": False,
      "bi_data": False, "clamp_len": -1, "same_length": False,
      "summary_type": summary_type, "summary_use_proj": use_summ_proj,
      # HF applies the activation with or without the projection; ours is
      # the projection's ("linear": none; HF's config refuses None).
      "summary_activation": "tanh" if use_summ_proj else "linear",
      "summary_last_dropout": 0.1,
      "start_n_top": BEAM, "end_n_top": BEAM, "tie_word_embeddings": True,
      "pad_token_id": ids["<pad>"], "bos_token_id": ids["<s>"],
      "eos_token_id": ids["</s>"],
  }
  if kind in ("classification", "regression"):
    task = scope.split("_", 1)[1]
    labels = ["LABEL_0"] if kind == "regression" else [
        f"LABEL_{i}" for i in range(n_class)]
    config.update(
        finetuning_task=task,
        problem_type=("regression" if kind == "regression" else
                      "single_label_classification"),
        id2label={str(i): l for i, l in enumerate(labels)},
        label2id={l: i for i, l in enumerate(labels)})
  return config


def tokenizer_files(uncased):
  """{file name: dict} of HF's XLNetTokenizer settings: our text
  normalization (spaces collapsed, accents stripped, lower-casing for
  uncased models) and XLNet's left padding."""
  specials = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
              "sep_token": "<sep>", "pad_token": "<pad>",
              "cls_token": "<cls>", "mask_token": "<mask>",
              "additional_special_tokens": ["<eop>", "<eod>"]}
  config = dict(specials, tokenizer_class="XLNetTokenizer",
                do_lower_case=bool(uncased), remove_space=True,
                keep_accents=False, padding_side="left")
  return {"tokenizer_config.json": config,
          "special_tokens_map.json": specials}


def _write_json(path, value):
  with open(path, "w", encoding="utf-8") as f:
    f.write(json.dumps(value, indent=2, sort_keys=True) + "\n")


def export_hf(checkpoint, xlnet_config, spiece_model_file, output_dir,
              task_name=None, is_regression=None, uncased=False,
              summary_type=None):
  """Writes a checkpoint as a HuggingFace XLNet directory.

  Args:
    checkpoint: checkpoint prefix, directory or DIR/latest.
    xlnet_config: its `XLNetConfig`.
    spiece_model_file: its SentencePiece model.
    output_dir: a new (or empty) directory; written whole or not at all.
    task_name, is_regression: which head (`choose_head`).
    uncased: the model lower-cases its text.
    summary_type: how a summary head pools (`summary_settings`).

  Returns:
    the HF architecture written (e.g. "XLNetForQuestionAnswering").

  Raises:
    ValueError: one line naming the flag or file at fault.
  """
  output_dir_lib.check_output_dir(output_dir)
  check_hf_sizes(xlnet_config)
  ids = special_ids(spiece_model_file)
  prefix = checkpoint_io.resolve_checkpoint(checkpoint, "--checkpoint")
  values = read_model_weights(prefix)
  kind, scope = choose_head(hf_names.find_heads(values), task_name,
                            is_regression)
  summary = summary_settings(prefix, values, kind, summary_type)
  if summary and summary[0] == "attn":
    raise ValueError(
        "HF's XLNet has no 'attn' sequence summary (its SequenceSummary "
        "raises NotImplementedError for it): export this head with "
        "--to=saved_model")
  tensors = hf_names.tf_to_hf(values, kind, scope, xlnet_config.n_layer)
  embedding = tensors["transformer.word_embedding.weight"]
  if embedding.shape[0] != xlnet_config.n_token:
    raise ValueError(f"--model_config_path: n_token={xlnet_config.n_token} "
                     f"but the checkpoint's embedding has {embedding.shape[0]}"
                     " rows")
  n_class = (tensors["logits_proj.weight"].shape[0]
             if kind == "classification" else None)
  config = hf_config(xlnet_config, kind, scope, n_class, ids, summary)
  digit_comma = digit_comma_pieces(spiece_model_file)
  if digit_comma:
    logging.warning(
        "%d pieces of %s end in a digit and ',' (e.g. %s): HF's tokenizer "
        "keeps them where ours splits the comma off (docs/interop.md)",
        len(digit_comma), spiece_model_file, digit_comma[:3])
  with output_dir_lib.staged(output_dir) as tmp:
    _write_json(os.path.join(tmp, "config.json"), config)
    safetensors_numpy.save_file(tensors,
                                os.path.join(tmp, "model.safetensors"),
                                metadata={"format": "pt"})
    shutil.copyfile(spiece_model_file, os.path.join(tmp, "spiece.model"))
    for name, value in tokenizer_files(uncased).items():
      _write_json(os.path.join(tmp, name), value)
  return config["architectures"][0]
