"""Tiny models learn synthetic SQuAD and RACE tasks through run_squad.py and
run_race.py: records, heads, losses, the shared fine-tuning engine,
prediction and scoring end to end."""
import json

import numpy as np
import pytest

from tests import qa_fixtures
from tests.data_helpers import train_tiny_spm
from xlnet.finetuning import api
from xlnet.flags import finetuning as finetune_flags
from xlnet.programs import run_race
from xlnet.programs import run_squad

pytestmark = pytest.mark.eager

FILLER = ["the", "school", "teacher", "said", "river", "over", "man", "went",
          "home", "and", "slept", "with", "in", "of", "to"]
NAMES = ["Kiyo", "Porcupine", "Redshirt", "Hubbard", "Koga", "Madonna",
         "Yamaarashi", "Nodaiko"]
SMALL_MODEL = dict(n_layer=2, d_model=32, n_head=4, d_head=8, d_inner=64,
                   ff_activation="gelu", untie_r=True, n_token=1000)


def _cue_squad(rng, num, first_id):
  """Answer = the name after the cue word; a quarter have no cue."""
  paragraphs = []
  for i in range(num):
    words = list(rng.choice(FILLER, 14))
    qa = dict(id=f"q{first_id + i}", question="Who comes after Botchan?")
    if rng.random() < 0.25:
      qa.update(answers=[], is_impossible=True)
    else:
      at, name = int(rng.integers(0, 14)), str(rng.choice(NAMES))
      words[at:at] = ["Botchan", name]
      start = len(" ".join(words[:at + 1])) + 1
      qa.update(answers=[dict(text=name, answer_start=start)],
                is_impossible=False)
    paragraphs.append(dict(context=" ".join(words), qas=[qa]))
  return [dict(title="cue", paragraphs=paragraphs)]


def _write_config(tmp_path, model=None):
  path = tmp_path / "small_config.json"
  path.write_text(json.dumps(model or SMALL_MODEL))
  return str(path)


@pytest.mark.parametrize("seed", [1])
def test_squad_learns_the_word_after_a_cue(tmp_path, seed):
  rng = np.random.default_rng(0)
  train = qa_fixtures.write_json(tmp_path / "train.json",
                                 {"data": _cue_squad(rng, 400, 0)})
  dev = qa_fixtures.write_json(tmp_path / "dev.json",
                               {"data": _cue_squad(rng, 60, 1000)})
  metrics = api.run_squad(**finetune_flags.resolve_squad(run_squad.parse_flags([
      "run_squad.py", f"--spiece_model_file={train_tiny_spm()}",
      f"--output_dir={tmp_path / 'proc'}", f"--model_dir={tmp_path / 'm'}",
      f"--model_config_path={_write_config(tmp_path)}",
      f"--train_file={train}", f"--predict_file={dev}", "--do_train",
      "--do_predict", "--max_seq_length=48", "--max_query_length=12",
      "--train_steps=200", "--train_batch_size=16", "--learning_rate=3e-3",
      "--dropout=0", "--dropatt=0", "--start_n_top=3", "--end_n_top=3",
      f"--seed={seed}"])))
  # A random span of ~15 words would score about 10.
  assert metrics["HasAns_f1"] > 80 and metrics["best_f1"] > 80, metrics


def _cue_race(rng, split, num):
  """The article's 6 filler words end with "Botchan likes X"; the right
  option is X. (The article keeps its first 21 pieces, 32 - 3 -
  max_qa_length 8, and the tiny SentencePiece model splits a name into up
  to 6: a cue among 12 filler words was often cut.)"""
  files = {}
  for i in range(num):
    name = str(rng.choice(NAMES))
    words = list(rng.choice(FILLER, 6)) + ["Botchan", "likes", name]
    others = rng.choice([n for n in NAMES if n != name], 3, replace=False)
    label = int(rng.integers(0, 4))
    options = [str(o) for o in others]
    options.insert(label, name)
    level = "middle" if i % 2 else "high"
    files[f"{split}/{level}/{i}.txt"] = dict(
        article=" ".join(words), questions=["Botchan likes _ ."],
        options=[options], answers=["ABCD"[label]])
  return files


# RACE's model: twice SQuAD's width, which the matching of an option to the
# article needs to be learned reliably (below).
RACE_MODEL = dict(SMALL_MODEL, d_model=64, d_head=16, d_inner=128)


# Seeded, so the run is the same every time. Measured (2-core AVX512 CPU):
# seeds 1-4 on three draws of the data (default_rng 0, 1, 2) all pass, at
# 0.84-1.0. The task is learned suddenly or not at all: at d_model 32, with
# the cue at a random place among 12 filler words, seeds 3 and 4 were still
# at chance after 1,500 steps, and 400 steps here leave 2 of those 12 runs
# at chance.
@pytest.mark.slow
@pytest.mark.parametrize("seed", [1])
def test_race_beats_chance_on_a_four_choice_task(tmp_path, seed):
  rng = np.random.default_rng(0)
  data_dir = qa_fixtures.write_race_dir(
      tmp_path / "RACE", dict(_cue_race(rng, "train", 800),
                              **_cue_race(rng, "dev", 100)))
  metrics = api.run_race(**finetune_flags.resolve_race(run_race.parse_flags([
      "run_race.py", f"--data_dir={data_dir}",
      f"--spiece_model_file={train_tiny_spm()}",
      f"--output_dir={tmp_path / 'proc'}", f"--model_dir={tmp_path / 'm'}",
      f"--model_config_path={_write_config(tmp_path, RACE_MODEL)}",
      "--do_train", "--do_eval", "--max_seq_length=32", "--max_qa_length=8",
      "--train_steps=800", "--train_batch_size=8", "--learning_rate=1e-3",
      "--warmup_steps=100", "--dropout=0", "--dropatt=0", f"--seed={seed}"])))
  assert metrics["num_examples"] == 100
  assert metrics["accuracy"] > 0.5, metrics  # chance: 0.25
