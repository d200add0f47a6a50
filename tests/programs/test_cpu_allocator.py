"""Importing `xlnet` makes TensorFlow keep freed CPU tensor memory (its BFC
CPU allocator) unless the user chose otherwise, with oneDNN on or off.

Each case runs a fresh interpreter, since TensorFlow picks its CPU allocator
once per process. The probe reads the name of the allocator that really
served an op (a traced run's step statistics), not a side effect: memory
statistics (`tf.config.experimental.get_memory_info("CPU:0")`) exist with
BFC but also with oneDNN's own allocator ("mklcpu"), which TensorFlow uses
by default where oneDNN is on (by default on CPUs with AVX512_VNNI,
AVX512_BF16 or AMX; `TF_ENABLE_ONEDNN_OPTS` overrides it). Both settings
of `TF_ENABLE_ONEDNN_OPTS` are tested on every machine, so a CPU of either
kind runs both cases.
"""
from concurrent import futures
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# TensorFlow is imported first on purpose: the allocator is chosen at the
# first op, so importing xlnet after TensorFlow still counts. Prints the
# allocator names of the traced run and the BFC pool limit variable.
PROBE = """
import os, sys
import tensorflow as tf
if sys.argv[1] == "xlnet":
  import xlnet
tf.compat.v1.disable_eager_execution()
y = tf.random.uniform([256, 1024]) + 1.0
trace = tf.compat.v1.RunOptions(
    trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
metadata = tf.compat.v1.RunMetadata()
with tf.compat.v1.Session() as session:
  session.run(y, options=trace, run_metadata=metadata)
names = {m.allocator_name for d in metadata.step_stats.dev_stats
         for n in d.node_stats for m in n.memory}
print(",".join(sorted(names)), os.environ.get("TF_CPU_BFC_MEM_LIMIT_IN_MB"))
"""

ONEDNN = ("0", "1")
# (name, imports xlnet, allocator variables set by the user)
CASES = (
    ("tf_bfc", False, {"TF_CPU_ALLOCATOR_USE_BFC": "true"}),
    ("tf_off", False, {"TF_CPU_ALLOCATOR_USE_BFC": "false"}),
    ("xlnet", True, {}),
    ("xlnet_off", True, {"TF_CPU_ALLOCATOR_USE_BFC": "false"}),
    ("xlnet_limit", True, {"TF_CPU_BFC_MEM_LIMIT_IN_MB": "70000"}),
)


def _probe(onednn, with_xlnet, env):
  """(allocator names, pool limit variable) printed by the probe in a fresh
  interpreter whose only allocator variables are `env`."""
  full = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT,
              TF_ENABLE_ONEDNN_OPTS=onednn)
  for name in ("TF_CPU_ALLOCATOR_USE_BFC", "TF_CPU_BFC_MEM_LIMIT_IN_MB"):
    full.pop(name, None)
  full.update(env)
  proc = subprocess.run(
      [sys.executable, "-c", PROBE, "xlnet" if with_xlnet else "tf"],
      capture_output=True, text=True, env=full, cwd=ROOT, check=False,
      timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  names, limit = proc.stdout.split()
  return names, limit


@pytest.fixture(scope="module")
def probed():
  """{(oneDNN setting, case name): (allocator names, limit)}."""
  keys = [(o, name) for o in ONEDNN for name, _, _ in CASES]
  args = {name: (xl, env) for name, xl, env in CASES}
  with futures.ThreadPoolExecutor(2) as pool:
    results = pool.map(lambda k: _probe(k[0], *args[k[1]]), keys)
    return dict(zip(keys, results))


def _physical_mb():
  return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20


@pytest.mark.parametrize("onednn", ONEDNN)
@pytest.mark.skipif(not hasattr(os, "sysconf"), reason="needs os.sysconf")
def test_importing_xlnet_turns_on_the_bfc_cpu_allocator(probed, onednn):
  bfc, _ = probed[onednn, "tf_bfc"]
  assert probed[onednn, "xlnet"][0] == bfc
  # TensorFlow's own cap (64 GB), or the physical memory where larger.
  assert int(probed[onednn, "xlnet"][1]) == max(65536, _physical_mb())


@pytest.mark.parametrize("onednn", ONEDNN)
def test_the_users_setting_wins(probed, onednn):
  bfc, _ = probed[onednn, "tf_bfc"]
  # TensorFlow's allocator without BFC ("cpu", or "mklcpu" with oneDNN).
  assert probed[onednn, "xlnet_off"][0] == probed[onednn, "tf_off"][0] != bfc
  assert probed[onednn, "xlnet_limit"] == (bfc, "70000")
