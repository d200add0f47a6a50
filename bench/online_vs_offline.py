"""Does training from token records (span masks drawn online, anew each
epoch) reach the held-out loss of training from offline example records of
the same text, within the seed-to-seed spread? A small-scale check.

Takes the demo's data step (`DEMO_OUT=DIR bash scripts/demo.sh` writes
DIR/data: the corpus split, the SentencePiece model, example records of the
training and held-out text at the demo's settings), writes token records of
the same training text with the same settings, then for each seed trains
configs/demo.flags' model for --train_steps from each kind (train_gpu.py's
--seed sets the initial weights, the input order, the factorization orders,
dropout and, for token records, the online draws; the offline masks are
the writer's) and evaluates every final checkpoint with eval_pretrain.py on
the same held-out example records with the same evaluation seed (one pass).
Prints one row per run and the mean and spread (sample standard deviation,
min..max) per kind. Each step runs as its own program, one at a time.

Usage: python bench/online_vs_offline.py --demo_data=DIR/data --work_dir=W
[--seeds=1,2,3] [--train_steps=600]
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from absl import flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from xlnet.programs import cli  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_string("demo_data", None, "The data directory scripts/demo.sh "
                    "wrote (DEMO_OUT/data: text/, spiece.model, train/, "
                    "valid/).")
flags.DEFINE_string("work_dir", None, "Token records, models and logs go "
                    "here.")
flags.DEFINE_list("seeds", ["1", "2", "3"], "Trainer seeds, the same for "
                  "both kinds.")
flags.DEFINE_integer("train_steps", 600, "Training steps of every run "
                     "(the demo's configs/demo.flags say 2000).")
flags.DEFINE_integer("eval_seed", 1, "Seed of the held-out evaluation "
                     "(its permutations), the same for every run.")

TRAIN_LOSS = re.compile(r"\] \| gnorm .*\| loss ([0-9.]+)")
EVAL_LOSS = re.compile(r"\] eval \| loss ([0-9.]+)")


def run_program(log, args):
  """Runs `python args...` in the repository into `log`; its output."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  with open(log, "w") as f:
    done = subprocess.run([sys.executable] + args, cwd=REPO, stdout=f,
                          stderr=subprocess.STDOUT, env=env)
  with open(log) as f:
    text = f.read()
  if done.returncode:
    raise SystemExit(f"{args[0]} failed (exit {done.returncode}), see {log}")
  return text


def write_token_records(work):
  """Token records of the demo's training text; their record info dir."""
  # The demo's data settings (scripts/demo.sh's data_flags).
  data_flags = ["--bsz_per_host=8", "--num_core_per_host=1", "--seq_len=128",
                "--reuse_len=64", "--bi_data=True", "--num_predict=32",
                "--mask_alpha=6", "--mask_beta=1", "--uncased=False"]
  save_dir = os.path.join(work, "tokens")
  if not os.path.exists(os.path.join(save_dir, "corpus_info.json")):
    run_program(os.path.join(work, "tokens.log"), [
        "data_utils.py", "--record_kind=tokens",
        "--input_glob=" + os.path.join(FLAGS.demo_data, "text", "train.txt"),
        "--sp_path=" + os.path.join(FLAGS.demo_data, "spiece.model"),
        "--save_dir=" + save_dir, "--split=train"] + data_flags)
  return os.path.join(save_dir, "tfrecords")


def train_and_eval(work, kind, record_dir, seed):
  """(final training loss, held-out loss, seconds) of one run."""
  model_dir = os.path.join(work, f"{kind}-seed{seed}")
  shutil.rmtree(model_dir, ignore_errors=True)  # else the trainer resumes it
  start = time.time()
  text = run_program(model_dir + ".train.log", [
      "train_gpu.py", "--flagfile=configs/demo.flags",
      "--record_info_dir=" + record_dir, "--model_dir=" + model_dir,
      f"--train_steps={FLAGS.train_steps}", f"--seed={seed}",
      f"--save_steps={FLAGS.train_steps}", "--eval_steps=0"])
  train_loss = float(TRAIN_LOSS.findall(text)[-1])
  valid_dir = os.path.join(FLAGS.demo_data, "valid", "tfrecords")
  text = run_program(model_dir + ".eval.log", [
      "eval_pretrain.py", "--flagfile=configs/demo.flags",
      "--record_info_dir=" + valid_dir, "--model_dir=" + model_dir,
      f"--seed={FLAGS.eval_seed}"])
  return train_loss, float(EVAL_LOSS.findall(text)[-1]), time.time() - start


def summary(values):
  """'mean ± sd (min..max)' of `values`."""
  sd = statistics.stdev(values) if len(values) > 1 else float("nan")
  return (f"{statistics.mean(values):.4f} ± {sd:.4f} "
          f"({min(values):.4f}..{max(values):.4f})")


def main(_):
  if not FLAGS.demo_data or not FLAGS.work_dir:
    raise SystemExit("--demo_data and --work_dir are required (see --help)")
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  started = time.time()
  record_dirs = {"examples": os.path.join(FLAGS.demo_data, "train",
                                          "tfrecords"),
                 "tokens": write_token_records(FLAGS.work_dir)}
  results = {kind: {} for kind in record_dirs}
  print("| records | seed | final training loss | held-out loss | s |")
  print("|---|---|---|---|---|")
  for seed in FLAGS.seeds:  # the kinds interleaved: load drifts alike
    for kind, record_dir in record_dirs.items():
      train_loss, heldout, seconds = train_and_eval(
          FLAGS.work_dir, kind, record_dir, int(seed))
      results[kind][seed] = (train_loss, heldout)
      print(f"| {kind} | {seed} | {train_loss:.2f} | {heldout:.4f} | "
            f"{seconds:.0f} |", flush=True)
  print()
  print("| records | held-out loss: mean ± sd (min..max) | "
        "final training loss: mean ± sd |")
  print("|---|---|---|")
  for kind, runs in results.items():
    print(f"| {kind} | {summary([r[1] for r in runs.values()])} | "
          f"{summary([r[0] for r in runs.values()])} |")
  means = {k: statistics.mean(r[1] for r in v.values())
           for k, v in results.items()}
  print(f"\nheld-out difference (tokens - examples): "
        f"{means['tokens'] - means['examples']:+.4f}; "
        f"{FLAGS.train_steps} steps, seeds {','.join(FLAGS.seeds)}, "
        f"{time.time() - started:.0f} s in all")
  with open(os.path.join(FLAGS.work_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1)


if __name__ == "__main__":
  cli.run(main)
