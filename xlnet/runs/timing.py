"""The line a driver prints as each of its runs starts: the time elapsed
and an ETA, durations as the trainers write theirs
(`progress.format_duration`: `04:05:06`, `3d 04:05:06`)."""
from xlnet.training import progress


def eta_line(index, total, name, elapsed, left, finished, kind="run",
             estimated=False):
  """The line printed when run `index` (1-based) of `total` starts, e.g.
  `[3/4] RTE (seed 2): starting; elapsed 00:05:05; ETA 00:05:00 from 2
  finished run(s)`.

  The ETA is `left` times the seconds the finished runs took per unit of
  their estimates.

  Args:
    name: the run's name.
    elapsed: seconds since the driver started.
    left: the estimate of this run and of those after it that will run, in
      any unit (seconds when `estimated`).
    finished: (estimate > 0, seconds) of the runs finished in this process
      that the ETA scales by.
    kind: what the line calls those ("run", "long stage").
    estimated: whether `left` is in seconds, the ETA before one of them
      finished; otherwise the ETA is unknown until one does.
  """
  line = (f"[{index}/{total}] {name}: starting; elapsed "
          f"{progress.format_duration(elapsed)}; ETA ")
  if finished:
    scale = sum(s for _, s in finished) / sum(e for e, _ in finished)
    return line + (f"{progress.format_duration(left * scale)} from "
                   f"{len(finished)} finished {kind}(s)")
  if estimated:
    return line + f"{progress.format_duration(left)} (estimated)"
  return line + f"unknown until a {kind} finishes"
