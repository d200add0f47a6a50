"""Running one run (`runner.run_one`): its programs as children
(`xlnet/runs/children.py`: each with its log, SIGTERM and SIGINT passed
on to them); its number read from what the program wrote, and its
result.json.
"""
import json
import os
import time

import tensorflow as tf

from xlnet import errors
from xlnet import io_utils
from xlnet.reproduce import paper_settings
from xlnet.reproduce import plan
from xlnet.reproduce import report
from xlnet.runs import children

def run_programs(commands, log_paths, parallel=1):
  """`children.run` of a run's programs, in the repository's directory
  (every path they are given is absolute); returns its `Outcome`."""
  return children.run(commands, log_paths, parallel, cwd=children.REPO_ROOT)


################################################################################
# A task's number.
################################################################################
def _best_classifier_line(path, task_name):
  """The `best` entry of `task_name` / dev in run_classifier's
  eval_results.txt, as a dict."""
  with tf.io.gfile.GFile(path) as f:
    for line in f:
      kind, *fields = line.rstrip("\n").split("\t")
      entry = dict(field.partition("=")[::2] for field in fields)
      if (kind == "best" and entry.get("task") == task_name and
          entry.get("split") == "dev"):
        return entry
  raise ValueError(f"{path} holds no best dev result of {task_name}")


def read_metric(task, dirs):
  """The task's metric (the program's value, before paper units).

  Raises:
    ValueError / OSError: naming the result file when it lacks the number.
  """
  if task.program == paper_settings.CLASSIFIER:
    path = os.path.join(dirs["model"], "eval_results.txt")
    entry = _best_classifier_line(path, task.flags["task_name"])
  else:
    name = ("eval_results.json" if task.program == paper_settings.SQUAD else
            f"eval_results_{task.flags['eval_split']}.json")
    folder = dirs["predictions" if task.program == paper_settings.SQUAD
                  else "model"]
    path = os.path.join(folder, name)
    with tf.io.gfile.GFile(path) as f:
      entry = json.load(f)
  if task.metric.key not in entry:
    raise ValueError(f"{path} has no {task.metric.key}")
  return float(entry[task.metric.key])


def run_one(run, cfg):
  """Runs one task with one seed (its preprocessing shards in parallel
  first, at most one per core) and writes its result.json when it
  succeeds.

  Returns:
    (run row, failure reason or None, the signal received while it ran or
    None).
  """
  dirs = plan.task_dirs(cfg, run.task, run.seed)
  start = time.time()
  ran = children.Outcome()
  if run.prepro:
    ran = run_programs(run.prepro, [dirs["prepro_log"].format(i)
                                    for i in range(len(run.prepro))],
                       parallel=len(os.sched_getaffinity(0)))
  if ran.failure is None and ran.signum is None:
    ran = run_programs([list(run.command)], [dirs["log"]])
  reason, signum = ran.failure, ran.signum
  if reason is None and signum is None:
    try:
      ours = run.task.metric.paper_units(read_metric(run.task, dirs))
    except (OSError, ValueError, tf.errors.OpError) as e:
      reason = errors.error_text(e)
  if reason is not None or signum is not None:
    status = "failed" if signum is None else "interrupted"
    return report.run_row(run.task, run.seed, status), reason, signum
  row = report.run_row(run.task, run.seed, "done", ours, time.time() - start)
  content = dict(row=row, command=list(run.command), work_dir=cfg.work_dir)
  io_utils.atomic_write(
      dirs["result"], json.dumps(content, indent=1) + "\n",
      safe=(f"{run.name} finished and its checkpoints are intact; make "
            "room and rerun the same command to evaluate and record it"))
  return row, None, signum


