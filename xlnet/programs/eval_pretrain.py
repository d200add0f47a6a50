"""Held-out evaluation of a pretraining checkpoint (`python
eval_pretrain.py`): the flags resolved into `PretrainConfigs`, then
`api.evaluate` (`xlnet/pretraining/held_out.py`)."""
from absl import flags

from xlnet.programs import cli
from xlnet.flags import catalog as flag_catalog


def main(unused_argv):
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.flags import pretraining as pretrain_flags
  from xlnet.pretraining import api
  api.evaluate(pretrain_flags.for_eval_pretrain(flags.FLAGS))


def entry_point():
  """`python eval_pretrain.py ...`."""
  cli.run(main, flag_catalog.define_flags)
