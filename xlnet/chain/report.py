"""The chain's result: per labelled set, each arm's dev accuracy over the
seeds (median, min-max), the gain of the pretrained arm and whether it
exceeds twice the larger arm's seed spread; what pretraining learned (the
probe); the HF check; where the time went. Written as results.md and
results.json (which scripts/plot_chain.py draws)."""
import glob
import json
import os
import re
import statistics

from xlnet import io_utils
from xlnet.chain import config as chain_config
from xlnet.chain import plan

VERDICT = {True: "yes", False: "no", None: "n/a (1 seed)"}
_HELD_OUT = re.compile(r"\[(\d+)\] eval \| loss ([\d.]+)")
_UNIGRAM = re.compile(r"unigram baseline on the (\d+) held-out targets: "
                      r"([\d.]+) nats")
_TOP1 = re.compile(r"top-1 right for (\d+) of (\d+) hidden words, in the "
                   r"top (\d+) for (\d+)")


def _read_json(path):
  with open(path) as f:
    return json.load(f)


def arm_summary(accuracies):
  """{median, min, max, spread} of a list of accuracies."""
  return {"median": statistics.median(accuracies), "min": min(accuracies),
          "max": max(accuracies),
          "spread": max(accuracies) - min(accuracies)}


def compare(pretrained, random):
  """The verdict of one set from each arm's accuracies (lists).

  Returns:
    dict: each arm's `arm_summary`, `gain` (difference of the medians),
    `margin` (twice the larger spread) and `beats` (gain > margin; None
    with a single seed).
  """
  out = {"pretrained": arm_summary(pretrained),
         "random": arm_summary(random)}
  out["gain"] = out["pretrained"]["median"] - out["random"]["median"]
  out["margin"] = 2 * max(out["pretrained"]["spread"],
                          out["random"]["spread"])
  # One seed has no spread to measure the gain against: no verdict.
  out["beats"] = (out["gain"] > out["margin"]
                  if min(len(pretrained), len(random)) > 1 else None)
  return out


def collect(cfg):
  """Per set: its drawn sizes, each run's curve and the verdict."""
  sets = {}
  for task in cfg.tasks:
    runs = {arm: [_read_json(os.path.join(plan.run_dir(cfg, task, arm, s),
                                          "run.json")) for s in cfg.seeds]
            for arm in chain_config.ARMS}
    info = _read_json(plan.path(cfg, "sets", task.name, "set.json"))
    sets[task.name] = dict(
        compare(*[[r["accuracy"] for r in runs[arm]]
                  for arm in chain_config.ARMS]),
        task_name=task.task_name, data_dir=task.data_dir,
        labels=info["labels"], train=info["train"], dev=info["dev"],
        curves={arm: {str(r["seed"]): r["curve"] for r in runs[arm]}
                for arm in chain_config.ARMS})
  return sets


def held_out_losses(cfg):
  """[(step, held-out loss)] of the pretraining log.

  Raises:
    ValueError: one line naming the log when it is missing (a work dir
      given a copied pretrain/ without its log).
  """
  path = plan.path(cfg, "logs", "pretrain.log")
  if not os.path.exists(path):
    raise ValueError(
        f"{path} is missing: the held-out losses are read from "
        "pretraining's log; copy it with pretrain/ and done/pretrain.json")
  with open(path, errors="replace") as f:
    found = {int(m.group(1)): float(m.group(2))
             for m in _HELD_OUT.finditer(f.read())}
  return sorted(found.items())


def held_out_loss_in(line):
  """(step, loss) of a trainer's held-out evaluation line, else None."""
  found = _HELD_OUT.search(line)
  return (int(found.group(1)), float(found.group(2))) if found else None


def probe(cfg):
  """What pretraining learned: held-out losses, the unigram baseline of the
  held-out targets, hidden-word guesses right (probe.txt)."""
  with open(plan.path(cfg, "probe.txt"), errors="replace") as f:
    text = f.read()
  unigram, top1 = _UNIGRAM.search(text), _TOP1.search(text)
  return {"held_out_loss": held_out_losses(cfg),
          "unigram_loss": float(unigram.group(2)) if unigram else None,
          "hidden_words": int(top1.group(2)) if top1 else None,
          "top1_right": int(top1.group(1)) if top1 else None,
          "top_k": int(top1.group(3)) if top1 else None,
          "top_k_right": int(top1.group(4)) if top1 else None}


def plateau_error(held_out_loss, unigram_loss, min_gain):
  """Why fine-tuning should not start, or None: pretraining's last held-out
  loss is not `min_gain` nats below the unigram baseline, so the model has
  not left the plateau where it predicts piece frequencies, and both arms
  would start from what is in effect a random model.

  Args:
    held_out_loss: [(step, loss)] (`held_out_losses`).
    unigram_loss: the baseline (nats per target), or None (not measured).
    min_gain: nats; 0 turns the check off.
  """
  if not min_gain or not held_out_loss or unigram_loss is None:
    return None
  step, loss = held_out_loss[-1]
  if loss <= unigram_loss - min_gain:
    return None
  return (f"pretraining stayed on the unigram plateau: held-out loss "
          f"{loss:.2f} nats per target at step {step}, unigram baseline "
          f"{unigram_loss:.2f} (--min_lm_gain={min_gain:g} asks for "
          f"{unigram_loss - min_gain:.2f} or less), so both arms would "
          "start from a model that predicts piece frequencies; pretrain "
          "again in a new --work_dir with another --pretrain_seed or a "
          "lower --pretrain_learning_rate "
          "(docs/chain.md), or rerun with --min_lm_gain=0 to go on")


def probe_summary(probe_path):
  """One line of probe.txt's figures."""
  with open(probe_path, errors="replace") as f:
    text = f.read()
  unigram, top1 = _UNIGRAM.search(text), _TOP1.search(text)
  parts = []
  if unigram:
    parts.append(f"unigram baseline {unigram.group(2)} nats per held-out "
                 "target")
  if top1:
    parts.append(f"hidden held-out words: top-1 right for {top1.group(1)} "
                 f"of {top1.group(2)}, top {top1.group(3)} for "
                 f"{top1.group(4)}")
  return "; ".join(parts) or "probe.txt holds no figures"


def hf_line(result):
  """One line of one HF comparison (`hf_check`'s dict)."""
  line = (f"HF, {result['what']}: {result['agree']} of {result['total']} "
          f"agree ({100 * result['agreement']:.2f}%), largest difference "
          f"{result['max_diff']:.2e}: "
          f"{'passed' if result['passed'] else 'FAILED'}")
  return line + "".join(_split_clauses(result))


def _split_clauses(result):
  """What the classifier check says of texts HF's tokenizer split or
  shortened differently from ours (none: nothing)."""
  given_ours = ("so their logits were compared given our ids (through "
                f"HF's ids: {result.get('max_diff_split', 0.0):.2e})")
  for key, what in (
      ("split_differently", "split {n} {texts} differently on SentencePiece "
       f"score ties, {given_ours}"),
      ("cut_differently", "shortened {n} {pairs} differently (it keeps the "
       "odd piece in the longer text, the release in the first), "
       f"{given_ours}"),
      ("not_ties", "split {n} {texts} differently not on a tie")):
    n = result.get(key)
    if n:
      first = next(e for e in result["examples"] if e["kind"] == key)
      plural = "s" * (n != 1)
      yield (f"; HF's tokenizer "
             f"{what.format(n=n, texts='text' + plural, pairs='pair' + plural)}"
             f" (dev row {first['row']}: `{first['ours']}` here, "
             f"`{first['hf']}` in HF)")


def stage_seconds(cfg):
  """{stage: seconds} from the done/ records (the time of the run that
  finished each stage)."""
  records = [_read_json(p)
             for p in glob.glob(plan.path(cfg, "done", "*.json"))]
  records.sort(key=lambda r: r["finished_at"])
  return {r["stage"]: r["seconds"] for r in records}


def _markdown(cfg, results):
  lines = ["# The chain: pretrained vs random initialization", "",
           "| set | train / dev examples | pretrained: median (min-max) | "
           "random: median (min-max) | gain | 2 x larger spread | beats |",
           "|---|---|---|---|---|---|---|"]
  for name, s in results["sets"].items():
    cells = [f"{s[a]['median']:.4f} ({s[a]['min']:.4f}-{s[a]['max']:.4f})"
             for a in chain_config.ARMS]
    lines.append(f"| {name} ({s['task_name']}) | {s['train']['drawn']} / "
                 f"{s['dev']['drawn']} | {cells[0]} | {cells[1]} | "
                 f"{s['gain']:+.4f} | {s['margin']:.4f} | "
                 f"{VERDICT[s['beats']]} |")
  p = results["probe"]
  lines += ["", f"Seeds {', '.join(map(str, cfg.seeds))}; dev accuracy at "
            f"step {cfg.finetune_steps}.", "", "## What pretraining learned",
            ""]
  if p["held_out_loss"]:
    step, loss = p["held_out_loss"][-1]
    lines.append(f"* held-out loss {loss:.4f} nats per target at step "
                 f"{step}; unigram baseline {p['unigram_loss']}")
  if p["hidden_words"]:
    lines.append(f"* hidden held-out words: top-1 right for "
                 f"{p['top1_right']} of {p['hidden_words']}, top "
                 f"{p['top_k']} for {p['top_k_right']}")
  if results["linear_probe"]:
    lines += ["", "Linear probe of frozen features (dev accuracy of a softmax "
              "regression; embeddings: mean word embedding, mean: mean last "
              "layer, cls: last layer at <cls>):", "",
              "| set | start | embeddings | mean | cls |",
              "|---|---|---|---|---|"]
    for name, arms in results["linear_probe"].items():
      for arm, kinds in arms.items():
        lines.append(f"| {name} | {arm} | " + " | ".join(
            f"{kinds[k][0]:.4f}" for k in ("embeddings", "mean", "cls")) +
            " |")
  if results["hf"]:
    lines += ["", "## In HF transformers", ""]
    lines += [f"* {hf_line(results['hf'][k])}"
              for k in ("pretrained", "finetuned")]
  lines += ["", "## Where the time went", "", "| stage | seconds |",
            "|---|---|"]
  lines += [f"| {k} | {v:.0f} |" for k, v in results["seconds"].items()]
  lines.append(f"| all | {sum(results['seconds'].values()):.0f} |")
  return "\n".join(lines) + "\n"


def write(cfg):
  """Writes results.json and results.md; returns their paths."""
  hf_path = plan.path(cfg, "hf", "check.json")
  probe_path = plan.path(cfg, "linear_probe.json")
  results = {"settings": cfg.settings(), "sets": collect(cfg),
             "probe": probe(cfg),
             "linear_probe": (_read_json(probe_path)
                              if os.path.exists(probe_path) else None),
             "hf": _read_json(hf_path) if os.path.exists(hf_path) else None,
             "seconds": stage_seconds(cfg)}
  paths = {"json": plan.path(cfg, "results.json"),
           "md": plan.path(cfg, "results.md")}
  io_utils.atomic_write(paths["json"], json.dumps(results, indent=1) + "\n")
  io_utils.atomic_write(paths["md"], _markdown(cfg, results))
  return paths


def summary(cfg):
  """The lines printed at the end: the table of results.md."""
  with open(plan.path(cfg, "results.md")) as f:
    text = f.read()
  return text.split("\n## ")[0].strip()
