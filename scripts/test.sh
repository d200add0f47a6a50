#!/usr/bin/env bash
# Run the test suite on both supported TensorFlow versions, then the
# converter's checks against HuggingFace transformers:
#   reference  (TensorFlow 2.15, TPUEstimator tests included)
#   latest     (newest TensorFlow 2.x; TPUEstimator tests skip with a reason)
#   interop    (newest TensorFlow + PyTorch CPU + transformers: tests/interop)
# Extra arguments go to pytest (e.g. `-m "not slow"`, `-k rel_shift`);
# XLNET_TEST_ENVS picks environments (e.g. `XLNET_TEST_ENVS=reference`).
# The tests of each file run in one of XLNET_TEST_WORKERS pytest processes
# (default: the CPU count, at most 4; 0 runs them all in this process).
# Exits non-zero if any run fails; the last line sums up all runs.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONDONTWRITEBYTECODE=1
status=0
summary=""
workers="${XLNET_TEST_WORKERS:-$(nproc 2>/dev/null || echo 2)}"
[[ "$workers" =~ ^[0-9]+$ ]] || { echo "[test] XLNET_TEST_WORKERS=$workers must be a number of processes (0: one process)" >&2; exit 2; }
[ "$workers" -gt 4 ] && workers=4
for env in ${XLNET_TEST_ENVS:-reference latest interop}; do
  tests=tests
  [ "$env" = interop ] && tests=tests/interop  # the rest ran on 'latest'
  py="$(bash scripts/setup_env.sh "$env" | tail -n 1)" || { echo "[test] could not set up the '$env' environment" >&2; status=1; continue; }
  echo "=== tests on '$env': $("$py" -c 'import tensorflow as tf; print("TensorFlow", tf.__version__)' 2>/dev/null) ==="
  report="$(mktemp)"
  "$py" -m pytest -p no:cacheprovider -q --junitxml="$report" \
    -n "$workers" --dist loadfile "$@" "$tests"
  rc=$?
  [ $rc -eq 0 ] || status=1
  line="$("$py" - "$report" "$env" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(f"{sys.argv[2]}: 0 passed, 1 failed"); sys.exit()
suites = [root] if root.tag == "testsuite" else list(root)
n = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
print(f"{sys.argv[2]}: {n - f - sk} passed, {f} failed, {sk} skipped")
PY
)"
  if [ $rc -eq 5 ]; then
    line="$env: no test matched the selection ($*): nothing ran (pytest exit code 5)"
  elif [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
    line="$env: 0 passed, 1 failed (pytest exit code $rc)"
  fi
  rm -f "$report"
  summary+="$line"$'\n'
done
echo "=== summary ==="
printf '%s' "$summary"
"${PYTHON:-python3}" - "$summary" <<'PY'
import re, sys
p = f = s = 0
for m in re.finditer(r"(\d+) passed, (\d+) failed, (\d+) skipped", sys.argv[1]):
    p += int(m[1]); f += int(m[2]); s += int(m[3])
f += len(re.findall(r"exit code [^5]", sys.argv[1]))
none = len(re.findall(r"no test matched", sys.argv[1]))
print(f"total: {p} passed, {f} failed, {s} skipped" +
      (f"; in {none} environment(s) no test matched the selection" if none
       else ""))
PY
exit $status
