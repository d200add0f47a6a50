#!/usr/bin/env python3
"""Downloads the released XLNet checkpoints and the paper's data sets into
the layout reproduce.py reads:
`python download.py --data_root=DIR [--only=models,glue,...] [--dry_run]`.

Resumable (rerun the same command), checked (size, format, layout, a
checksum where one is known; SHA-256 recorded in
DIR/download_manifest.json) and atomic; at the end it prints the flags to
pass. Sources, terms and manual steps: docs/reproducing.md ("Getting the
models and data") and `xlnet/downloads/`.
"""
import sys

from absl import flags

from xlnet.programs import cli
from xlnet.downloads import http_fetch
from xlnet.downloads import installer
from xlnet.flags import tool_catalog


def main(argv):
  """Downloads what the flags select; exit code 1 if any entry failed."""
  del argv
  f = flags.FLAGS
  if not f.data_root:
    raise ValueError("--data_root is required (where the data sets land; "
                     "the checkpoints too unless --model_root is given)")
  config = installer.Config(
      data_root=f.data_root, model_root=f.model_root, only=f.only,
      options=http_fetch.Options(timeout=f.timeout, retries=f.retries,
                                 mirror=f.mirror),
      keep_archives=f.keep_archives, dry_run=f.dry_run)
  failed = installer.run(config)
  for line in failed[:-1]:
    print(f"{cli.program_name()}: error: {line}", file=sys.stderr,
          flush=True)
  if failed:
    raise installer.Failed(failed[-1])


if __name__ == "__main__":
  cli.run(main, tool_catalog.define_download_flags)
