#!/usr/bin/env python3
r"""Checkpoint tools.

Usage:
  python model_utils.py clean_ckpt --clean_input_ckpt=CKPT \
      --clean_output_model_dir=DIR
  python model_utils.py avg_checkpoints --avg_model_dir=DIR \
      --avg_output_model_dir=DIR --avg_num=K
  python model_utils.py rollback_ckpt --model_dir=DIR [--step=N]

clean_ckpt copies only the model weights (no optimizer slots, no global step,
no memories) of CKPT (a checkpoint prefix, a directory or DIR/latest) to
DIR/model.ckpt. avg_checkpoints averages the model weights of the last K
checkpoints listed in DIR/checkpoint and writes them to DIR/model.ckpt.
rollback_ckpt makes a training directory whose newest checkpoint is damaged
resume from its newest intact checkpoint (or from step N): the newer files are
moved into DIR/quarantine/, nothing is deleted.
"""
from absl import flags

from xlnet import cli
from xlnet.training import checkpoint_tools

flags.DEFINE_string("clean_input_ckpt", None,
                    "clean_ckpt: input checkpoint (prefix, directory or "
                    "DIR/latest).")
flags.DEFINE_string("clean_output_model_dir", None,
                    "clean_ckpt: output directory for the cleaned checkpoint.")
flags.DEFINE_string("avg_model_dir", None,
                    "avg_checkpoints: directory holding the checkpoints.")
flags.DEFINE_string("avg_output_model_dir", None,
                    "avg_checkpoints: output directory for the average.")
flags.DEFINE_integer("avg_num", 5,
                     "avg_checkpoints: how many latest checkpoints to average.")
flags.DEFINE_string("model_dir", None,
                    "rollback_ckpt: the training directory.")
flags.DEFINE_integer("step", None,
                     "rollback_ckpt: resume from model.ckpt-STEP instead of "
                     "the newest intact checkpoint.")

FLAGS = flags.FLAGS

_COMMANDS = ("clean_ckpt", "avg_checkpoints", "rollback_ckpt")


def _require(**values):
  """Raises ValueError unless every flag (name=value) is set."""
  unset = [n for n, v in values.items() if v is None]
  if unset:
    raise ValueError("missing flag(s): " + ", ".join(f"--{n}" for n in unset))


def main(argv):
  """Dispatches the command `argv[1]`."""
  if len(argv) != 2 or argv[1] not in _COMMANDS:
    raise ValueError(f"expected one command out of {', '.join(_COMMANDS)}, "
                     f"got {' '.join(argv[1:]) or 'none'}")
  if argv[1] == "clean_ckpt":
    _require(clean_input_ckpt=FLAGS.clean_input_ckpt,
             clean_output_model_dir=FLAGS.clean_output_model_dir)
    checkpoint_tools.clean_ckpt(FLAGS.clean_input_ckpt,
                                FLAGS.clean_output_model_dir)
  elif argv[1] == "avg_checkpoints":
    _require(avg_model_dir=FLAGS.avg_model_dir,
             avg_output_model_dir=FLAGS.avg_output_model_dir)
    checkpoint_tools.avg_checkpoints(FLAGS.avg_model_dir,
                                     FLAGS.avg_output_model_dir,
                                     FLAGS.avg_num)
  else:
    _require(model_dir=FLAGS.model_dir)
    checkpoint_tools.rollback_ckpt(FLAGS.model_dir, FLAGS.step)


if __name__ == "__main__":
  cli.run(main)
