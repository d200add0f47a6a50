"""Evaluating the checkpoints of a fine-tuning run: which checkpoints
(`--eval_all_ckpt`), and the results file that keeps every checkpoint's
metrics and the best one (`run_classifier.py`, `run_squad.py`)."""
import numpy as np
import tensorflow as tf

from xlnet import io_utils
from xlnet.training import checkpoint_io


def checkpoints_to_evaluate(model_dir, eval_all_ckpt=False):
  """Every checkpoint of `model_dir` (oldest first) with `eval_all_ckpt`,
  else the newest intact one (a newer one whose index is missing, deleted
  but still named by the `checkpoint` file, or damaged is skipped with a
  warning line, as every reader of a directory does:
  `checkpoint_io.newest_readable`).

  Returns:
    list of checkpoint prefixes.

  Raises:
    ValueError: when model_dir holds none (CheckpointError: none of those
      it names is intact).
  """
  if eval_all_ckpt:
    prefixes = [p for _, p in checkpoint_io.list_checkpoints(model_dir)]
  else:
    newest = checkpoint_io.newest_readable(model_dir,
                                           f"--model_dir={model_dir}")
    prefixes = [newest] if newest else []
  if not prefixes:
    raise ValueError(f"--model_dir={model_dir} holds no checkpoint to "
                     "evaluate (train first with --do_train)")
  return prefixes


def _format_value(value):
  """Floats with 6 decimals, everything else as str."""
  return f"{value:.6f}" if isinstance(value, float) else str(value)


def parse_line(line):
  """A results line `kind<TAB>key=value<TAB>...` -> dict (`kind` included)."""
  kind, *fields = line.rstrip("\n").split("\t")
  entry = {"kind": kind}
  for field in fields:
    key, _, value = field.partition("=")
    entry[key] = value
  return entry


def _format_line(entry):
  """The inverse of `parse_line`."""
  return "\t".join([entry["kind"]] + [f"{k}={v}" for k, v in entry.items()
                                      if k != "kind"])


def update_eval_results(path, task, split, checkpoint, results,
                        primary_metric):
  """Adds one checkpoint's results to the results file and re-picks the best.

  The file (rewritten atomically) holds one tab-separated line per
  evaluated (task, split, checkpoint):
    eval  task=..  split=..  step=..  checkpoint=..  eval_...=..  ...
  and per (task, split) one line for the checkpoint with the highest
  `primary_metric`:
    best  task=..  split=..  metric=eval_..  step=..  checkpoint=..  ...
  Lines of other tasks and splits are kept as they are; evaluating a
  checkpoint again replaces its line.

  Args:
    path: str, e.g. `model_dir/eval_results.txt`.
    task, split: str.
    checkpoint: str, the checkpoint prefix.
    results: dict of name -> number (see `metrics.evaluation_metrics`).
    primary_metric: str, e.g. "eval_accuracy".

  Returns:
    dict, the best entry of (task, split) (values as str), or None when no
    checkpoint has a number for `primary_metric` (e.g. all nan).
  """
  others, group = [], []
  if tf.io.gfile.exists(path):
    with tf.io.gfile.GFile(path) as f:
      for line in f:
        if not line.strip():
          continue
        entry = parse_line(line)
        if (entry.get("task"), entry.get("split")) != (task, split):
          others.append(line.rstrip("\n"))
        elif entry["kind"] == "eval" and entry.get("checkpoint") != checkpoint:
          group.append(entry)
  step = checkpoint_io.step_of(checkpoint)
  group.append(dict(
      {"kind": "eval", "task": task, "split": split,
       "step": "" if step is None else str(step), "checkpoint": checkpoint},
      **{k: _format_value(v) for k, v in results.items()}))
  group.sort(key=lambda e: int(e["step"]) if e["step"] else -1)

  lines = others + [_format_line(e) for e in group]
  scored = [e for e in group if primary_metric in e and
            not np.isnan(float(e[primary_metric]))]
  best = None
  if scored:
    top = max(scored, key=lambda e: float(e[primary_metric]))
    best = dict({"kind": "best", "task": task, "split": split,
                 "metric": primary_metric},
                **{k: v for k, v in top.items()
                   if k not in ("kind", "task", "split")})
    lines.append(_format_line(best))
  io_utils.atomic_write(path, "\n".join(lines) + "\n")
  return best
