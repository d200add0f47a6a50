"""The chain in miniature (bench/chain.py, xlnet/chain/): its pure parts
against hand-worked figures, its resume and refusals with stand-in stages,
and once the whole command on a tiny model (the wiring of every stage)."""
import collections
import json
import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest

from tests import data_helpers
from xlnet.chain import api
from xlnet.chain import config as chain_config
from xlnet.chain import corpus
from xlnet.chain import labelled
from xlnet.chain import linear_probe
from xlnet.chain import plan
from xlnet.chain import report
from xlnet.chain import steps
from xlnet.finetuning.classifier import processors
from xlnet.runs import work_dir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _cfg(work_dir, **overrides):
  overrides.setdefault("tasks", chain_config.parse_tasks("a=imdb:da,b=csv:db"))
  return chain_config.ChainConfig(
      work_dir=str(work_dir), corpus_glob="unused", python=sys.executable,
      **overrides)


@pytest.mark.quick
@pytest.mark.tf_version
def test_parse_tasks_reads_names_layouts_and_refuses_what_it_cannot_run():
  tasks = chain_config.parse_tasks("sentiment=IMDB:d/acl, topic=csv:d/bbc")
  assert tasks == (chain_config.Task("sentiment", "imdb", "d/acl"),
                   chain_config.Task("topic", "csv", "d/bbc"))
  for spec, words in (("sentiment:imdb", "NAME=TASK_NAME:DATA_DIR"),
                      ("a=imdb:x,a=csv:y", "distinct names"),
                      ("a=nosuch:x",
                       "--tasks: 'a=nosuch:x': unknown TASK_NAME 'nosuch'")):
    with pytest.raises(ValueError, match=words):
      chain_config.parse_tasks(spec)


@pytest.mark.quick
@pytest.mark.tf_version
def test_compare_hand_worked():
  # Medians 0.81 and 0.72: gain 0.09; spreads 0.02 and 0.05: margin 0.10.
  out = report.compare([0.80, 0.82, 0.81], [0.70, 0.75, 0.72])
  assert out["gain"] == pytest.approx(0.09)
  assert out["margin"] == pytest.approx(0.10)
  assert out["beats"] is False
  assert out["random"] == pytest.approx(
      {"median": 0.72, "min": 0.70, "max": 0.75, "spread": 0.05})
  # Spreads 0.01 and 0.02: margin 0.04 < gain 0.09.
  assert report.compare([0.80, 0.81, 0.81], [0.72, 0.72, 0.70])["beats"]
  assert report.compare([0.9], [0.5])["beats"] is None


@pytest.mark.quick
@pytest.mark.tf_version
def test_draw_is_seeded_and_reaches_every_label_of_a_sorted_set():
  # 600 examples sorted by label, as IMDB's and DBpedia's files come.
  examples = [processors.InputExample(str(i), f"t{i}", None,
                                      "neg" if i < 300 else "pos")
              for i in range(600)]
  drawn = labelled.draw(examples, 100, seed=0)
  labels = [e.label for e in drawn]
  assert 30 <= labels.count("neg") <= 70
  assert len(set(e.guid for e in drawn)) == 100
  assert [e.guid for e in labelled.draw(examples, 100, seed=0)] == [
      e.guid for e in drawn]
  assert [e.guid for e in labelled.draw(examples, 100, seed=1)] != [
      e.guid for e in drawn]
  assert len(labelled.draw(examples, 10_000, seed=0)) == 600


def _write_imdb(root, per_label=20):
  """A tiny aclImdb layout: positive texts say 'good', negative 'bad'."""
  for split in ("train", "test"):
    for label, word in (("pos", "good"), ("neg", "bad")):
      os.makedirs(os.path.join(root, split, label))
      for i in range(per_label):
        with open(os.path.join(root, split, label, f"{i}_1.txt"), "w") as f:
          f.write(f"The film was {word}, {word} indeed, {split} {i}.")


def test_write_subsets_gives_tables_the_csv_task_reads_back(tmp_path):
  _write_imdb(str(tmp_path / "acl"))
  info = labelled.write_subsets("imdb", str(tmp_path / "acl"),
                                str(tmp_path / "set"), 12, 100, seed=3)
  assert info["labels"] == ["neg", "pos"] and not info["pairs"]
  assert info["train"] == {"drawn": 12, "available": 40}
  assert info["dev"] == {"drawn": 40, "available": 40}
  train = linear_probe.read_table(str(tmp_path / "set" / "train.csv"))
  assert len(train) == 12
  for e in train:  # each text kept with its own label
    assert ("good" in e.text_a) == (e.label == "pos")


@pytest.mark.quick
@pytest.mark.tf_version
def test_pairs_stay_pairs_from_the_task_to_the_fine_tuning_command(
    tmp_path):
  """A csv table with a text_b column, and AG News's title and
  description, are drawn as pairs; their fine-tuning reads text_b too."""
  nli = tmp_path / "nli"
  nli.mkdir()
  for split in ("train", "dev"):
    (nli / f"{split}.csv").write_text("label,text_a,text_b\n" + "".join(
        f'{"yes" if i % 2 else "no"},"A, {i}",B {i}\n' for i in range(6)))
  ag = tmp_path / "ag"
  ag.mkdir()
  for split in ("train", "test"):
    (ag / f"{split}.csv").write_text("".join(
        f'"{1 + i % 4}","Title {i}","Body, {i}."\n' for i in range(8)))
  _write_imdb(str(tmp_path / "acl"), per_label=3)
  cfg = _cfg(tmp_path / "work", train_examples=4, dev_examples=5,
             tasks=chain_config.parse_tasks(
                 f"nli=csv:{nli},ag=ag_news:{ag},film=imdb:{tmp_path}/acl"))
  steps.write_sets(cfg)
  for task, first in zip(cfg.tasks, ("A, ", "Title ", "The film was ")):
    dev = linear_probe.read_table(plan.path(cfg, "sets", task.name,
                                            "dev.csv"))
    assert len(dev) == 5 and all(e.text_a.startswith(first) for e in dev)
    for e in dev:  # the second text of the same example
      number = e.text_a.split()[-1].rstrip(".")
      assert e.text_b == (None if task.name == "film" else
                          {"nli": f"B {number}",
                           "ag": f"Body, {number}."}[task.name])
    command = plan.finetune_command(cfg, task, "random", 1)
    assert ("--text_b_column=text_b" in command) == (task.name != "film")


@pytest.mark.quick
def test_a_copied_pretraining_without_its_log_is_named_in_one_line(
    tmp_path):
  with pytest.raises(ValueError, match=r"^\S+/logs/pretrain\.log is missing: "
                     r"the held-out losses are read from pretraining's log; "
                     r"copy it with pretrain/ and done/pretrain\.json$"):
    report.held_out_losses(_cfg(tmp_path))


@pytest.mark.quick
@pytest.mark.tf_version
def test_split_documents_holds_out_every_nth_document_of_every_text():
  # Each text becomes documents of at most 40 sentences (the demo corpus'
  # format): 100 sentences -> 40, 40, 20. Documents 1..6 in order; the
  # 2nd, 4th and 6th are held out.
  texts = [" ".join(f"Book {b} line {n}." for n in range(100))
           for b in range(2)]
  train, heldout = corpus.split_documents(texts, heldout_every=2)

  def doc(b, first, last):
    return "\n".join(f"Book {b} line {n}." for n in range(first, last))

  assert heldout == [doc(0, 40, 80), doc(1, 0, 40), doc(1, 80, 100)]
  assert train == [doc(0, 0, 40), doc(0, 80, 100), doc(1, 40, 80)]


@pytest.mark.quick
@pytest.mark.tf_version
def test_task_texts_join_the_training_text_spread_and_never_held_out(
    tmp_path):
  # 8 documents and 2 task texts: each task text at 1/3 and 2/3 of the way.
  assert corpus.spread(list("abcdefgh"), ["X", "Y"]) == list("abcXdefYgh")
  assert corpus.spread(list("ab"), list("XYZ")) == list("XaYbZ")
  assert corpus.spread([], ["X"]) == ["X"]
  examples = [processors.InputExample("0", "One. Two.", None, "pos"),
              processors.InputExample("1", "Three.", "Four.", "neg")]
  task_docs = corpus.example_documents(examples)
  assert task_docs == ["One.\nTwo.", "Three.\nFour."]
  book = tmp_path / "book.txt"
  book.write_text(" ".join(f"Line {n}." for n in range(200)))  # 5 docs
  # The 4 training documents are 1,492 bytes, the task texts 21: a share
  # of 0.016 wants 24 bytes of them, which is one copy.
  info = corpus.write_text(str(book), str(tmp_path / "text"), 5, task_docs,
                           task_text_share=0.016)
  assert info["task_documents"] == 2
  train = (tmp_path / "text" / "train.txt").read_text().split("\n\n")
  valid = (tmp_path / "text" / "valid.txt").read_text().split("\n\n")
  # 4 training documents and 2 task texts: at 1/3 and 2/3 of the way.
  assert [d.split("\n")[0] for d in train] == [
      "Line 0.", "One.", "Line 40.", "Line 80.", "Three.", "Line 120."]
  assert [d.split("\n")[0] for d in valid] == ["Line 160."]


@pytest.mark.quick
@pytest.mark.tf_version
def test_the_task_texts_share_is_whole_copies_or_a_seeded_draw():
  docs = ["aaaa", "bbbbbb"]  # 10 bytes
  # share 0.2 of a 120-byte corpus wants 30 bytes: 3 copies, in order.
  assert corpus.task_share(docs, 120, 0.2, seed=0) == docs * 3
  # share 0.5 of 100 bytes wants 100: 10 copies; 0.1 wants 11: one.
  assert corpus.task_share(docs, 100, 0.5, seed=0) == docs * 10
  assert corpus.task_share(docs, 100, 0.1, seed=0) == docs
  assert corpus.task_share(docs, 100, 0.0, seed=0) == []
  # 10 texts of 10 bytes, 25 wanted: 3 drawn (30 bytes), in their order.
  many = [f"text {i:05d}" for i in range(10)]
  draws = {tuple(corpus.task_share(many, 100, 0.2, seed)) for seed in
           range(5)}
  for draw in draws:
    assert len(draw) == 3 and list(draw) == sorted(draw)
    assert set(draw) <= set(many)
  assert len(draws) > 1  # the seed decides the draw
  assert (corpus.task_share(many, 100, 0.2, 7) ==
          corpus.task_share(many, 100, 0.2, 7))
  with pytest.raises(ValueError, match=r"^--task_text_share=1 must be in "
                     r"\[0\.0, 1\)$"):
    _cfg("/nonexistent", task_text_share=1)


@pytest.mark.quick
@pytest.mark.tf_version
def test_linear_probe_separates_what_is_separable_and_not_noise():
  rng = np.random.RandomState(0)
  y = rng.randint(0, 3, 300)
  centers = np.eye(3, 8) * 4
  x = centers[y] + rng.normal(size=(300, 8))
  accuracy, _ = linear_probe.probe(x[:200], y[:200], x[200:], y[200:], 3)
  assert accuracy > 0.95
  noise = rng.normal(size=(300, 8))
  accuracy, _ = linear_probe.probe(noise[:200], y[:200], noise[200:],
                                   y[200:], 3)
  assert accuracy < 0.55


class _Steps:
  """Stand-in stages: record what runs; one can be made to stop."""

  def __init__(self, stop_at=None):
    self.ran, self.stop_at = [], stop_at

  def _step(self, name):
    def run(cfg):
      del cfg
      if name == self.stop_at:
        raise KeyboardInterrupt(name)
      self.ran.append(name)
    return run

  # The Python steps, by the names of their stages.
  STAGES = {"write_text": "text", "pretrain": "pretrain", "probe": "probe",
            "write_sets": "sets",
            "linear_probe": "linear_probe", "hf_check": "hf",
            "write_report": "report"}

  def __getattr__(self, name):
    if name in self.STAGES:
      return self._step(self.STAGES[name])
    raise AttributeError(name)

  def finetune(self, task, arm, seed):
    return self._step(f"{task.name}/{arm}-s{seed}")

  def run_commands(self, cfg, name, commands, watch):
    del cfg, commands, watch
    self._step(name)(None)


@pytest.mark.quick
@pytest.mark.tf_version
def test_a_rerun_skips_finished_stages_and_refuses_other_settings(tmp_path,
                                                                  capsys):
  cfg = _cfg(tmp_path, seeds=(1, 2))
  first = _Steps(stop_at="b/pretrained-s1")
  with pytest.raises(KeyboardInterrupt):
    api.run_chain(cfg, first)
  stages = plan.stages(cfg, first)
  names = [s.name for s in stages]
  stop = names.index("b/pretrained-s1")
  assert first.ran == names[:stop]
  # The ETA scales by the long stages finished before (estimated at 60 s
  # or more: 6 of the 11 before b/pretrained-s1), not by the short ones.
  lines = capsys.readouterr().out.splitlines()
  for index, name in enumerate(names[:stop + 1], 1):
    long_ones = sum(s.estimate >= 60 for s in stages[:index - 1])
    basis = (f"from {long_ones} finished long stage(s)" if long_ones else
             "(estimated)")
    assert re.fullmatch(
        rf"\[chain\] \[{index}/{len(names)}\] {re.escape(name)}: starting; elapsed "
        rf"00:00:0\d; ETA [\d:]+ {re.escape(basis)}", lines[index - 1])
  assert [long_ones, index] == [6, 12]
  second = _Steps()
  api.run_chain(cfg, second)
  assert second.ran == names[stop:]
  out = capsys.readouterr().out
  assert f"{stop} of {len(names)} stages done earlier" in out
  third = _Steps()
  api.run_chain(cfg, third)
  assert third.ran == []
  with pytest.raises(ValueError, match=r"holds a chain run with "
                     r"finetune_steps=500, this command has 400"):
    api.run_chain(_cfg(tmp_path, seeds=(1, 2), finetune_steps=400), _Steps())
  # The flags that give the recorded settings, each that differs (a
  # command that had them was told "rerun with its settings").
  with pytest.raises(ValueError) as caught:
    api.run_chain(_cfg(tmp_path, seeds=(3,), finetune_steps=400), _Steps())
  assert str(caught.value).endswith(
      "this command has 400: rerun with --finetune_steps=500 --seeds=1,2 "
      "to resume it, or give a new --work_dir")
  # --min_lm_gain only stops the chain: another value resumes. A setting
  # that an older version's chain.json lacks is read as its default (the
  # chain pretrained with seed 1 before --pretrain_seed existed).
  api.run_chain(_cfg(tmp_path, seeds=(1, 2), min_lm_gain=0.0), _Steps())
  recorded = json.loads((tmp_path / "chain.json").read_text())
  del recorded["pretrain_seed"]
  (tmp_path / "chain.json").write_text(json.dumps(recorded))
  api.run_chain(_cfg(tmp_path, seeds=(1, 2)), _Steps())
  with pytest.raises(ValueError, match=r"holds a chain run with "
                     r"pretrain_seed=1, this command has 2"):
    api.run_chain(_cfg(tmp_path, seeds=(1, 2), pretrain_seed=2), _Steps())


@pytest.mark.quick
@pytest.mark.tf_version
def test_a_pretraining_on_the_unigram_plateau_stops_the_chain():
  # Hand-worked: baseline 6.49, --min_lm_gain 0.5: 5.99 or less goes on.
  stuck = report.plateau_error([(500, 6.1), (1000, 6.2)], 6.49, 0.5)
  assert stuck.startswith(
      "pretraining stayed on the unigram plateau: held-out loss 6.20 nats "
      "per target at step 1000, unigram baseline 6.49 (--min_lm_gain=0.5 "
      "asks for 5.99 or less)")
  assert "another --pretrain_seed or a lower --pretrain_learning_rate" in (
      stuck) and "\n" not in stuck
  assert report.plateau_error([(500, 6.6), (1000, 5.98)], 6.49, 0.5) is None
  assert report.plateau_error([(1000, 6.2)], 6.49, 0.0) is None
  assert report.plateau_error([(1000, 6.2)], None, 0.5) is None


@pytest.mark.quick
@pytest.mark.tf_version
def test_pretraining_still_on_the_plateau_half_way_is_stopped_there(
    tmp_path):
  """From half of 6,000 steps on, a held-out loss not 0.5 below the
  baseline (6.49) stops the trainer; before half-way, at the last step
  (the probe stage's check) or below 5.99 it goes on. (The trainer stopped
  by such a stop, saving: tests/runs/test_children.py.)"""
  stop_when = steps.plateau_stop(_cfg(tmp_path, pretrain_steps=6000), 6.49)
  line = "I1129 held_out.py:86] [{}] eval | loss {} | pplx 1"
  for step, loss in ((500, 6.6), (2999, 6.6), (3000, 5.98), (6000, 6.6)):
    assert stop_when(line.format(step, loss)) is None, (step, loss)
  assert stop_when("[3000] 1.0s/step | loss 6.6") is None
  stop = stop_when(line.format(3500, 6.2))
  assert isinstance(stop, steps.Plateau)
  assert str(stop) == report.plateau_error([(3500, 6.2)], 6.49, 0.5)
  assert steps.plateau_stop(_cfg(tmp_path, pretrain_steps=6000,
                                 min_lm_gain=0.0), 6.49)(
                                     line.format(3500, 6.2)) is None


@pytest.mark.quick
@pytest.mark.tf_version
def test_a_second_chain_on_one_work_dir_is_refused_in_one_line(tmp_path):
  from xlnet.training import run_lock  # pylint: disable=g-import-not-at-top
  cfg = _cfg(tmp_path)
  with work_dir.lock(cfg.work_dir, "bench/chain.py run"):
    with pytest.raises(run_lock.Locked,
                       match="in use by another bench/chain.py run"):
      api.run_chain(cfg, _Steps())
  assert not os.path.exists(tmp_path / "chain.json")


@pytest.mark.slow
def test_the_chain_command_runs_every_stage_on_a_tiny_model(tmp_path):
  """bench/chain.py end to end, in minutes' hundredth: a 1-layer model,
  20 pretraining and 10 fine-tuning steps, a set of text pairs; no HF
  check (tests/interop checks the export), no plot."""
  text = tmp_path / "corpus.txt"
  with open(data_helpers.demo_corpus()) as f:
    text.write_text(f.read()[:60_000])
  pairs = tmp_path / "pairs"
  pairs.mkdir()
  for split in ("train", "dev"):  # the label only in text_b
    (pairs / f"{split}.csv").write_text("label,text_a,text_b\n" + "".join(
        f"{label},The film was,\"{word}, {word} indeed, {split} {i}.\"\n"
        for i in range(20) for label, word in (("pos", "good"),
                                              ("neg", "bad"))))
  work = tmp_path / "work"
  command = [sys.executable, os.path.join(REPO, "bench", "chain.py"),
             f"--work_dir={work}", f"--corpus_glob={text}",
             f"--tasks=sentiment=csv:{pairs}", "--seeds=1",
             "--hf_python=", "--plot_python=", "--vocab_size=500",
             "--n_layer=1", "--d_model=32", "--n_head=2", "--d_inner=64",
             "--pretrain_steps=20", "--pretrain_warmup_steps=5",
             "--heldout_every=5", "--train_examples=24",
             "--dev_examples=40", "--max_seq_length=32",
             "--finetune_steps=10", "--eval_every=5",
             "--finetune_warmup_steps=2"]
  # 20 steps leave the model on the unigram plateau: pretraining is
  # stopped at its half-way held-out loss (step 10), in one line;
  # --min_lm_gain=0 (not a setting) resumes it and goes on.
  stopped = subprocess.run(command, capture_output=True, text=True,
                           cwd=REPO, timeout=600, check=False)
  assert stopped.returncode == 1, stopped.stdout[-2000:] + stopped.stderr
  assert stopped.stderr.strip().splitlines()[-1].startswith(
      "chain.py: error: pretraining stayed on the unigram plateau: "
      "held-out loss "), stopped.stderr[-2000:]
  assert " at step 10, unigram baseline " in stopped.stderr
  assert "[4/10] pretrain: starting" in stopped.stdout
  assert "[5/10]" not in stopped.stdout
  done = subprocess.run(command + ["--min_lm_gain=0"], capture_output=True,
                        text=True, cwd=REPO, timeout=600, check=False)
  assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
  assert "3 of 10 stages done earlier" in done.stdout
  # Where the SIGTERM found it (steps 10 to 20 take well under the 2 s the
  # chain polls the log in) is chance here; the quick test above checks it.
  assert "] Resumed from " in (work / "logs" / "pretrain.log").read_text()
  assert "[chain] [9/10] sentiment/random-s1: starting; elapsed " in (
      done.stdout)
  # --task_text_share=0.5 (the default): the set's 40 training texts are
  # pretraining documents, each as often as every other and together
  # about half the text (within one copy); its 40 dev texts never.
  train_text = (work / "text" / "train.txt").read_text()
  docs = train_text.rstrip("\n").split("\n\n")
  task_docs = [d for d in docs if d.startswith("The film was")]
  counts = collections.Counter(task_docs)
  assert len(counts) == 40 and len(set(counts.values())) == 1
  copies = len(task_docs) // 40
  assert copies > 1
  one_copy = sum(len(d.encode()) for d in counts) / len(train_text.encode())
  assert abs(copies * one_copy - 0.5) < one_copy
  assert all(", train " in d for d in counts)
  assert f"; {len(task_docs)} of them the labelled sets' texts)" in (
      stopped.stdout)
  results = json.loads((work / "results.json").read_text())
  sentiment = results["sets"]["sentiment"]
  for arm in chain_config.ARMS:
    curve = sentiment["curves"][arm]["1"]
    assert [step for step, _ in curve] == [5, 10]
    assert sentiment[arm]["median"] == curve[-1][1]
  assert results["probe"]["held_out_loss"][-1][0] == 20
  assert set(results["linear_probe"]["sentiment"]) == set(chain_config.ARMS)
  assert "| sentiment (csv) | 24 / 40 |" in (work / "results.md").read_text()
  for arm in chain_config.ARMS:  # fine-tuned on both texts
    task = work / "finetune" / "sentiment" / f"{arm}-s1" / "task.json"
    assert json.loads(task.read_text())["pairs"] is True
