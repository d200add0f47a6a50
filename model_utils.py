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

As a module it keeps the release's names for scripts that import it
(`model_utils.get_train_op(FLAGS, total_loss)`, `init_from_checkpoint`,
`configure_tpu`, `avg_checkpoints`, ...), imported on first use.
"""
from absl import flags

from xlnet.programs import cli
from xlnet.programs import release_names
from xlnet.flags import tool_catalog

FLAGS = flags.FLAGS

# The release's functions, each from the module that holds it now; imported
# on first use, so that --help needs no TensorFlow.
_RELEASE_NAMES = {
    "configure_tpu": "xlnet.flags.release_api",
    "init_from_checkpoint": "xlnet.flags.release_api",
    "get_train_op": "xlnet.flags.release_api",
    "get_assignment_map_from_checkpoint": "xlnet.training.warm_start",
    "clean_ckpt": "xlnet.training.checkpoint_tools",
    "avg_checkpoints": "xlnet.training.checkpoint_tools",
}
_NOT_OFFERED = {"AdamWeightDecayOptimizer": (
    "model_utils.get_train_op(FLAGS, total_loss): Adam, or AdamW with "
    "FLAGS.weight_decay, from xlnet/training/optimizer.py")}
__getattr__, __dir__ = release_names.module_attributes(
    __name__, globals(), _RELEASE_NAMES, _NOT_OFFERED)

_COMMANDS = ("clean_ckpt", "avg_checkpoints", "rollback_ckpt")


def _require(**values):
  """Raises ValueError unless every flag (name=value) is set."""
  unset = [n for n, v in values.items() if v is None]
  if unset:
    raise ValueError("missing flag(s): " + ", ".join(f"--{n}" for n in unset))


def main(argv):
  """Dispatches the command `argv[1]`."""
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.training import checkpoint_tools
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
  cli.run(main, tool_catalog.define_model_utils_flags)
