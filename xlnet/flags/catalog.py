"""The flags of the pretraining and fine-tuning programs, composed of the
groups of `groups.py`, and the command line parsed:

  define_flags          train_gpu.py, train_tpu.py, eval_pretrain.py
  define_common_flags   run_classifier.py, run_squad.py, run_race.py, each
                        adding its task flags (`task_catalog.py`:
                        define_classifier_flags, define_squad_flags,
                        define_race_flags)
  define_reproduce_flags  reproduce.py (`task_catalog.py`, with the tasks)
  data_utils.py, spm_train.py, download.py, data_service.py,
  convert_checkpoint.py, model_utils.py, the demo's scripts:
                        `tool_catalog.py`
  parse_flags, parse_fresh, parse_command_line   the command line parsed
                        (`--flagfile=configs/NAME`: the shipped configs)

Pretraining defaults follow the paper's XLNet-Large recipe (docs/training.md)
where the release shipped toy values; fine-tuning defaults are the released
programs' defaults (`adam_epsilon`: 1e-8 in run_classifier.py, 1e-6 in
run_squad.py and run_race.py, as there), with the paper's settings for
SQuAD and RACE (`program_defaults.py`, `task_kinds.py`).
"""
from absl import flags

from xlnet import configs
from xlnet.flags import groups


def define_flags(flag_values=flags.FLAGS, tpu_defaults=False):
  """Defines all pretraining flags on `flag_values` (no-op if already there).

  Args:
    flag_values: an `absl.flags.FlagValues`; the global `FLAGS` by default.
    tpu_defaults: the TPU trainer's defaults, as in the release's train.py:
      `--use_tpu=True`, `--num_core_per_host=8`.
  """
  if "record_info_dir" in flag_values:
    return
  groups.define_model_flags(
      flag_values,
      model_config_path_help="XLNetConfig json; when given it overrides the "
      "model flags below.",
      clamp_len_help="Clamp length (-1 = no clamping).",
      summary_type_help="Sequence summary for fine-tuning heads; accepted "
      "for the original commands, unused in pretraining.",
      init_help="Initialization method.")
  groups.define_model_size_flags(flag_values)
  groups.define_precision_flags(
      flag_values, use_bfloat16_help="Use bfloat16 activations.")
  groups.define_pretraining_data_flags(flag_values)
  groups.define_record_layout_flags(flag_values, writing=False)
  program = "train_tpu" if tpu_defaults else "train_gpu"
  groups.define_optimizer_flags(
      flag_values, program=program,
      lr_layer_decay_rate_help="Layer l's gradients are scaled by "
      "rate^(n_layer-1-l).")
  groups.define_training_flags(
      flag_values, program=program,
      train_batch_size_help="Global batch size (= bsz_per_host * "
      "num_hosts); None = from corpus_info.json.",
      iterations_help="Steps between log lines (GPU) / per TPU loop.",
      seed_help="Random seed of the initial weights, the input order, the "
      "factorization orders and dropout.",
      accum_steps_help="Micro-batches accumulated per optimizer step: each "
      "step averages the gradients of accum_steps consecutive per-core "
      "batches (memories advance from one to the next); global_step, the "
      "schedule and the log count optimizer steps.")
  groups.define_checkpoint_flags(
      flag_values, program=program,
      model_dir_help="Checkpoints, summaries; training resumes from the "
      "latest checkpoint found here.",
      init_checkpoint_help="Checkpoint to initialize the model from (e.g. "
      "the released weights); ignored when resuming.",
      save_steps_help="Steps between checkpoints; None = only at the end.",
      max_save_help="Max checkpoints to keep.")
  groups.define_unused_release_flags(flag_values)
  groups.define_heldout_eval_flags(flag_values)
  groups.define_core_flags(
      flag_values, use_tpu=tpu_defaults,
      use_tpu_help="Run on TPU (train_tpu.py).",
      num_core_per_host=8 if tpu_defaults else 1,
      num_core_per_host_help="Cores per host: GPUs (or logical CPU devices) "
      "/ TPU cores.")
  groups.define_tpu_flags(
      flag_values,
      num_hosts_help="Number of hosts (TPU hosts; for train_gpu.py the "
      "number of workers, which --worker_hosts/TF_CONFIG determine).")
  groups.define_pretraining_device_flags(flag_values)
  groups.define_data_service_flags(flag_values)


def parse_flags(argv, tpu_defaults=False):
  """Returns a fresh, parsed `FlagValues` holding every pretraining flag.

  Args:
    argv: list of strings, e.g. `["prog", "--n_layer=2"]` (argv[0] ignored).
    tpu_defaults: see `define_flags`.

  Returns:
    an `absl.flags.FlagValues` independent of the global `FLAGS`.
  """
  return parse_fresh(lambda fv: define_flags(fv, tpu_defaults), argv)


def parse_fresh(define, argv):
  """Returns a fresh `FlagValues` with `define`'s flags, parsed from `argv`.

  Args:
    define: callable taking an `absl.flags.FlagValues`, e.g. a program's
      `define_flags`.
    argv: list of strings (argv[0] ignored).
  """
  flag_values = flags.FlagValues()
  define(flag_values)
  flag_values(list(argv))
  return flag_values


def define_common_flags(flag_values, program):
  """Defines the common fine-tuning flags (no-op if already defined).

  Args:
    flag_values: an `absl.flags.FlagValues`.
    program: "run_classifier", "run_squad" or "run_race": whose defaults
      (`program_defaults.of`).
  """
  if "model_config_path" in flag_values:
    return
  groups.define_model_flags(
      flag_values,
      model_config_path_help="XLNetConfig json of the pretrained model (e.g. "
      "xlnet_config.json of the released checkpoints).",
      clamp_len_help="Clamp relative distances to this (-1: no clamping).",
      summary_type_help="How a sequence is pooled into one vector: 'last' "
      "is the <cls> state.",
      init_help="Initializer of new variables.")
  groups.define_precision_flags(
      flag_values, use_bfloat16_help="Compute activations in bfloat16 "
      "(variables stay float32).")
  groups.define_finetuning_flags(flag_values)
  groups.define_checkpoint_flags(
      flag_values, program=program,
      model_dir_help="Fine-tuning checkpoints, summaries and eval results; "
      "training resumes from its latest checkpoint.",
      init_checkpoint_help="Pretrained checkpoint to start from (a prefix "
      "such as xlnet_model.ckpt, a directory or DIR/latest); ignored when "
      "model_dir already holds a fine-tuning checkpoint.",
      save_steps_help="Steps between checkpoints; None: only at the end.",
      max_save_help="Checkpoints to keep; 0 keeps all (to "
      "evaluate every one later).")
  groups.define_optimizer_flags(
      flag_values, program=program,
      lr_layer_decay_rate_help="Layer l's gradients are scaled by "
      "rate^(n_layer-1-l) (1.0: no layer-wise decay).")
  groups.define_training_flags(
      flag_values, program=program,
      train_batch_size_help="Training batch size: PER GPU without --use_tpu "
      "(the released GPU command trains STS-B with 8 on each of 4 GPUs, "
      "i.e. 32 per step); the global batch over all cores with --use_tpu.",
      iterations_help="Steps between log lines / per TPU loop.",
      seed_help="Random seed of the new head's initial weights, the "
      "training example order and dropout.",
      accum_steps_help="Batches accumulated per optimizer step (the "
      "effective batch is accum_steps times larger).")
  groups.define_memory_plan_flags(flag_values)
  groups.define_core_flags(
      flag_values, use_tpu=False,
      use_tpu_help="Run on TPU (TensorFlow 2.15).", num_core_per_host=1,
      num_core_per_host_help="GPUs (or TPU cores) per host.")
  groups.define_tpu_flags(
      flag_values, num_hosts_help="Number of TPU hosts; without --use_tpu "
      "the number of workers, which --worker_hosts/TF_CONFIG determine.")
  groups.define_worker_flags(flag_values)


def parse_command_line(argv):
  """Parses `argv` into the global FLAGS (the programs' flags).

  `--flagfile=configs/NAME` and `--model_config_path=configs/NAME` name the
  shipped configs when no such file is in the current directory
  (`xlnet.configs.resolve`).

  Args:
    argv: list of str, the command line (flagfiles are read here).

  Returns:
    the arguments left after the flags.

  Raises:
    absl.flags.Error: a flag the parser refuses.
  """
  rest = flags.FLAGS(_resolve_flagfiles(argv))
  if "model_config_path" in flags.FLAGS and flags.FLAGS.model_config_path:
    flags.FLAGS.model_config_path = configs.resolve(
        flags.FLAGS.model_config_path)
  return rest


def _resolve_flagfiles(argv):
  """`argv` with each `--flagfile` value (`=value` or the next argument)
  passed through `configs.resolve`."""
  out = list(argv[:1])
  for arg in argv[1:]:
    name, eq, value = arg.partition("=")
    if eq and name in ("--flagfile", "-flagfile"):
      arg = f"{name}={configs.resolve(value)}"
    elif out[-1] in ("--flagfile", "-flagfile") and len(out) > 1:
      arg = configs.resolve(arg)
    out.append(arg)
  return out
