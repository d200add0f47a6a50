"""A download's progress lines (`http_fetch.fetch`): bytes, percent, rate
and ETA every few seconds, then the bytes and time it took; and the other
news of a download (a restart, a retry), one line each.
"""
import sys
import time

from xlnet.training import progress


def format_bytes(count):
  """`count` bytes as e.g. `1.34 GB`, `512 B`."""
  for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
    if count >= size:
      return f"{count / size:.2f} {unit}"
  return f"{count} B"


def say(out, text):
  """One line of news (progress, a restart, a retry) to `out` (default:
  stderr)."""
  print(text, file=out or sys.stderr, flush=True)


class Line:
  """A download's progress lines: bytes, percent, rate and ETA every
  `every` seconds, and its last line."""

  def __init__(self, label, have, total, every, out):
    self.label, self.have, self.total = label, have, total
    self.every, self.out = every, out
    self.start = self.last = time.monotonic()
    self.first = have

  def update(self, have):
    self.have = have
    now = time.monotonic()
    if now - self.last >= self.every:
      self.last = now
      self._print(self._line(now))

  def _line(self, now):
    rate = (self.have - self.first) / max(now - self.start, 1e-9)
    text = f"{self.label}: {format_bytes(self.have)}"
    if self.total:
      text += (f" of {format_bytes(self.total)} "
               f"({100.0 * self.have / self.total:.1f}%)")
    text += f", {format_bytes(rate)}/s"
    if self.total and rate > 0:
      eta = (self.total - self.have) / rate
      text += f", ETA {progress.format_duration(eta)}"
    return text

  def done(self):
    seconds = time.monotonic() - self.start
    self._print(f"{self.label}: {format_bytes(self.have)} complete "
                f"({format_bytes(self.have - self.first)} in "
                f"{progress.format_duration(seconds)})")

  def _print(self, text):
    say(self.out, text)
