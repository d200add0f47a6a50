"""What a `reproduce.py` table costs: training and evaluation FLOPs and
device hours per task, from the settings of `xlnet/reproduce/paper_settings.py`.

The arithmetic (docs/reproducing.md, "What it costs"), per token of a
sequence of length L on a model of n_layer layers of width d_model:

  training    6 x N + 24 x n_layer x L x d_model   (forward and backward)
  evaluation  2 x N + 8 x n_layer x L x d_model    (forward only)

N = 12 x n_layer x d_model^2, the non-embedding weights (302 M for
XLNet-Large, 85 M for XLNet-Base); the second terms are the attention over
the content and the relative positions. Tokens: training steps x global
batch x L x sequences per example (RACE: 4, a question with its 4
options); evaluation: the dev or test set's examples x L x sequences per
example x the checkpoints evaluated (every saved one for the classifier
tasks, which pick the best; the last for SQuAD and RACE). Device hours at
--tflops sustained per device; every run counted (--num_seeds, default the
table's). Estimates, not measurements: measure your step time
(`bench/finetune_step.py`) and scale.

  python bench/reproduce_costs.py [--tflops=50] [--table=glue] [--base]
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from xlnet import task_kinds  # noqa: E402
from xlnet.reproduce import paper_settings  # noqa: E402

# (n_layer, d_model) of the released models.
MODELS = {"large": (24, 1024), "base": (12, 768)}


def flops_per_token(model_size, seq_len, training):
  """FLOPs of one token of a sequence of `seq_len` (see the docstring)."""
  n_layer, d_model = MODELS[model_size]
  weights = 12 * n_layer * d_model ** 2
  if training:
    return 6 * weights + 24 * n_layer * seq_len * d_model
  return 2 * weights + 8 * n_layer * seq_len * d_model


def sequences_per_example(task):
  """Its kind's (`task_kinds`): a RACE question is 4 sequences (one per
  option); else 1."""
  return task_kinds.get(task.kind).sequences_per_example


def checkpoints_evaluated(task, settings):
  """The classifier tasks evaluate every saved checkpoint
  (--eval_all_ckpt); SQuAD and RACE the last."""
  if task.kind != "classifier":
    return 1
  return math.ceil(settings.steps / settings.save_steps)


def task_cost(task, model_size):
  """(training FLOPs, evaluation FLOPs) of one run of `task`."""
  s = task.settings(model_size)
  per = sequences_per_example(task)
  train_tokens = s.steps * s.batch * s.seq_len * per
  eval_tokens = (task.eval_examples * s.seq_len * per *
                 checkpoints_evaluated(task, s))
  return (train_tokens * flops_per_token(model_size, s.seq_len, True),
          eval_tokens * flops_per_token(model_size, s.seq_len, False))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--tflops", type=float, default=50.0,
                      help="Sustained TFLOP/s per device (an assumption).")
  parser.add_argument("--table", choices=list(paper_settings.TABLES),
                      default=None, help="One table (default: all).")
  parser.add_argument("--num_seeds", type=int, default=None,
                      help="Runs per task (default: the table's).")
  args = parser.parse_args()
  rate = args.tflops * 1e12 * 3600  # FLOPs per device hour
  tables = [args.table] if args.table else list(paper_settings.TABLES)
  print("| table | task | runs | Large: train h | Large: eval h | "
        "Base: train h | Base: eval h |")
  print("|---|---|---|---|---|---|---|")
  for table in tables:
    runs = args.num_seeds or paper_settings.DEFAULT_SEEDS[table]
    totals = [0.0] * 4
    for task in paper_settings.TABLES[table]:
      hours = [f / rate for size in ("large", "base")
               for f in task_cost(task, size)]
      totals = [t + runs * h for t, h in zip(totals, hours)]
      print(f"| {table} | {task.label} | {runs} | " +
            " | ".join(f"{h:.2f}" for h in hours) + " |")
    print(f"| {table} | all, x {runs} runs | | " +
          " | ".join(f"**{t:.1f}**" for t in totals) + " |")


if __name__ == "__main__":
  main()
