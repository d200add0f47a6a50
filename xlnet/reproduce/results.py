"""Finished runs: a result.json read back and checked against the
command the run would have now (settings compared with the work dir's own
path left out), and the work dir of an earlier version moved into the
layout of seeds (`migrate_earlier_layout`).
"""
import contextlib
import json
import os
import re
import shlex

import tensorflow as tf

from xlnet import io_utils
from xlnet import settings_files
from xlnet.reproduce import plan
from xlnet.reproduce import report
from xlnet.runs import work_dir as work_dir_lib
from xlnet.training import config as train_config_lib

################################################################################
# Finished runs.
################################################################################
# What a finished run's result.json holds ("work_dir" is absent in those
# of earlier versions).
RESULT = settings_files.Fields({
    "command": settings_files.Kind(
        "a list of at least 2 strings",
        lambda v: (type(v) is list and len(v) >= 2 and
                   all(type(arg) is str for arg in v))),
    "work_dir": settings_files.STRING,
    "row": settings_files.Fields(
        {"status": settings_files.one_of("done"),
         "ours": settings_files.NUMBER,
         "wall_time_s": settings_files.or_null(
             settings_files.NON_NEGATIVE_NUMBER)},
        required=("status", "ours")),
}, required=("command", "row"))


def read_result(path, run):
  """The content of a finished run's result.json, checked against
  `RESULT`.

  Raises:
    ValueError: one line naming the file, what is wrong with it and the
      remedy.
  """
  return settings_files.read(
      path, RESULT, "finished run's result",
      remedy=(f"delete it to run {run.name} again (it resumes from its "
              "checkpoints)"))


def _in_work_dir(value, work_dir):
  """`value` with a leading `work_dir` written `{work_dir}`."""
  if value is not None and (value == work_dir or
                            value.startswith(work_dir + os.sep)):
    return "{work_dir}" + value[len(work_dir):]
  return value


def settings_differences(old, new, limit=3):
  """`--flag was X, now Y; ...` for the flags of two runs of a task that
  differ, at most `limit` of them named ("" when none does).

  Args:
    old, new: (argv, work dir) of each run; paths under each run's work dir
      compare equal when they are equal below it (a moved work dir), and a
      flag of `IMPLIED_FLAGS` that one does not set equals its value there.
  """
  (old_flags, old_dir), (new_flags, new_dir) = [
      (plan.command_flags(command), work_dir)
      for command, work_dir in (old, new)]
  below = lambda given, work_dir: {
      name: _in_work_dir(value, work_dir) for name, value in given.items()
      if name[2:] not in plan.HOST_FLAGS}
  names = work_dir_lib.differing_settings(
      below(old_flags, old_dir), below(new_flags, new_dir),
      plan.IMPLIED_FLAGS)
  shown = [f"{name} was {old_flags.get(name, 'not set')}, now "
           f"{new_flags.get(name, 'not set')}" for name in names[:limit]]
  more = [f"{len(names) - limit} more"] if len(names) > limit else []
  return "; ".join(shown + more)


def finished_row(run, cfg):
  """The run row of a run finished by an earlier reproduce.py, or None.

  Raises:
    ValueError: when its result.json is unreadable or of the wrong shape,
      or was made by a different command (settings), whose checkpoints a
      rerun would mix with; one line naming the file, the cause and the
      remedy.
  """
  dirs = plan.task_dirs(cfg, run.task, run.seed)
  path = dirs["result"]
  if not os.path.lexists(path):
    return None
  done = read_result(path, run)
  differences = settings_differences(
      (done["command"], done.get("work_dir", cfg.work_dir)),
      (run.command, cfg.work_dir))
  if differences:
    outputs = sorted({os.path.dirname(path),
                      os.path.dirname(dirs["model"])})
    raise ValueError(
        f"{path} was made with other settings ({differences}); use another "
        f"--work_dir, or delete {' and '.join(outputs)} to run {run.name} "
        "again with these")
  row = done["row"]
  return report.run_row(run.task, run.seed, "done", row["ours"],
                        row.get("wall_time_s"))


def _earlier_seed(task_root):
  """The seed of a run in the earlier layout: its result.json's or its
  log's last command's --seed, else the programs' default."""
  commands = []
  with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
    with open(os.path.join(task_root, plan.RESULT_FILE), "rb") as f:
      commands.append(json.loads(f.read())["command"])
  with contextlib.suppress(OSError):
    with open(os.path.join(task_root, "log.txt"), errors="replace") as f:
      lines = [l[2:] for l in f.read().split("\n") if l.startswith("$ ")]
    if lines:
      with contextlib.suppress(ValueError):
        commands.append(shlex.split(lines[-1]))
  for command in commands:
    found = [arg[len("--seed="):] for arg in command
             if isinstance(arg, str) and arg.startswith("--seed=")]
    if found and re.fullmatch(r"-?\d+", found[-1]):
      return int(found[-1])
  return train_config_lib.DEFAULT_SEED


def migrate_earlier_layout(cfg, task):
  """Moves the outputs of an earlier version's single run of `task`
  (`{task}/model`, `predictions/`, `log.txt`, `result.json`) into
  `{task}/seed-{s}/`, s being the seed that run used, and rewrites the
  paths in its result.json's command to match. The records stay where
  they are (`{task}/records`). Returns the seed, or None when there is
  nothing to move.

  Raises:
    ValueError: (one line) when the run's checkpoints are in Cloud Storage
      (--gcs_dir; moving them is left to the user), or its seed directory
      is taken.
  """
  root = os.path.join(cfg.work_dir, task.name)
  data = os.path.join(cfg.gcs_dir or cfg.work_dir, task.name)
  local = [n for n in plan.EARLIER_LAYOUT
           if os.path.lexists(os.path.join(root, n))]
  remote = "://" in data and any(
      tf.io.gfile.exists(os.path.join(data, n))
      for n in plan.EARLIER_LAYOUT[:2])
  if not (local or remote):
    return None
  seed = _earlier_seed(root)
  if remote:
    raise ValueError(
        f"{data} holds {task.name}'s run in the layout of an earlier "
        f"reproduce.py; move its model/ and predictions/ into "
        f"{data}/seed-{seed}/ (gsutil -m mv) and {' and '.join(local)} of "
        f"{root} into {root}/seed-{seed}/, then rerun")
  target = os.path.join(root, f"seed-{seed}")
  taken = [n for n in local if os.path.lexists(os.path.join(target, n))]
  if taken:
    raise ValueError(
        f"{root} holds {', '.join(local)} of an earlier reproduce.py and "
        f"{target} already holds {', '.join(taken)}; delete one of them")
  result = os.path.join(root, plan.RESULT_FILE)
  if os.path.isfile(result):
    _rewrite_paths(result, root, target)
  os.makedirs(target, exist_ok=True)
  for name in local:
    os.rename(os.path.join(root, name), os.path.join(target, name))
  print(f"{task.name}: moved {', '.join(local)} of an earlier reproduce.py "
        f"into {target}", flush=True)
  return seed


def _rewrite_paths(path, root, target):
  """Rewrites, in the result.json `path`, its command's model and
  predictions directories under `root` to their new place in `target`
  (a file that does not parse is moved as it is, and refused later)."""
  try:
    with open(path, "rb") as f:
      done = json.loads(f.read())
    command = done["command"]
    moved = {os.path.join(root, n): os.path.join(target, n)
             for n in plan.EARLIER_LAYOUT[:2]}
    done["command"] = [
        re.sub(r"^(--\w+=)(.*)$", lambda m: m[1] + next(
            (new + m[2][len(old):] for old, new in moved.items()
             if m[2] == old or m[2].startswith(old + os.sep)), m[2]), arg)
        for arg in command]
  except (OSError, ValueError, TypeError, KeyError):
    return
  io_utils.atomic_write(path, json.dumps(done, indent=1) + "\n")


