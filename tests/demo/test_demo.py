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
from xlnet.pretraining import pretrain
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
           pretrain.format_log_line(step, 0.5, 0.001, loss) +
           " | 1000 tokens/s | ETA 00:00:10"
           for step, loss in ((1, 7.61), (100, 6.4), (250, 5.5))]
  lines.insert(3, "I1122 12:00:01.0 1 pretrain_eval.py:1] " +
               caplog.messages[-1])
  lines.append("unrelated | loss 1.0 |")
  train, heldout = load_plot_script().read_curves(lines)
  assert train == [(1, 7.61), (100, 6.4), (250, 5.5)]
  assert heldout == [(250, 5.25)]


# ---- the whole demo ----------------------------------------------------------
def run_demo(out, steps=None):
  """scripts/demo.sh into `out` (DEMO_STEPS=`steps` unless None); its
  stdout, with `out` written as the default `demo_out`."""
  env = dict(os.environ, PYTHON_BIN=sys.executable, DEMO_OUT=str(out))
  env.pop("DEMO_STEPS", None)
  if steps is not None:
    env["DEMO_STEPS"] = str(steps)
  proc = subprocess.run(["bash", os.path.join(REPO, "scripts", "demo.sh")],
                        cwd=REPO, env=env, capture_output=True, text=True,
                        timeout=1800)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  return proc.stdout.replace(str(out), "demo_out")


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
  """The demo as documented (configs/demo.flags: 2,000 steps): its output
  directory and stdout."""
  out = tmp_path_factory.mktemp("demo") / "demo_out"
  return out, run_demo(out)


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
@pytest.mark.only_env("reference", why="scripts/demo.sh runs on .venvs/reference, TensorFlow 2.15")
def test_demo_script_learns_reports_and_draws(full_run):
  out, stdout = full_run

  log = (out / "train.log").read_text()
  train = [(int(s), float(x)) for s, x in
           re.findall(r"\[(\d+)\] \| gnorm \S+ lr \S+ \| loss ([0-9.]+) \|",
                      log)]
  heldout = re.findall(r"\[(\d+)\] eval \| loss ([0-9.]+) \| .* \| (\d+) "
                       r"targets", log)
  assert [s for s, _ in train] == [1] + list(range(100, 2001, 100))
  assert train[0][1] > 7.0  # ~ln(2000) for a fresh model
  assert train[-1][1] < train[0][1] - 2.0, train
  assert [int(s) for s, _, _ in heldout] == list(range(250, 2001, 250))
  final_heldout = float(heldout[-1][1])

  report = (out / "report.txt").read_text()
  match = re.search(r"unigram baseline on the (\d+) held-out targets: "
                    r"([0-9.]+) nats per target", report)
  assert match, report
  want, num_targets = reference_unigram(str(out / "data"))
  assert int(match.group(1)) == num_targets == int(heldout[-1][2])
  assert float(match.group(2)) == pytest.approx(want, abs=0.006)
  # Learned from the context: well below the context-free baseline.
  assert final_heldout < want - 1.0
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
  assert "checkpoint     demo_out/model/model.ckpt-2000" in stdout
  assert "loss curves    demo_out/loss_curves.png" in stdout
  assert "training loss  " in stdout and "done in " in stdout

  # A re-run reuses the split, the SentencePiece model and the records.
  records = sorted(glob.glob(str(out / "data" / "*" / "tfrecords" / "*")))
  stamps = [os.stat(p).st_mtime_ns for p in records]
  stdout = run_demo(out, 20)
  assert "reused from" in stdout
  assert [os.stat(p).st_mtime_ns for p in records] == stamps
  assert "checkpoint     demo_out/model/model.ckpt-20" in stdout


# ---- the docs quote the demo ---------------------------------------------------
# Blocks of demo output in the docs follow this marker line.
QUOTE_MARKER = "<!-- demo output: tests/demo/test_demo.py checks it -->"
QUOTING_PAGES = ("README.md", os.path.join("docs", "demo.md"))
# What depends on the last bits of the trained weights, masked when the run's
# machine line differs from the documented one (oneDNN or not, other
# kernels, another TensorFlow).
WEIGHT_DEPENDENT = [
    (r"(eval \| loss )\S+( \| pplx )\S+( \| accuracy )\S+", r"\1#\2#\3#"),
    (r"( -> ).*", r"\1#"),
    (r"(top-1 right for )\d+(.* in the top 3 for )\d+", r"\1#\2#"),
    (r"^(  training loss  )\S+", r"\1#"),
    (r"^(  held-out loss  )\S+(.*\(perplexity )\d+", r"\1#\2#"),
    (r"^(  machine        ).*", r"\1#")]
# How far another machine's held-out figures may be from the documented ones
# (measured: oneDNN off moves them by up to 0.018 and 0.0043).
LOSS_TOLERANCE, ACCURACY_TOLERANCE = 0.05, 0.015
EVAL_LINE = re.compile(r"\[(\d+)\] eval \| loss ([0-9.]+) \| .* \| "
                       r"accuracy ([0-9.]+) \|")


def quoted_blocks(text):
  """The lines of each block of demo output that `text` quotes."""
  return [block.rstrip("\n").split("\n") for block in re.findall(
      re.escape(QUOTE_MARKER) + r"\n```\w*\n(.*?)```", text, re.S)]


def first_line_not_in_order(quoted, lines):
  """The first of `quoted` that is not found in `lines` after the previous
  one's place, or None when all are."""
  rest = iter(lines)
  for line in quoted:
    if line not in rest:
      return line
  return None


def mask(line):
  for pattern, replacement in WEIGHT_DEPENDENT:
    line = re.sub(pattern, replacement, line)
  return line


def machine_lines(lines):
  return {line for line in lines if line.startswith("  machine        ")}


def test_quoted_blocks_and_masks():
  text = f"intro\n{QUOTE_MARKER}\n```text\na\nb\n```\n```\nnot quoted\n```\n"
  assert quoted_blocks(text) == [["a", "b"]]
  assert first_line_not_in_order(["a", "c"], ["a", "b", "c"]) is None
  assert first_line_not_in_order(["c", "a"], ["a", "b", "c"]) == "a"
  assert mask("[250] eval | loss 5.8381 | pplx 343.12 | accuracy 0.0469 | "
              "8508 targets") == \
      "[250] eval | loss # | pplx # | accuracy # | 8508 targets"
  assert mask("    [4] ▁the         -> ▁the 0.82  ▁a 0.07  ▁The 0.04   "
              "(right)") == "    [4] ▁the         -> #"
  assert mask("  held-out loss  4.25 nats per target vs unigram baseline 5.82 "
              "(perplexity 70 vs 337)") == "  held-out loss  # nats per " \
      "target vs unigram baseline 5.82 (perplexity # vs 337)"


@pytest.mark.slow
@pytest.mark.only_env("reference", why="scripts/demo.sh runs on .venvs/reference, TensorFlow 2.15")
def test_the_docs_quote_the_demo(full_run):
  """docs/demo.md and the README quote the demo's output: every quoted line
  is a line of the run's output, in order, on the documented machine (the
  quoted `machine` line); elsewhere everything but the trained weights'
  last bits is compared, and the held-out figures within a tolerance."""
  _, stdout = full_run
  lines = stdout.split("\n")
  blocks = {page: quoted_blocks(open(os.path.join(REPO, page),
                                     encoding="utf-8").read())
            for page in QUOTING_PAGES}
  assert all(blocks.values()), blocks
  quoted = [line for page in QUOTING_PAGES for block in blocks[page]
            for line in block]
  documented = machine_lines(quoted)
  assert len(documented) == 1, documented  # one documented machine
  same_machine = documented == machine_lines(lines)
  for page in QUOTING_PAGES:
    for block in blocks[page]:
      if same_machine:
        missing = first_line_not_in_order(block, lines)
      else:
        missing = first_line_not_in_order([mask(l) for l in block],
                                          [mask(l) for l in lines])
      assert missing is None, (page, missing, machine_lines(lines), stdout)
  ran = {int(s): (float(l), float(a)) for s, l, a in EVAL_LINE.findall(stdout)}
  for step, loss, accuracy in EVAL_LINE.findall("\n".join(quoted)):
    assert float(loss) == pytest.approx(ran[int(step)][0], abs=LOSS_TOLERANCE)
    assert float(accuracy) == pytest.approx(ran[int(step)][1],
                                            abs=ACCURACY_TOLERANCE)
