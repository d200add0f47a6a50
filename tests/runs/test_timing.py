"""xlnet/runs/timing.py: the line printed as a run starts, its ETA worked
by hand."""
import pytest

from xlnet.runs import timing

pytestmark = [pytest.mark.quick, pytest.mark.tf_version]


def test_the_eta_is_what_is_left_at_the_finished_runs_pace():
  # Two runs of one unit each took 100 s and 200 s: 150 s each for the 2
  # left (this one included).
  assert timing.eta_line(3, 4, "RTE (seed 2)", 305.0, 2,
                         [(1, 100.0), (1, 200.0)]) == (
      "[3/4] RTE (seed 2): starting; elapsed 00:05:05; ETA 00:05:00 from 2 "
      "finished run(s)")
  assert timing.eta_line(1, 3, "STS-B (seed 1)", 0.0, 3, []) == (
      "[1/3] STS-B (seed 1): starting; elapsed 00:00:00; ETA unknown until "
      "a run finishes")
  # Estimated 100 s, it took 200 s: twice the 1,000 s estimated left.
  assert timing.eta_line(3, 9, "x", 75, 1000, [(100, 200)], "long stage",
                         estimated=True) == (
      "[3/9] x: starting; elapsed 00:01:15; ETA 00:33:20 from 1 finished "
      "long stage(s)")
  assert timing.eta_line(1, 9, "x", 0, 1000, [], "long stage",
                         estimated=True).endswith("; ETA 00:16:40 (estimated)")
  # 3 runs left at 30,000 s each: a day, an hour.
  assert timing.eta_line(2, 4, "y", 30000, 3, [(1, 30000)]).endswith(
      "elapsed 08:20:00; ETA 1d 01:00:00 from 1 finished run(s)")
