"""What the demo's figures depend on besides the code: the CPU, its cores and
vector extensions, the TensorFlow version and whether TensorFlow runs its
CPU kernels through oneDNN (TensorFlow turns oneDNN on by default only on
CPUs with AVX512_VNNI, AVX512_BF16 or AMX; `TF_ENABLE_ONEDNN_OPTS` decides
otherwise). oneDNN's kernels add in another order than TensorFlow's own, so
the same seed gives the same bits only under the same description.

`python -m xlnet.demo.machine` prints the one-line description that ends
the demo (docs/demo.md quotes the development machine's).
"""
import os
import platform

import tensorflow as tf

# TensorFlow's private record of how it was built; a TensorFlow without it
# leaves oneDNN's state unknown (`onednn_on`).
try:
  from tensorflow.python.util import _pywrap_util_port
except ImportError:
  _pywrap_util_port = None

# The extensions that change which kernels run (and so the last bits).
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def cpu_info(path="/proc/cpuinfo"):
  """(model name, set of flags) of the first CPU in `path` (Linux);
  (`platform.processor()`, empty set) where there is no such file."""
  try:
    with open(path, encoding="utf-8") as f:
      fields = dict(line.split(":", 1) for line in f.read().split("\n\n")[0]
                    .split("\n") if ":" in line)
  except OSError:
    return platform.processor() or "unknown CPU", set()
  fields = {k.strip(): v.strip() for k, v in fields.items()}
  return fields.get("model name", "unknown CPU"), set(
      fields.get("flags", "").split())


def num_cores():
  """The cores this process may run on."""
  if hasattr(os, "sched_getaffinity"):
    return len(os.sched_getaffinity(0))
  return os.cpu_count()


def onednn_on():
  """Whether TensorFlow runs its CPU kernels through oneDNN (True/False),
  or None where this TensorFlow does not say."""
  try:
    return bool(_pywrap_util_port.IsMklEnabled())
  except AttributeError:  # no such module or call
    return None


def describe():
  """One line, e.g. "AMD EPYC, 2 cores, avx2 avx512f avx512_bf16;
  TensorFlow 2.15.1, oneDNN on"."""
  model, cpu_flags = cpu_info()
  extensions = " ".join(f for f in CPU_FLAGS if f in cpu_flags) or "none of "\
      + "/".join(CPU_FLAGS)
  onednn = {True: "on", False: "off", None: "unknown"}[onednn_on()]
  return (f"{model}, {num_cores()} cores, {extensions}; TensorFlow "
          f"{tf.__version__}, oneDNN {onednn}")


if __name__ == "__main__":
  print(describe())
