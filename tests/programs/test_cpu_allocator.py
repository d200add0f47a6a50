"""Importing `xlnet` makes TensorFlow keep freed CPU tensor memory (its BFC
CPU allocator) unless the user chose otherwise.

Each case runs a fresh interpreter, since TensorFlow picks its CPU allocator
once per process. `tf.config.experimental.get_memory_info("CPU:0")` has
statistics only with the BFC allocator; with the default one it raises.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# TensorFlow is imported first on purpose: the allocator is chosen at the
# first op, so importing xlnet after TensorFlow still counts.
PROBE = """
import os
import tensorflow as tf
import xlnet
x = tf.ones([256, 1024])
try:
  tf.config.experimental.get_memory_info("CPU:0")
  print("bfc", os.environ["TF_CPU_BFC_MEM_LIMIT_IN_MB"])
except ValueError:
  print("default", os.environ.get("TF_CPU_BFC_MEM_LIMIT_IN_MB"))
"""


def _probe(**env):
  """What the probe prints in a fresh interpreter whose only allocator
  variables are `env`."""
  full = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
  for name in ("TF_CPU_ALLOCATOR_USE_BFC", "TF_CPU_BFC_MEM_LIMIT_IN_MB"):
    full.pop(name, None)
  full.update(env)
  proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True,
                        text=True, env=full, cwd=ROOT, check=False,
                        timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  return proc.stdout.split()


def _physical_mb():
  return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20


@pytest.mark.skipif(not hasattr(os, "sysconf"), reason="needs os.sysconf")
def test_importing_xlnet_turns_on_the_bfc_cpu_allocator():
  kind, limit = _probe()
  assert kind == "bfc"
  # TensorFlow's own cap (64 GB), or the physical memory where larger.
  assert int(limit) == max(65536, _physical_mb())


def test_the_users_setting_wins():
  assert _probe(TF_CPU_ALLOCATOR_USE_BFC="false")[0] == "default"
  assert _probe(TF_CPU_BFC_MEM_LIMIT_IN_MB="70000") == ["bfc", "70000"]
