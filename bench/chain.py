"""The paper's chain in miniature: pretrain a small XLNet with this code,
fine-tune it on labelled sets from its checkpoint and from a random
initialization (several seeds each), and report whether pretraining helps
(docs/chain.md).

  python scripts/get_chain_data.py          # the public data, once
  python bench/chain.py [--work_dir=chain_out] [--tasks=...] [--seeds=1,2,3]

Rerun the same command after a kill or Ctrl-C: it goes on where it stopped.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))

from absl import flags  # noqa: E402
from absl import logging  # noqa: E402

from xlnet.flags import chain_catalog  # noqa: E402
from xlnet.programs import cli  # noqa: E402


def main(unused_argv):
  from xlnet.chain import api  # pylint: disable=g-import-not-at-top
  # The programs log into their own files; the chain shows its progress.
  logging.set_verbosity(logging.WARNING)
  api.run_chain(chain_catalog.chain_config_from(flags.FLAGS,
                                                sys.executable))


if __name__ == "__main__":
  cli.run(main, chain_catalog.define_chain_flags)
