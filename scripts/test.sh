#!/usr/bin/env bash
# Runs the test suite on both supported TensorFlow versions, then the
# converter's checks against HuggingFace transformers:
#   reference  TensorFlow 2.15: every test (TPUEstimator's included) but the
#              converter checks that need PyTorch
#   latest     the newest TensorFlow 2.x: the tests marked tf_version (what
#              depends on the TensorFlow version); a whole run also checks
#              that they exercise every module of xlnet/ there
#   interop    the newest TensorFlow + PyTorch CPU + transformers: tests/interop
# (tests/conftest.py decides from XLNET_TEST_ENV, which this script sets;
# docs/testing.md says which tier to run when.)
#
# Usage: bash scripts/test.sh [--quick] [PYTEST OPTIONS] [TEST PATHS]
#   bash scripts/test.sh                  everything (about 27 min on 2 cores)
#   bash scripts/test.sh --quick          the quick tier: the tests marked
#                                         quick, on reference (about 1 min)
#   bash scripts/test.sh tests/core       one folder (or file, or
#                                         file::test) on each environment
#   bash scripts/test.sh -m "not slow" -k rel_shift
#   XLNET_TEST_ENVS=reference bash scripts/test.sh tests/data
# Test paths narrow the run: each environment runs the named paths that
# belong to it (interop: those in tests/interop) and an environment left
# without one is not run (it says so). Other arguments go to pytest.
# Environments are built (or reused) by scripts/setup_env.sh.
# Env: XLNET_TEST_ENVS (default "reference latest interop"; with --quick
# "reference"), XLNET_TEST_WORKERS (pytest processes, each running whole
# files; default the CPU count, at most 4; 0 runs all tests in one process).
# The end of the output: the ten slowest tests, each environment's line
# with its set-up and test wall times, and the last line sums up every
# environment: "total: P passed, F failed, S skipped". Exit status: 1 if
# F > 0 (a failed or erroring test, a crashed run, an environment that
# could not be built), 5 if no test matched the selection anywhere, 2 for a
# bad argument, else 0.
set -uo pipefail
usage() { sed -n '2,/^set -uo/{/^#/{s/^# \{0,1\}//;p}}' "${BASH_SOURCE[0]}"; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# pytest options whose value is the next argument (the rest are flags, or
# --name=value).
takes_value=" -k -m -p -n -o -c -W -r --dist --deselect --ignore --ignore-glob \
--maxfail --junitxml --junit-xml --basetemp --rootdir --durations --tb \
--confcutdir --log-level --import-mode --capture --color --timeout "
options=() paths=() value_next=0 quick=0
for arg in "$@"; do
  if [ "$value_next" = 1 ]; then options+=("$arg"); value_next=0; continue; fi
  case "$arg" in
    -h|--help) usage; exit 0 ;;
    --quick) quick=1 ;;
    -*) options+=("$arg")
        [[ "$takes_value" == *" $arg "* ]] && value_next=1 ;;
    *) file="${arg%%::*}"
       [ -e "$file" ] || { echo "test.sh: no such test path '$arg' (see --help)" >&2; exit 2; }
       rel="$(realpath --relative-to="$root" "$file")"
       [[ "$rel" == ..* ]] && { echo "test.sh: '$arg' is outside the repository $root" >&2; exit 2; }
       paths+=("$rel${arg:${#file}}") ;;
  esac
done
cd "$root"
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONDONTWRITEBYTECODE=1
workers="${XLNET_TEST_WORKERS:-$(nproc 2>/dev/null || echo 2)}"
[[ "$workers" =~ ^[0-9]+$ ]] || { echo "test.sh: XLNET_TEST_WORKERS=$workers must be a number of processes (0: one process)" >&2; exit 2; }
[ "$workers" -gt 4 ] && workers=4
envs="${XLNET_TEST_ENVS:-reference latest interop}"
if [ "$quick" = 1 ]; then
  envs="${XLNET_TEST_ENVS:-reference}"
  # The quick tier, within any -m selection given.
  marks="quick" rest=() next=0
  for o in ${options[@]+"${options[@]}"}; do
    if [ "$next" = 1 ]; then marks="quick and ($o)"; next=0
    elif [ "$o" = -m ]; then next=1
    else rest+=("$o"); fi
  done
  options=(${rest[@]+"${rest[@]}"} -m "$marks")
fi
# A whole run on the newest TensorFlow checks that its part of the suite
# exercises every library module (tests/module_check.py).
check_modules=0
[ ${#paths[@]} -eq 0 ] && [ ${#options[@]} -eq 0 ] && check_modules=1

# The part of the suite each environment runs.
suite() { if [ "$1" = interop ]; then echo tests/interop; else echo tests; fi; }

# env_paths ENV: the test paths ENV runs, one a line.
env_paths() {
  local only p file
  only="$(suite "$1")"
  [ ${#paths[@]} -eq 0 ] && { echo "$only"; return; }
  for p in "${paths[@]}"; do
    file="${p%%::*}"
    file="${file%/}"
    if [ "$file" = "$only" ] || [[ "$file" == "$only"/* ]]; then
      echo "$p"                           # inside: runs as named
    elif [ "$file" = . ] || [[ "$only/" == "$file"/* ]]; then
      echo "$only"                        # a folder above: its part
    fi
  done
}

# A junit report -> "P passed, F failed, S skipped" (empty if unreadable).
counts() {
  "$py" - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
  root = ET.parse(sys.argv[1]).getroot()
except Exception:
  sys.exit()
suites = [root] if root.tag == "testsuite" else list(root)
total = lambda key: sum(int(s.get(key, 0)) for s in suites)
failed, skipped = total("failures") + total("errors"), total("skipped")
print(f"{total('tests') - failed - skipped} passed, {failed} failed, "
      f"{skipped} skipped")
PY
}

# The ten slowest tests of the junit reports given (env:path pairs).
slowest() {
  "$report_py" - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
rows = []
for arg in sys.argv[1:]:
  env, path = arg.split(":", 1)
  try:
    root = ET.parse(path).getroot()
  except Exception:
    continue
  for case in root.iter("testcase"):
    name = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
    rows.append((float(case.get("time", 0)), env, name))
if rows:
  print("=== the ten slowest tests (seconds, set-up included) ===")
  for seconds, env, name in sorted(rows, reverse=True)[:10]:
    print(f"{seconds:7.1f}  {env:9}  {name}")
PY
}

# Building an environment is 1 to 2 minutes of one core (unpacking wheels,
# compiling them to bytecode), so the builds of the environments this run
# needs start together, each in a process of its own, before any test
# runs (interop's, on latest's packages, waits for latest's), and an
# environment's tests wait for its own build only: on 2 cores the builds
# take about as long as the largest alone. (Started only once
# the first environment's tests ran, at the lowest priority, the later
# builds slowed those tests more than they saved: docs/testing.md.)
# built/ENV.done holds "EXIT_CODE SECONDS" once ENV's build ended.
built="$(mktemp -d)"
declare -A builder=()
trap 'for b in ${builder[@]+"${builder[@]}"}; do kill "$b" 2>/dev/null; done; rm -rf "$built"' EXIT
for env in $envs; do
  mapfile -t run_paths < <(env_paths "$env")
  [ ${#run_paths[@]} -gt 0 ] || continue
  ( began=$SECONDS
    bash scripts/setup_env.sh "$env" >"$built/$env.out" 2>"$built/$env.err"
    echo "$? $(( SECONDS - began ))" >"$built/$env.done" ) &
  builder[$env]=$!
done

# set_up ENV: waits for ENV's build and shows its messages; sets py (ENV's
# python) and set_up_took (the build's seconds); status 1 if it failed.
set_up() {
  local rc
  wait "${builder[$1]}"
  [ -f "$built/$1.done" ] || { echo "test.sh: the build of '$1' was stopped" >&2; return 1; }
  cat "$built/$1.err" >&2
  read -r rc set_up_took <"$built/$1.done"
  [ "$rc" = 0 ] || return 1
  py="$(tail -n 1 "$built/$1.out")"
}

summary=() reports=()
for env in $envs; do
  mapfile -t run_paths < <(env_paths "$env")
  if [ ${#run_paths[@]} -eq 0 ]; then
    note="none of the named paths is in $(suite "$env")"
    echo "=== '$env' not run: $note ==="
    summary+=("$env: not run ($note)")
    continue
  fi
  set_up "$env" \
    || { echo "test.sh: could not set up the '$env' environment" >&2
         summary+=("$env: 0 passed, 1 failed, 0 skipped (the environment could not be set up)")
         continue; }
  report_py="$py"
  echo "=== tests on '$env': TensorFlow $("$py" -c 'from importlib import metadata; print(metadata.version("tensorflow"))' 2>/dev/null || echo '(none)'): ${run_paths[*]} ==="
  report="$(mktemp)"
  reports+=("$env:$report")
  check=""
  [ "$env" = latest ] && [ "$check_modules" = 1 ] && check=1
  started=$SECONDS
  XLNET_TEST_ENV="$env" XLNET_CHECK_MODULES="$check" "$py" -m pytest -p no:cacheprovider -q --junitxml="$report" \
    -n "$workers" --dist loadfile ${options[@]+"${options[@]}"} "${run_paths[@]}"
  rc=$?
  took=$(( SECONDS - started ))
  line="$(counts "$report")"
  if [ $rc -eq 5 ]; then
    line="0 passed, 0 failed, 0 skipped (no test matched the selection: nothing ran)"
  elif [ $rc -ne 0 ] || [ -z "$line" ]; then
    # A run that failed (or wrote no report) with no failed test in its
    # report (a crash, a collection or usage error) counts as one failure.
    note="pytest exit code $rc"
    if [[ "$line" =~ ^([0-9]+)\ passed,\ 0\ failed,\ ([0-9]+)\ skipped$ ]]; then
      line="${BASH_REMATCH[1]} passed, 1 failed, ${BASH_REMATCH[2]} skipped"
    elif [ -z "$line" ]; then
      line="0 passed, 1 failed, 0 skipped" note+=", no report"
    fi
    [ $rc -eq 1 ] || line+=" ($note)"
  fi
  summary+=("$env: $line; set-up $set_up_took s, tests ${took} s")
done

[ ${#reports[@]} -gt 0 ] && slowest "${reports[@]}"

for r in ${reports[@]+"${reports[@]}"}; do rm -f "${r#*:}"; done

passed=0 failed=0 skipped=0 ran=0 none=0
echo "=== summary ==="
for line in "${summary[@]}"; do
  echo "$line"
  if [[ "$line" =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]]; then
    passed=$(( passed + BASH_REMATCH[1] )) failed=$(( failed + BASH_REMATCH[2] ))
    skipped=$(( skipped + BASH_REMATCH[3] )) ran=$(( ran + 1 ))
    [[ "$line" == *"nothing ran"* ]] && none=$(( none + 1 ))
  fi
done
total="total: $passed passed, $failed failed, $skipped skipped"
if [ "$failed" -gt 0 ]; then
  echo "$total"; exit 1
elif [ "$none" -eq "$ran" ]; then
  echo "$total; no test matched the selection in any environment"; exit 5
fi
[ "$none" -gt 0 ] && total+="; in $none environment(s) no test matched the selection"
echo "$total"
exit 0
