"""Does a small model pretrained here tag entities better than a random
start? run_ner.py fine-tuned from each, over seeds, on a public NER set
built here.

The set is built from public text by rules and gazetteers, and says so: a
text file of one sentence a line (the chain's pretraining text,
`bench/chain.py`'s work_dir/text/{train,valid}.txt: Project Gutenberg
books, State of the Union addresses, review snippets and BBC News, from
registry packages, docs/chain.md) is cut into words and tagged in IOB2:

  PER   the capitalized words after a title (Mr., Mrs., Miss, Dr.,
        President, Captain, ...), the title left out: "Mr. Elton"
  LOC   the names of a gazetteer of countries, US states and cities
        ("New York", "France"); "Washington" after a title is PER
  MISC  nationalities and their languages ("English", "American")
  DATE  month names; "May" and "March" only before a number or after
        "of" or "in" (a modal verb, a verb otherwise)

so the labels are right by construction, and telling "Washington" or
"May" apart takes the context. Sentences from the text's training file
make train.txt (those with an entity and a quarter of the others), from
its held-out file dev.txt, in the CoNLL-2003 layout.

For each seed, run_ner.py fine-tunes the model of --model_config_path from
--init_checkpoint and from a random start, and scores dev.txt; the table
gives each run's F1 and the medians.

Usage: python bench/tagging_result.py --text_dir=W/text
  --spiece_model_file=W/spiece.model --model_config_path=W/xlnet_config.json
  --init_checkpoint=PRETRAINED --work_dir=OUT [--seeds=1,2,3]
"""
import json
import os
import random
import re
import statistics
import subprocess
import sys

from absl import flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from xlnet.programs import cli  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_string("text_dir", None, "train.txt and valid.txt: one "
                    "sentence a line.")
flags.DEFINE_string("spiece_model_file", None, "The model's SentencePiece "
                    "model.")
flags.DEFINE_string("model_config_path", None, "The model's config.")
flags.DEFINE_string("init_checkpoint", None, "The pretrained checkpoint.")
flags.DEFINE_string("work_dir", None, "The set, the runs and the table.")
flags.DEFINE_list("seeds", ["1", "2", "3"], "run_ner.py's --seed, each "
                  "run once from each start.")
flags.DEFINE_integer("train_sentences", 3000, "Sentences of train.txt.")
flags.DEFINE_integer("dev_sentences", 1000, "Sentences of dev.txt.")
flags.DEFINE_integer("train_steps", 600, "Fine-tuning steps of every run.")
flags.DEFINE_integer("max_seq_length", 64, "run_ner.py's windows.")
flags.DEFINE_float("learning_rate", 5e-4, "Fine-tuning's peak rate.")

TITLES = {"Mr.", "Mrs.", "Miss", "Dr.", "President", "Captain", "Sir",
          "Lady", "Lord", "General", "Colonel", "Senator", "Governor",
          "Madame", "Mme.", "Professor"}
PLACES = """Africa; Alabama; Alaska; America; Arizona; Arkansas; Asia;
Australia; Austria; Baltimore; Belgium; Berlin; Boston; Brazil; California;
Canada; Chicago; China; Colorado; Connecticut; Cuba; Delaware; Egypt;
England; Europe; Florida; France; Georgia; Germany; Greece; Hawaii; Holland;
Idaho; Illinois; India; Indiana; Iowa; Iran; Iraq; Ireland; Israel; Italy;
Japan; Kansas; Kentucky; Korea; London; Louisiana; Maine; Maryland;
Massachusetts; Mexico; Michigan; Minnesota; Mississippi; Missouri; Montana;
Moscow; Nebraska; Nevada; New Hampshire; New Jersey; New Mexico; New York;
North Carolina; North Dakota; Ohio; Oklahoma; Oregon; Paris; Pennsylvania;
Philadelphia; Poland; Portugal; Rhode Island; Rome; Russia; Scotland;
South Carolina; South Dakota; Spain; Sweden; Switzerland; Tennessee; Texas;
Turkey; United Kingdom; United States; Utah; Vermont; Vietnam; Virginia;
Wales; Washington; West Virginia; Wisconsin; Wyoming"""
NATIONS = {"American", "Americans", "English", "British", "French",
           "German", "Germans", "Spanish", "Italian", "Russian", "Russians",
           "Chinese", "Japanese", "Mexican", "Irish", "Scottish", "Dutch",
           "European", "Europeans", "African", "Indian", "Indians",
           "Canadian", "Greek", "Roman", "Soviet", "Latin", "Christian",
           "Christians", "Catholic", "Protestant", "Jewish"}
MONTHS = {"January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October", "November", "December"}
WORD = re.compile(r"[A-Za-z]+\.(?=\s)|[A-Za-z]+(?:[-'][A-Za-z]+)*|\d+|\S")


def _places():
  """The gazetteer: place name -> its words."""
  names = [n.strip() for n in PLACES.replace("\n", " ").split(";")]
  return sorted((n.split() for n in names), key=len, reverse=True)


def tag(words, places):
  """IOB2 tags of one sentence's words by the module's rules."""
  tags = ["O"] * len(words)
  i = 0
  while i < len(words):
    if words[i] in TITLES and i + 1 < len(words) and words[i + 1][:1].isupper():
      j = i + 1
      while (j < len(words) and words[j][:1].isupper()
             and words[j].replace("'", "").isalpha()):
        tags[j] = ("B-" if j == i + 1 else "I-") + "PER"
        j += 1
      i = j
      continue
    place = next((p for p in places if words[i:i + len(p)] == p), None)
    if place:
      tags[i:i + len(place)] = ["B-LOC"] + ["I-LOC"] * (len(place) - 1)
      i += len(place)
      continue
    if words[i] in NATIONS:
      tags[i] = "B-MISC"
    elif words[i] in MONTHS and (
        words[i] not in ("May", "March")
        or (i + 1 < len(words) and words[i + 1].isdigit())
        or (i > 0 and words[i - 1] in ("of", "in"))):
      tags[i] = "B-DATE"
    i += 1
  return tags


def _sentences(path):
  """The file's sentences as word lists (a line ending in a title joined to
  the next), 5 to 60 words."""
  with open(path, encoding="utf-8") as f:
    lines = [line.strip() for line in f if line.strip()]
  joined, carry = [], ""
  for line in lines:
    line = f"{carry} {line}".strip()
    if line.split()[-1] in TITLES:
      carry = line
      continue
    carry = ""
    joined.append(line)
  return [w for w in (WORD.findall(line) for line in joined)
          if 5 <= len(w) <= 60]


def write_set(path, sentences, count, rng):
  """`count` tagged sentences (those with an entity, and 1 in 4 of the
  others) in the CoNLL-2003 layout; returns the entities' count by
  type."""
  places = _places()
  rng.shuffle(sentences)
  kept, entities = [], {}
  for words in sentences:
    tags = tag(words, places)
    if any(t != "O" for t in tags) or rng.random() < 0.25:
      kept.append((words, tags))
      for t in tags:
        if t.startswith("B-"):
          entities[t[2:]] = entities.get(t[2:], 0) + 1
    if len(kept) == count:
      break
  with open(path, "w", encoding="utf-8") as f:
    for words, tags in kept:
      f.write("".join(f"{w} {t}\n" for w, t in zip(words, tags)) + "\n")
  return entities


def run_ner(run_dir, seed, init):
  """One fine-tuning and evaluation; its dev figures."""
  data = os.path.join(FLAGS.work_dir, "data")
  args = [sys.executable, os.path.join(REPO, "run_ner.py"), "--do_train",
          "--do_eval", f"--train_file={data}/train.txt",
          f"--eval_file={data}/dev.txt",
          f"--spiece_model_file={FLAGS.spiece_model_file}",
          f"--model_config_path={FLAGS.model_config_path}",
          f"--output_dir={FLAGS.work_dir}/records",
          f"--model_dir={run_dir}", f"--seed={seed}",
          f"--train_steps={FLAGS.train_steps}", "--train_batch_size=16",
          f"--learning_rate={FLAGS.learning_rate}", "--warmup_steps=60",
          f"--max_seq_length={FLAGS.max_seq_length}",
          f"--window_stride={FLAGS.max_seq_length // 2}",
          "--iterations=100"] + (
              [f"--init_checkpoint={init}"] if init else [])
  with open(run_dir + ".log", "w") as log:
    done = subprocess.run(args, stdout=log, stderr=subprocess.STDOUT,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  if done.returncode:
    raise RuntimeError(f"run_ner.py failed: see {run_dir}.log")
  with open(os.path.join(run_dir, "eval_results_dev.txt.json")) as f:
    return json.load(f)


def main(unused_argv):
  for name in ("text_dir", "spiece_model_file", "model_config_path",
               "init_checkpoint", "work_dir"):
    if not getattr(FLAGS, name):
      raise ValueError(f"--{name} is required")
  data = os.path.join(FLAGS.work_dir, "data")
  os.makedirs(data, exist_ok=True)
  rng = random.Random(0)
  counts = {
      split: write_set(os.path.join(data, f"{split}.txt"), _sentences(
          os.path.join(FLAGS.text_dir, source)), count, rng)
      for split, source, count in (
          ("train", "train.txt", FLAGS.train_sentences),
          ("dev", "valid.txt", FLAGS.dev_sentences))}
  print(f"entities by type: {counts}", flush=True)
  rows = {}
  for start, init in (("pretrained", FLAGS.init_checkpoint),
                      ("random", None)):
    for seed in FLAGS.seeds:
      run_dir = os.path.join(FLAGS.work_dir, f"{start}-{seed}")
      scores = run_ner(run_dir, int(seed), init)
      rows.setdefault(start, []).append(scores)
      per_type = " ".join(f"{k} {v['f1']:.3f}"
                          for k, v in scores["per_type"].items())
      print(f"{start} seed {seed}: F1 {scores['f1']:.4f} (P "
            f"{scores['precision']:.4f} R {scores['recall']:.4f}; "
            f"{per_type}) accuracy {scores['accuracy']:.4f}", flush=True)
  table = {start: {"f1": [r["f1"] for r in runs],
                   "median_f1": statistics.median(r["f1"] for r in runs),
                   "median_accuracy": statistics.median(
                       r["accuracy"] for r in runs)}
           for start, runs in rows.items()}
  with open(os.path.join(FLAGS.work_dir, "result.json"), "w") as f:
    json.dump(dict(table, entities=counts), f, indent=2)
  for start, values in table.items():
    each = ", ".join(f"{v:.4f}" for v in values["f1"])
    print(f"{start}: median F1 {values['median_f1']:.4f} over "
          f"{len(values['f1'])} seeds ({each}); median accuracy "
          f"{values['median_accuracy']:.4f}")


if __name__ == "__main__":
  cli.run(main)
