"""The record writer's worker processes: forked encoders of text lines
and serializers of examples (`record_writer.create_data --num_workers`).

`worker_processes(num_workers, encoder)` runs tasks in order, in forked
processes that a dead writer takes with it, or in this process;
`encode_job` is the encoding task, with the worker's line encoder.
"""
import collections
import contextlib
import ctypes
import multiprocessing
import os
import signal

import numpy as np

_PR_SET_PDEATHSIG = 1  # prctl option, <linux/prctl.h>
_WORKER = {}  # the line encoder of this process, for `encode_job`


def encode_job(job):
  """Encodes the text lines of one job.

  Args:
    job: list of (lines, path): consecutive runs of lines, each from one
      file (named in messages).

  Returns:
    (ids np.int32 [total], lengths np.int64 [number of lines]).
  """
  encoder = _WORKER["encoder"]
  if encoder.from_raw_text:  # one SentencePiece call for the whole job
    return encoder([line for lines, _ in job for line in lines], job[0][1])
  parts = [encoder(lines, path) for lines, path in job]
  return (np.concatenate([ids for ids, _ in parts]),
          np.concatenate([lengths for _, lengths in parts]))


def _worker_main(conn, encoder, parent_ends, parent_pid):
  """A worker process: runs (fn, arg) tasks from `conn` until None/EOF.

  `parent_ends` are the parent's ends of the pipes, inherited by the fork:
  closed here, so that the parent's death closes this worker's pipe and
  ends the worker (EOF) instead of leaving it waiting forever. On Linux the
  kernel also kills the worker when the parent dies (`_die_with_parent`),
  even while it is busy with a task.

  Args:
    conn: this worker's end of its pipe.
    encoder: the `token_stream.LineEncoder` for `encode_job`.
    parent_ends: the parent's pipe ends (Connections) to close.
    parent_pid: int, the writer's process id.
  """
  signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent reports Ctrl-C
  signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler
  _die_with_parent(parent_pid)
  for end in parent_ends:
    end.close()
  _WORKER["encoder"] = encoder
  while True:
    try:
      task = conn.recv()
    except EOFError:  # the parent is gone
      return
    if task is None:
      return
    fn, arg = task
    try:
      conn.send((True, fn(arg)))
    except Exception as e:  # pylint: disable=broad-except
      conn.send((False, e))  # re-raised by the parent


def _die_with_parent(parent_pid):
  """Asks Linux to SIGKILL this process when its parent dies (a no-op
  elsewhere); exits at once if the parent is already gone."""
  try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
  except (OSError, AttributeError):  # not Linux: the pipes' EOF still works
    pass
  if os.getppid() != parent_pid:  # died before prctl took effect
    os._exit(0)  # pylint: disable=protected-access


class _Workers:
  """Runs tasks in forked worker processes, or in this one.

  The processes are forked: they inherit the loaded modules, so they start
  in milliseconds, and they run only NumPy and SentencePiece code, never
  TensorFlow (a fresh interpreter would spend seconds importing it). Tasks
  and results travel through one pipe per worker, driven from this thread
  only: multiprocessing.Pool's helper threads would compete for the GIL
  with the writing loop and make each record write (which releases the
  GIL) wait up to a thread switch interval.
  """

  def __init__(self, num_workers, encoder):
    _WORKER["encoder"] = encoder
    self._conns, self._procs = [], []
    forking = "fork" in multiprocessing.get_all_start_methods()
    if num_workers <= 1 or not forking:
      return
    ctx = multiprocessing.get_context("fork")
    for _ in range(num_workers):
      parent, child = ctx.Pipe()
      proc = ctx.Process(target=_worker_main,
                         args=(child, encoder, self._conns + [parent],
                               os.getpid()),
                         daemon=True)
      proc.start()
      child.close()
      self._conns.append(parent)
      self._procs.append(proc)

  def imap(self, fn, items):
    """Yields fn(item) for each item, in order.

    Each worker holds at most one task, so neither side can block the other
    on a full pipe.
    """
    if not self._conns:
      for item in items:
        yield fn(item)
      return
    pending = collections.deque()  # workers of the tasks in flight, in order
    for k, item in enumerate(items):
      if len(pending) == len(self._conns):
        yield self._result(pending.popleft())
      worker = k % len(self._conns)  # the one whose result was just taken
      self._conns[worker].send((fn, item))
      pending.append(worker)
    while pending:
      yield self._result(pending.popleft())

  def _result(self, worker):
    try:
      ok, value = self._conns[worker].recv()
    except EOFError:
      self._procs[worker].join()
      raise OSError(f"a --num_workers process died (exit code "
                    f"{self._procs[worker].exitcode}); rerun, or try "
                    "--num_workers=1") from None
    if not ok:
      raise value
    return value

  def close(self):
    """Stops the workers (killing them if they do not stop at once)."""
    for conn in self._conns:
      try:
        conn.send(None)
      except OSError:
        pass
    for proc in self._procs:
      proc.join(timeout=1)
      if proc.is_alive():
        proc.kill()
        proc.join()
    for conn in self._conns:
      conn.close()


@contextlib.contextmanager
def worker_processes(num_workers, encoder):
  """`_Workers` for the duration of a with-block (`num_workers` <= 1: none)."""
  workers = _Workers(num_workers, encoder)
  try:
    yield workers
  finally:
    workers.close()
