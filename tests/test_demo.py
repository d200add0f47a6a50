"""The quick-start demo (scripts/demo.sh) end to end, on a small scale.

Runs the script's real steps (demo corpus, SentencePiece, records, CPU
training) with the current interpreter instead of creating the venv.
"""
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_demo_script_trains_and_checkpoints(tmp_path):
  out = tmp_path / "demo_out"
  env = dict(os.environ, PYTHON_BIN=sys.executable, DEMO_OUT=str(out),
             DEMO_STEPS="60")
  proc = subprocess.run(["bash", os.path.join(REPO, "scripts", "demo.sh")],
                        cwd=REPO, env=env, capture_output=True, text=True,
                        timeout=900)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

  log = (out / "train.log").read_text()
  losses = [float(x) for x in re.findall(r"\| loss ([0-9.]+) \|", log)]
  steps = [int(x) for x in re.findall(r"\] \[(\d+)\] \| gnorm", log)]
  assert steps == [1, 25, 50, 60], steps
  assert losses[0] > 7.0  # ~ln(2000) for a fresh model
  assert losses[-1] < losses[0] - 0.8, losses
  ckpt = tf.train.latest_checkpoint(str(out / "model"))
  assert ckpt is not None and ckpt.endswith("-60")
  assert "done: loss" in proc.stdout and ckpt in proc.stdout
