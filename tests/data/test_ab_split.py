"""Tests of the A/B segment choice, replayed draw for draw, and its cost."""
import signal

import numpy as np
import pytest

from tests.data_reference import RecordingRng
from xlnet.data import pretrain_examples
from xlnet.data import record_writer


def spec_split(sent, begin, tot_len, draws):
  """The A/B rule for one row, consuming the logged draws in order."""
  row_len = len(sent)
  if begin + tot_len >= row_len:
    return None
  bounds = [k for k in range(1, row_len) if sent[k] != sent[k - 1]]
  stop = next((k for k in bounds if k >= begin + tot_len), row_len)
  cuts = [k for k in bounds if begin < k < stop]

  def choice(n):
    value, high = draws.pop(0)
    assert high == n
    return value

  if not cuts or draws.pop(0) < 0.5:
    label = 0
    a_end = cuts[choice(len(cuts))] if cuts else stop
    b_len = max(1, tot_len - (a_end - begin))
    b_begin = choice(row_len - b_len)  # B may start anywhere (its target too)
    b_end = b_begin + b_len
    b_begin = max([0] + [k for k in bounds if k <= b_begin])  # sentence start
    b_end = min([k for k in bounds if k >= b_end] + [row_len - 1])  # end/cap
  else:
    label = 1
    a_end = cuts[choice(len(cuts))]
    b_begin, b_end = a_end, stop
  while (a_end - begin) + (b_end - b_begin) > tot_len:
    if a_end - begin > b_end - b_begin:
      a_end -= 1
    else:
      b_end -= 1
  assert not draws
  if a_end >= row_len or b_end >= row_len:  # no next-token target
    return None
  return a_end, b_begin, b_end, label


@pytest.mark.quick
def test_split_replayed_against_the_rule():
  rs = np.random.RandomState(0)
  results = set()
  for trial in range(3000):
    row_len = rs.randint(5, 50)
    flips = rs.rand(row_len) < rs.choice([0.03, 0.2, 0.6, 1.0])
    flips[0] = False
    sent = np.cumsum(flips) % 2 == 0
    begin, tot_len = rs.randint(0, row_len), rs.randint(1, 20)
    rng = RecordingRng(trial)
    got = pretrain_examples.split_a_and_b(
        row_len, pretrain_examples.boundaries(sent), begin, tot_len, rng)
    want = spec_split(sent, begin, tot_len, [
        d if isinstance(d, tuple) else float(d) for d in rng.draws])
    assert (None if got is None else tuple(map(int, got))) == want, trial
    results.add(None if want is None else want[3])
  assert results == {None, 0, 1}


def test_trim_lengths_equals_the_token_by_token_rule():
  for a_len in range(0, 40):
    for b_len in range(1, 40):
      for tot_len in range(1, 30):
        a, b = a_len, b_len
        while a + b > tot_len:
          if a > b:
            a -= 1
          else:
            b -= 1
        assert pretrain_examples.trim_lengths(a_len, b_len, tot_len) == (
            a, b), (a_len, b_len, tot_len)
  assert pretrain_examples.trim_lengths(10**6, 3, 45) == (42, 3)


def test_one_long_line_costs_like_normal_text(tmp_path, tiny_spm):
  # 1 MB on one line: no sentence break, so A runs to the row's end at every
  # offset. Trimming it token by token was quadratic (a run did not finish
  # in 5 minutes); now it takes seconds. The alarm stops a slow run early.
  words = np.random.RandomState(0).choice(
      ["the", "cat", "sat", "on", "a", "mat", "and", "then", "ran", "off"],
      size=250000)
  path = tmp_path / "long.txt"
  path.write_text(" ".join(words)[:1000000] + "\n")

  def too_slow(signum, frame):
    raise TimeoutError("1 MB single-line input took over 120 s")

  previous = signal.signal(signal.SIGALRM, too_slow)
  signal.alarm(120)  # about 3 s on a loaded 2-core machine
  try:
    record_writer.create_data(
        str(path), tiny_spm, str(tmp_path / "out"), bsz_per_host=4,
        num_core_per_host=1, seq_len=64, reuse_len=32, num_predict=12,
        num_workers=1)
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
