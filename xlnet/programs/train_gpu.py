"""XLNet pretraining on GPUs, CPUs and several hosts (`python train_gpu.py`):
the flags resolved into `PretrainConfigs`, then `api.pretrain` (the shared
engine, `xlnet/pretraining/pretrain.py`)."""
from absl import flags

from xlnet.programs import cli
from xlnet.flags import catalog as flag_catalog


def main(unused_argv):
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.flags import pretraining as pretrain_flags
  from xlnet.pretraining import api
  api.pretrain(pretrain_flags.for_train_gpu(flags.FLAGS))


def entry_point():
  """`python train_gpu.py ...`."""
  cli.run(main, flag_catalog.define_flags)
