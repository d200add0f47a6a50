"""A HuggingFace transformers XLNet directory -> a TensorFlow checkpoint
under the release's names, with `xlnet_config.json` and `spiece.model`
beside it: usable as `--init_checkpoint` by every program. A sequence
classifier's label names and problem type come along in a task record
(`task_record_of`), so that its export names them again."""
import json
import os
import pickle
import shutil

from absl import logging
import safetensors
from safetensors import numpy as safetensors_numpy

from xlnet import model as model_lib
from xlnet.finetuning import config as finetuning_config
from xlnet.interop import hf_export
from xlnet.interop import hf_names
from xlnet.interop import output_dir as output_dir_lib
from xlnet.training import checkpoint_io
from xlnet.training import train_state

# Our activation of each HF activation name that computes exactly the same.
TF_ACTIVATION = {"gelu_new": "gelu", "relu": "relu"}
# The sizes an HF XLNet config must state (the rest have HF's defaults).
_REQUIRED = ("vocab_size", "d_model", "n_layer", "n_head", "d_inner")
# HF's architecture -> our head kind (a regression head is a sequence
# classifier with problem_type "regression" or one label).
_KIND = {arch: kind for kind, (arch, _) in hf_names.HEADS.items()
         if kind != "regression"}
_KIND["XLNetModel"] = "lm"


def read_hf_config(hf_dir):
  """config.json of an HF directory (a dict); one line when it is missing
  or not an XLNet config."""
  path = os.path.join(hf_dir, "config.json")
  if not os.path.isfile(path):
    raise ValueError(f"--checkpoint={hf_dir}: no config.json (expected a "
                     "HuggingFace model directory)")
  try:
    with open(path, encoding="utf-8") as f:
      config = json.load(f)
  except json.JSONDecodeError as e:
    raise ValueError(f"{path} is not valid JSON: {e}") from None
  if config.get("model_type") != "xlnet":
    raise ValueError(f"{path}: model_type is {config.get('model_type')!r}, "
                     "expected 'xlnet'")
  return config


def xlnet_config_of(config, path):
  """Our `XLNetConfig` of an HF XLNet config dict (`path` for messages)."""
  missing = [k for k in _REQUIRED if k not in config]
  if missing:
    raise ValueError(f"{path} lacks {missing} (an XLNet config holds "
                     f"{list(_REQUIRED)})")
  activation = config.get("ff_activation", "gelu")
  if activation not in TF_ACTIVATION:
    raise ValueError(f"{path}: ff_activation {activation!r} has no "
                     f"equivalent here (expected one of "
                     f"{sorted(TF_ACTIVATION)})")
  d_model, n_head = config["d_model"], config["n_head"]
  return model_lib.XLNetConfig.from_dict(dict(
      n_layer=config["n_layer"], d_model=d_model, n_head=n_head,
      d_head=config.get("d_head", d_model // n_head),
      d_inner=config["d_inner"], ff_activation=TF_ACTIVATION[activation],
      untie_r=bool(config.get("untie_r", True)),
      n_token=config["vocab_size"]), path)


def head_of(config, task_name, path):
  """(kind, scope) of the HF model's head: its first architecture;
  a sequence classifier's TF scope is named by `task_name` or the config's
  `finetuning_task`."""
  arch = (config.get("architectures") or ["XLNetLMHeadModel"])[0]
  if arch not in _KIND:
    raise ValueError(f"{path}: architecture {arch} has no equivalent here "
                     f"(expected one of {sorted(_KIND)})")
  kind = _KIND[arch]
  if kind != "classification":
    return kind, None
  if (config.get("problem_type") == "regression"
      or config.get("num_labels", len(config.get("id2label", {}))) == 1):
    kind = "regression"
  task = task_name or config.get("finetuning_task")
  if not task:
    raise ValueError(f"{path}: a sequence classifier without "
                     "finetuning_task: name its task with --task_name")
  return kind, f"{kind}_{task.lower()}"


# HF's sequence summaries and ours: "cls_index" without an index (as the
# sequence classifier and multiple-choice models call it) takes the last
# position, our "last".
_SUMMARY_TYPE = {"last": "last", "cls_index": "last", "first": "first",
                 "mean": "mean"}


def head_record_of(config, kind, path):
  """What a fine-tuned model_dir records of a summary head
  (`ModelConfig.head_record()`) for the HF config's head, or None when the
  head has no summary."""
  if kind not in hf_export.SUMMARY_KINDS:
    return None
  summary_type = config.get("summary_type", "last")
  if summary_type not in _SUMMARY_TYPE:
    raise ValueError(f"{path}: summary_type {summary_type!r} has no "
                     f"equivalent here (expected one of "
                     f"{sorted(_SUMMARY_TYPE)})")
  use_proj = bool(config.get("summary_use_proj", True))
  activation = config.get("summary_activation", "tanh")
  if (activation == "tanh") != use_proj or activation not in (
      "tanh", "linear", "", None):
    raise ValueError(
        f"{path}: summary_activation {activation!r} with summary_use_proj "
        f"{use_proj} has no equivalent here (ours: a tanh projection, or "
        "neither)")
  return {"summary_type": _SUMMARY_TYPE[summary_type],
          "use_summ_proj": use_proj}


def n_class_of(config):
  """The labels of an HF sequence classifier's config (HF's default: 2)."""
  return len(config.get("id2label") or {}) or config.get("num_labels", 2)


def label_names(config, n_class):
  """A classifier's labels (a token classifier's tags), in class order: its
  config's id2label (HF's `LABEL_{i}` where it has none)."""
  id2label = config.get("id2label") or {}
  return [str(id2label.get(str(i), f"LABEL_{i}")) for i in range(n_class)]


def task_record_of(config, kind, scope):
  """What a fine-tuned model_dir's task record (`TASK_FILE`) says of an HF
  sequence or token classifier, so that the export of the checkpoint
  (`hf_export.recorded_labels`, `recorded_multi_label`) gives its label
  names and problem type again; None for the other heads."""
  if kind == "tagging":
    return {"kind": kind,
            "label_list": label_names(config, n_class_of(config))}
  if kind != "classification":
    return None
  record = {"kind": "classifier", "task_name": scope.split("_", 1)[1],
            "cls_scope": None,
            "label_list": label_names(config, n_class_of(config))}
  if config.get("problem_type") == hf_export.PROBLEM_TYPES["multi_label"]:
    record["multi_label"] = True
  return record


def read_hf_weights(hf_dir):
  """{HF name: np.ndarray} of `model.safetensors` (or its shards), else of
  `pytorch_model.bin` when PyTorch is installed; one line naming the file
  when one is truncated or corrupt."""
  single = os.path.join(hf_dir, "model.safetensors")
  index = single + ".index.json"
  if os.path.isfile(single):
    return _read_safetensors(single)
  if os.path.isfile(index):
    tensors = {}
    for name in _shards(index):
      tensors.update(_read_safetensors(os.path.join(hf_dir, name)))
    return tensors
  return _read_torch_bin(hf_dir)


def _shards(index):
  """The file names an `model.safetensors.index.json` lists."""
  try:
    with open(index, encoding="utf-8") as f:
      weight_map = json.load(f)["weight_map"]
    return sorted(set(weight_map.values()))
  except (ValueError, KeyError, TypeError, AttributeError) as e:
    raise ValueError(f"{index} is not a safetensors index (a JSON object "
                     "with a 'weight_map' of tensor -> file): "
                     f"{type(e).__name__} {e}") from None


def _read_safetensors(path):
  """The tensors of one safetensors file."""
  try:
    return dict(safetensors_numpy.load_file(path))
  except safetensors.SafetensorError as e:
    raise ValueError(f"{path} is truncated or corrupt ({e}); download or "
                     "save it again") from None


def _read_torch_bin(hf_dir):
  path = os.path.join(hf_dir, "pytorch_model.bin")
  if not os.path.isfile(path):
    raise ValueError(f"--checkpoint={hf_dir}: no model.safetensors (nor "
                     "pytorch_model.bin)")
  try:
    import torch  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError(f"{path}: reading a PyTorch .bin needs PyTorch (pip "
                     "install torch), or save the model as safetensors") from None
  try:
    state = torch.load(path, map_location="cpu", weights_only=True)
  except (RuntimeError, EOFError, pickle.UnpicklingError) as e:
    raise ValueError(f"{path} is truncated or corrupt ({e}); download or "
                     "save it again") from None
  return {k: v.float().numpy() for k, v in state.items()}


def _strip_base_prefix(tensors):
  """Names of a bare `XLNetModel` (no `transformer.` prefix) as a headed
  model's."""
  if any(k.startswith("transformer.") for k in tensors):
    return tensors
  return {f"transformer.{k}": v for k, v in tensors.items()}


def _warn_unused(tensors, kind, scope, n_layer, hf_dir):
  """One warning listing the HF tensors the checkpoint does not keep (e.g.
  another head's, or an untied LM softmax)."""
  used = set(hf_names.hf_names_of(kind, scope, n_layer))
  unused = sorted(n for n in tensors if n not in used)
  if unused:
    logging.warning("%d tensor(s) of %s have no place in the %s checkpoint "
                    "and are left out: %s", len(unused), hf_dir, kind,
                    ", ".join(unused[:5]) + (", ..." if len(unused) > 5
                                             else ""))


def import_hf(hf_dir, output_dir, task_name=None):
  """Writes an HF XLNet directory as a checkpoint directory.

  Args:
    hf_dir: a directory with config.json, model.safetensors (or
      pytorch_model.bin) and spiece.model.
    output_dir: a new (or empty) directory; it receives `model.ckpt`,
      `xlnet_config.json`, `spiece.model`, for a summary head `head.json`
      (`head_record_of`) and for a sequence or token classifier
      `task.json` (`task_record_of`: labels, tags), whole or not at all.
    task_name: the TF scope of a sequence classification head (default:
      the config's `finetuning_task`).

  Returns:
    the checkpoint prefix written.

  Raises:
    ValueError: one line naming the file or flag at fault.
  """
  output_dir_lib.check_output_dir(output_dir)
  config_path = os.path.join(hf_dir, "config.json")
  config = read_hf_config(hf_dir)
  xlnet_config = xlnet_config_of(config, config_path)
  kind, scope = head_of(config, task_name, config_path)
  head = head_record_of(config, kind, config_path)
  spiece = os.path.join(hf_dir, "spiece.model")
  if not os.path.isfile(spiece):
    raise ValueError(f"--checkpoint={hf_dir}: no spiece.model")
  tensors = _strip_base_prefix(read_hf_weights(hf_dir))
  untie_r = xlnet_config.untie_r or not hf_names.relative_biases_shared(
      tensors, xlnet_config.n_layer)
  if untie_r != xlnet_config.untie_r:
    xlnet_config = model_lib.XLNetConfig.from_dict(
        dict(xlnet_config.to_dict(), untie_r=True), config_path)
  n_class = (n_class_of(config) if kind in ("classification", "tagging")
             else 1)
  values = hf_names.hf_to_tf(
      tensors, kind, scope, hf_names.sizes_of(xlnet_config, n_class),
      untie_r, f"the model in {hf_dir}", config_path)
  _warn_unused(tensors, kind, scope, xlnet_config.n_layer, hf_dir)
  with output_dir_lib.staged(output_dir) as tmp:
    prefix = checkpoint_io.write_checkpoint(
        os.path.join(tmp, checkpoint_io.CKPT_BASENAME), values)
    xlnet_config.to_json(os.path.join(tmp, "xlnet_config.json"))
    shutil.copyfile(spiece, os.path.join(tmp, "spiece.model"))
    if head:
      train_state.write_run_record(
          os.path.join(tmp, finetuning_config.HEAD_FILE), head)
    task = task_record_of(config, kind, scope)
    if task:
      train_state.write_run_record(
          os.path.join(tmp, finetuning_config.TASK_FILE), task)
  default = finetuning_config.ModelConfig(xlnet_config).head_record()
  if head and head != default:
    logging.warning(
        "the head pools with --summary_type=%s --use_summ_proj=%s: give "
        "those flags to the fine-tuning programs that load it",
        head["summary_type"], head["use_summ_proj"])
  return os.path.join(output_dir, os.path.basename(prefix))
