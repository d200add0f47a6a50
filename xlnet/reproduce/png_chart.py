"""A grouped bar chart written as a PNG with NumPy, zlib and struct only.

The test environments have no plotting library; a bar chart needs nothing
more than filled rectangles on an RGB canvas and the PNG container
(signature, IHDR, one IDAT of filter-0 scanlines, IEND; each chunk with its
CRC-32).
"""
import struct
import zlib

import numpy as np

from xlnet import io_utils

WHITE = (255, 255, 255)
GREY = (160, 160, 160)
# Bar colours, in series order: ours (blue), the target (orange).
SERIES_COLORS = ((31, 119, 180), (255, 127, 14))
# The line from the lowest to the highest of our runs, over our bar.
RANGE_COLOR = (40, 40, 40)
RANGE_WIDTH = 2

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind, data):
  """One PNG chunk: length, type, data, CRC-32 of type + data."""
  return (struct.pack(">I", len(data)) + kind + data +
          struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def encode_png(pixels):
  """PNG bytes of an RGB image.

  Args:
    pixels: uint8 array `[height, width, 3]`.

  Returns:
    bytes: an 8-bit truecolour, non-interlaced PNG.
  """
  pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
  height, width, channels = pixels.shape
  if channels != 3:
    raise ValueError(f"expected RGB pixels [h, w, 3], got {pixels.shape}")
  header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
  # Each scanline starts with its filter type, 0 (none).
  rows = np.concatenate([np.zeros((height, 1), np.uint8),
                         pixels.reshape(height, width * 3)], axis=1)
  return (_SIGNATURE + _chunk(b"IHDR", header) +
          _chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)) +
          _chunk(b"IEND", b""))


def bar_heights(values, plot_height):
  """Pixel heights of bars proportional to `values` (None -> 0).

  The tallest bar is `plot_height` pixels; negative values count as 0.
  """
  numbers = [max(0.0, v) for v in values if v is not None]
  top = max(numbers, default=0.0)
  if top <= 0:
    return [0 for _ in values]
  return [0 if v is None else int(round(max(0.0, v) / top * plot_height))
          for v in values]


def grouped_bar_chart(groups, ranges=None, bar_width=12, gap=10,
                      plot_height=200, margin=10):
  """Pixels of a grouped bar chart, all bars on one scale from 0.

  Args:
    groups: list of tuples of numbers (or None: no bar), one tuple per
      group, one number per series (colours SERIES_COLORS[i]).
    ranges: None, or per group None or (low, high): a RANGE_COLOR line
      RANGE_WIDTH px wide at the centre of the group's first bar, from
      height `low` to height `high` (on the bars' scale).
    bar_width, gap, plot_height, margin: sizes in pixels.

  Returns:
    uint8 array `[plot_height + 2 * margin + 1, width, 3]`: white canvas,
    a grey baseline, bars standing on it. Group g's series s occupies
    columns `margin + g * (n_series * bar_width + gap) + s * bar_width`
    onwards, `bar_width` wide; a value of height h fills the h rows above
    the baseline.
  """
  ranges = list(ranges or [None] * len(groups))
  n_series = max((len(g) for g in groups), default=1)
  values = [v for g in groups for v in g]
  ends = [v for r in ranges if r is not None for v in r]
  heights = bar_heights(values + ends, plot_height)
  bars, ends = heights[:len(values)], iter(heights[len(values):])
  width = 2 * margin + len(groups) * (n_series * bar_width + gap)
  canvas = np.full((plot_height + 2 * margin + 1, width, 3), WHITE, np.uint8)
  baseline = margin + plot_height
  canvas[baseline, :] = GREY
  k = 0
  for g, group in enumerate(groups):
    first = margin + g * (n_series * bar_width + gap)
    for s in range(len(group)):
      left = first + s * bar_width
      canvas[baseline - bars[k]:baseline, left:left + bar_width] = (
          SERIES_COLORS[s % len(SERIES_COLORS)])
      k += 1
    if ranges[g] is not None:
      low, high = next(ends), next(ends)
      centre = first + (bar_width - RANGE_WIDTH) // 2
      # The rows of a bar of height `high` above one of height `low`; at
      # least one, so that runs that agree still show a mark.
      top = baseline - max(high, 1)
      canvas[top:max(baseline - low, top + 1),
             centre:centre + RANGE_WIDTH] = RANGE_COLOR
  return canvas


def write_bar_chart(path, groups, ranges=None):
  """Writes `grouped_bar_chart(groups, ranges)` as a PNG to `path`
  atomically."""
  io_utils.atomic_write(path, encode_png(grouped_bar_chart(groups, ranges)))
