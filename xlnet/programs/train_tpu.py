"""XLNet pretraining on TPUs (`python train_tpu.py`, or `python train.py`):
the flags resolved into `PretrainConfigs`, then `api.pretrain`, with
TPUEstimator (TensorFlow 2.15; `xlnet/pretraining/estimator.py`) or the
shared engine on a TPUStrategy (`--tpu_engine`)."""
from absl import flags

from xlnet.programs import cli
from xlnet.flags import catalog as flag_catalog


def main(unused_argv):
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.flags import pretraining as pretrain_flags
  from xlnet.pretraining import api
  api.pretrain(pretrain_flags.for_train_tpu(flags.FLAGS))


def entry_point():
  """`python train_tpu.py ...` / `python train.py ...` (the release's TPU
  defaults: --use_tpu=True, --num_core_per_host=8)."""
  cli.run(main, lambda: flag_catalog.define_flags(tpu_defaults=True))
