"""Fetches the demo corpus (Botchan) into data/demo/botchan.txt.

Usage: python scripts/get_demo_corpus.py [DEST_DIR]
"""
import os
import sys

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from xlnet.demo_corpus import get_demo_corpus  # noqa: E402

if __name__ == "__main__":
  print(get_demo_corpus(*sys.argv[1:2]))
