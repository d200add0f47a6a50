"""Draws the chain's dev accuracy over fine-tuning steps (bench/chain.py):
one panel per labelled set, each arm's median over the seeds as a line and
its min-max as a band. Needs matplotlib (.venvs/plot).

  python scripts/plot_chain.py chain_out/results.json chain_out/curves.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLORS = {"pretrained": "tab:blue", "random": "tab:orange"}


def main(results_path, png_path):
  with open(results_path) as f:
    results = json.load(f)
  sets = results["sets"]
  fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 3.8),
                           squeeze=False)
  for ax, (name, s) in zip(axes[0], sets.items()):
    for arm, curves in s["curves"].items():
      steps = [step for step, _ in next(iter(curves.values()))]
      acc = np.array([[a for _, a in c] for c in curves.values()])
      ax.plot(steps, np.median(acc, 0), color=COLORS[arm],
              label=f"{arm} (median of {len(acc)} seeds)")
      ax.fill_between(steps, acc.min(0), acc.max(0), color=COLORS[arm],
                      alpha=0.2)
    ax.set_title(f"{name}: {s['train']['drawn']} training examples")
    ax.set_xlabel("fine-tuning step")
    ax.set_ylabel("dev accuracy")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
  fig.tight_layout()
  fig.savefig(png_path, dpi=100)
  print(png_path)


if __name__ == "__main__":
  if len(sys.argv) != 3:
    sys.exit("usage: plot_chain.py RESULTS_JSON PNG")
  main(*sys.argv[1:])
