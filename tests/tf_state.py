"""TensorFlow's per-thread mode, saved and put back.

A program stopped in-process by a signal inside TensorFlow's own context
managers (`Graph.as_default`, `context.graph_mode`: a signal between their
change and the `try` that undoes it) leaves a graph the default, or graph
mode on, for the rest of the process; one inside a `stop_recording` block
(`tf.custom_gradient`, tracing) leaves every gradient tape of the thread
stopped, so later gradients come out None or zero. A real program's
process ends at
the stop; a test process runs on, so tests that stop programs in-process
put the state back.
"""
from tensorflow.python import pywrap_tfe
from tensorflow.python.eager import context
from tensorflow.python.framework import ops


def snapshot():
  """TensorFlow's default-graph stack, context-switch stack, eager flag
  and whether its gradient tapes are stopped, of this thread: (list, list,
  bool, bool)."""
  ctx = context.context()
  return (list(ops._default_graph_stack.stack),  # pylint: disable=protected-access
          list(ctx.context_switches.stack),
          ctx._thread_local_data.is_eager,  # pylint: disable=protected-access
          pywrap_tfe.TFE_Py_TapeSetIsStopped())


def restore(state):
  """Puts back what `snapshot` returned."""
  graphs, switches, is_eager, tapes_stopped = state
  ctx = context.context()
  ops._default_graph_stack.stack[:] = graphs  # pylint: disable=protected-access
  ctx.context_switches.stack[:] = switches
  ctx._thread_local_data.is_eager = is_eager  # pylint: disable=protected-access
  if tapes_stopped:
    pywrap_tfe.TFE_Py_TapeSetStopOnThread()
  else:
    pywrap_tfe.TFE_Py_TapeSetRestartOnThread()
