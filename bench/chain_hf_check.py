"""The chain's exported models in HF transformers (run by bench/chain.py's
hf stage, in an environment with TensorFlow, PyTorch and transformers):

  python bench/chain_hf_check.py --work_dir=chain_out \
      --model_dir=chain_out/finetune/sentiment/pretrained-s1 \
      --dev=chain_out/sets/sentiment/dev.csv \
      --heldout=chain_out/text/valid.txt

Writes work_dir/hf/check.json (xlnet/chain/hf_check.py).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))

from absl import flags  # noqa: E402

from xlnet.flags import chain_catalog  # noqa: E402
from xlnet.programs import cli  # noqa: E402


def main(unused_argv):
  from xlnet.chain import hf_check  # pylint: disable=g-import-not-at-top
  values = flags.FLAGS
  hf_check.run(values.work_dir, values.model_dir, values.dev,
               values.heldout)


if __name__ == "__main__":
  cli.run(main, chain_catalog.define_chain_hf_flags)
