"""TensorFlow checkpoint -> a HuggingFace transformers XLNet directory.

Writes `config.json`, `model.safetensors` (through the `safetensors`
package's NumPy API: no PyTorch needed), `spiece.model` and the tokenizer
files (`tokenizer.json`: `hf_tokenizer`), so that
`XLNet*.from_pretrained(DIR)` and `AutoTokenizer.from_pretrained(DIR)` load
the model and its tokenizer.
"""
import json
import os
import shutil

from absl import logging
import sentencepiece as spm
from safetensors import numpy as safetensors_numpy
import tensorflow as tf

from xlnet import model as model_lib
from xlnet import settings_files
from xlnet import task_kinds
from xlnet.data import prepro_utils
from xlnet.data import spm_train
from xlnet.finetuning import config as finetuning_config
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.long_documents import settings as long_documents
from xlnet.interop import hf_names
from xlnet.interop import hf_tokenizer
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


# What a checkpoint's directory may hold of its config: a run of ours
# writes config.json, a release (and --to=tf) xlnet_config.json.
CONFIG_FILES = finetuning_config.CONFIG_FILES
SPIECE_FILE = "spiece.model"


def model_config(prefix, xlnet_config=None):
  """The `XLNetConfig` of a checkpoint, and what gave it (for messages).

  Args:
    prefix: the checkpoint prefix.
    xlnet_config: an `XLNetConfig`, the path of a JSON config
      (--model_config_path), or None: the first of `CONFIG_FILES` in the
      checkpoint's directory.

  Returns:
    (XLNetConfig, str naming its source).

  Raises:
    ValueError: one line when None is given and the directory holds none.
  """
  if isinstance(xlnet_config, model_lib.XLNetConfig):
    return xlnet_config, "--model_config_path"
  if xlnet_config:
    return (model_lib.XLNetConfig(json_path=xlnet_config),
            f"--model_config_path={xlnet_config}")
  directory = os.path.dirname(prefix)
  for name in CONFIG_FILES:
    path = os.path.join(directory, name)
    if os.path.isfile(path):
      logging.info("the model's sizes: %s", path)
      return model_lib.XLNetConfig(json_path=path), path
  raise ValueError(f"--checkpoint={prefix}: its directory holds no "
                   f"{' or '.join(CONFIG_FILES)}; give the model's config "
                   "with --model_config_path")


def spiece_of(prefix, spiece_model_file=None):
  """`spiece_model_file`, or the checkpoint directory's spiece.model (a
  release's, or --to=tf's); one line when there is none."""
  if spiece_model_file:
    return spiece_model_file
  path = os.path.join(os.path.dirname(prefix), SPIECE_FILE)
  if os.path.isfile(path):
    return path
  raise ValueError(f"--checkpoint={prefix}: its directory holds no "
                   f"{SPIECE_FILE}; give the model's SentencePiece model "
                   "with --spiece_model_file")


def read_model_weights(checkpoint):
  """The model weights of a checkpoint (prefix, directory or DIR/latest):
  dict TF name -> np.ndarray, optimizer slots and step counters left out."""
  prefix = checkpoint_io.resolve_checkpoint(checkpoint, "--checkpoint")
  names = [n for n, _ in tf.train.list_variables(prefix)
           if not checkpoint_tools.is_model_state(n)]
  return checkpoint_io.read_tensors(prefix, names)


# The heads that pool the sequence (`modeling.summarize_sequence`).
SUMMARY_KINDS = tuple(head for kind in task_kinds.KINDS
                      if kind.pools_sequence for head in kind.heads)
_ATTN_SUMMARY = "model/sequnece_summary/summary_bias"
_SUMMARY_PROJ = "model/sequnece_summary/summary/kernel"


def read_head_record(path):
  """The head record fine-tuning wrote (`finetuning/config.HEAD_FILE`), or
  None when there is none.

  Returns:
    dict with `summary_type` (one of `SUMMARY_TYPES`) and, when recorded,
    `use_summ_proj` (bool).

  Raises:
    ValueError: one line naming the file, the value and the allowed ones.
  """
  record = settings_files.read(
      path, settings_files.Fields({}), "head record", "fine-tuning writes "
      'it, e.g. {"summary_type": "last", "use_summ_proj": true}: restore '
      "it, or move it away and give --summary_type")
  if record is None:
    return None
  allowed = ", ".join(finetuning_config.SUMMARY_TYPES)
  summary_type = record.get("summary_type")
  if summary_type not in finetuning_config.SUMMARY_TYPES:
    raise ValueError(f"{path}: summary_type {json.dumps(summary_type)} is "
                     f"not one of {allowed}")
  if not isinstance(record.get("use_summ_proj", True), bool):
    raise ValueError(f"{path}: use_summ_proj "
                     f"{json.dumps(record['use_summ_proj'])} is not true or "
                     "false")
  return record


def summary_settings(prefix, names, kind, summary_type=None):
  """How the checkpoint's head pools the sequence.

  Args:
    prefix: the checkpoint prefix.
    names: its variable names.
    kind: the head (`choose_head`).
    summary_type: --summary_type, or None: what the checkpoint's directory
      records (`read_head_record`), else "last" (the fine-tuning programs'
      default, with a warning that nothing records it).

  Returns:
    (summary_type, use_summ_proj), or None for a head without a summary;
    the projection is on when the checkpoint holds its variables.

  Raises:
    ValueError: one line when --summary_type or the record contradicts the
      other or the checkpoint's variables, or the record is malformed.
  """
  if kind not in SUMMARY_KINDS:
    return None
  path = os.path.join(os.path.dirname(prefix), finetuning_config.HEAD_FILE)
  record = read_head_record(path) or {}
  recorded = record.get("summary_type")
  if summary_type and recorded and summary_type != recorded:
    raise ValueError(f"--summary_type={summary_type} but {path} records "
                     f"summary_type={recorded}, the one the head was "
                     "fine-tuned with")
  if not summary_type and not recorded:
    logging.warning(
        "%s is missing: the %s head is exported pooling the sequence with "
        "summary_type=last (the fine-tuning default); if it was fine-tuned "
        "with another, give --summary_type", path, kind)
  has_proj = _SUMMARY_PROJ in names
  if record.get("use_summ_proj", has_proj) != has_proj:
    raise ValueError(
        f"{path} records use_summ_proj={str(not has_proj).lower()} but "
        f"--checkpoint={prefix} {'holds' if has_proj else 'lacks'} "
        f"{_SUMMARY_PROJ}: is it the record of this checkpoint?")
  chosen = summary_type or recorded or "last"
  if (_ATTN_SUMMARY in names) != (chosen == "attn"):
    raise ValueError(
        f"--checkpoint={prefix}: summary_type={chosen} but the checkpoint "
        + ("holds" if chosen != "attn" else "lacks")
        + f" the 'attn' summary's {_ATTN_SUMMARY}"
        + ("; pass --summary_type=attn" if chosen != "attn" else ""))
  return chosen, has_proj


# The heads with a class per label, by their logit kernel's TF name.
_LABELLED_KERNELS = {"classification": "model/{scope}/logit/kernel",
                     "tagging": hf_names.HEADS["tagging"][1][0][0]}


def n_class_of(shapes, kind, scope):
  """The classes of a classification or tagging head (its logit kernel's
  width in `shapes`, a dict name -> shape or array), else None."""
  if kind not in _LABELLED_KERNELS:
    return None
  kernel = shapes.get(_LABELLED_KERNELS[kind].format(scope=scope))
  if kernel is None:
    return None
  return list(getattr(kernel, "shape", kernel))[-1]


def check_hf_sizes(xlnet_config, config_source="--model_config_path"):
  """HF derives d_head = d_model / n_head: refuses sizes it cannot hold."""
  c = xlnet_config
  if c.d_head * c.n_head != c.d_model:
    raise ValueError(f"{config_source}: HF XLNet needs d_head * n_head "
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
  if task in hf_names.ONE_TASK_KINDS:
    wanted = [(task, None)]
  else:
    kinds = {None: hf_names.TASK_SCOPED_KINDS, True: ("regression",),
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
  """The vocabulary's pieces ending in a digit and ',' (`spm_train`'s):
  text that SentencePiece cuts into one of them is where our tokenizer
  (which splits the comma off, as the release) and HF's (which has no such
  step) differ."""
  return spm_train.digit_comma_pieces(
      spm.SentencePieceProcessor(model_file=spiece_model_file))


# HF's `problem_type` of each sequence classifier: a classification head
# fine-tuned with --multi_label (its task record says so) is HF's
# multi-label classifier (sigmoid outputs, BCEWithLogitsLoss).
PROBLEM_TYPES = {"regression": "regression",
                 "classification": "single_label_classification",
                 "multi_label": "multi_label_classification"}


def _head_record(prefix, kind, scope):
  """The task record fine-tuning wrote beside the checkpoint (its
  directory's `TASK_FILE`) when it was written for this head: a tagging
  run's for `tagging`, a run whose classification or regression head is
  `scope` for those kinds; else None."""
  path = os.path.join(os.path.dirname(prefix), finetuning_config.TASK_FILE)
  record = train_state.read_run_record(path)
  if not isinstance(record, dict):
    return None
  if kind == "tagging":
    return record if record.get("kind") == "tagging" else None
  task = str(record.get("task_name", ""))
  if kind == "classification":
    own = classifier_head.classification_scope(task, record.get("cls_scope"))
  elif kind == "regression":
    own = classifier_head.regression_scope(task)
  else:
    return None
  return record if own == scope else None


def recorded_task(prefix, kind, scope):
  """The task record of this classification or tagging head
  (`_head_record`), else None (no record, another head's, a head without
  labels)."""
  return (_head_record(prefix, kind, scope) if kind in _LABELLED_KERNELS
          else None)


def recorded_multi_label(prefix, kind, scope):
  """Whether the checkpoint's classification head was fine-tuned with
  --multi_label (its task record's `multi_label`)."""
  return bool((recorded_task(prefix, kind, scope) or {}).get("multi_label"))


def recorded_labels(prefix, kind, scope, n_class):
  """The label names fine-tuning recorded for a classification or tagging
  head (`label_list` of its `recorded_task`), or None: no such record.

  Raises:
    ValueError: one line when the record's labels are not `n_class`
      distinct names.
  """
  record = recorded_task(prefix, kind, scope)
  if record is None:
    return None
  path = os.path.join(os.path.dirname(prefix), finetuning_config.TASK_FILE)
  labels = record.get("label_list")
  names = [str(l) for l in labels] if isinstance(labels, list) else []
  if len(names) != n_class or len(set(names)) != n_class:
    raise ValueError(f"{path}: label_list {json.dumps(labels)[:80]} is not "
                     f"{n_class} distinct names, one per class of the "
                     f"checkpoint's {scope} head")
  return names


def recorded_long_documents(prefix, kind, scope):
  """How the checkpoint's classification or regression head read long
  documents (its `_head_record`): (a `LongDocuments`, the windows'
  max_seq_length), or None: no record, another head's, or `truncate`."""
  record = (_head_record(prefix, kind, scope)
            if kind in hf_names.TASK_SCOPED_KINDS else None)
  if record is None:
    return None
  settings = long_documents.LongDocuments.from_record(record)
  return (settings, record["max_seq_length"]) if settings.in_windows else None


def hf_config(xlnet_config, kind, scope, n_class, ids, summary,
              labels=None, multi_label=False, long_document=None):
  """config.json of the exported model (a dict).

  Args:
    xlnet_config: the `XLNetConfig`.
    kind, scope: the head (`choose_head`).
    n_class: classes of a classification or tagging head (else None).
    ids: `special_ids`.
    summary: `summary_settings`; None for a head without a summary
      (written as "last" without a projection, which HF does not read).
    labels: a classification or tagging head's label names
      (`recorded_labels`), or None: HF's `LABEL_{i}`.
    multi_label: the classification head is multi-label
      (`recorded_multi_label`).
    long_document: `recorded_long_documents`: the settings go into the
      config as `long_documents` (ours; HF keeps unknown keys), and memory
      mode's memory length into HF's `mem_len` (its `mems` then hold
      exactly ours).
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
  if kind == "tagging":
    labels = labels or [f"LABEL_{i}" for i in range(n_class)]
    config.update(id2label={str(i): l for i, l in enumerate(labels)},
                  label2id={l: i for i, l in enumerate(labels)})
  if kind in hf_names.TASK_SCOPED_KINDS:
    task = scope.split("_", 1)[1]
    labels = labels or [f"LABEL_{i}" for i in range(n_class or 1)]
    config.update(
        finetuning_task=task,
        problem_type=PROBLEM_TYPES["multi_label" if multi_label else kind],
        id2label={str(i): l for i, l in enumerate(labels)},
        label2id={l: i for i, l in enumerate(labels)})
  if long_document:
    settings, max_seq_length = long_document
    config["long_documents"] = dict(settings.record(),
                                    max_seq_length=max_seq_length)
    if settings.long_documents == long_documents.MEMORY:
      config["mem_len"] = settings.memory_length(max_seq_length)
  return config


# What HF's tokenizer returns: XLNet's segments (`token_type_ids`: A and
# its <sep> 0, B and its <sep> 1, <cls> 2, as our features) are not among
# transformers 5's defaults (input_ids, attention_mask).
MODEL_INPUT_NAMES = ("input_ids", "token_type_ids", "attention_mask")


def tokenizer_files(uncased, spiece_model_file):
  """{file name: dict} of HF's XLNetTokenizer: the fast tokenizer itself
  (`hf_tokenizer.tokenizer_json`), and the settings of the tokenizer
  transformers builds from `spiece.model` when it does not read
  `tokenizer.json`: our text normalization (spaces collapsed, accents
  stripped, lower-casing for uncased models), XLNet's left padding, and
  segment ids in the outputs."""
  specials = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
              "sep_token": "<sep>", "pad_token": "<pad>",
              "cls_token": "<cls>", "mask_token": "<mask>",
              "additional_special_tokens": ["<eop>", "<eod>"]}
  config = dict(specials, tokenizer_class="XLNetTokenizer",
                do_lower_case=bool(uncased), remove_space=True,
                keep_accents=False, padding_side="left",
                model_input_names=list(MODEL_INPUT_NAMES))
  return {"tokenizer_config.json": config,
          "special_tokens_map.json": specials,
          "tokenizer.json": hf_tokenizer.tokenizer_json(spiece_model_file,
                                                        uncased)}


def _write_json(path, value):
  with open(path, "w", encoding="utf-8") as f:
    f.write(json.dumps(value, indent=2, sort_keys=True) + "\n")


def export_hf(checkpoint, xlnet_config, spiece_model_file, output_dir,
              task_name=None, is_regression=None, uncased=False,
              summary_type=None):
  """Writes a checkpoint as a HuggingFace XLNet directory.

  Args:
    checkpoint: checkpoint prefix, directory or DIR/latest.
    xlnet_config: its `XLNetConfig`, a JSON config's path, or None: the
      checkpoint directory's (`model_config`).
    spiece_model_file: its SentencePiece model, or None: the checkpoint
      directory's spiece.model.
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
  prefix = checkpoint_io.resolve_checkpoint(checkpoint, "--checkpoint")
  xlnet_config, config_source = model_config(prefix, xlnet_config)
  check_hf_sizes(xlnet_config, config_source)
  spiece_model_file = spiece_of(prefix, spiece_model_file)
  ids = special_ids(spiece_model_file)
  values = read_model_weights(prefix)
  kind, scope = choose_head(hf_names.find_heads(values), task_name,
                            is_regression)
  summary = summary_settings(prefix, values, kind, summary_type)
  if summary and summary[0] == "attn":
    raise ValueError(
        "HF's XLNet has no 'attn' sequence summary (its SequenceSummary "
        "raises NotImplementedError for it): export this head with "
        "--to=saved_model")
  n_class = n_class_of(values, kind, scope)
  tensors = hf_names.tf_to_hf(
      values, kind, scope, hf_names.sizes_of(xlnet_config, n_class or 1),
      f"--checkpoint={prefix}", config_source)
  config = hf_config(xlnet_config, kind, scope, n_class, ids, summary,
                     recorded_labels(prefix, kind, scope, n_class),
                     recorded_multi_label(prefix, kind, scope),
                     recorded_long_documents(prefix, kind, scope))
  digit_comma = digit_comma_pieces(spiece_model_file)
  if digit_comma:
    logging.warning(spm_train.digit_comma_advice(digit_comma,
                                                 spiece_model_file))
  files = tokenizer_files(uncased, spiece_model_file)
  hf_tokenizer.check_ids(files["tokenizer.json"], spiece_model_file, uncased)
  with output_dir_lib.staged(output_dir) as tmp:
    _write_json(os.path.join(tmp, "config.json"), config)
    safetensors_numpy.save_file(tensors,
                                os.path.join(tmp, "model.safetensors"),
                                metadata={"format": "pt"})
    shutil.copyfile(spiece_model_file, os.path.join(tmp, "spiece.model"))
    for name, value in files.items():
      _write_json(os.path.join(tmp, name), value)
  return config["architectures"][0]
