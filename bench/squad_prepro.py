"""Benchmark of the SQuAD preprocessing (and of one SQuAD training step).

1. Builds a SQuAD-2.0-sized synthetic file (default 130k questions over 20k
   paragraphs of about 120 words, a third impossible) from the demo novel.
2. Runs the preprocessing as reproduce.py does before a SQuAD task (its
   `run_squad.py --do_prepro` shards, at most one process per core) with 1,
   --num_proc and 8 shards, and prints questions/s and features/s of the
   whole step, process start-up and JSON reading included.
3. A/B on the same questions, in this process: our conversion (each
   paragraph tokenized and aligned once) against a per-question baseline in
   the release's style (the paragraph re-tokenized for every question and
   aligned to the original by a banded character LCS in Python), on a
   sample.
4. With --model_steps > 0: examples/s of one graph step (SQuAD heads on a
   base-width backbone, gradients and an Adam update; not the engine) at
   --max_seq_length.

Usage: python bench/squad_prepro.py [--num_questions=130000]
         [--num_paragraphs=20000] [--num_proc=2] [--model_steps=0]
"""
import json
import os
import random
import re
import resource
import shutil
import sys
import time

from absl import app
from absl import flags
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import scratch  # noqa: E402
from xlnet.data import prepro_utils  # noqa: E402
from xlnet.data import spm_train  # noqa: E402
from xlnet.demo import demo_corpus  # noqa: E402
from xlnet.finetuning.squad import features as squad_features  # noqa: E402
from xlnet.reproduce import paper_settings  # noqa: E402
from xlnet.reproduce import plan as reproduce_plan  # noqa: E402
from xlnet.reproduce import runner as reproduce_runner  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_questions", 130000,
                     "Questions in the file (0: skip the preprocessing).")
flags.DEFINE_integer("num_paragraphs", 20000, "Paragraphs in the file.")
flags.DEFINE_integer("num_proc", 2,
                     "Shards besides 1 and reproduce.py's default "
                     "--num_proc (8), each timed as reproduce.py runs them: "
                     "at most one process per core.")
flags.DEFINE_integer("vocab_size", 4000,
                     "SentencePiece vocabulary size (the demo novel allows "
                     "at most about 4600).")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length.")
flags.DEFINE_integer("baseline_questions", 300,
                     "Questions converted by the per-question baseline.")
flags.DEFINE_integer("model_steps", 0, "Timed training steps (0: skip).")
flags.DEFINE_integer("model_layers", 12, "Layers of the step benchmark.")
flags.DEFINE_integer("model_batch", 2, "Batch of the step benchmark.")
flags.DEFINE_string("work_dir", None,
                    "Scratch dir, kept (default: a temp dir, removed at exit).")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_squad(path, num_questions, num_paragraphs, seed=0):
  """Writes a SQuAD 2.0 file of demo-novel paragraphs; returns its size."""
  with open(demo_corpus.get_demo_corpus(), encoding="utf-8") as f:
    sentences = [s.strip() for s in f if len(s.split()) > 3]
  rng = random.Random(seed)
  paragraphs = []
  per_paragraph = num_questions // num_paragraphs
  extra = num_questions - per_paragraph * num_paragraphs
  for p in range(num_paragraphs):
    context = ""
    while len(context.split()) < 120:
      context += (" " if context else "") + rng.choice(sentences)
    words = [m.span() for m in re.finditer(r"\S+", context)]
    qas = []
    for q in range(per_paragraph + (p < extra)):
      question = " ".join(context[s:e] for s, e in rng.sample(words, 8))
      qid = f"{p:06d}{q:02d}"
      if rng.random() < 1 / 3:
        qas.append(dict(id=qid, question=question + "?", answers=[],
                        is_impossible=True))
        continue
      first = rng.randrange(len(words))
      last = min(len(words) - 1, first + rng.randrange(4))
      start, end = words[first][0], words[last][1]
      qas.append(dict(id=qid, question=question + "?", is_impossible=False,
                      answers=[dict(text=context[start:end],
                                    answer_start=start)]))
    paragraphs.append(dict(context=context, qas=qas))
  with open(path, "w", encoding="utf-8") as f:
    json.dump({"version": "v2.0", "data": [dict(title="botchan",
                                                paragraphs=paragraphs)]}, f)
  return os.path.getsize(path)


# ----------------------------------------------------------------------------
# Baseline: per-question tokenization + banded character LCS (release style).
# ----------------------------------------------------------------------------
def banded_lcs_alignment(a, b, band):
  """Char alignment a -> b by a longest common subsequence restricted to
  |i - j| <= band, filled cell by cell in Python.

  Returns:
    dict a index -> b index of the matched characters.
  """
  n, m = len(a), len(b)
  score = np.zeros([n + 1, m + 1], np.int32)
  move = np.zeros([n + 1, m + 1], np.int8)
  for i in range(1, n + 1):
    for j in range(max(1, i - band), min(m, i + band) + 1):
      best, how = score[i - 1, j], 1
      if score[i, j - 1] > best:
        best, how = score[i, j - 1], 2
      if a[i - 1] == b[j - 1] and score[i - 1, j - 1] + 1 > best:
        best, how = score[i - 1, j - 1] + 1, 3
      score[i, j], move[i, j] = best, how
  out, i, j = {}, n, m
  while i > 0 and j > 0:
    if move[i, j] == 3:
      out[i - 1] = j - 1
      i, j = i - 1, j - 1
    elif move[i, j] == 2:
      j -= 1
    else:
      i -= 1
  return out


def baseline_convert(sp_model, context, question, max_seq_length):
  """One question the per-question way: tokenize the paragraph, align it to
  the original text with a banded LCS, tokenize the question."""
  pieces = prepro_utils.encode_pieces(sp_model,
                                      prepro_utils.preprocess_text(context))
  piece_text = "".join(pieces).replace(prepro_utils.SPIECE_UNDERLINE, " ")
  banded_lcs_alignment(context, piece_text,
                       abs(len(context) - len(piece_text)) + 5)
  ids = [sp_model.piece_to_id(p) for p in pieces]
  q_ids = prepro_utils.encode_ids(
      sp_model, prepro_utils.preprocess_text(question))[:64]
  return ids[:max_seq_length - len(q_ids) - 3]


def ab_conversion(sp_model, path):
  """Questions/s: ours (paragraph cache) vs the per-question baseline."""
  paragraphs, examples, _ = squad_features.read_squad_examples(path, True)
  sample = examples[:FLAGS.baseline_questions]
  rates = {"ours": [], "baseline": []}
  for _ in range(2):  # interleaved A/B rounds
    start = time.time()
    converter = squad_features.FeatureConverter(
        sp_model, paragraphs, FLAGS.max_seq_length, 64, 128, False, True)
    for _ in converter.iter_features(sample):
      pass
    rates["ours"].append(len(sample) / (time.time() - start))
    start = time.time()
    for example in sample:
      baseline_convert(sp_model, paragraphs[example.paragraph_index],
                       example.question_text, FLAGS.max_seq_length)
    rates["baseline"].append(len(sample) / (time.time() - start))
  return {k: max(v) for k, v in rates.items()}


# ----------------------------------------------------------------------------
# The whole command.
# ----------------------------------------------------------------------------
def run_prepro(work_dir, sp_path, train_file, num_proc):
  """Runs the preprocessing as reproduce.py does before a SQuAD task: the
  `run_squad.py --do_prepro` shards of `reproduce_plan.prepro_commands` (one
  process with --proc_id=0 for a single shard), at most one process per
  core (`reproduce_runner.run_programs`). Returns (seconds, features
  written)."""
  out_dir = os.path.join(work_dir, f"proc-{num_proc}")
  # Records of an earlier run (a named --work_dir) would be reused: time a
  # fresh preprocessing.
  shutil.rmtree(out_dir, ignore_errors=True)
  training = [sys.executable, os.path.join(ROOT, "run_squad.py"),
              f"--spiece_model_file={sp_path}", f"--train_file={train_file}",
              f"--output_dir={out_dir}", "--uncased=False",
              f"--max_seq_length={FLAGS.max_seq_length}",
              "--max_query_length=64", "--seed=1", f"--num_proc={num_proc}"]
  squad = paper_settings.select("squad", ["squad2.0"])[0]
  commands = reproduce_plan.prepro_commands(squad, training) or [
      training[:2] + ["--do_prepro=True"] + training[2:] + ["--proc_id=0"]]
  logs = [os.path.join(work_dir, f"logs-{num_proc}", f"prepro-{i}.log")
          for i in range(len(commands))]
  start, cpu = time.time(), _children_cpu()
  reason = reproduce_runner.run_programs(
      commands, logs, parallel=len(os.sched_getaffinity(0))).failure
  if reason:
    raise RuntimeError(f"run_squad.py failed: {reason}")
  seconds, cpu = time.time() - start, _children_cpu() - cpu
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  count = sum(1 for name in os.listdir(out_dir)
              if name.endswith(".tf_record")  # not their key files
              for _ in tf.compat.v1.io.tf_record_iterator(
                  os.path.join(out_dir, name)))
  return seconds, cpu, count


def _children_cpu():
  """User + system CPU seconds of this process' finished children."""
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def model_step_rate():
  """Examples/s of gradient + Adam steps of the SQuAD loss (base width)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from xlnet import model as model_lib  # pylint: disable=g-import-not-at-top
  from xlnet.finetuning.squad import head as squad_head  # pylint: disable=g-import-not-at-top
  tf.compat.v1.disable_eager_execution()
  config = dict(n_layer=FLAGS.model_layers, d_model=768, n_head=12,
                d_head=64, d_inner=3072, ff_activation="gelu", untie_r=True,
                n_token=32000)
  config_path = os.path.join(FLAGS.work_dir, "base_config.json")
  with open(config_path, "w") as f:
    json.dump(config, f)
  xlnet_config = model_lib.XLNetConfig(json_path=config_path)
  run_config = model_lib.RunConfig(is_training=True, use_tpu=False,
                                   use_bfloat16=False, dropout=0.1,
                                   dropatt=0.1)
  bsz, seq = FLAGS.model_batch, FLAGS.max_seq_length
  rng = np.random.default_rng(0)
  p_mask = np.zeros([bsz, seq], np.float32)
  p_mask[:, seq - 70:-1] = 1
  features = dict(
      input_ids=rng.integers(9, 32000, [bsz, seq]).astype(np.int32),
      segment_ids=np.zeros([bsz, seq], np.int32),
      input_mask=np.zeros([bsz, seq], np.float32), p_mask=p_mask,
      cls_index=np.full([bsz], seq - 1, np.int32),
      start_positions=np.full([bsz], 10, np.int32),
      end_positions=np.full([bsz], 12, np.int32),
      is_impossible=np.zeros([bsz], np.float32))
  with tf.Graph().as_default():
    loss, _ = squad_head.get_qa_loss(
        xlnet_config, run_config,
        {k: tf.constant(v) for k, v in features.items()})
    train_op = tf.compat.v1.train.AdamOptimizer(1e-5).minimize(loss)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      sess.run(train_op)  # warm-up
      start = time.time()
      for _ in range(FLAGS.model_steps):
        sess.run(train_op)
      return FLAGS.model_steps * bsz / (time.time() - start)


def prepro_figures():
  """Prints the conversion A/B and the whole command's figures."""
  sp_path = os.path.join(FLAGS.work_dir, f"spiece-{FLAGS.vocab_size}.model")
  if not os.path.exists(sp_path):
    spm_train.train_spm(demo_corpus.get_demo_corpus(), sp_path[:-6],
                        vocab_size=FLAGS.vocab_size)
  train_file = os.path.join(
      FLAGS.work_dir,
      f"train-{FLAGS.num_questions}-{FLAGS.num_paragraphs}.json")
  if not os.path.exists(train_file):
    make_squad(train_file, FLAGS.num_questions, FLAGS.num_paragraphs)
  print(f"file: {train_file} ({os.path.getsize(train_file) / 1e6:.1f} MB, "
        f"{FLAGS.num_questions} questions, {FLAGS.num_paragraphs} "
        f"paragraphs), vocab {FLAGS.vocab_size}, seq {FLAGS.max_seq_length}")

  sp_model = prepro_utils.load_sp_model(sp_path, "the bench's SentencePiece model")
  rates = ab_conversion(sp_model, train_file)
  print(f"A/B conversion, {FLAGS.baseline_questions} questions, best of 2 "
        f"interleaved rounds: ours {rates['ours']:.0f} q/s, per-question "
        f"tokenize + banded LCS {rates['baseline']:.1f} q/s "
        f"({rates['ours'] / rates['baseline']:.0f}x)")

  cores = len(os.sched_getaffinity(0))
  for num_proc in sorted({1, FLAGS.num_proc, 8}):
    seconds, cpu, count = run_prepro(FLAGS.work_dir, sp_path, train_file,
                                     num_proc)
    print(f"reproduce.py's preprocessing, --num_proc={num_proc} on {cores} "
          f"cores (load average {os.getloadavg()[0]:.1f}): {seconds:.1f} s "
          f"wall, {cpu:.1f} CPU s, {FLAGS.num_questions / seconds:.0f} "
          f"questions/s, {count / seconds:.0f} features/s ({count} "
          "features)")


def main(_):
  FLAGS.work_dir = scratch.scratch_dir(FLAGS.work_dir, "squad-bench-")
  if FLAGS.num_questions:
    prepro_figures()
  if FLAGS.model_steps:
    rate = model_step_rate()
    print(f"training step (graph, gradients + Adam, {FLAGS.model_layers} "
          f"layers x 768, seq {FLAGS.max_seq_length}, batch "
          f"{FLAGS.model_batch}): {rate:.2f} examples/s")


if __name__ == "__main__":
  app.run(main)
