"""Fetches the demo corpus (Botchan) into data/demo/botchan.txt.

Usage:
  python scripts/get_demo_corpus.py [--dest_dir=data/demo]
  python scripts/get_demo_corpus.py --split_dir=DIR [--heldout_fraction=0.1]
The first form prints the corpus path. With --split_dir it also writes
DIR/train.txt and DIR/valid.txt (the last documents held out) and prints
their two paths on the last line.
"""
import os
import sys

from absl import flags

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from xlnet.programs import cli  # noqa: E402
from xlnet.demo import demo_corpus  # noqa: E402
from xlnet.flags import tool_catalog  # noqa: E402


def define_flags():
  """The script's flags."""
  tool_catalog.define_demo_corpus_flags(dest_dir=demo_corpus.DEFAULT_DEST)


def main(unused_argv):
  FLAGS = flags.FLAGS
  corpus = demo_corpus.get_demo_corpus(FLAGS.dest_dir)
  print(corpus)
  if FLAGS.split_dir:
    print(*demo_corpus.write_heldout_split(corpus, FLAGS.split_dir,
                                           FLAGS.heldout_fraction))


if __name__ == "__main__":
  cli.run(main, define_flags)
