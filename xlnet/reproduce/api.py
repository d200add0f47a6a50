"""One of the paper's tables, run with the paper's fine-tuning settings:
`run_table(config)` (what `python reproduce.py --table=glue ...` calls) and
its dry run `plan_table(config)`, `config` a `ReproduceConfig`
(xlnet/finetuning/config.py).

`run_table` runs each task of the table, with each of --num_seeds seeds,
through the programs users run (`run_classifier.py`, `run_squad.py`,
`run_race.py`), one after another, as subprocesses:

  work_dir/{task}/records/               feature records, shared by the
                                         task's seeds (--output_dir)
  work_dir/{task}/seed-{s}/model/        checkpoints, eval results
  work_dir/{task}/seed-{s}/predictions/  SQuAD predictions (--predict_dir)
  work_dir/{task}/seed-{s}/log.txt       the program's output (appended)
  work_dir/{task}/seed-{s}/prepro-{i}.log  SQuAD preprocessing shard i
  work_dir/{task}/seed-{s}/result.json   written atomically once the run
                                         is done
  work_dir/results.{md,json,png}  the table so far (per task the median and
                                  range of its runs), rewritten after each

(with `--gcs_dir`, records/ and each seed's model/ and predictions/ go
there instead). A work dir of an earlier version (model/, log.txt and
result.json directly in `{task}/`) is moved into this layout on the first
run (`migrate_earlier_layout`).

Over several GPU hosts every host runs the same command with its own
`--task_index` (or TF_CONFIG, which the programs inherit), --work_dir and
--gcs_dir shared: each run's program trains on every host, and the chief
(process 0) alone holds the work dir's lock, evaluates and writes
result.json and results.*; another host writes only its program's output,
to `work_dir/{task}/seed-{s}/log.process-{i}.txt`.

A run with a result.json is skipped; an interrupted one is run again with
the same command, and the program resumes from its model_dir. A failing run
prints one line, its task's row says "failed", and the table goes on with
the next; the program then exits with code 1. SIGTERM and SIGINT (Ctrl-C)
are passed on to the running program(s) (`xlnet/runs/children.py`), which
save a checkpoint and stop; reproduce.py waits for them and exits with
code 143 / 130. One run at a time per work dir: it holds
`work_dir/trainer.lock` (`xlnet/runs/work_dir.py`). Paths are made
absolute, and the settings a result.json was made with are compared with
the work dir's own path left out, so a work dir may be moved. Settings, figures and their sources:
`paper_settings.py`, docs/reproducing.md. The plan of each run:
`plan.py`; running it: `runner.py`; finished runs: `results.py`; the
table's report: `report.py`.
"""
import os
import shlex
import signal
import sys
import time

from xlnet import errors
from xlnet.reproduce import paper_settings
from xlnet.reproduce import plan
from xlnet.reproduce import report
from xlnet.reproduce import results
from xlnet.reproduce import runner
from xlnet.runs import timing
from xlnet.runs import work_dir as work_dir_lib
from xlnet.training import progress
from xlnet.training import strategies

################################################################################
# The table.
################################################################################
class TasksFailed(errors.Stop):
  """Some runs failed (each said why); exit code 1."""


def interrupted(signum, run, reason):
  """The `progress.Interrupted` (exit code 128 + signum) of a reproduce.py
  stopped by `signum` while `run` ran (`reason`: why it stopped, None when
  it finished)."""
  name = signal.Signals(signum).name
  what = (f"after {run.name} finished" if reason is None else
          f"(passed on to {run.name}: {reason})")
  return progress.Interrupted(
      f"stopped by {name} {what}; rerun the same command to go on", signum)


def print_dry_run(runs, cfg):
  """Prints every run as a shell script: its plan as a comment, its
  preprocessing shards in the background, then its command."""
  for run in runs:
    print(plan.plan_line(run, cfg), flush=True)
    for command in run.prepro:
      print(shlex.join(command) + " &", flush=True)
    if run.prepro:
      print("wait", flush=True)
    print(shlex.join(run.command), flush=True)


def _planned(config):
  """(`config` with its local paths absolute, the table's tasks, their
  runs): what `plan_table` and `run_table` share."""
  plan.check_settings(config)
  config = plan.absolute_paths(config)
  tasks = paper_settings.select(config.table, config.tasks)
  return config, tasks, plan.plan_runs(tasks, config)


def plan_table(config):
  """The dry run of `run_table(config)`: what it would run, in order; runs
  nothing and writes nothing (a plan's notes go to stderr).

  Args:
    config: a `ReproduceConfig` (xlnet/reproduce/config.py).

  Returns:
    list of `plan.Run` (task, seed, batch plan, command, preprocessing).

  Raises:
    ValueError: one line naming a missing flag, a bad place or missing
      data (the values themselves were checked when `config` was built).
  """
  return _planned(config)[2]


def run_table(config):
  """Runs the table `config` names (with `config.dry_run`, prints its runs
  as a shell script instead), as `python reproduce.py` does.

  Args:
    config: a `ReproduceConfig` (xlnet/reproduce/config.py).

  Returns:
    the task rows (`report.task_row`), or None for a dry run and on a host
    other than the chief.

  Raises:
    ValueError: as `plan_table`.
    TasksFailed: after the last run, when some failed.
    progress.Interrupted: SIGTERM/SIGINT arrived while a run ran.
    run_lock.Locked: another reproduce.py run holds the work dir.
  """
  config, tasks, runs = _planned(config)
  if config.dry_run:
    print_dry_run(runs, config)
    return None
  chief = strategies.cluster_task(config.worker_hosts,
                                  config.task_index)[0] == 0
  with work_dir_lib.lock(config.work_dir, "reproduce.py run", chief):
    if not chief:
      return run_worker_runs(runs, config)
    for task in tasks:
      results.migrate_earlier_layout(config, task)
    return run_chief_runs(tasks, runs, config)


def run_worker_runs(runs, cfg):
  """A multi-host run's part on a host other than the chief: runs every
  run the chief has not finished (its program trains with the chief's and
  leaves evaluation to it); writes no result and no report.

  Raises:
    TasksFailed: after the last run, when some program failed here.
    progress.Interrupted: SIGTERM/SIGINT arrived while a run ran.
  """
  failed = []
  for index, run_ in enumerate(runs, 1):
    if results.finished_row(run_, cfg):
      print(f"[{index}/{len(runs)}] {run_.label}: done by an earlier run, "
            "skipped", flush=True)
      continue
    print(f"[{index}/{len(runs)}] {run_.label}: starting (the chief "
          "evaluates and records it)", flush=True)
    log = plan.task_dirs(cfg, run_.task, run_.seed)["log"]
    ran = runner.run_programs([list(run_.command)], [log])
    if ran.signum is not None:
      raise interrupted(ran.signum, run_, ran.failure)
    if ran.failure is not None:
      failed.append(run_.name)
      print(f"{errors.program_name()}: {run_.name} failed: {ran.failure} "
            f"(log: {log})", file=sys.stderr, flush=True)
  if failed:
    raise TasksFailed(f"{len(failed)} of {len(runs)} run(s) failed here: "
                      f"{', '.join(failed)} (see each run's log)")
  return None


class Table:
  """The task rows of the table as its runs finish."""

  def __init__(self, tasks, runs, cfg):
    self.tasks, self.cfg = tasks, cfg
    self.runs = {(r.task.name, r.seed): results.finished_row(r, cfg) or
                 report.run_row(r.task, r.seed, "pending") for r in runs}

  def rows(self):
    """The task rows (`report.task_row`), in the table's order."""
    return [report.task_row(
        task, self.cfg.model_size,
        plan.effective_settings(task, self.cfg)["steps"],
        [row for (name, _), row in sorted(self.runs.items(),
                                          key=lambda kv: kv[0][1])
         if name == task.name]) for task in self.tasks]

  def write(self):
    """Writes results.md, results.json and results.png."""
    size = "XLNet-Large" if self.cfg.model_size == "large" else "XLNet-Base"
    report.write_reports(self.cfg.work_dir, self.cfg.table,
                         self.cfg.model_size,
                         f"{size}, {paper_settings.TITLES[self.cfg.table]}",
                         self.rows())


def run_chief_runs(tasks, runs, cfg):
  """Runs the runs not finished by an earlier reproduce.py; returns the
  task rows.

  Raises:
    TasksFailed: after the last run, when some failed.
    progress.Interrupted: SIGTERM/SIGINT arrived while a run ran (passed
      on to it, and waited for).
  """
  table = Table(tasks, runs, cfg)
  start, durations, failed = time.time(), [], []
  for index, run_ in enumerate(runs, 1):
    key = (run_.task.name, run_.seed)
    if table.runs[key]["status"] == "done":
      print(f"[{index}/{len(runs)}] {run_.label}: done by an earlier run, "
            "skipped", flush=True)
      continue
    print(plan.plan_line(run_, cfg), flush=True)
    print(timing.eta_line(index, len(runs), run_.label, time.time() - start,
                          len(runs) - index + 1,
                          [(1, seconds) for seconds in durations]),
          flush=True)
    table.runs[key], reason, signum = runner.run_one(run_, cfg)
    if signum is not None:
      table.write()
      raise interrupted(signum, run_, reason)
    if reason is None:
      durations.append(table.runs[key]["wall_time_s"])
    else:
      failed.append(run_.name)
      print(f"{errors.program_name()}: {run_.name} failed: {reason} (log: "
            f"{plan.task_dirs(cfg, run_.task, run_.seed)['log']})",
            file=sys.stderr, flush=True)
    table.write()
  table.write()
  print(f"Results: {os.path.join(cfg.work_dir, 'results.md')}", flush=True)
  if failed:
    raise TasksFailed(f"{len(failed)} of {len(runs)} run(s) failed: "
                      f"{', '.join(failed)} (see each run's log.txt)")
  return table.rows()

