"""Where a process stands in a multi-worker run (xlnet/training/strategies.py)."""
import pytest

from xlnet.training import strategies


def test_process_index_counts_the_chief_first():
  """As MultiWorkerMirroredStrategy orders input pipelines and replicas:
  the chief, then the workers; with workers only, the worker's index."""
  with_chief = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]}
  workers = {"worker": ["h0:1", "h1:1"]}
  assert strategies.process_index("chief", 0, with_chief) == 0
  assert strategies.process_index("worker", 0, with_chief) == 1
  assert strategies.process_index("worker", 1, with_chief) == 2
  assert strategies.process_index("worker", 1, workers) == 1
  assert strategies.process_index(None, None, {}) == 0
  with pytest.raises(ValueError, match="'ps'"):
    strategies.process_index("ps", 0, {"ps": ["h:1"], **workers})
