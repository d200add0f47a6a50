"""The demo's closing report: unigram baseline and masked-word predictions.

Usage (scripts/demo.sh runs it):
  python scripts/demo_report.py --model_dir=demo_out/model \
    --record_info_dir=demo_out/data/valid/tfrecords \
    --train_text=demo_out/text/train.txt --heldout_text=demo_out/text/valid.txt
See xlnet/demo/demo_report.py and --helpfull.
"""
import os
import sys

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from xlnet.demo import demo_report  # noqa: E402

if __name__ == "__main__":
  demo_report.entry_point()
