"""Activation recomputation's memory: the peak per example with and without
`--recompute` (`RunConfig.recompute`), measured on this machine's
allocator, against the memory model (`xlnet/reproduce/memory_model.py`).

Each point runs in a process of its own (bench/finetune_memory.py's
measurement: the allocator's peak of the second training step of the
fine-tuning `Trainer`, classifier head, fp32). The peak per example is the
slope between two batches at which the activations outweigh the update
(`batches`), at XLNet-Base and -Large widths (768 and 1024) with
--n_layer layers, at 128 and 512 tokens. What recomputation saves per
example is the plain slope less the recomputing one; divided by the
layers below the top one (the top layer's phases are the same both ways),
it is the saving per layer, beside the model's derivation of it (all a
layer keeps but its input): their smallest ratio is the share of the
derived saving the plan applies (`memory_model.RECOMPUTE_SAVING`); the
model's columns are the plan's.

Usage (from the repository root):
  python bench/recompute_memory.py [--n_layer=3] [--widths=768,1024]
      [--lengths=128,512]
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench import finetune_memory  # noqa: E402

MIB = 2.0 ** 20


def point_text(width, seq_len, batch, args, recompute):
  """bench/finetune_memory.py's point of a width, length and batch."""
  return (f"classifier:fp32:{args.n_layer}:{width}:{seq_len}:{batch}"
          + ("+recompute" if recompute else ""))


def estimate(text, args):
  """The memory model's `StepMemory` of a point."""
  return finetune_memory.model_estimate(
      finetune_memory.parse_point(text, args.n_token))


def batches(width, seq_len, args):
  """Two batches (b, 2 b) at which the activations outweigh the update with
  recomputation: the smallest power of two b whose activation peak, as the
  model derives it (every byte beyond a layer's input saved), is 1.3 times
  the update's (the plain step's are larger)."""
  b = 1
  while True:
    est = estimate(point_text(width, seq_len, b, args, True), args)
    derived = est.activation_peak - est.below.get(
        "layers: not saved by recomputation", 0)
    if derived > 1.3 * est.update_peak or b >= 1024:
      return b, 2 * b
    b *= 2


def per_example(width, seq_len, low, high, args, recompute):
  """(the model's activations per example, the measured peak's), bytes."""
  texts = [point_text(width, seq_len, b, args, recompute)
           for b in (low, high)]
  model = [estimate(t, args).activation_bytes for t in texts]
  peaks = [max(finetune_memory.run_point(t, args)["peak"]
               for _ in range(args.repeats)) for t in texts]
  return ((model[1] - model[0]) / (high - low),
          (peaks[1] - peaks[0]) / (high - low))


def derived_saving(width, seq_len, args):
  """What the model derives that recomputation saves per example and layer
  below the top one (`memory_model.layer_activation_terms`: all a layer
  keeps but its input), bytes."""
  from xlnet.reproduce import memory_model  # pylint: disable=g-import-not-at-top
  point = finetune_memory.parse_point(
      point_text(width, seq_len, 1, args, False), args.n_token)
  terms = memory_model.layer_activation_terms(
      memory_model.ModelSizes.of(point["config"]), seq_len, 1, "fp32")
  return sum(terms.values()) - terms["input"]


def row(width, seq_len, args):
  """One line: per example (MiB), model and measured, without and with
  recomputation; the saving per layer below the top one."""
  low, high = batches(width, seq_len, args)
  plain = per_example(width, seq_len, low, high, args, False)
  recompute = per_example(width, seq_len, low, high, args, True)
  saving = [derived_saving(width, seq_len, args) / MIB,
            (plain[1] - recompute[1]) / (args.n_layer - 1) / MIB]
  return (f"| {width} | {seq_len} | {low}, {high} | {plain[0] / MIB:.1f} | "
          f"{plain[1] / MIB:.1f} | {recompute[0] / MIB:.1f} | "
          f"{recompute[1] / MIB:.1f} | {saving[0]:.1f} | {saving[1]:.1f} | "
          f"{saving[1] / saving[0]:.2f} |")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--n_layer", type=int, default=3)
  parser.add_argument("--widths", default="768,1024")
  parser.add_argument("--lengths", default="128,512")
  parser.add_argument("--repeats", type=int, default=1,
                      help="Runs of each point (the largest peak counts).")
  parser.add_argument("--pool_gib", type=int, default=8)
  parser.add_argument("--n_token", type=int, default=1000,
                      help="Vocabulary: small, so that the activations "
                      "outweigh the update at small batches.")
  args = parser.parse_args()
  if args.n_layer < 2:
    raise SystemExit("recompute_memory.py: error: --n_layer must be >= 2 "
                     f"(a layer below the top one), got {args.n_layer}")
  print(f"MiB per example (the slope of the peak between two batches), "
        f"{args.n_layer} layers, classifier, fp32, {args.n_token} tokens; "
        "saving: per example and layer below the top one")
  print("| width | tokens | batches | plain: model | plain: measured | "
        "--recompute: model | --recompute: measured | saving: model | "
        "saving: measured | measured / model |")
  print("|---" * 10 + "|")
  for width in map(int, args.widths.split(",")):
    for seq_len in map(int, args.lengths.split(",")):
      print(row(width, seq_len, args), flush=True)


if __name__ == "__main__":
  main()
