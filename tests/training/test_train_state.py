"""What a resumed run must keep (xlnet/training/train_state.py)."""
import pytest

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
