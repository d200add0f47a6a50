"""Importing `xlnet` makes TensorFlow keep freed CPU tensor memory (its BFC
CPU allocator) unless the user chose otherwise, with oneDNN on or off.

TensorFlow picks its CPU allocator once per process, at its first op,
from the environment. Each case runs in a process of its own: one
interpreter per oneDNN setting imports TensorFlow (no op run) and forks a
child per case, which sets the case's variables, imports xlnet or not and
runs the probe, as a fresh `python` importing TensorFlow first would (the
allocator is chosen at the first op, so importing xlnet after TensorFlow
still counts). The probe reads the name of the allocator that really
served an op (a traced run's step statistics), not a side effect: memory
statistics (`tf.config.experimental.get_memory_info("CPU:0")`) exist with
BFC but also with oneDNN's own allocator ("mklcpu"), which TensorFlow uses
by default where oneDNN is on (by default on CPUs with AVX512_VNNI,
AVX512_BF16 or AMX; `TF_ENABLE_ONEDNN_OPTS`, read when TensorFlow loads,
overrides it). Both settings of `TF_ENABLE_ONEDNN_OPTS` are tested on every
machine, so a CPU of either kind runs both cases.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# Imports TensorFlow, then for each case (argv[1]: JSON [name, imports
# xlnet, the allocator variables]) forks a child that sets the variables,
# imports xlnet or not and runs the probe; prints {name: [the allocator
# names of the traced run, the BFC pool limit variable]}.
PROBE = """
import json, os, sys, tempfile
import tensorflow as tf

def probe(with_xlnet, env, out):
  os.environ.update(env)
  if with_xlnet:
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
  out.write(json.dumps([",".join(sorted(names)),
                        os.environ.get("TF_CPU_BFC_MEM_LIMIT_IN_MB")]).encode())
  out.flush()

found = {}
for name, with_xlnet, env in json.loads(sys.argv[1]):
  with tempfile.TemporaryFile() as out:
    pid = os.fork()
    if pid == 0:
      code = 1
      try:
        probe(with_xlnet, env, out)
        code = 0
      finally:
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, name
    out.seek(0)
    found[name] = json.loads(out.read().decode())
print(json.dumps(found))
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


def _probe(onednn):
  """{case name: (allocator names, pool limit variable or None)} printed by
  the probes of one oneDNN setting; no allocator variable is set but the
  case's own."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT,
             TF_ENABLE_ONEDNN_OPTS=onednn)
  for name in ("TF_CPU_ALLOCATOR_USE_BFC", "TF_CPU_BFC_MEM_LIMIT_IN_MB"):
    env.pop(name, None)
  proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(CASES)],
                        capture_output=True, text=True, env=env, cwd=ROOT,
                        check=False, timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  found = json.loads(proc.stdout.strip().split("\n")[-1])
  return {name: tuple(value) for name, value in found.items()}


@pytest.fixture(scope="module")
def probed():
  """{(oneDNN setting, case name): (allocator names, limit)}."""
  out = {}
  for onednn in ONEDNN:
    found = _probe(onednn)
    # Each child chose its allocator from its own variables.
    assert found["tf_bfc"][0] != found["tf_off"][0], found
    out.update({(onednn, name): value for name, value in found.items()})
  return out


def _physical_mb():
  return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20


@pytest.mark.tf_version
@pytest.mark.parametrize("onednn", ONEDNN)
@pytest.mark.skipif(not hasattr(os, "sysconf"), reason="needs os.sysconf")
def test_importing_xlnet_turns_on_the_bfc_cpu_allocator(probed, onednn):
  bfc, _ = probed[onednn, "tf_bfc"]
  assert probed[onednn, "xlnet"][0] == bfc
  # TensorFlow's own cap (64 GB), or the physical memory where larger.
  assert int(probed[onednn, "xlnet"][1]) == max(65536, _physical_mb())


@pytest.mark.tf_version
@pytest.mark.parametrize("onednn", ONEDNN)
def test_the_users_setting_wins(probed, onednn):
  bfc, _ = probed[onednn, "tf_bfc"]
  # TensorFlow's allocator without BFC ("cpu", or "mklcpu" with oneDNN).
  assert probed[onednn, "xlnet_off"][0] == probed[onednn, "tf_off"][0] != bfc
  assert probed[onednn, "xlnet_limit"] == (bfc, "70000")
  assert probed[onednn, "tf_bfc"][1] is None  # the user set no limit
