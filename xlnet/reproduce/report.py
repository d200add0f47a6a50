"""reproduce.py's results: each task's runs (one per seed) summed up as their
median and range, beside the figure to compare with and the paper's, each
figure with its source; written as results.md, results.json and results.png.

A run row: `{"task", "seed", "status", "ours", "wall_time_s"}` (numbers in
the paper's units). A task row (`task_row`) adds up the runs of one task.
"""
import json
import os
import statistics

from xlnet import io_utils
from xlnet.reproduce import png_chart
from xlnet.training import progress

def run_row(task, seed, status, ours=None, wall_time=None):
  """One run (a task with one seed): status "done", "failed",
  "interrupted" or "pending", our number (paper units) and the seconds the
  run that finished it took."""
  return dict(task=task.name, seed=seed, status=status,
              ours=None if ours is None else round(ours, 4),
              wall_time_s=None if wall_time is None else round(wall_time, 1))


def _status(runs):
  """The task's status from its runs': "interrupted" or "failed" if one
  is, "done" if all are, "partial" if some are, else "pending"."""
  kinds = {r["status"] for r in runs}
  for kind in ("interrupted", "failed"):
    if kind in kinds:
      return kind
  if kinds == {"done"}:
    return "done"
  return "partial" if "done" in kinds else "pending"


def _figure(figure):
  """(value, source) of a paper_settings.Figure or None."""
  return (None, None) if figure is None else (figure.value, figure.source)


def task_row(task, model_size, steps, runs):
  """The row of `task`: the median and range of its finished runs.

  Args:
    task: a paper_settings.Task.
    model_size: "large" or "base" (picks the target).
    steps: the training steps of each run.
    runs: the task's run rows (`run_row`), one per seed, in seed order.

  Returns:
    dict: task, label, metric, ours (the median of the finished runs; of
    an even number, the mean of the middle two), ours_min, ours_max,
    runs_done, num_seeds, runs, target and target_source, diff (ours -
    target), paper_v1(_source), paper_v2(_source), steps, wall_time_s (the
    finished runs' sum), status (`_status`).
  """
  values = [r["ours"] for r in runs if r["status"] == "done"]
  ours = round(statistics.median(values), 4) if values else None
  target, target_source = _figure(task.target(model_size))
  v1, v1_source = _figure(task.paper_v1)
  v2, v2_source = _figure(task.paper_v2)
  walls = [r["wall_time_s"] for r in runs
           if r["status"] == "done" and r["wall_time_s"] is not None]
  return dict(
      task=task.name, label=task.label, metric=task.metric.name, ours=ours,
      ours_min=min(values, default=None), ours_max=max(values, default=None),
      runs_done=len(values), num_seeds=len(runs), runs=list(runs),
      target=target, target_source=target_source,
      diff=None if ours is None or target is None else round(
          ours - target, 4),
      paper_v1=v1, paper_v1_source=v1_source, paper_v2=v2,
      paper_v2_source=v2_source, steps=steps,
      wall_time_s=round(sum(walls), 1) if walls else None,
      status=_status(runs))


def _cell(value, digits=2):
  """A number for the Markdown table, or an em dash."""
  return "—" if value is None else f"{value:.{digits}f}"


class _Sources:
  """Numbers the sources in the order they are first cited."""

  def __init__(self):
    self.names = []

  def cite(self, value, source):
    """`value [n]`, or an em dash without a value."""
    if value is None:
      return "—"
    if source not in self.names:
      self.names.append(source)
    return f"{_cell(value)} [{self.names.index(source) + 1}]"


def markdown_report(title, rows):
  """results.md: a title, the table, the sources and what the chart
  shows."""
  sources = _Sources()
  lines = [f"# {title}", "",
           "| task | metric | ours (median) | range | runs | target | "
           "difference | paper v1 | paper v2 | steps | wall time | status |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
  for r in rows:
    spread = ("—" if r["ours_min"] is None else
              f"{_cell(r['ours_min'])}–{_cell(r['ours_max'])}")
    wall = ("—" if r["wall_time_s"] is None else
            progress.format_duration(r["wall_time_s"]))
    lines.append(
        f"| {r['label']} | {r['metric']} | {_cell(r['ours'])} | {spread} | "
        f"{r['runs_done']}/{r['num_seeds']} | "
        f"{sources.cite(r['target'], r['target_source'])} | "
        f"{_cell(r['diff'])} | "
        f"{sources.cite(r['paper_v1'], r['paper_v1_source'])} | "
        f"{sources.cite(r['paper_v2'], r['paper_v2_source'])} | "
        f"{r['steps']} | {wall} | {r['status']} |")
  lines += ["", "Ours: the median of the finished runs (one per seed), range "
            "their lowest and highest; difference: ours - target. Sources:"]
  lines += [f"[{i}] {name}" for i, name in enumerate(sources.names, 1)]
  lines += ["", "results.png: per task, left to right in this order, ours "
            "(blue, the median; a dark line from the lowest to the highest "
            "run) beside the target (orange), bars from 0 on one scale.", ""]
  return "\n".join(lines)


def write_reports(work_dir, table, model_size, title, rows):
  """Writes results.md, results.json and results.png into `work_dir`."""
  out = lambda name: os.path.join(work_dir, name)
  io_utils.atomic_write(out("results.md"), markdown_report(title, rows))
  io_utils.atomic_write(out("results.json"), json.dumps(
      dict(table=table, model_size=model_size, rows=rows), indent=1) + "\n")
  png_chart.write_bar_chart(
      out("results.png"), [(r["ours"], r["target"]) for r in rows],
      [None if r["ours_min"] is None else (r["ours_min"], r["ours_max"])
       for r in rows])
