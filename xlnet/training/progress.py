"""How a training run reports and stops: the exceptions that end a run after
its state was saved, the progress line and its TensorBoard scalars, and the
signal handler that turns SIGTERM/SIGINT into a stop at a step boundary.
"""
import os
import signal
import time

from absl import logging
import numpy as np

from xlnet import errors


################################################################################
# Errors that end a run after its state was saved.
################################################################################
class StopTraining(errors.Stop):
  """Training stopped early after saving; `exit_code` is the exit status."""


class Interrupted(StopTraining):
  """SIGTERM/SIGINT arrived; a checkpoint of the last full step was saved."""
  is_error = False

  def __init__(self, message, signum):
    super().__init__(message)
    self.exit_code = 128 + signum


class Diverged(StopTraining):
  """The loss or the gradient norm became non-finite."""


class DataCorrupted(StopTraining):
  """An input record could not be read."""


class InputLost(StopTraining):
  """The input service lost the run's stream (its job) between steps."""


class OutOfMemory(StopTraining):
  """A step ran out of device memory; nothing was saved after the last
  checkpoint, which stays intact."""


class WorkerLost(errors.Stop):
  """Another worker of a multi-worker run stopped answering mid-step
  (crashed, killed, unreachable); nothing could be saved, since a
  checkpoint needs every worker."""


def peer_errors():
  """What TensorFlow's collective ops raise when a peer is gone: its socket
  closed, its heartbeats stopped, the collective was aborted or timed out.
  (TensorFlow is imported here, not with the module: download.py formats
  its durations with this module and needs no TensorFlow.)"""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return (tf.errors.UnavailableError, tf.errors.AbortedError,
          tf.errors.CancelledError, tf.errors.DeadlineExceededError)


def worker_lost(step, newest, model_dir, err):
  """The `WorkerLost` of a multi-worker run whose step after `step` (or
  its save; None: its set-up before training) failed with `err` (one of
  `peer_errors()`); `newest`: the newest checkpoint prefix in `model_dir`,
  or None."""
  when = ("before training" if step is None else
          f"during step {step + 1}")
  kept = (f"{os.path.basename(newest)}, the newest checkpoint in "
          f"{model_dir}" if newest else "the start (no checkpoint yet)")
  return WorkerLost(
      f"a worker of the cluster stopped {when} ({type(err).__name__} in a "
      "collective op; its log says why): restart every host with the same "
      f"command to resume from {kept}; the steps after it are lost, as "
      "saving needs every worker")


def diverged(step, out, prefix, loss_scaling):
  """The `Diverged` of the step after `step`, whose loss or gradient norm
  (`out["loss"]`, `out["gnorm"]`) was not finite; `prefix` holds the last
  finite state."""
  what = ("non-finite loss ({}) or float16 gradients that "
          "overflow at loss scale 1 (gradient norm {})"
          if loss_scaling else
          "non-finite loss ({}) or gradient norm ({})").format(
              out["loss"], out["gnorm"])
  return Diverged(
      f"{what} at step {step + 1}: the update was not applied; the "
      f"last finite state (step {step}) is saved in {prefix}. Lower "
      "--learning_rate or raise --warmup_steps and rerun to resume "
      "from it")


def out_of_memory(step, newest, model_dir, advice):
  """The `OutOfMemory` of the step after `step`; `newest`: the newest
  checkpoint prefix in `model_dir` (None: none yet); `advice`: what to run
  instead (names the plan, the device and the safer command)."""
  kept = (f"it resumes from {os.path.basename(newest)} in {model_dir}"
          if newest else f"nothing was saved in {model_dir} yet")
  return OutOfMemory(f"out of device memory in step {step + 1}: {advice} "
                     f"({kept})")


def interrupted(signum, step, model_dir):
  """The `Interrupted` of a run stopped by `signum` (None: a signal on
  another worker) after `step`, whose checkpoint is saved."""
  name = (signal.Signals(signum).name if signum
          else "a signal on another worker")
  return Interrupted(
      f"stopped by {name} after step {step}; checkpoint "
      f"model.ckpt-{step} saved in {model_dir}; rerun the same "
      "command to resume", signum or signal.SIGTERM)


################################################################################
# TensorBoard.
################################################################################
# TensorBoard shows a summary as a scalar curve when its metadata names the
# "scalars" plugin; tf.summary.write (core TensorFlow) needs no tensorboard
# package, which TensorFlow >= 2.16 no longer installs.
def write_scalars(writer, values, step):
  """Writes {tag: float} as TensorBoard scalars at `step` and flushes."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with writer.as_default():
    for tag, value in values.items():
      write_scalar(tag, tf.constant(float(value), tf.float32), step)
  writer.flush()


def write_scalar(tag, value, step):
  """Writes a float32 scalar tensor to the default summary writer as a
  TensorBoard scalar at `step` (eagerly, or an op in a graph)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  metadata = tf.compat.v1.SummaryMetadata(
      plugin_data=tf.compat.v1.SummaryMetadata.PluginData(
          plugin_name="scalars")).SerializeToString()
  return tf.summary.write(tag, value, step=step, metadata=metadata)


################################################################################
# Progress.
################################################################################
def format_duration(seconds):
  """`seconds` as e.g. `3d 04:05:06` or `04:05:06`."""
  seconds = int(round(seconds))
  days, seconds = divmod(seconds, 86400)
  hours, seconds = divmod(seconds, 3600)
  text = f"{hours:02d}:{seconds // 60:02d}:{seconds % 60:02d}"
  return f"{days}d {text}" if days else text


class StepLogger:
  """The `on_step` callback of `Trainer.train` that logs progress.

  Every `iterations` steps, after the first step of a run and at the end,
  it logs one line (the program's `line_fn` text for the mean loss since the
  previous line, then the throughput and an ETA) and writes the line's
  scalars and the throughput to TensorBoard.

  Args:
    iterations, train_steps, start_step: ints.
    units_per_step: what one step processes (tokens, examples).
    unit: their name, e.g. "tokens".
    writer: a summary writer (the chief's) or None.
    line_fn: `line_fn(step, mean_loss, out)` -> (text, {tag: value});
      `out` holds the step's loss, gnorm and lr.

  Attributes:
    history: list of (step, loss) of every step of this run.
  """

  def __init__(self, iterations, train_steps, start_step, units_per_step,
               unit, writer, line_fn):
    self.iterations, self.train_steps = iterations, train_steps
    self.units_per_step, self.unit = units_per_step, unit
    self.writer, self.line_fn = writer, line_fn
    self.history = []
    self._losses = []
    self._last_step, self._last_time = start_step, time.time()

  def __call__(self, step, out):
    self.history.append((step, float(out["loss"])))
    self._losses.append(float(out["loss"]))
    if not (step % self.iterations == 0 or len(self.history) == 1 or
            step == self.train_steps):
      return
    now = time.time()
    rate = ((step - self._last_step) * self.units_per_step /
            max(now - self._last_time, 1e-9))
    eta = (self.train_steps - step) * self.units_per_step / max(rate, 1e-9)
    text, scalars = self.line_fn(step, float(np.mean(self._losses)), out)
    logging.info("%s | %.1f %s/s | ETA %s", text, rate, self.unit,
                 format_duration(eta))
    if self.writer is not None:
      write_scalars(self.writer, dict(scalars, **{
          f"{self.unit}_per_sec": rate}), step)
    self._last_step, self._last_time, self._losses = step, now, []


################################################################################
# Signals.
################################################################################
class SignalCatcher:
  """Turns the first SIGTERM/SIGINT into a request to stop at a step boundary.

  A second signal gets the default behaviour (immediate exit); checkpoints
  are written atomically, so even then nothing half-written is visible.
  """

  def __init__(self):
    self.signum = None
    self._previous = {}

  def __enter__(self):
    for signum in (signal.SIGTERM, signal.SIGINT):
      try:
        self._previous[signum] = signal.signal(signum, self._handle)
      except ValueError:  # not the main thread: leave signals alone
        pass
    return self

  def _handle(self, signum, frame):
    del frame
    self.signum = signum
    for other, previous in self._previous.items():
      signal.signal(other, previous)
    logging.warning("%s received: stopping after this step and saving a "
                    "checkpoint", signal.Signals(signum).name)

  def __exit__(self, *exc):
    for signum, previous in self._previous.items():
      signal.signal(signum, previous)
    return False
