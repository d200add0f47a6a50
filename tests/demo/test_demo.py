"""The quick-start demo: its held-out split, its loss-curve reader, and
scripts/demo.sh end to end on a small scale.

The end-to-end test runs the script's real steps (demo corpus, held-out
split, SentencePiece, records, CPU training with held-out evaluation, the
report, the picture) with the current interpreter instead of creating the
venv, and checks the report's unigram baseline against a computation of its
own from the raw files.
"""
import glob
import importlib.util
import logging
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import sentencepiece as spm

from tests import data_helpers
from xlnet.demo import demo_corpus
from xlnet.pretraining import held_out
from xlnet.pretraining import trainer
from xlnet.data.prepro_utils import CLS_ID, EOD_ID, SEP_ID

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def load_plot_script():
  """scripts/plot_loss_curves.py as a module (it is not in a package)."""
  spec = importlib.util.spec_from_file_location(
      "plot_loss_curves", os.path.join(REPO, "scripts", "plot_loss_curves.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


# ---- the held-out split ----------------------------------------------------
def docs_text(n):
  return "\n\n".join(f"doc {d} line 1\ndoc {d} line 2" for d in range(n))


def test_split_heldout_keeps_whole_last_documents():
  train, heldout = demo_corpus.split_heldout(docs_text(5) + "\n", 0.1)
  assert heldout == "doc 4 line 1\ndoc 4 line 2\n"  # ceil(0.5) = 1 document
  assert train == docs_text(4) + "\n"
  train, heldout = demo_corpus.split_heldout(docs_text(5), 0.5)
  assert heldout.split("\n\n") == ["doc 2 line 1\ndoc 2 line 2",
                                   "doc 3 line 1\ndoc 3 line 2",
                                   "doc 4 line 1\ndoc 4 line 2\n"]
  # Blank-line runs separate documents too; one document always trains.
  train, heldout = demo_corpus.split_heldout("a\nb\n\n\n\nc\n", 0.9)
  assert (train, heldout) == ("a\nb\n", "c\n")


@pytest.mark.parametrize("text,fraction,message", [
    ("only one\ndocument\n", 0.1, "needs at least 2"),
    (docs_text(3), 0.0, "--heldout_fraction=0.0 must be in"),
    (docs_text(3), 1.0, "--heldout_fraction=1.0 must be in")])
def test_split_heldout_rejects(text, fraction, message):
  with pytest.raises(ValueError, match=message):
    demo_corpus.split_heldout(text, fraction)


def test_write_heldout_split(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text(docs_text(10), encoding="utf-8")
  train, valid = demo_corpus.write_heldout_split(str(corpus),
                                                 str(tmp_path / "split"), 0.2)
  assert open(valid).read() == docs_text(10)[len(docs_text(8)) + 2:] + "\n"
  assert open(train).read() == docs_text(8) + "\n"
  assert sorted(os.listdir(tmp_path / "split")) == ["train.txt", "valid.txt"]


# ---- the loss curves of a training log -----------------------------------
def test_read_curves_of_the_trainers_log_lines(caplog):
  with caplog.at_level(logging.INFO, logger="absl"):
    held_out.log_results({"loss": 5.25, "pplx": 190.6, "accuracy": 0.1,
                          "num_targets": 99}, 250)
  lines = ["I1122 12:00:00.0 1 train_gpu.py:85] " +
           trainer.format_log_line(step, 0.5, 0.001, loss) +
           " | 1000 tokens/s | ETA 00:00:10"
           for step, loss in ((1, 7.61), (100, 6.4), (250, 5.5))]
  lines.insert(3, "I1122 12:00:01.0 1 pretrain_eval.py:1] " +
               caplog.messages[-1])
  lines.append("unrelated | loss 1.0 |")
  train, heldout = load_plot_script().read_curves(lines)
  assert train == [(1, 7.61), (100, 6.4), (250, 5.5)]
  assert heldout == [(250, 5.25)]


# ---- the whole demo ----------------------------------------------------------
def run_demo(out, steps):
  env = dict(os.environ, PYTHON_BIN=sys.executable, DEMO_OUT=str(out),
             DEMO_STEPS=str(steps))
  proc = subprocess.run(["bash", os.path.join(REPO, "scripts", "demo.sh")],
                        cwd=REPO, env=env, capture_output=True, text=True,
                        timeout=900)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  return proc.stdout


def reference_unigram(data):
  """The unigram baseline from the raw files: training pieces line by line
  (one <eod> per blank line), held-out targets straight from the records.

  Returns:
    (nats per target, number of targets).
  """
  sp = spm.SentencePieceProcessor()
  sp.Load(os.path.join(data, "spiece.model"))
  counts = np.zeros(sp.GetPieceSize())
  with open(os.path.join(data, "text", "train.txt"), encoding="utf-8") as f:
    for line in f.read().split("\n")[:-1]:
      if line.strip():
        np.add.at(counts, sp.EncodeAsIds(line), 1)
      else:
        counts[EOD_ID] += 1
  targets = []
  for ex in data_helpers.read_records(os.path.join(data, "valid",
                                                   "tfrecords")):
    keep = (ex["is_masked"] == 1) & (ex["input"] != SEP_ID) & (
        ex["input"] != CLS_ID)
    targets.extend(ex["input"][keep])
  p = (counts + 1) / (counts.sum() + len(counts))
  return float(-np.log(p[targets]).mean()), len(targets)


@pytest.mark.slow
def test_demo_script_learns_reports_and_draws(tmp_path):
  out = tmp_path / "demo_out"
  stdout = run_demo(out, 300)

  log = (out / "train.log").read_text()
  train = [(int(s), float(x)) for s, x in
           re.findall(r"\[(\d+)\] \| gnorm \S+ lr \S+ \| loss ([0-9.]+) \|",
                      log)]
  heldout = re.findall(r"\[(\d+)\] eval \| loss ([0-9.]+) \| .* \| (\d+) "
                       r"targets", log)
  assert [s for s, _ in train] == [1, 100, 200, 300]
  assert train[0][1] > 7.0  # ~ln(2000) for a fresh model
  assert train[-1][1] < train[0][1] - 1.0, train
  assert [int(s) for s, _, _ in heldout] == [250, 300]
  final_heldout = float(heldout[-1][1])
  assert final_heldout < train[0][1] - 1.0

  report = (out / "report.txt").read_text()
  match = re.search(r"unigram baseline on the (\d+) held-out targets: "
                    r"([0-9.]+) nats per target", report)
  assert match, report
  want, num_targets = reference_unigram(str(out / "data"))
  assert int(match.group(1)) == num_targets == int(heldout[-1][2])
  assert float(match.group(2)) == pytest.approx(want, abs=0.006)
  guesses = re.findall(r"^    \[\d+\] \S+ +-> (\S+ [01]\.\d\d  ){2}\S+ "
                       r"[01]\.\d\d", report, re.M)
  assert len(guesses) >= 4, report
  assert re.search(r"top-1 right for \d+ of \d+ hidden words", report)

  png = out / "loss_curves.png"
  assert png.read_bytes()[:8] == PNG_SIGNATURE
  assert png.stat().st_size > 10000
  assert f"held-out loss  {final_heldout:.2f} nats per target vs unigram " \
         f"baseline {float(match.group(2)):.2f} (perplexity " \
         f"{math.exp(final_heldout):.0f}" in stdout
  assert f"checkpoint     {out}/model/model.ckpt-300" in stdout
  assert f"loss curves    {out}/loss_curves.png" in stdout
  assert "training loss  " in stdout and "done in " in stdout

  # A re-run reuses the split, the SentencePiece model and the records.
  records = sorted(glob.glob(str(out / "data" / "*" / "tfrecords" / "*")))
  stamps = [os.stat(p).st_mtime_ns for p in records]
  stdout = run_demo(out, 20)
  assert "reused from" in stdout
  assert [os.stat(p).st_mtime_ns for p in records] == stamps
  assert f"checkpoint     {out}/model/model.ckpt-20" in stdout
