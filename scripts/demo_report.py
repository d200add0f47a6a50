"""The demo's closing report: unigram baseline and masked-word predictions.

Usage (scripts/demo.sh runs it):
  python scripts/demo_report.py --model_dir=demo_out/model \
    --record_info_dir=demo_out/data/valid/tfrecords \
    --train_text=demo_out/text/train.txt --heldout_text=demo_out/text/valid.txt
See xlnet/demo/demo_report.py and --help.
"""
import os
import sys

from absl import flags

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from xlnet.programs import cli  # noqa: E402
from xlnet.demo import demo_report  # noqa: E402
from xlnet.flags import tool_catalog  # noqa: E402

REQUIRED = ("model_dir", "record_info_dir", "train_text", "heldout_text")


def main(argv):
  """Prints the report of the checkpoint the flags name."""
  del argv
  f = flags.FLAGS
  for name in REQUIRED:
    if not f[name].value:
      raise ValueError(f"--{name} is required")
  demo_report.run_report(
      model_dir=f.model_dir, record_info_dir=f.record_info_dir,
      eval_split=f.eval_split, train_text=f.train_text,
      heldout_text=f.heldout_text, num_sentences=f.num_sentences,
      hide_fraction=f.hide_fraction, top_k=f.top_k, seed=f.seed)


if __name__ == "__main__":
  cli.run(main, tool_catalog.define_demo_report_flags)
