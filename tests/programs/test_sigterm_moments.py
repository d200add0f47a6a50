"""SIGTERM at many moments of the long operations outside training:
`model_utils.py rollback_ckpt`, `eval_pretrain.py` and `data_utils.py`.

Each operation runs in this process as a program's `main` runs (SIGTERM
raises `cli.Terminated`, `cli.guarded` ends the program), and this process
sends itself SIGTERM at the N-th profiler event (a call or return of a
Python or C function) of the operation, for moments spread over all of
it. Whatever the moment, the signal must end the program with exit code
143 and its one line (never be taken for damaged data, never be lost),
and the files must be as before or as after a whole run: nothing moved
half-way, nothing lost, nothing half-written; the same operation rerun
then gives the whole run's files. The programs themselves are run too.
"""
import contextlib
import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
from tensorflow.python.eager import context
from tensorflow.python.framework import ops

from tests import checkpoint_fixtures as ckpt_fx
from tests import data_helpers
from tests import shared_artifacts
from tests import tf_state
from tests import train_fixtures as fx
from xlnet.programs import cli
from xlnet.data import record_writer
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import pretraining as pretrain_flags
from xlnet.pretraining import api
from xlnet.training import checkpoint_io
from xlnet.training import checkpoint_tools

REPO = data_helpers.REPO_ROOT
STOPPED = ("stopped by SIGTERM; no temporary file is left; rerun the same "
           "command to redo the work")


class _Profile:
  """Counts profiler events; sends SIGTERM to this process at event
  `fire_at` (None: never)."""

  def __init__(self, fire_at=None):
    self.fire_at, self.events, self.fired = fire_at, 0, False

  def __call__(self, frame, event, arg):
    self.events += 1
    if self.events == self.fire_at:
      sys.setprofile(None)
      self.fired = True
      os.kill(os.getpid(), signal.SIGTERM)


def run_as_program(operation, fire_at=None):
  """Runs `operation()` as a program's `main` runs (`cli.run`: SIGTERM
  raises cli.Terminated, `cli.guarded` ends it), sending SIGTERM at
  profiler event `fire_at`.

  Returns:
    (exit code: 0 when `operation` returned, stderr, events seen).
  """
  profile = _Profile(fire_at)
  err = io.StringIO()
  state = tf_state.snapshot()
  with cli.sigterm_raises(), contextlib.redirect_stderr(err):
    try:
      sys.setprofile(profile)
      try:
        cli.guarded(lambda argv: operation())(["prog"])
        sys.setprofile(None)
        for _ in range(3):  # a handler still pending runs at a jump back
          pass
      except cli.Terminated as e:  # outside main: cli.run ends so too
        cli.end(e)
      code = 0
    except SystemExit as e:
      code = e.code
    finally:
      sys.setprofile(None)
      tf_state.restore(state)  # a stop inside TensorFlow's context managers
  if profile.fired or code:
    assert (code, err.getvalue()) == (
        143, f"{cli.program_name()}: {STOPPED}\n"), (
        fire_at, profile.fired)
  return code, profile.events


def files_of(directory):
  """{relative path: sha256} of every file under `directory` (its bytes
  with the directory's own path, e.g. in a results file, as `DIR`)."""
  out = {}
  for root, _, names in os.walk(directory):
    for name in names:
      path = os.path.join(root, name)
      with open(path, "rb") as f:
        data = f.read().replace(str(directory).encode(), b"DIR")
      out[os.path.relpath(path, directory)] = hashlib.sha256(
          data).hexdigest()
  return out


def sweep(template, operation, count, check):
  """For `count` moments spread over `operation(work_dir)` on a copy of
  the directory `template`: runs it with SIGTERM at that moment, calls
  `check(stopped, files before, files after a whole run, files now)`
  (`stopped`: the program ended with 143 rather than its work done),
  then reruns it without a signal and expects a whole run's files.

  A stop that left the files as they were before needs no rerun: that
  rerun starts from the template's files, as the whole run did (the first
  such stop is rerun all the same: the operation runs on in a process a
  stop interrupted)."""
  before = files_of(template)

  def run_on_copy(name, fire_at=None):
    work = f"{template}-{name}"
    shutil.copytree(template, work)
    return work, run_as_program(lambda: operation(work), fire_at)

  run_on_copy("first")  # imports and traces more than the later runs
  whole, (_, events) = run_on_copy("whole")
  after = files_of(whole)
  stopped = reran_untouched = 0
  for point in sorted(set(np.linspace(1, events, count).astype(int))):
    work, (code, _) = run_on_copy(f"at{point}", point)
    stopped += code == 143
    now = files_of(work)
    check(code == 143, before, after, now)
    if now != before or not reran_untouched:
      reran_untouched += now == before
      operation(work)
      assert files_of(work) == after, point
    shutil.rmtree(work)
  assert stopped >= count // 2  # the moments fell inside the operation


def no_temporaries(files):
  return not [p for p in files if ".tmp-" in p]


@pytest.mark.quick
@pytest.mark.eager
def test_a_run_stopped_inside_tensorflows_context_managers_leaves_none_on():
  """What a stop between a context manager's set-up and its `try` leaves
  (made here by hand: TensorFlow's own managers would undo theirs when
  collected): the next run starts eager, with the stacks as they were."""
  before = tf_state.snapshot()

  def stopped_inside():
    ctx = context.context()
    ctx._thread_local_data.is_eager = False  # graph_mode(), before its try  # pylint: disable=protected-access
    ctx.context_switches.push(False, None, None)  # Graph.as_default(), so
    ops._default_graph_stack.stack.append(ops.Graph())  # pylint: disable=protected-access

  assert run_as_program(stopped_inside)[0] == 0
  assert tf_state.snapshot() == before and before[2]


def test_sigterm_during_rollback_moves_all_or_nothing(tmp_path):
  """rollback_ckpt reads every checkpoint (the newest is damaged) before
  moving the damaged ones to quarantine/: SIGTERM while it reads an intact
  one used to be taken for damage, and the intact newest checkpoint was
  quarantined, the signal lost."""
  model_dir = tmp_path / "train"
  prefixes = ckpt_fx.save_checkpoints(str(model_dir), [
      ckpt_fx.random_values(s) for s in range(3)])
  ckpt_fx.truncate_data(prefixes[2])
  # Relative names (the Saver's are absolute), so that copies are alike.
  checkpoint_io.write_state_file(str(model_dir), prefixes[2], prefixes)

  def check(stopped, before, after, now):
    assert any(p.startswith("quarantine/model.ckpt-3.") for p in after)
    assert not any(p.startswith("quarantine/model.ckpt-2.") for p in after)
    assert now == after or (stopped and now == before)

  sweep(model_dir, checkpoint_tools.rollback_ckpt, 600, check)


@pytest.fixture(scope="module")
def trained():
  """Records and a model_dir train_gpu.py trained 4 steps (the run shared
  by the whole test run: read-only)."""
  return fx.shared_train_gpu_run("--train_steps=4")


def _eval_flags(records, model_dir):
  return ["eval_pretrain.py", f"--record_info_dir={records}",
          f"--model_dir={model_dir}", "--mem_len=8", "--perm_size=8",
          "--eval_split=train", "--eval_batches=4"]


@pytest.mark.eager
@pytest.mark.slow
def test_sigterm_during_evaluation_is_never_an_error_of_the_data(trained,
                                                                  tmp_path):
  """eval_pretrain.py's work (resolving the checkpoint, building the
  input, tracing, evaluating, writing the results): SIGTERM at any moment
  ends it as Terminated (TensorFlow's tracing used to turn it into a
  TypeError, printed with a 2 KB traceback), and the results file is
  whole or absent. Twelve moments: most of the work is tracing (the input's
  parser, the model twice: creating the variables, then the evaluation's
  function), where TensorFlow's own handlers sit."""
  records, shared = trained
  model_dir = shared_artifacts.copy_of(shared, tmp_path / "model")

  def evaluate(work):
    FL = flag_catalog.parse_flags(_eval_flags(records, work))
    api.evaluate(pretrain_flags.for_eval_pretrain(FL))

  def check(stopped, before, after, now):
    del stopped
    assert "eval_results_pretrain.json" in after
    assert no_temporaries(now)
    assert now in (before, after)

  sweep(model_dir, evaluate, 12, check)


def test_sigterm_while_writing_records_leaves_whole_files_only(tmp_path):
  """data_utils.py's record writer: at any moment, every file written is
  whole (the whole run's bytes) and no temporary file is left."""
  corpus = data_helpers.corpus_slice(120, str(tmp_path))
  spm = data_helpers.train_tiny_spm()
  save_dir = tmp_path / "records"
  save_dir.mkdir()

  def write(work):
    record_writer.create_data(corpus, spm, work, num_workers=1,
                              **dict(data_helpers.TINY_CONFIG, seq_len=32,
                                     reuse_len=16, bsz_per_host=4,
                                     num_core_per_host=1, num_predict=6))

  def check(stopped, before, after, now):
    del stopped, before
    assert no_temporaries(now)
    assert all(after.get(path) == digest for path, digest in now.items())

  sweep(save_dir, write, 30, check)


# Runs a program (argv[2:]) and sends it SIGTERM at profiler event
# N of its `main` counted from the first call of function F (argv[1]:
# `F:N`), as `run_as_program` does in this process.
_AT_EVENT = r"""
import os, runpy, signal, sys
from xlnet.programs import cli
function, fire_at = sys.argv[1].split(":")
fire_at, sys.argv = int(fire_at), sys.argv[2:]
events = [0]

def profile(frame, event, arg):
  if events[0] or (event == "call" and frame.f_code.co_name == function):
    events[0] += 1
  if events[0] == fire_at:
    sys.setprofile(None)
    os.kill(os.getpid(), signal.SIGTERM)

guarded = cli.guarded

def guarded_at_event(main):
  def main_at_event(argv):
    sys.setprofile(profile)
    return main(argv)
  return guarded(main_at_event)

cli.guarded = guarded_at_event
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _program_at(fire_at, *argv):
  return subprocess.run(
      [sys.executable, "-c", _AT_EVENT, fire_at,
       os.path.join(REPO, argv[0]), *argv[1:]], capture_output=True,
      text=True, cwd=REPO, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO))


@pytest.mark.slow
def test_programs_stopped_by_sigterm_print_one_line_and_exit_143(trained,
                                                                 tmp_path):
  """model_utils.py rollback_ckpt (while it reads the state file: it used
  to report the SIGTERM as a damaged state file, exit code 2),
  eval_pretrain.py and data_utils.py stopped by SIGTERM in their work: one
  line, exit code 143, no traceback."""
  records, model_dir = trained
  ckpt_dir = tmp_path / "train"
  prefixes = ckpt_fx.save_checkpoints(str(ckpt_dir), [
      ckpt_fx.random_values(s) for s in range(3)])
  ckpt_fx.truncate_data(prefixes[2])
  eval_dir = tmp_path / "eval"
  shutil.copytree(model_dir, eval_dir)
  corpus = data_helpers.corpus_slice(120, str(tmp_path))
  runs = {
      "model_utils.py": ("read_state_file:100", [
          "rollback_ckpt", f"--model_dir={ckpt_dir}"]),
      "eval_pretrain.py": ("evaluate_checkpoint:300000",
                           _eval_flags(records, eval_dir)[1:]),
      "data_utils.py": ("create_data:20000", [
          f"--input_glob={corpus}", f"--sp_path={data_helpers.train_tiny_spm()}",
          f"--save_dir={tmp_path / 'records'}", "--seq_len=32",
          "--reuse_len=16", "--bsz_per_host=4", "--num_core_per_host=1",
          "--num_predict=6"]),
  }
  before = files_of(ckpt_dir)
  for program, (fire_at, argv) in runs.items():
    done = _program_at(fire_at, program, *argv)
    assert done.returncode == 143, (program, done.stderr[-3000:])
    assert done.stderr.strip().splitlines()[-1] == f"{program}: {STOPPED}"
    assert "Traceback" not in done.stderr
  assert files_of(ckpt_dir) == before  # rollback: read, nothing moved yet
