"""The chain's stages, in order: each a name, what it runs (the programs'
commands, or a Python step) and its estimated seconds (for the ETA).

  text        corpus -> train.txt / valid.txt (every N-th document held
              out), and the model's xlnet_config.json
  spm         spm_train.py on train.txt
  records     data_utils.py: pretraining records of both parts
  pretrain    train_gpu.py, a checkpoint and the held-out loss every 500
              steps
  probe       scripts/demo_report.py: the pretrained model's guesses for
              hidden held-out words, against the unigram baseline
  sets        the labelled sets' drawn tables (`labelled.write_subsets`)
  linear_probe  a softmax regression on frozen features of each set, for
              the pretrained model and the random initialization
  <set>/<arm>-s<seed>   run_classifier.py: fine-tune, then every
              checkpoint's dev accuracy (the curve; the last is the result)
  hf          convert_checkpoint.py --to=hf of the pretrained and one
              fine-tuned model, then `hf_check` in the HF interpreter
  report      results.md / results.json / curves.png

Directories under the work dir: text/, spiece.model, records/{train,valid},
pretrain/, sets/<set>/, finetune/<set>/{records,<arm>-s<seed>}/, hf/,
logs/, done/ (a stage's json when it finished), chain.json (the settings),
probe.txt, linear_probe.json, results.md, results.json, curves.png.
"""
import dataclasses
import json
import os
from typing import Callable, Optional, Tuple

from xlnet.chain import config as chain_config
from xlnet.runs import children

# Seconds per step on the machine of docs/chain.md (a 2-vCPU AVX512 EPYC):
# the first estimates of the ETA, which the stages finished since replace.
PRETRAIN_STEP_S = 0.26
FINETUNE_STEP_S = 0.2
EVAL_S = 8.0
PROGRAM_START_S = 12.0


@dataclasses.dataclass(frozen=True)
class Stage:
  """One stage: `commands` (argv lists, run in order, each into its log),
  or `call` (a function of the config, run in this process); `estimate`
  in seconds; `watch` whether its program's progress lines are shown."""
  name: str
  estimate: float
  commands: Tuple[Tuple[str, ...], ...] = ()
  call: Optional[Callable] = None
  watch: bool = False


def path(cfg, *parts):
  return os.path.join(cfg.work_dir, *parts)


def _program(cfg, name, *flags):
  return (cfg.python, os.path.join(children.REPO_ROOT, name)) + tuple(flags)


def run_dir(cfg, task, arm, seed):
  """The model_dir of one fine-tuning run."""
  return path(cfg, "finetune", task.name, f"{arm}-s{seed}")


def _spm_command(cfg):
  return _program(cfg, "spm_train.py",
                  f"--input={path(cfg, 'text', 'train.txt')}",
                  f"--model_prefix={path(cfg, 'spiece')}",
                  f"--vocab_size={cfg.vocab_size}", "--split_digits=True")


def _records_commands(cfg):
  flags = (f"--sp_path={path(cfg, 'spiece.model')}",
           f"--bsz_per_host={cfg.pretrain_batch_size}",
           "--num_core_per_host=1", f"--seq_len={cfg.seq_len}",
           f"--reuse_len={cfg.reuse_len}", "--bi_data=True",
           f"--num_predict={cfg.num_predict}", "--mask_alpha=6",
           "--mask_beta=1", "--uncased=False")
  return tuple(_program(cfg, "data_utils.py",
                        f"--input_glob={path(cfg, 'text', f'{s}.txt')}",
                        f"--save_dir={path(cfg, 'records', s)}",
                        f"--split={s}", *flags)
               for s in ("train", "valid"))


def pretrain_command(cfg):
  """train_gpu.py's command: pretraining, a checkpoint and a held-out loss
  every `_pretrain_save_steps`."""
  return _program(
      cfg, "train_gpu.py",
      f"--model_config_path={path(cfg, 'xlnet_config.json')}",
      f"--record_info_dir={path(cfg, 'records', 'train', 'tfrecords')}",
      f"--eval_record_info_dir={path(cfg, 'records', 'valid', 'tfrecords')}",
      f"--model_dir={path(cfg, 'pretrain')}",
      f"--train_batch_size={cfg.pretrain_batch_size}",
      f"--seq_len={cfg.seq_len}", f"--reuse_len={cfg.reuse_len}",
      f"--perm_size={cfg.reuse_len}", "--bi_data=True",
      f"--num_predict={cfg.num_predict}", f"--mem_len={cfg.mem_len}",
      "--dropout=0.1", "--dropatt=0.1",
      f"--learning_rate={cfg.pretrain_learning_rate}",
      # No weight decay: the trainer then uses bias-corrected Adam, which
      # leaves the unigram plateau within a few hundred steps here; the
      # release's Adam (weight decay on) sat there for 1,000 steps at
      # learning rate 2e-3 (docs/chain.md).
      f"--warmup_steps={cfg.pretrain_warmup_steps}",
      f"--train_steps={cfg.pretrain_steps}", "--min_lr_ratio=0.1",
      "--weight_decay=0", "--adam_epsilon=1e-6", "--clip=1.0",
      "--iterations=100", f"--save_steps={_pretrain_save_steps(cfg)}",
      f"--eval_steps={_pretrain_save_steps(cfg)}",
      f"--seed={cfg.pretrain_seed}")


def _pretrain_save_steps(cfg):
  """A checkpoint (and a held-out loss) about every 500 steps: a kill
  loses at most that many; and one half-way at the latest, where
  `steps.pretrain` checks the plateau."""
  return max(1, min(500, cfg.pretrain_steps // 2))


def set_info(cfg, task):
  """What the sets stage recorded for `task`: dict with labels (in the
  task's order) and pairs (whether its tables have a text_b column)."""
  with open(path(cfg, "sets", task.name, "set.json")) as f:
    return json.load(f)


def labels_of(cfg, task):
  """The labels the sets stage recorded for `task`."""
  return set_info(cfg, task)["labels"]


def finetune_command(cfg, task, arm, seed):
  """run_classifier.py's command of one run: fine-tune for
  `finetune_steps`, a checkpoint every `eval_every` steps, then every
  checkpoint's accuracy on the drawn dev set."""
  info = set_info(cfg, task)
  flags = [
      "--task_name=csv", f"--data_dir={path(cfg, 'sets', task.name)}",
      f"--label_list={','.join(info['labels'])}",
      f"--output_dir={path(cfg, 'finetune', task.name, 'records')}",
      f"--model_dir={run_dir(cfg, task, arm, seed)}",
      f"--spiece_model_file={path(cfg, 'spiece.model')}",
      f"--model_config_path={path(cfg, 'xlnet_config.json')}",
      f"--max_seq_length={cfg.max_seq_length}",
      f"--train_batch_size={cfg.finetune_batch_size}",
      "--eval_batch_size=64",
      f"--learning_rate={cfg.finetune_learning_rate}",
      f"--warmup_steps={cfg.finetune_warmup_steps}",
      f"--train_steps={cfg.finetune_steps}",
      f"--save_steps={cfg.eval_every}", f"--iterations={cfg.eval_every}",
      "--max_save=0", "--dropout=0.1", "--dropatt=0.1",
      "--adam_epsilon=1e-6", "--weight_decay=0.0", "--min_lr_ratio=0.0",
      "--do_train=True", "--do_eval=True", "--eval_all_ckpt=True",
      "--eval_split=dev", f"--seed={seed}",
      f"--summary_type={cfg.summary_type}"]
  if info.get("pairs"):
    flags.append("--text_b_column=text_b")
  if arm == "pretrained":
    flags.append(f"--init_checkpoint={path(cfg, 'pretrain')}")
  return _program(cfg, "run_classifier.py", *flags)


def finetune_runs(cfg):
  """Every (task, arm, seed), tasks outermost, arms alternating per seed."""
  return [(task, arm, seed) for task in cfg.tasks for seed in cfg.seeds
          for arm in chain_config.ARMS]


def _finetune_estimate(cfg):
  evals = cfg.finetune_steps // cfg.eval_every
  return (cfg.finetune_steps * FINETUNE_STEP_S + evals * EVAL_S *
          cfg.dev_examples / 1000 + 2 * PROGRAM_START_S)


def hf_exports(cfg):
  """[(output_dir, command)]: convert_checkpoint.py --to=hf of the
  pretrained model and of the first pretrained-arm run of the first set.
  (An output_dir is renamed into place whole, so one that exists is done:
  a rerun skips it.)"""
  tuned = run_dir(cfg, cfg.tasks[0], "pretrained", cfg.seeds[0])
  out = []
  for name, checkpoint in (("pretrained", path(cfg, "pretrain")),
                           ("finetuned", tuned)):
    output_dir = path(cfg, "hf", name)
    out.append((output_dir, _program(
        cfg, "convert_checkpoint.py", "--to=hf", f"--checkpoint={checkpoint}",
        f"--spiece_model_file={path(cfg, 'spiece.model')}",
        f"--model_config_path={path(cfg, 'xlnet_config.json')}",
        f"--output_dir={output_dir}")))
  return out


def hf_check_command(cfg):
  """bench/chain_hf_check.py in the HF interpreter, on both exports."""
  task = cfg.tasks[0]
  return (cfg.hf_python,
          os.path.join(children.REPO_ROOT, "bench", "chain_hf_check.py"),
          f"--work_dir={cfg.work_dir}",
          f"--model_dir={run_dir(cfg, task, 'pretrained', cfg.seeds[0])}",
          f"--dev={path(cfg, 'sets', task.name, 'dev.csv')}",
          f"--heldout={path(cfg, 'text', 'valid.txt')}")


def probe_command(cfg):
  """scripts/demo_report.py on the pretrained model: the unigram baseline
  of the held-out targets and the model's guesses for hidden words."""
  return _program(
      cfg, os.path.join("scripts", "demo_report.py"),
      f"--model_dir={path(cfg, 'pretrain')}",
      f"--record_info_dir={path(cfg, 'records', 'valid', 'tfrecords')}",
      "--eval_split=valid", f"--train_text={path(cfg, 'text', 'train.txt')}",
      f"--heldout_text={path(cfg, 'text', 'valid.txt')}",
      "--num_sentences=200", "--hide_fraction=0.15", "--top_k=5", "--seed=0")


def stages(cfg, steps):
  """The chain's stages. `steps` holds the Python steps: a module with
  `write_text`, `write_sets`, `write_report` (functions of cfg)."""
  out = [
      Stage("text", 5, call=steps.write_text),
      Stage("spm", 30, commands=(_spm_command(cfg),)),
      Stage("records", 40, commands=_records_commands(cfg)),
      Stage("pretrain", cfg.pretrain_steps * PRETRAIN_STEP_S +
            PROGRAM_START_S, call=steps.pretrain, watch=True),
      Stage("probe", 40, call=steps.probe),
      Stage("sets", 20, call=steps.write_sets),
      Stage("linear_probe", 40 * len(cfg.tasks), call=steps.linear_probe)]
  for task, arm, seed in finetune_runs(cfg):
    out.append(Stage(f"{task.name}/{arm}-s{seed}", _finetune_estimate(cfg),
                     call=steps.finetune(task, arm, seed), watch=True))
  if cfg.hf_python:
    out.append(Stage("hf", 90, call=steps.hf_check))
  out.append(Stage("report", 10, call=steps.write_report))
  return out
