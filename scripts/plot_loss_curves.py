"""Draws the training and held-out loss curves of a train_gpu.py log (PNG).

Usage:
  python scripts/plot_loss_curves.py LOG PNG [--unigram=NATS]

LOG is the output of `train_gpu.py --eval_steps=N`: its `[step] | gnorm ...
| loss X |` lines (mean training loss since the previous line) and its
`[step] eval | loss X |` lines (held-out loss) give the two curves; with
--unigram a dashed line marks the unigram baseline. scripts/demo.sh runs
this with the plotting environment (.venvs/plot, requirements/plot.txt):
matplotlib is a dependency of the demo's picture only, and this script
imports neither TensorFlow nor the xlnet package.
"""
import argparse
import os
import re
import sys

TRAIN_LINE = re.compile(r"\[(\d+)\] \| gnorm \S+ lr \S+ \| loss (\S+) \|")
EVAL_LINE = re.compile(r"\[(\d+)\] eval \| loss (\S+) \|")


def read_curves(lines):
  """The two curves of a training log.

  Args:
    lines: iterable of str log lines.

  Returns:
    (train, heldout): lists of (step, loss) in log order.
  """
  train, heldout = [], []
  for line in lines:
    for pattern, curve in ((TRAIN_LINE, train), (EVAL_LINE, heldout)):
      match = pattern.search(line)
      if match:
        curve.append((int(match.group(1)), float(match.group(2))))
  return train, heldout


def plot(train, heldout, unigram, path):
  """Writes the picture to `path` (PNG), replacing it only when complete.

  The file is written to a temporary name and renamed, as every output of
  the project is; xlnet.io_utils, which does that elsewhere, needs
  TensorFlow, which this environment does not have.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top

  fig, ax = pyplot.subplots(figsize=(8, 5), dpi=100)
  ax.plot(*zip(*train), color="tab:blue", label="training (mean per log "
          "interval)")
  if heldout:
    ax.plot(*zip(*heldout), "o-", color="tab:orange", label="held-out")
  if unigram is not None:
    ax.axhline(unigram, color="gray", linestyle="--",
               label=f"unigram baseline ({unigram:.2f})")
  ax.set_xlabel("training step")
  ax.set_ylabel("loss per predicted piece (nats)")
  ax.set_title("XLNet demo: pretraining loss")
  ax.grid(alpha=0.3)
  ax.legend()
  fig.tight_layout()
  tmp = f"{path}.tmp-{os.getpid()}"
  try:
    fig.savefig(tmp, format="png")
    os.replace(tmp, path)
  finally:
    pyplot.close(fig)
    if os.path.exists(tmp):
      os.remove(tmp)


def main(argv=None):
  parser = argparse.ArgumentParser(
      prog="plot_loss_curves.py",
      description="Training and held-out loss curves of a train_gpu.py log.")
  parser.add_argument("log", help="the training log")
  parser.add_argument("png", help="the picture to write")
  parser.add_argument("--unigram", type=float, default=None,
                      help="unigram baseline (nats) to mark")
  args = parser.parse_args(argv)
  try:
    with open(args.log, encoding="utf-8", errors="replace") as f:
      train, heldout = read_curves(f)
  except OSError as e:
    parser.error(f"cannot read {args.log}: {e.strerror}")
  if not train:
    parser.error(f"{args.log} holds no training loss line "
                 "('[step] | gnorm ... | loss X |')")
  try:
    plot(train, heldout, args.unigram, args.png)
  except OSError as e:
    parser.error(f"cannot write {args.png}: {e.strerror or e}")
  print(args.png)


if __name__ == "__main__":
  sys.exit(main())
