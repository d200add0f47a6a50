#!/usr/bin/env python3
"""Writes tests/file_seconds.json from the output of a whole run:

  bash scripts/test.sh --durations=0 > run.log 2>&1
  python scripts/file_seconds.py run.log

The table holds, per environment, each test file's seconds (set-up, call
and teardown of its tests summed). tests/conftest.py hands the files to the
pytest workers longest first (each worker runs whole files): a long file
started last keeps one worker busy while the other has nothing left, which
cost the three environments about 140 s of a run. Regenerate it when a
file's time changes by much; a file it does not name goes last, in
collection order.
"""
import argparse
import collections
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(REPO, "tests", "file_seconds.json")
_ENV = re.compile(r"=== tests on '(\w+)'")
_DURATION = re.compile(r"\s*([0-9.]+)s (?:setup|call|teardown)\s+"
                       r"(tests/[^:\s]+\.py)::")


def file_seconds(lines):
  """{env: {test file: seconds}} from the lines of a run's output."""
  seconds = collections.defaultdict(lambda: collections.defaultdict(float))
  env = None
  for line in lines:
    header = _ENV.match(line)
    if header:
      env = header.group(1)
      continue
    duration = _DURATION.match(line)
    if duration and env:
      seconds[env][duration.group(2)] += float(duration.group(1))
  return {env: {path: round(s, 1) for path, s in sorted(files.items())}
          for env, files in sorted(seconds.items())}


def main(argv):
  parser = argparse.ArgumentParser(
      prog="file_seconds.py",
      description="Writes each test file's seconds, per environment, from "
                  "the output of `bash scripts/test.sh --durations=0`.")
  parser.add_argument("run_log", help="the saved output of the run")
  parser.add_argument("--table", default=TABLE,
                      help="where to write the table (default: %(default)s)")
  args = parser.parse_args(argv[1:])
  try:
    with open(args.run_log, encoding="utf-8", errors="replace") as f:
      table = file_seconds(f)
  except OSError as e:
    sys.exit(f"file_seconds.py: cannot read the run's output "
             f"{args.run_log}: {e.strerror}")
  if not table:
    sys.exit(f"file_seconds.py: no test durations in {args.run_log}: run "
             "`bash scripts/test.sh --durations=0` and give its output")
  with open(args.table + ".tmp", "w", encoding="utf-8") as f:
    json.dump(table, f, indent=1, sort_keys=True)
    f.write("\n")
  os.replace(args.table + ".tmp", args.table)
  print(f"wrote {args.table}: " + ", ".join(
      f"{env} {len(files)} files, {sum(files.values()):.0f} s"
      for env, files in table.items()))


if __name__ == "__main__":
  main(sys.argv)
