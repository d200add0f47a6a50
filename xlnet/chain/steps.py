"""What the chain's Python stages do (`plan.stages` names them), each a
function of the `ChainConfig` that raises on failure. Program stages run
through `run_program`: the program's output into its log, its progress
lines shown, SIGTERM and SIGINT passed on to it (it saves and stops):
`xlnet/runs/children.py`.
"""
import json
import os
import re

from xlnet import errors
from xlnet import io_utils
from xlnet.chain import corpus
from xlnet.chain import labelled
from xlnet.chain import linear_probe as linear_probe_lib
from xlnet.chain import plan
from xlnet.chain import report
from xlnet.data import prepro_utils
from xlnet.data import record_format
from xlnet.demo import unigram_baseline
from xlnet.finetuning import checkpoint_eval
from xlnet.runs import children
from xlnet.training import checkpoint_io
from xlnet.training import progress

# The lines of a program's log the chain shows: the trainers' progress and
# held-out lines, evaluations, and errors.
SHOWN = re.compile(r"\] (\[\d+\] \||\[\d+\] eval \||eval_accuracy|"
                   r"Evaluat)|error", re.IGNORECASE)
_ABSL_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ [^]]+\] ")


class StageFailed(errors.Stop):
  """A program of a stage failed; its log says why (exit code 1)."""


class Plateau(errors.Stop):
  """Pretraining did not leave the unigram plateau (exit code 1)."""


def run_program(command, log_path, watch, prefix="    ", stop_when=None):
  """Runs one program to its end (`children.run`: its output appended to
  `log_path`, SIGTERM and SIGINT passed on to it).

  Args:
    command: its argv.
    log_path: its log.
    watch: whether its SHOWN lines are printed as they come.
    prefix: what the printed lines start with.
    stop_when: None, or a function of each new line of the log that
      returns an `errors.Stop` to stop the program with (it gets SIGTERM,
      saves and stops; then the Stop is raised), or None to go on.

  Raises:
    progress.Interrupted: a SIGTERM/SIGINT arrived (passed on to the
      program, which saved and stopped): rerun the same command.
    StageFailed: the program failed (its exit code and last log line).
    errors.Stop: what `stop_when` returned.
  """
  def watcher(line):
    if watch and SHOWN.search(line):
      print(f"{prefix}{_ABSL_PREFIX.sub('', line)}", flush=True)
    return None if stop_when is None else stop_when(line)

  ran = children.run([list(command)], [log_path], watcher=watcher)
  if ran.stop is not None:
    raise ran.stop
  if ran.signum is not None:
    raise progress.Interrupted(
        f"stopped by signal {ran.signum} while "
        f"{os.path.basename(command[1])} ran (it saved its state); rerun "
        "the same command to go on", ran.signum)
  if ran.failure is not None:
    raise StageFailed(f"{ran.failure} (log: {log_path})")


def run_commands(cfg, name, commands, watch):
  for i, command in enumerate(commands):
    log_name = name.replace("/", "__") + (f"-{i}" if len(commands) > 1
                                          else "")
    run_program(command, plan.path(cfg, "logs", f"{log_name}.log"), watch)


def write_text(cfg):
  """The corpus and the labelled sets' training texts (their share) as
  train.txt / valid.txt, and the model's config."""
  task_docs = []
  if cfg.task_text_share:
    for task in cfg.tasks:
      _, train, _ = labelled.read_task(task.task_name, task.data_dir)
      task_docs.extend(corpus.example_documents(train))
  info = corpus.write_text(cfg.corpus_glob, plan.path(cfg, "text"),
                           cfg.heldout_every, task_docs, cfg.task_text_share,
                           cfg.data_seed)
  io_utils.atomic_write(plan.path(cfg, "xlnet_config.json"),
                        json.dumps(cfg.model_config(), indent=1) + "\n")
  print(f"    {info['files']} files: {info['train']['documents']} training "
        f"documents ({info['train']['bytes']:,} bytes; "
        f"{info['task_documents']} of them the labelled sets' texts), "
        f"{info['valid']['documents']} held out", flush=True)


def write_sets(cfg):
  """Each labelled set's drawn train.csv / dev.csv and set.json."""
  for task in cfg.tasks:
    out = plan.path(cfg, "sets", task.name)
    info = labelled.write_subsets(task.task_name, task.data_dir, out,
                                  cfg.train_examples, cfg.dev_examples,
                                  cfg.data_seed)
    io_utils.atomic_write(os.path.join(out, "set.json"),
                          json.dumps(info, indent=1) + "\n")
    print(f"    {task.name}: {info['train']['drawn']} of "
          f"{info['train']['available']} training and "
          f"{info['dev']['drawn']} of {info['dev']['available']} dev "
          f"examples, labels {', '.join(info['labels'])}", flush=True)


def read_curve(model_dir, every, last):
  """[(step, dev accuracy)] of a run's evaluated checkpoints every `every`
  steps and at step `last`, by step (run_classifier.py's
  eval_results.txt). A run stopped by a signal and resumed also saved a
  checkpoint at its stop, off that grid: it is not a point of the curve,
  so every run's curve has the same steps."""
  path = os.path.join(model_dir, "eval_results.txt")
  curve = []
  with open(path) as f:
    for line in f:
      entry = checkpoint_eval.parse_line(line)
      if entry["kind"] != "eval" or entry.get("split") != "dev":
        continue
      step = int(entry["step"])
      if step % every == 0 or step == last:
        curve.append((step, float(entry["eval_accuracy"])))
  return sorted(curve)


def finetune(task, arm, seed):
  """The stage function of one fine-tuning run: train, evaluate every
  checkpoint, record the curve in the run's run.json."""
  def stage(cfg):
    name = f"{task.name}/{arm}-s{seed}"
    run_commands(cfg, name, (plan.finetune_command(cfg, task, arm, seed),),
                 watch=True)
    model_dir = plan.run_dir(cfg, task, arm, seed)
    curve = read_curve(model_dir, cfg.eval_every, cfg.finetune_steps)
    if not curve or curve[-1][0] != cfg.finetune_steps:
      raise StageFailed(f"{model_dir}/eval_results.txt has no dev accuracy "
                        f"at step {cfg.finetune_steps}")
    io_utils.atomic_write(
        os.path.join(model_dir, "run.json"),
        json.dumps({"task": task.name, "arm": arm, "seed": seed,
                    "curve": curve, "accuracy": curve[-1][1]}) + "\n")
    print(f"    dev accuracy {curve[-1][1]:.4f} at step {curve[-1][0]}",
          flush=True)
  return stage


def pretrain(cfg):
  """train_gpu.py. From half-way on, each held-out loss is checked against
  the unigram baseline as `check_left_plateau` checks the last: a run
  still on the plateau there is stopped (it saves), half its time sooner."""
  baseline = unigram_loss(cfg)
  print(f"    unigram baseline of the held-out targets: {baseline:.2f} "
        "nats per target", flush=True)
  run_program(plan.pretrain_command(cfg),
              plan.path(cfg, "logs", "pretrain.log"), watch=True,
              stop_when=plateau_stop(cfg, baseline))


def plateau_stop(cfg, unigram):
  """`run_program`'s stop_when for pretraining: a `Plateau` for a held-out
  loss from half-way on (the last excepted: the probe stage checks it) that
  is not `cfg.min_lm_gain` below `unigram` nats, else None."""
  def stop_when(line):
    found = report.held_out_loss_in(line)
    if found is None or not (cfg.pretrain_steps // 2 <= found[0] <
                             cfg.pretrain_steps):
      return None
    message = report.plateau_error([found], unigram, cfg.min_lm_gain)
    return Plateau(message) if message else None
  return stop_when


def unigram_loss(cfg):
  """The unigram baseline of the held-out targets, nats per target (the
  probe stage's report states the same)."""
  records = plan.path(cfg, "records", "valid", "tfrecords")
  info = record_format.load_corpus_info(records)
  sp_model = prepro_utils.load_sp_model(info["sp_path"], "spiece.model")
  return unigram_baseline.cross_entropy(*unigram_baseline.counts_and_targets(
      plan.path(cfg, "text", "train.txt"), records, "valid", sp_model, info))


def probe(cfg):
  """The pretrained model's held-out masked-word guesses against the
  unigram baseline (`scripts/demo_report.py`) into probe.txt."""
  out = plan.path(cfg, "probe.txt")
  command = plan.probe_command(cfg)
  run_commands(cfg, "probe", (command,), watch=False)
  log = plan.path(cfg, "logs", "probe.log")
  with open(log, encoding="utf-8", errors="replace") as f:
    text = f.read()
  last = text.rfind("\n$ ")
  io_utils.atomic_write(out, text[last + 1:] if last >= 0 else text)
  print("    " + report.probe_summary(out), flush=True)
  check_left_plateau(cfg)


def check_left_plateau(cfg):
  """Raises Plateau when pretraining's last held-out loss is not
  `cfg.min_lm_gain` below the probe's unigram baseline: a fine-tuning
  comparison from it would compare two random starts."""
  figures = report.probe(cfg)
  message = report.plateau_error(figures["held_out_loss"],
                                 figures["unigram_loss"], cfg.min_lm_gain)
  if message:
    raise Plateau(message)


def linear_probe(cfg):
  """`linear_probe.run` of both starting points on every set, into
  linear_probe.json: {set: {arm: {kind: [dev accuracy, penalty]}}}."""
  out = {}
  for task in cfg.tasks:
    out[task.name] = {}
    for arm, prefix in (("pretrained", plan.path(cfg, "pretrain")),
                        ("random", None)):
      if prefix is not None:
        prefix = checkpoint_io.resolve_checkpoint(prefix, "--work_dir")
      out[task.name][arm] = linear_probe_lib.run(
          plan.path(cfg, "xlnet_config.json"), prefix,
          plan.path(cfg, "sets", task.name), plan.labels_of(cfg, task),
          plan.path(cfg, "spiece.model"), cfg.max_seq_length,
          seed=cfg.seeds[0])
      print(f"    {task.name}, {arm}: " + ", ".join(
          f"{k} {a:.4f}" for k, (a, _) in out[task.name][arm].items()),
          flush=True)
  io_utils.atomic_write(plan.path(cfg, "linear_probe.json"),
                        json.dumps(out, indent=1) + "\n")


def hf_check(cfg):
  """Exports both models to HF and compares predictions there."""
  for output_dir, command in plan.hf_exports(cfg):
    if not os.path.isdir(output_dir):
      run_commands(cfg, "hf-" + os.path.basename(output_dir), (command,),
                   watch=False)
  run_commands(cfg, "hf-check", (plan.hf_check_command(cfg),), watch=False)
  with open(plan.path(cfg, "hf", "check.json")) as f:
    results = json.load(f)
  for key in ("pretrained", "finetuned"):
    print("    " + report.hf_line(results[key]), flush=True)


def write_report(cfg):
  """results.md, results.json and (with plot_python) curves.png."""
  paths = report.write(cfg)
  if cfg.plot_python:
    run_program((cfg.plot_python,
                 os.path.join(children.REPO_ROOT, "scripts", "plot_chain.py"),
                 paths["json"], plan.path(cfg, "curves.png")),
                plan.path(cfg, "logs", "plot.log"), watch=False)
  print(report.summary(cfg), flush=True)
