"""What a fine-tuned model_dir records of its run, read back to predict in
memory (`classifier/loaded_model.py`, `tagging/loaded_model.py`).

Fine-tuning writes beside its checkpoints (`finetune.train`'s
`config.ModelRecord`): `config.json` (the sizes), `task.json` (the task's
settings, with its `kind`) and `spiece.model`; `read` returns them, or one
line naming the file that is missing or not the kind asked for.
"""
import os

import tensorflow as tf

from xlnet import model as model_lib
from xlnet.data import prepro_utils
from xlnet.finetuning import config as finetuning_config
from xlnet.training import checkpoint_io
from xlnet.training import train_state


def required(model_dir, name, what, program):
  """The path of `name` in model_dir; one line when it is missing (`what`
  it holds, the `program` that writes it)."""
  path = os.path.join(model_dir, name)
  if not tf.io.gfile.exists(path):
    raise ValueError(f"{model_dir} holds no {name} ({what}); {program} "
                     "writes it into its --model_dir (directories "
                     "fine-tuned before it did: rerun fine-tuning on them)")
  return path


def read(model_dir, checkpoint, kind, program):
  """A fine-tuned model_dir's checkpoint prefix, sizes, task record and
  SentencePiece model.

  Args:
    model_dir: the directory fine-tuning wrote.
    checkpoint: a prefix or directory (its newest), or None: model_dir's
      newest.
    kind: the task record's `kind` expected ("classifier", "tagging").
    program: the program that writes such a directory, for the messages.

  Returns:
    (prefix, XLNetConfig, the task record dict, a SentencePieceProcessor).

  Raises:
    ValueError: one line naming the missing or malformed file.
  """
  prefix = checkpoint_io.resolve_checkpoint(checkpoint or model_dir,
                                            "checkpoint")
  xlnet_config = model_lib.XLNetConfig(json_path=required(
      model_dir, finetuning_config.MODEL_CONFIG_FILE, "the model's sizes",
      program))
  task_path = required(model_dir, finetuning_config.TASK_FILE,
                       "the task's settings", program)
  task = train_state.read_run_record(task_path)
  if not isinstance(task, dict) or task.get("kind") != kind:
    raise ValueError(f"{task_path}: not the task record of a {kind} "
                     f"({program})")
  sp_model = prepro_utils.load_sp_model(required(
      model_dir, finetuning_config.SPIECE_FILE, "the SentencePiece model",
      program), "spiece.model")
  return prefix, xlnet_config, task, sp_model
