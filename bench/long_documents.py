"""Long documents on IMDB's full reviews: `run_classifier.py
--long_documents=truncate`, `windows` and `memory` fine-tuned from the same
pretrained checkpoint at the same budget (the same pieces per window, steps,
batch, learning rate and seeds), and what each costs
(docs/long_documents.md, "Measured").

Training and dev reviews are drawn from an aclImdb directory (dev from its
`test/`), half of each label, by a fixed seed: the release's listing is
sorted by label, so its first N would hold one class. They are copied into
`--work_dir/data` in the same layout, so `--task_name=imdb` reads them as
it reads the whole set. Each run is one `run_classifier.py` process
(training, then the dev set at the last step); its row gives the dev
accuracy, the seconds per training step (from the step log, the traced
first steps left out) and the process's peak resident memory. The modes
run interleaved, seed by seed, so the shared machine's load drifts alike.

Usage (from the repository root):
  python bench/long_documents.py --imdb_dir=aclImdb \\
    --init_checkpoint=CKPT_DIR/model.ckpt-4000 --work_dir=W
The model's xlnet_config.json and spiece.model are read from the
checkpoint's directory. Rerun the same command after a kill: finished runs
are kept (their result.json), an interrupted one resumes from its newest
checkpoint (its step time and memory are then its last process's).
"""
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

from absl import flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from xlnet import io_utils  # noqa: E402
from xlnet.programs import cli  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABELS = ("neg", "pos")
FLAGS = flags.FLAGS


def define_flags():
  """The bench's flags (defined when it runs, not when imported)."""
  flags.DEFINE_string("imdb_dir", None, "aclImdb: train/{neg,pos}/*.txt "
                      "and test/{neg,pos}/*.txt (dev reviews are drawn "
                      "from test/).")
  flags.DEFINE_string("init_checkpoint", None, "The pretrained checkpoint's "
                      "prefix; xlnet_config.json and spiece.model beside it.")
  flags.DEFINE_string("work_dir", None, "The drawn reviews, records, runs "
                      "and results (kept: rerun to resume).")
  flags.DEFINE_list("modes", ["truncate", "windows", "memory"], "Modes to "
                    "run, of: truncate, truncate_long (one sequence holding "
                    "the windows' pieces), windows, windows_max, memory, "
                    "memory_bptt_all.")
  flags.DEFINE_list("seeds", ["1", "2", "3"], "run_classifier.py seeds (the "
                    "head's initial weights, the example order, dropout).")
  flags.DEFINE_integer("train_examples", 1000, "Training reviews drawn, half "
                       "of each label.")
  flags.DEFINE_integer("dev_examples", 1000, "Dev reviews drawn from test/, "
                       "half of each label.")
  flags.DEFINE_integer("sample_seed", 0, "Seed of the reviews' draw.")
  flags.DEFINE_integer("max_seq_length", 128, "Pieces per window (truncate "
                       "reads one window).")
  flags.DEFINE_integer("max_windows", 4, "Windows per review of windows and "
                       "memory.")
  flags.DEFINE_integer("train_steps", 100, "Training steps of every run.")
  flags.DEFINE_integer("train_batch_size", 16, "Reviews per step (also the "
                       "dev set's batch).")
  flags.DEFINE_float("learning_rate", 5e-4, "Peak learning rate.")
  flags.DEFINE_integer("warmup_steps", 10, "Linear warmup steps.")
  flags.DEFINE_integer("log_every", 10, "Steps between step log lines (the "
                       "step time is measured between them).")


def mode_flags(mode, max_seq_length, max_windows):
  """run_classifier.py's flags of a mode at the bench's budget: windows of
  max_seq_length, up to max_windows of them; truncate reads the first
  window, truncate_long one sequence of all the windows' pieces."""
  windows = [f"--max_seq_length={max_seq_length}",
             f"--max_windows={max_windows}"]
  modes = {
      "truncate": ["--long_documents=truncate",
                   f"--max_seq_length={max_seq_length}"],
      "truncate_long": ["--long_documents=truncate", "--max_seq_length="
                        f"{max_windows * (max_seq_length - 2) + 2}"],
      "windows": ["--long_documents=windows", "--window_pooling=mean"],
      "windows_max": ["--long_documents=windows", "--window_pooling=max"],
      "memory": ["--long_documents=memory", "--bptt_windows=1"],
      "memory_bptt_all": ["--long_documents=memory",
                          f"--bptt_windows={max_windows}"],
  }
  if mode not in modes:
    raise ValueError(f"--modes: expected some of {', '.join(modes)}, got "
                     f"{mode!r}")
  truncated = mode.startswith("truncate")
  return modes[mode] + ([] if truncated else windows)


def pieces_read(mode, max_seq_length, max_windows):
  """How many of a review's first pieces a mode reads."""
  return (max_seq_length - 2) * (1 if mode == "truncate" else max_windows)


def draw_names(names, count, seed, split):
  """{label: sorted file names}: count // 2 of each label's `names`, drawn
  without replacement by a generator seeded with (seed, split, label).

  Raises:
    ValueError: a label has fewer than count // 2 files.
  """
  drawn = {}
  for label in LABELS:
    files = sorted(names[label])
    if len(files) < count // 2:
      raise ValueError(f"--imdb_dir: {split}/{label} has {len(files)} "
                       f"reviews, expected at least {count // 2}")
    rng = random.Random(f"{seed}/{split}/{label}")
    drawn[label] = sorted(rng.sample(files, count // 2))
  return drawn


def write_sample(imdb_dir, out_dir, counts, seed):
  """Copies the drawn reviews into out_dir/aclImdb ({train,test}/{neg,pos});
  kept if already there. Returns that aclImdb directory."""
  target = os.path.join(out_dir, "aclImdb")
  if os.path.isdir(target):
    return target
  tmp = target + ".tmp"
  shutil.rmtree(tmp, ignore_errors=True)
  for split, count in counts.items():
    names = {}
    for label in LABELS:
      path = os.path.join(imdb_dir, split, label)
      if not os.path.isdir(path):
        raise ValueError(f"--imdb_dir={imdb_dir}: expected the directory "
                         f"{path} (aclImdb's layout), not found")
      names[label] = [n for n in os.listdir(path) if n.endswith(".txt")]
    for label, files in draw_names(names, count, seed, split).items():
      os.makedirs(os.path.join(tmp, split, label))
      for name in files:
        shutil.copyfile(os.path.join(imdb_dir, split, label, name),
                        os.path.join(tmp, split, label, name))
  os.rename(tmp, target)
  return target


def review_texts(data_dir, split):
  """The reviews of data_dir/split ({neg,pos}/*.txt) as `--task_name=imdb`
  reads them (`datasets.ImdbProcessor`: stripped, `<br />` a space)."""
  texts = []
  for label in LABELS:
    path = os.path.join(data_dir, split, label)
    for name in sorted(os.listdir(path)):
      with open(os.path.join(path, name), encoding="utf-8") as f:
        texts.append(f.read().strip().replace("<br />", " "))
  return texts


def length_summary(data_dir, spiece_model, limits):
  """One line per split: the reviews' lengths in pieces, as the classifier
  tokenizes them, and the share longer than each of `limits`."""
  from xlnet.data import prepro_utils  # pylint: disable=g-import-not-at-top
  sp_model = prepro_utils.load_sp_model(spiece_model, "spiece.model")
  lines = []
  for split, name in (("train", "train"), ("test", "dev")):
    # features.make_tokenize_fn's pieces of a cased text.
    lengths = [len(prepro_utils.encode_ids(
        sp_model, prepro_utils.preprocess_text(text)))
               for text in review_texts(data_dir, split)]
    shares = ", ".join(f"{sum(n > k for n in lengths) / len(lengths):.0%} "
                       f"longer than {k}" for k in limits)
    lines.append(f"{name}: {len(lengths)} reviews, pieces median "
                 f"{statistics.median(lengths):.0f}, max {max(lengths)}; "
                 f"{shares}")
  return lines


def run_command(data_dir, run_dir, records_dir, mode, seed):
  """run_classifier.py's command of one run: train, then the dev set."""
  checkpoint_dir = os.path.dirname(FLAGS.init_checkpoint)
  return [sys.executable, "run_classifier.py", "--task_name=imdb",
          f"--data_dir={data_dir}", f"--output_dir={records_dir}",
          f"--model_dir={run_dir}",
          f"--init_checkpoint={FLAGS.init_checkpoint}",
          f"--spiece_model_file={checkpoint_dir}/spiece.model",
          f"--model_config_path={checkpoint_dir}/xlnet_config.json",
          f"--train_batch_size={FLAGS.train_batch_size}",
          f"--eval_batch_size={FLAGS.train_batch_size}",
          f"--learning_rate={FLAGS.learning_rate}",
          f"--warmup_steps={FLAGS.warmup_steps}",
          f"--train_steps={FLAGS.train_steps}",
          f"--save_steps={FLAGS.train_steps}",
          f"--iterations={FLAGS.log_every}", f"--seed={seed}",
          "--do_train", "--do_eval", "--eval_split=dev"] + mode_flags(
              mode, FLAGS.max_seq_length, FLAGS.max_windows)


def step_seconds(log_text):
  """Seconds per step between the step log's second line (the first
  steps, traced, left out) and its last: the log's last process only."""
  points = []
  for line in log_text.split("\n$ ")[-1].splitlines():
    if "step_log.py" in line and "] [" in line and "| loss" in line:
      stamp = datetime.datetime.strptime(line[6:21], "%H:%M:%S.%f")
      points.append((int(line.split("] [")[1].split("]")[0]), stamp))
  if len(points) < 3:
    return float("nan")
  (first, start), (last, end) = points[1], points[-1]
  seconds = (end - start).total_seconds() % 86400  # across midnight
  return seconds / (last - first)


def dev_accuracy(run_dir, step):
  """The dev accuracy of run_dir's checkpoint at `step`."""
  from xlnet.finetuning import checkpoint_eval
  with open(os.path.join(run_dir, "eval_results.txt")) as f:
    for line in f:
      entry = checkpoint_eval.parse_line(line)
      if (entry["kind"] == "eval" and entry.get("split") == "dev"
          and int(entry["step"]) == step):
        return float(entry["eval_accuracy"])
  raise ValueError(f"{run_dir}/eval_results.txt: no dev accuracy at step "
                   f"{step}")


def run(data_dir, mode, seed):
  """One run's result (kept in its result.json; read back when there)."""
  run_dir = os.path.join(FLAGS.work_dir, "runs", f"{mode}-s{seed}")
  result_path = os.path.join(run_dir, "result.json")
  if os.path.exists(result_path):
    with open(result_path) as f:
      return json.load(f)
  os.makedirs(run_dir, exist_ok=True)
  command = run_command(data_dir, run_dir, os.path.join(
      FLAGS.work_dir, "records", mode), mode, seed)
  log_path = run_dir + ".log"
  start = time.time()
  with open(log_path, "a") as log:
    log.write("\n$ " + " ".join(command) + "\n")
    log.flush()
    child = subprocess.Popen(command, cwd=REPO, stdout=log,
                             stderr=subprocess.STDOUT,
                             env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    _, status, usage = os.wait4(child.pid, 0)
  code = os.waitstatus_to_exitcode(status)
  if code:
    raise SystemExit(f"run_classifier.py failed (exit {code}), see "
                     f"{log_path}")
  with open(log_path) as f:
    text = f.read()
  result = {"mode": mode, "seed": seed,
            "accuracy": dev_accuracy(run_dir, FLAGS.train_steps),
            "step_s": step_seconds(text),
            "peak_gib": usage.ru_maxrss / 2 ** 20,  # KiB on Linux
            "seconds": time.time() - start}
  io_utils.atomic_write(result_path, json.dumps(result) + "\n")
  return result


def median_range(values, digits):
  return (f"{statistics.median(values):.{digits}f} "
          f"({min(values):.{digits}f}-{max(values):.{digits}f})")


def check_settings():
  """Refuses a --work_dir whose runs were made with other settings."""
  names = ("imdb_dir", "init_checkpoint", "train_examples", "dev_examples",
           "sample_seed", "max_seq_length", "max_windows", "train_steps",
           "train_batch_size", "learning_rate", "warmup_steps", "log_every")
  settings = {n: getattr(FLAGS, n) for n in names}
  path = os.path.join(FLAGS.work_dir, "settings.json")
  if os.path.exists(path):
    with open(path) as f:
      kept = json.load(f)
    changed = [f"--{n}={settings[n]} (was {kept.get(n)})" for n in names
               if kept.get(n) != settings[n]]
    if changed:
      raise ValueError(f"--work_dir={FLAGS.work_dir} holds runs of other "
                       f"settings: {', '.join(changed)}; use another "
                       "--work_dir")
  io_utils.atomic_write(path, json.dumps(settings, indent=1) + "\n")


def main(_):
  for name in ("imdb_dir", "init_checkpoint", "work_dir"):
    if not getattr(FLAGS, name):
      raise ValueError(f"--{name} is required (see --help)")
  for mode in FLAGS.modes:
    mode_flags(mode, FLAGS.max_seq_length, FLAGS.max_windows)
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  check_settings()
  data_dir = write_sample(FLAGS.imdb_dir, os.path.join(
      FLAGS.work_dir, "data"), {"train": FLAGS.train_examples,
                                "test": FLAGS.dev_examples},
                          FLAGS.sample_seed)
  limits = sorted({pieces_read(m, FLAGS.max_seq_length, FLAGS.max_windows)
                   for m in FLAGS.modes})
  for line in length_summary(data_dir, os.path.join(os.path.dirname(
      FLAGS.init_checkpoint), "spiece.model"), limits):
    print(line, flush=True)
  print("\n| mode | seed | dev accuracy | s/step | peak GiB | s |")
  print("|---|---|---|---|---|---|")
  results = {mode: [] for mode in FLAGS.modes}
  for seed in FLAGS.seeds:
    for mode in FLAGS.modes:
      r = run(data_dir, mode, int(seed))
      results[mode].append(r)
      print(f"| {mode} | {seed} | {r['accuracy']:.4f} | {r['step_s']:.2f} "
            f"| {r['peak_gib']:.2f} | {r['seconds']:.0f} |", flush=True)
  print(f"\n{FLAGS.train_steps} steps of {FLAGS.train_batch_size} reviews, "
        f"learning rate {FLAGS.learning_rate}, windows of "
        f"{FLAGS.max_seq_length}; medians (min-max) over seeds "
        f"{','.join(FLAGS.seeds)}\n")
  print("| mode | pieces read | dev accuracy | s/step | peak GiB |")
  print("|---|---|---|---|---|")
  for mode, rows in results.items():
    pieces = pieces_read(mode, FLAGS.max_seq_length, FLAGS.max_windows)
    print(f"| {mode} | {pieces} | "
          f"{median_range([r['accuracy'] for r in rows], 4)} | "
          f"{median_range([r['step_s'] for r in rows], 2)} | "
          f"{median_range([r['peak_gib'] for r in rows], 2)} |")


if __name__ == "__main__":
  cli.run(main, define_flags)
