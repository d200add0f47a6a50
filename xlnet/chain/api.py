"""run_chain(config): the paper's chain in miniature, stage by stage
(`plan.stages`), resumable.

The work dir is locked (two chains never write one), its settings are
recorded in chain.json (a rerun with other settings is refused: use a new
work dir), and a stage that finished is recorded in done/ and skipped by a
rerun. A stage stopped midway starts again, and its program resumes from
its own checkpoints (train_gpu.py and run_classifier.py resume exactly);
the Python stages write every file atomically. Before each stage a line
gives the elapsed time and the ETA: the stages' estimates, scaled by how
long the stages finished in this run took against theirs.
"""
import json
import os
import time

from xlnet import io_utils
from xlnet.chain import config as chain_config
from xlnet.chain import plan
from xlnet.chain import steps
from xlnet.runs import timing
from xlnet.runs import work_dir as work_dir_lib

# Stages estimated at this many seconds or more scale the ETA.
LONG_STAGE_S = 60


def _done_path(cfg, stage):
  return plan.path(cfg, "done", stage.name.replace("/", "__") + ".json")


def check_settings(cfg):
  """Records the settings in chain.json, or checks them against it (a
  setting that chain.json lacks reads as its default: it was written
  before the setting existed, when the chain did what its default does).

  Raises:
    ValueError: the work dir holds a chain of other settings (naming the
      first that differs).
  """
  settings, defaults = cfg.settings(), chain_config.default_settings()
  recorded = work_dir_lib.recorded_settings(plan.path(cfg, "chain.json"),
                                            settings)
  differing = work_dir_lib.differing_settings(recorded, settings, defaults)
  if differing:
    key = differing[0]
    flags = " ".join(_as_flag(name, recorded.get(name, defaults.get(name)))
                     for name in differing)
    raise ValueError(
        f"--work_dir={cfg.work_dir} holds a chain run with {key}="
        f"{json.dumps(recorded.get(key, defaults.get(key)))}, this command "
        f"has {json.dumps(settings.get(key))}: rerun with {flags} to "
        "resume it, or give a new --work_dir")


def _as_flag(name, value):
  """`--name=value` as bench/chain.py's flags take a recorded setting."""
  if name == "tasks":
    value = ",".join(f"{t['name']}={t['task_name']}:{t['data_dir']}"
                     for t in value)
  elif isinstance(value, list):
    value = ",".join(str(v) for v in value)
  elif isinstance(value, bool):
    value = json.dumps(value)
  return f"--{name}={value}"


def run_chain(cfg, stage_steps=steps):
  """Runs every stage not yet done; ends with the results' table.

  Args:
    cfg: a `ChainConfig`.
    stage_steps: what the stages call (`steps`; tests give their own).

  Raises:
    run_lock.Locked: another chain holds the work dir.
    ValueError: a setting or input at fault (one line).
    progress.Interrupted: stopped by SIGTERM/SIGINT (rerun to go on).
    steps.StageFailed: a program failed (its log named).
  """
  os.makedirs(cfg.work_dir, exist_ok=True)
  with work_dir_lib.lock(cfg.work_dir, "bench/chain.py run"):
    check_settings(cfg)
    stages = plan.stages(cfg, stage_steps)
    done = [os.path.exists(_done_path(cfg, s)) for s in stages]
    if any(done):
      print(f"[chain] {sum(done)} of {len(stages)} stages done earlier "
            f"(recorded in {plan.path(cfg, 'done')}): skipped", flush=True)
    start, finished = time.time(), []
    for index, (stage, was_done) in enumerate(zip(stages, done), 1):
      if was_done:
        continue
      left = sum(s.estimate for s, d in zip(stages[index - 1:],
                                            done[index - 1:]) if not d)
      # The long stages decide the ETA: the short ones' start-up dominates
      # their time and would scale the long ones' estimates wrongly.
      print("[chain] " + timing.eta_line(
          index, len(stages), stage.name, time.time() - start, left,
          [(e, s) for e, s in finished if e >= LONG_STAGE_S], "long stage",
          estimated=True), flush=True)
      began = time.time()
      if stage.call is not None:
        stage.call(cfg)
      else:
        stage_steps.run_commands(cfg, stage.name, stage.commands,
                                 stage.watch)
      seconds = time.time() - began
      finished.append((stage.estimate, seconds))
      io_utils.atomic_write(_done_path(cfg, stage), json.dumps(
          {"stage": stage.name, "seconds": round(seconds, 1),
           "finished_at": time.time()}) + "\n")
