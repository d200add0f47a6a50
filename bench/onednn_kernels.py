"""Which oneDNN kernels ran, for how long, at what speed.

Reads a oneDNN verbose log (the lines `onednn_verbose,...,exec,...` that
TensorFlow's oneDNN kernels print with ONEDNN_VERBOSE=1) from stdin, ignores
every other line, and prints per (primitive, implementation, data type,
problem shape): the executions, the total milliseconds and, for matmuls and
inner products, the achieved GFLOP/s. The implementation names say which
instruction set a kernel uses (e.g. `brg:avx512_core_amx` = AMX tiles,
`brg:avx512_core_bf16` = AVX512-BF16 dot products, `brg:avx512_core` =
float32 AVX-512).

Usage (from the repository root):
  ONEDNN_VERBOSE=1 .venvs/reference/bin/python bench/model_step.py \\
      --configs base2 --variants bf16 --rounds 1 --steps 1 --warmup 1 \\
      | .venvs/reference/bin/python bench/onednn_kernels.py --top 30

The log covers the whole run (the matmul-peak probe and warm-up steps too):
compare shares and speeds, not absolute totals.
"""
import collections
import math
import os
import re
import sys

from absl import flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from xlnet.programs import cli  # noqa: E402

flags.DEFINE_integer("top", 30, "Rows printed, slowest first.")
FLAGS = flags.FLAGS

_MATMUL_SHAPE = re.compile(r"^(\d+(?:x\d+)*):(\d+(?:x\d+)*)")
_INNER_PRODUCT_SHAPE = re.compile(r"^mb(\d+)ic(\d+)oc(\d+)")


def problem_flops(kind, problem):
  """FLOPs (2 per multiply-add) of a matmul, gemm or inner product, else 0.

  Args:
    kind: primitive kind, e.g. "matmul" or "gemm_api".
    problem: oneDNN problem string, e.g. "2x12x512x64:2x12x64x896" (batched
      A:B, batch dims broadcast) or "mb1194ic768oc3072".
  """
  match = _MATMUL_SHAPE.match(problem)
  if kind in ("matmul", "gemm_api") and match:
    a = [int(x) for x in match.group(1).split("x")]
    b = [int(x) for x in match.group(2).split("x")]
    batch = max(math.prod(a[:-2]), math.prod(b[:-2]))
    return 2 * batch * a[-2] * a[-1] * b[-1]
  match = _INNER_PRODUCT_SHAPE.match(problem)
  if kind == "inner_product" and match:
    return 2 * math.prod(int(x) for x in match.groups())
  return 0


def parse(lines):
  """Sums the verbose `exec` lines.

  Returns:
    dict (kind, implementation, dtype, problem) -> [runs, ms, flops].
  """
  rows = collections.defaultdict(lambda: [0, 0.0, 0])
  for line in lines:
    if not line.startswith("onednn_verbose,"):
      continue
    fields = line.strip().split(",")
    if "exec" not in fields:
      continue
    # ...,exec,cpu,<kind>,<implementation>,<prop>,<memory descs>,...,
    # <problem>,<time ms>
    i = fields.index("exec")
    try:
      kind, impl, descs = fields[i + 2], fields[i + 3], fields[i + 5]
      problem, ms = fields[-2], float(fields[-1])
    except (IndexError, ValueError):
      continue
    dtype = next((t for t in ("bf16", "f16", "f32", "s8", "u8")
                  if f"_{t}:" in descs or f"src_{t}" in descs), "?")
    row = rows[(kind, impl, dtype, problem)]
    row[0] += 1
    row[1] += ms
    row[2] += problem_flops(kind, problem)
  return rows


def main(_):
  rows = parse(sys.stdin)
  if not rows:
    raise ValueError("stdin: no 'onednn_verbose,...,exec,...' lines; run the "
                     "benchmark with ONEDNN_VERBOSE=1 and pipe its output")
  total = sum(ms for _, ms, _ in rows.values())
  print(f"{total:.1f} ms in {sum(r for r, _, _ in rows.values())} oneDNN "
        f"executions; slowest first:")
  ranked = sorted(rows.items(), key=lambda kv: -kv[1][1])
  for (kind, impl, dtype, problem), (runs, ms, flops) in ranked[:FLAGS.top]:
    speed = f"{flops / ms / 1e6:7.0f} GFLOP/s" if flops and ms else ""
    print(f"{ms:9.1f} ms {runs:4d}x {kind:13s} {impl:24s} {dtype:4s} "
          f"{problem[:44]:44s} {speed}")


if __name__ == "__main__":
  cli.run(main)
