"""What a resumed run must keep (xlnet/training/train_state.py)."""
import json

import pytest

from xlnet.training import config
from xlnet.training import train_state


def test_batch_layout_is_recorded_and_another_one_refused_on_resume(
    tmp_path):
  layout = {"train_batch_size": 8, "num_core_per_host": 2, "accum_steps": 1}
  train_state.check_batch_layout(str(tmp_path), layout, resuming=False)
  train_state.check_batch_layout(str(tmp_path), layout, resuming=True)
  with pytest.raises(ValueError) as caught:
    train_state.check_batch_layout(str(tmp_path), dict(layout, accum_steps=2),
                                   resuming=True)
  assert str(caught.value).startswith(
      f"--accum_steps=2 but {tmp_path} was trained with --accum_steps=1 ")
  # A fresh start (no checkpoint to resume) records its own layout.
  train_state.check_batch_layout(str(tmp_path), dict(layout, accum_steps=2),
                                   resuming=False)
  train_state.check_batch_layout(str(tmp_path), dict(layout, accum_steps=2),
                                   resuming=True)


def test_a_batch_layout_record_is_what_a_resumed_run_compares(tmp_path):
  """`BatchLayout.record()` is the layout check_batch_layout keeps: another
  number of hosts (same global batch) is refused by its flag name."""
  two_hosts = config.BatchLayout(16, num_hosts=2, num_core_per_host=2)
  train_state.check_batch_layout(str(tmp_path), two_hosts.record(),
                                 resuming=False)
  one_host = config.BatchLayout(16, num_hosts=1, num_core_per_host=2)
  with pytest.raises(ValueError, match=r"^--num_hosts=1 but .* was trained "
                                       r"with --num_hosts=2 "):
    train_state.check_batch_layout(str(tmp_path), one_host.record(),
                                   resuming=True)
  with open(tmp_path / train_state.LAYOUT_FILE) as f:
    assert json.load(f) == two_hosts.record()
