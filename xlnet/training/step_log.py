"""The progress line of a training run and its TensorBoard scalars: the
`on_step` callback of `Trainer.train` (`StepLogger`) and the scalars that
held-out evaluation writes too (`write_scalars`).
"""
import time

from absl import logging
import numpy as np
import tensorflow as tf

from xlnet.training import progress


# TensorBoard shows a summary as a scalar curve when its metadata names the
# "scalars" plugin; tf.summary.write (core TensorFlow) needs no tensorboard
# package, which TensorFlow >= 2.16 no longer installs.
def write_scalars(writer, values, step):
  """Writes {tag: float} as TensorBoard scalars at `step` and flushes."""
  with writer.as_default():
    for tag, value in values.items():
      write_scalar(tag, tf.constant(float(value), tf.float32), step)
  writer.flush()


def write_scalar(tag, value, step):
  """Writes a float32 scalar tensor to the default summary writer as a
  TensorBoard scalar at `step` (eagerly, or an op in a graph)."""
  metadata = tf.compat.v1.SummaryMetadata(
      plugin_data=tf.compat.v1.SummaryMetadata.PluginData(
          plugin_name="scalars")).SerializeToString()
  return tf.summary.write(tag, value, step=step, metadata=metadata)


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
                 progress.format_duration(eta))
    if self.writer is not None:
      write_scalars(self.writer, dict(scalars, **{
          f"{self.unit}_per_sec": rate}), step)
    self._last_step, self._last_time, self._losses = step, now, []
