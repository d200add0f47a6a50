r"""Checkpoint post-processing tools.

Usage:
  python model_utils.py clean_ckpt --clean_input_ckpt=CKPT \
      --clean_output_model_dir=DIR
  python model_utils.py avg_checkpoints --avg_model_dir=DIR \
      --avg_output_model_dir=DIR --avg_num=K

clean_ckpt copies only the model weights (no optimizer slots, no global step)
of CKPT (a checkpoint prefix, a directory or DIR/latest) to DIR/model.ckpt.
avg_checkpoints averages the model weights of the last K checkpoints listed in
DIR/checkpoint and writes them to DIR/model.ckpt.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import tensorflow as tf  # noqa: E402

from xlnet import model_utils  # noqa: E402

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

FLAGS = flags.FLAGS

_COMMANDS = ("clean_ckpt", "avg_checkpoints")


def _require(*names):
  """Raises UsageError unless every named flag is set."""
  unset = [n for n in names if not getattr(FLAGS, n)]
  if unset:
    raise app.UsageError("missing flag(s): " +
                         ", ".join(f"--{n}" for n in unset))


def main(argv):
  """Dispatches the subcommand `argv[1]`."""
  if len(argv) != 2 or argv[1] not in _COMMANDS:
    raise app.UsageError(f"expected one command out of {_COMMANDS}, got "
                         f"{argv[1:]}")
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  try:
    if argv[1] == "clean_ckpt":
      _require("clean_input_ckpt", "clean_output_model_dir")
      model_utils.clean_ckpt(FLAGS.clean_input_ckpt,
                             FLAGS.clean_output_model_dir)
    else:
      _require("avg_model_dir", "avg_output_model_dir")
      model_utils.avg_checkpoints(FLAGS.avg_model_dir,
                                  FLAGS.avg_output_model_dir, FLAGS.avg_num)
  except ValueError as e:
    print(f"model_utils.py {argv[1]}: error: {e}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
  app.run(main)
