"""xlnet/runs/work_dir.py: the settings a work dir records and which of a
rerun's differ, hand-worked (its lock: tests/chain/test_chain.py and
tests/finetuning/test_reproduce.py, each refusing a second run)."""
import json

import pytest

from xlnet.runs import work_dir

pytestmark = [pytest.mark.quick, pytest.mark.tf_version]


def test_the_first_settings_are_recorded_and_read_back_by_a_rerun(tmp_path):
  path = str(tmp_path / "run.json")
  first = {"steps": 500, "seeds": [1, 2]}
  assert work_dir.recorded_settings(path, first) == first
  assert json.loads((tmp_path / "run.json").read_text()) == first
  assert work_dir.recorded_settings(path, {"steps": 400}) == first
  assert json.loads((tmp_path / "run.json").read_text()) == first


def test_differing_settings_read_a_missing_one_as_its_default():
  recorded = {"steps": 500, "rate": 0.1, "old": "x"}
  current = {"rate": 0.2, "steps": 500, "seed": 1, "new": 3}
  # In recorded's order, then current's: "old" is gone from current (no
  # default), "seed" and "new" are new ("seed" equals its default).
  assert work_dir.differing_settings(recorded, current, {"seed": 1}) == [
      "rate", "old", "new"]
  assert work_dir.differing_settings(recorded, current) == [
      "rate", "old", "seed", "new"]
  assert work_dir.differing_settings(recorded, dict(recorded)) == []
  assert work_dir.differing_settings({}, {"a": None}) == []

