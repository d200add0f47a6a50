"""The line that ends the demo and says what its figures depend on
(xlnet/demo/machine.py): the CPU, its cores, TensorFlow and oneDNN."""
import os

import pytest
import tensorflow as tf

from xlnet.demo import machine

CPUINFO = """processor\t: 0
model name\t: Test CPU 9000
flags\t\t: fpu sse avx2 avx512f

processor\t: 1
model name\t: Another CPU
flags\t\t: amx_bf16
"""


def test_cpu_info_reads_the_first_cpu(tmp_path):
  path = tmp_path / "cpuinfo"
  path.write_text(CPUINFO)
  assert machine.cpu_info(str(path)) == (
      "Test CPU 9000", {"fpu", "sse", "avx2", "avx512f"})
  assert machine.cpu_info(str(tmp_path / "absent"))[1] == set()


@pytest.mark.tf_version
def test_the_line_names_this_tensorflow_and_whether_onednn_runs():
  """oneDNN's state comes from a private TensorFlow call: a TensorFlow that
  drops it would make the demo's line say "unknown"."""
  assert machine.onednn_on() in (True, False)
  line = machine.describe()
  assert f", {len(os.sched_getaffinity(0))} cores, " in line
  assert line.endswith(f"; TensorFlow {tf.__version__}, oneDNN "
                       f"{'on' if machine.onednn_on() else 'off'}")
