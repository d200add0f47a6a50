"""`scripts/test.sh`: its own --help, test paths that narrow the run, and a
summary whose last line agrees with the exit status whatever happens (a
failing test, a crashing pytest worker or process, a file that does not
import, an environment that cannot be built, nothing selected).
`scripts/demo.sh`: its own --help, and an argument it does not take
refused, both before anything is set up.

Each case runs a copy of the script in a scratch root with test files of
its own and a fake `scripts/setup_env.sh` that records the environments
asked for and answers with this interpreter, so nothing is built and the
project's tests are not run."""
import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import types

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

PASSING = """
import pytest
def test_one():
  pass
def test_two():
  pass
@pytest.mark.skip(reason="a skipped test")
def test_skipped():
  pass
"""
BAD = {
    "test_fail.py": "def test_ok():\n  pass\ndef test_fails():\n  assert 0\n",
    # Kills the process running it, as a segfault in TensorFlow would.
    "test_crash.py": "import os\ndef test_crash():\n  os._exit(3)\n",
    "test_import.py": "import xlnet_no_such_module\ndef test_x():\n  pass\n",
}
# Answers with this interpreter; refuses the environment named "broken".
FAKE_SETUP = f"""#!/usr/bin/env bash
echo "$1" >> "$(dirname "$0")/../setup_calls"
[ "$1" = broken ] && {{ echo "no such environment" >&2; exit 1; }}
echo "{sys.executable}"
"""


@pytest.fixture
def root(tmp_path):
  """A scratch root: the script, the fake set-up, tests/test_pass.py and
  tests/interop/test_interop.py (one passing test)."""
  (tmp_path / "scripts").mkdir()
  shutil.copy(os.path.join(REPO, "scripts", "test.sh"), tmp_path / "scripts")
  setup = tmp_path / "scripts" / "setup_env.sh"
  setup.write_text(FAKE_SETUP)
  setup.chmod(stat.S_IRWXU)
  (tmp_path / "pytest.ini").write_text("[pytest]\n")
  (tmp_path / "tests" / "interop").mkdir(parents=True)
  (tmp_path / "tests" / "test_pass.py").write_text(PASSING)
  (tmp_path / "tests" / "interop" / "test_interop.py").write_text(
      "def test_interop():\n  pass\n")
  return tmp_path


def _test_sh(root, *args, envs="reference interop", workers=0, cwd=None):
  """Runs the copy; returns (exit status, stdout, stderr, the environments
  set up)."""
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(("PYTEST", "XLNET_TEST"))}
  env.update(XLNET_TEST_WORKERS=str(workers))
  if envs is not None:
    env.update(XLNET_TEST_ENVS=envs)
  proc = subprocess.run(["bash", str(root / "scripts" / "test.sh"), *args],
                        cwd=cwd or root, env=env, capture_output=True,
                        text=True, timeout=300)
  calls = root / "setup_calls"
  asked = calls.read_text().split() if calls.exists() else []
  return proc.returncode, proc.stdout, proc.stderr, asked


def _total(output):
  """(passed, failed, skipped, the last line) of the summary, checked to be
  the last line of the output."""
  last = output.strip().split("\n")[-1]
  m = re.match(r"total: (\d+) passed, (\d+) failed, (\d+) skipped", last)
  assert m, output[-3000:]
  return int(m[1]), int(m[2]), int(m[3]), last


def _agrees(status, output):
  """The exit status is the one the last line implies."""
  passed, failed, skipped, last = _total(output)
  expected = 1 if failed else 5 if "no test matched" in last else 0
  assert status == expected, output[-3000:]
  return passed, failed, skipped


def test_help_is_its_own_and_builds_nothing(root):
  status, output, _, asked = _test_sh(root, "--help")
  assert status == 0
  assert ("Usage: bash scripts/test.sh [--quick] [PYTEST OPTIONS] "
          "[TEST PATHS]") in output
  assert "pytest" in output and "collected" not in output
  assert asked == []


def test_without_paths_each_environment_runs_its_part(root):
  status, output, _, asked = _test_sh(root)
  assert sorted(asked) == ["interop", "reference"]
  assert "reference: 3 passed, 0 failed, 1 skipped" in output
  assert "interop: 1 passed, 0 failed, 0 skipped" in output
  assert _agrees(status, output) == (4, 0, 1)


def test_paths_narrow_the_run(root):
  status, output, _, asked = _test_sh(root, "tests/test_pass.py")
  assert asked == ["reference"]
  assert "reference: 2 passed, 0 failed, 1 skipped" in output
  assert ("interop: not run (none of the named paths is in tests/interop)"
          in output)
  assert _agrees(status, output) == (2, 0, 1)
  # A test id in tests/interop runs on both; paths are relative to the
  # current directory.
  status, output, _, _ = _test_sh(
      root, "interop/test_interop.py::test_interop", cwd=root / "tests")
  assert "reference: 1 passed" in output and "interop: 1 passed" in output
  assert _agrees(status, output) == (2, 0, 0)


# Records, per run, the environment and whether the module check is on.
RECORDER = """
import os
def test_records_its_environment():
  with open(os.path.join(os.path.dirname(__file__), "..", "seen"), "a") as f:
    f.write(os.environ["XLNET_TEST_ENV"] + ":" +
            os.environ.get("XLNET_CHECK_MODULES", "") + "\\n")
"""


def test_only_a_whole_run_checks_the_modules_on_latest(root):
  (root / "tests" / "test_recorder.py").write_text(RECORDER)
  seen = root / "seen"
  status, output, _, asked = _test_sh(root, envs="reference latest")
  assert status == 0 and sorted(asked) == ["latest", "reference"], \
      output[-3000:]
  assert seen.read_text().split() == ["reference:", "latest:1"]
  seen.unlink()
  _test_sh(root, "-k", "records", envs="reference latest")
  assert seen.read_text().split() == ["reference:", "latest:"]


def test_quick_runs_the_quick_tier_on_reference(root):
  (root / "tests" / "test_tiers.py").write_text(
      "import pytest\n@pytest.mark.quick\ndef test_core():\n  pass\n"
      "def test_slow_part():\n  pass\n")
  status, output, _, asked = _test_sh(root, "--quick",
                                      envs=None)
  assert asked == ["reference"], output[-3000:]
  assert "reference: 1 passed, 0 failed, 0 skipped" in output
  assert _agrees(status, output) == (1, 0, 0)
  # Within a -m selection of the user's.
  status, output, _, _ = _test_sh(root, "--quick", "-m", "not quick",
                                  envs=None)
  assert _agrees(status, output) == (0, 0, 0)


def test_the_end_names_the_slowest_tests_and_each_environments_times(root):
  (root / "tests" / "test_sleeps.py").write_text(
      "import time\ndef test_sleeps():\n  time.sleep(1.2)\n")
  status, output, _, _ = _test_sh(root)
  lines = output.strip().split("\n")
  start = lines.index("=== the ten slowest tests (seconds, set-up "
                      "included) ===")
  slowest = lines[start + 1:lines.index("=== summary ===")]
  assert 1 <= len(slowest) <= 10
  assert re.fullmatch(r" *1\.\d  reference  tests/test_sleeps\.py::"
                      r"test_sleeps", slowest[0]), slowest
  assert re.search(r"^reference: 4 passed, 0 failed, 1 skipped; set-up \d+ "
                   r"s, tests \d+ s$", output, re.M), output[-3000:]
  assert _agrees(status, output) == (5, 0, 1)


def test_a_missing_path_is_one_line_and_builds_nothing(root):
  status, output, err, asked = _test_sh(root, "tests/no_such_test.py")
  assert status == 2 and asked == [] and not output
  assert err.strip() == ("test.sh: no such test path "
                            "'tests/no_such_test.py' (see --help)")


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("bad", sorted(BAD))
def test_a_failing_or_crashing_file_fails_the_run(root, bad, workers):
  (root / "tests" / bad).write_text(BAD[bad])
  status, output, _, _ = _test_sh(root, "tests/test_pass.py",
                                  f"tests/{bad}", envs="reference",
                                  workers=workers)
  passed, failed, _ = _agrees(status, output)
  assert failed >= 1 and status == 1, output[-3000:]
  # The other tests count, unless the only process crashed (no report) or
  # pytest stopped at the collection error (its default).
  if bad == "test_fail.py" or (bad == "test_crash.py" and workers):
    assert passed >= 2, output[-3000:]


def test_nothing_selected_is_said_and_not_a_success(root):
  status, output, _, _ = _test_sh(root, "-k", "no_such_test")
  assert "no test matched the selection in any environment" in output
  assert _agrees(status, output) == (0, 0, 0)
  # A selection that runs in one environment only is a success.
  status, output, _, _ = _test_sh(root, "-k", "interop")
  assert "in 0 environment" not in output
  assert _agrees(status, output) == (2, 0, 0)


@pytest.mark.parametrize("envs", ["broken reference", "reference broken"])
def test_an_environment_that_cannot_be_built_fails_the_run(root, envs):
  status, output, err, asked = _test_sh(root, envs=envs)
  assert sorted(asked) == sorted(envs.split())
  assert "broken: 0 passed, 1 failed" in output
  assert "no such environment" in err
  assert _agrees(status, output) == (3, 1, 1)


# Builds "reference" only once "interop" is being built too.
WAITING_SETUP = f"""#!/usr/bin/env bash
calls="$(dirname "$0")/../setup_calls"
echo "$1" >> "$calls"
if [ "$1" = reference ]; then
  for _ in $(seq 300); do
    grep -qx interop "$calls" && break
    sleep 0.1
  done
  grep -qx interop "$calls" || {{ echo "built alone" >&2; exit 1; }}
fi
echo "{sys.executable}"
"""


def test_the_environments_are_built_together_before_the_tests(root):
  (root / "scripts" / "setup_env.sh").write_text(WAITING_SETUP)
  status, output, _, asked = _test_sh(root)
  assert sorted(asked) == ["interop", "reference"]
  assert re.search(r"^interop: 1 passed, 0 failed, 0 skipped; set-up \d+ s, "
                   r"tests \d+ s$", output, re.M), output[-3000:]
  assert _agrees(status, output) == (4, 0, 1)


@pytest.mark.parametrize("args,status", [(["--help"], 0), (["-h"], 0),
                                         (["--steps=5"], 2)])
def test_demo_help_and_a_wrong_argument_set_up_nothing(root, args, status):
  shutil.copy(os.path.join(REPO, "scripts", "demo.sh"), root / "scripts")
  proc = subprocess.run(["bash", str(root / "scripts" / "demo.sh"), *args],
                        cwd=root, capture_output=True, text=True, timeout=60)
  assert proc.returncode == status, proc.stderr
  if status == 0:
    assert proc.stdout.startswith("Quick start:")
    assert "bash scripts/demo.sh" in proc.stdout and not proc.stderr
  else:
    assert proc.stderr == ("demo: error: unknown argument '--steps=5': the "
                           "demo takes none (see --help)\n")
  assert not (root / "setup_calls").exists()
  assert not (root / "demo_out").exists()


def test_the_workers_take_the_longest_files_first():
  """tests/conftest.py's order: files by their seconds, longest first; a
  file without a figure last; each file's tests in their order."""
  from tests import conftest
  item = lambda nodeid: types.SimpleNamespace(nodeid=nodeid)
  items = [item(n) for n in ("a.py::1", "b.py::1", "a.py::2", "new.py::1",
                             "c.py::1", "b.py::2", "other.py::1")]
  ordered = conftest.longest_files_first(
      items, {"a.py": 1.0, "b.py": 30.0, "c.py": 2.5})
  assert [i.nodeid for i in ordered] == [
      "b.py::1", "b.py::2", "c.py::1", "a.py::1", "a.py::2", "new.py::1",
      "other.py::1"]
  # The table names files that exist (a renamed file would lose its place).
  for env, files in json.load(open(os.path.join(
      REPO, "tests", "file_seconds.json"))).items():
    missing = [path for path in files
               if not os.path.isfile(os.path.join(REPO, path))]
    assert not missing, (env, missing, "run scripts/file_seconds.py")


def test_file_seconds_sums_each_files_durations_per_environment():
  spec = importlib.util.spec_from_file_location(
      "file_seconds", os.path.join(REPO, "scripts", "file_seconds.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  log = ["=== tests on 'reference': TensorFlow 2.15.1: tests ===",
         "12.50s call     tests/a/test_x.py::test_one[2]",
         "0.50s setup    tests/a/test_x.py::test_one[2]",
         "1.00s call     tests/b/test_y.py::test_two",
         "=== tests on 'latest': TensorFlow 2.21.0: tests ===",
         "3.00s teardown tests/a/test_x.py::test_three",
         "12 passed in 30.0s"]
  assert module.file_seconds(log) == {
      "latest": {"tests/a/test_x.py": 3.0},
      "reference": {"tests/a/test_x.py": 13.0, "tests/b/test_y.py": 1.0}}
