"""One rule and one message per setting, where the values live.

The typed configs (`xlnet/model.py`, `xlnet/training/config.py`,
`xlnet/pretraining/config.py`, `xlnet/finetuning/config.py`,
`xlnet/chain/config.py`, download.py's `xlnet/downloads/installer.py`
Config) check their fields here when they are built, and the programs'
flags (`xlnet/flags/`) are checked by the same functions; so a value is
refused alike from the command line and from Python, with the same
one-line message. Config fields are named after the flags they come from,
and the messages name them as flags (`--train_steps=0 must be >= 1`,
`--dropout=1.5 must be in [0.0, 1)`): one message, which names the setting
in the words a user of the programs types (docs/python_api.md).

  setting                           rule
  train_steps, iterations,          >= 1
  accum_steps, num_hosts,
  num_core_per_host, bsz_per_host,
  *_batch_size, shuffle_buffer,
  the model's sizes (n_layer, ...),
  seq_len, reuse_len, num_predict,
  num_passes, num_seeds,
  the fine-tuning tasks' lengths
  (max_seq_length, doc_stride, ...),
  the chain's sizes and steps
  save_steps, eval_batches          >= 1, or unset (save only at the end /
                                    evaluate every batch)
  warmup_steps, max_save,           >= 0 (max_save=0 keeps every checkpoint,
  mem_len, eval_steps, retries,     eval_steps=0 never evaluates,
  learning_rate, weight_decay,      freeze_layers=0 freezes nothing)
  freeze_layers
  freeze_layers                     <= the model's n_layer
                                    (`check_freeze_layers`)
  dropout, dropatt,                 in [0, 1)
  task_text_share
  min_lr_ratio                      in [0, 1]
  clip, adam_epsilon, timeout,      > 0
  lr_layer_decay_rate,
  cluster_timeout, data_service_timeout,
  device_memory_gb
  pretrain_batch_size               a multiple of 2 (the chain's bi_data)
  summary_type, init,               one of CHOICES
  decay_method, tpu_engine,
  record_kind, sample_strategy,
  model_size
  use_fp16                          excludes use_bfloat16 and use_tpu
  recompute                         True or False

`warmup_steps` above `train_steps` is a run that ends during warm-up (the
release accepts it); it is accepted with a warning.
"""
import dataclasses

from absl import logging

# name -> (lowest value, what to do instead / what the lowest means).
# An unset (None) value is not checked: None means "the default behaviour".
AT_LEAST = {
    "train_steps": (1, ""),
    "iterations": (1, ""),
    "accum_steps": (1, ""),
    "num_hosts": (1, ""),
    "num_core_per_host": (1, ""),
    "bsz_per_host": (1, ""),
    "train_batch_size": (1, ""),
    "eval_batch_size": (1, ""),
    "predict_batch_size": (1, ""),
    "shuffle_buffer": (1, ""),
    "save_steps": (1, " (leave it unset to save only at the end)"),
    "eval_batches": (1, " (leave it unset to evaluate every batch)"),
    "warmup_steps": (0, ""),
    "max_save": (0, " (0 keeps every checkpoint)"),
    "mem_len": (0, ""),
    "freeze_layers": (0, " (0 freezes nothing)"),
    "eval_steps": (0, " (0: no held-out evaluation)"),
    "learning_rate": (0.0, ""),
    "weight_decay": (0.0, ""),
    "dropout": (0.0, ""),
    "dropatt": (0.0, ""),
    # The fine-tuning tasks' sizes (run_classifier.py asks more of
    # max_seq_length: `finetuning/config.py`).
    "max_seq_length": (1, ""),
    "max_query_length": (1, ""),
    "max_qa_length": (1, ""),
    "doc_stride": (1, ""),
    "max_answer_length": (1, ""),
    "start_n_top": (1, ""),
    "end_n_top": (1, ""),
    "n_best_size": (1, ""),
    "num_proc": (1, ""),
    # The model's sizes (the pretraining programs' flags and the chain's;
    # an XLNetConfig read from a file checks its own, `xlnet/model.py`).
    "n_layer": (1, ""),
    "d_model": (1, ""),
    "n_head": (1, ""),
    "d_head": (1, ""),
    "d_inner": (1, ""),
    # The pretraining data's rows (data_utils.py asks more of reuse_len:
    # room for the two segments, `xlnet/data/record_writer.py`).
    "seq_len": (1, ""),
    "reuse_len": (1, ""),
    "num_predict": (1, " (no target, no loss)"),
    "num_passes": (1, ""),
    "min_lr_ratio": (0.0, ""),
    # reproduce.py: runs of each task.
    "num_seeds": (1, ""),
    # download.py: retries of a transient failure (0: one try).
    "retries": (0, ""),
    # bench/chain.py's own (`xlnet/chain/config.py`).
    "heldout_every": (1, ""),
    "task_text_share": (0.0, ""),
    "vocab_size": (1, ""),
    "pretrain_batch_size": (1, ""),
    "pretrain_steps": (1, ""),
    "train_examples": (1, ""),
    "dev_examples": (1, ""),
    "finetune_batch_size": (1, ""),
    "finetune_steps": (1, ""),
    "eval_every": (1, ""),
}
# name -> the value it must stay below (dropout rates: 1 drops everything;
# the chain's task text: 1 would leave no room for the corpus).
BELOW = {"dropout": 1, "dropatt": 1, "task_text_share": 1}
# name -> the value it may reach, not pass (the final learning rate: at
# most the peak).
AT_MOST = {"min_lr_ratio": 1.0}
# name -> the value it must exceed.
ABOVE = {"clip": 0, "adam_epsilon": 0, "lr_layer_decay_rate": 0,
         "cluster_timeout": 0, "data_service_timeout": 0, "timeout": 0,
         "device_memory_gb": 0}
# name -> (what it must be a multiple of, why).
MULTIPLE_OF = {
    # The chain pretrains with bi_data.
    "pretrain_batch_size": (2, " (bi_data: half forward, half backward)"),
}
# name -> the values it may take (the programs' enum flags list the same);
# where the library and the flags default to one, it is the first
# (`first_choice`: record_kind, sample_strategy).
CHOICES = {
    "summary_type": ("last", "first", "mean", "attn"),
    "init": ("normal", "uniform"),
    "decay_method": ("poly", "cos"),
    "tpu_engine": ("auto", "estimator", "strategy"),
    # data_utils.py's records: the release's examples, or token rows whose
    # examples are drawn online; where those draws may start a span mask.
    "record_kind": ("examples", "tokens"),
    "sample_strategy": ("word_span", "token_span"),
    # reproduce.py's pretrained model: XLNet-Large or XLNet-Base.
    "model_size": ("large", "base"),
}
# Settings that are true or false: a config given another value (a
# string "False" is true to Python) would run otherwise than asked.
BOOLEANS = ("recompute",)
# Every name with a rule.
NAMES = tuple(dict.fromkeys([*AT_LEAST, *BELOW, *AT_MOST, *ABOVE,
                             *MULTIPLE_OF, *CHOICES, *BOOLEANS]))


def first_choice(name):
  """The default of the setting `name` that has CHOICES: the first."""
  return CHOICES[name][0]


def check_value(name, value):
  """Raises a one-line ValueError (`--name=value must be >= low ...`) if
  `value` breaks a rule of `name` (one of NAMES); None always passes."""
  if value is None:
    return
  if name in BOOLEANS:
    if not isinstance(value, bool):
      raise ValueError(f"--{name}={value!r} must be True or False")
    return
  rule = _broken_bound(name, value)
  if rule:
    hint = AT_LEAST.get(name, (None, ""))[1]
    raise ValueError(f"--{name}={value} must be {rule}{hint}")
  if name in MULTIPLE_OF:
    step, why = MULTIPLE_OF[name]
    if value % step:
      raise ValueError(f"--{name}={value} must be a multiple of {step}{why}")
  if name in CHOICES:
    check_choice(name, value, CHOICES[name])


def _bounds(name):
  """The bounds of `name`, the lower first: [(the interval's end, the
  one-sided rule, the test a value must pass)]."""
  bounds = []
  if name in AT_LEAST:
    low = AT_LEAST[name][0]
    bounds.append((f"[{low}", f">= {low}", lambda v: v >= low))
  if name in ABOVE:
    low = ABOVE[name]
    bounds.append((f"({low}", f"> {low}", lambda v: v > low))
  if name in BELOW:
    high = BELOW[name]
    bounds.append((f"{high})", f"< {high}", lambda v: v < high))
  if name in AT_MOST:
    high = AT_MOST[name]
    bounds.append((f"{high}]", f"<= {high}", lambda v: v <= high))
  return bounds


def _broken_bound(name, value):
  """None when `value` keeps the bounds of `name`, else the rule it breaks
  in words: the interval of a setting with two bounds (`in [0.0, 1)`),
  else the one bound (`>= 1`)."""
  bounds = _bounds(name)
  if all(keeps(value) for _, _, keeps in bounds):
    return None
  if len(bounds) == 2:
    return f"in {bounds[0][0]}, {bounds[1][0]}"
  return bounds[0][1]


def check_choice(name, value, choices):
  """Raises unless `value` is one of `choices`, in the words of absl's enum
  flags (what the programs print for such a flag, after "flag ")."""
  if value not in choices:
    raise ValueError(f"--{name}={value}: value should be one of "
                     f"<{'|'.join(choices)}>")


def check_fields(config):
  """Checks every field of the dataclass `config` that has a rule, in the
  order of its fields (its properties are derived, not given: unchecked).

  Raises:
    ValueError: one line naming the first field that breaks its rule.
  """
  for field in dataclasses.fields(config):
    if field.name in NAMES:
      check_value(field.name, getattr(config, field.name))


def check_all(values):
  """Checks every setting of NAMES that `values` has, in the order of
  NAMES.

  Args:
    values: the programs' absl FlagValues, or a config: any object with
      the settings as attributes.

  Raises:
    ValueError: one line naming the first setting that breaks its rule.
  """
  for name in NAMES:
    if hasattr(values, name):
      check_value(name, getattr(values, name))


def check_precision(use_tpu, use_bfloat16, use_fp16):
  """Raises unless the activation precision is possible: float16 (with
  loss scaling) is for GPUs; TPUs compute in bfloat16."""
  if use_fp16 and (use_bfloat16 or use_tpu):
    raise ValueError("--use_fp16 is for GPUs and excludes --use_bfloat16 "
                     "(TPUs compute in bfloat16)")


def check_freeze_layers(freeze_layers, n_layer):
  """Raises unless `freeze_layers` (>= 0 by its rule) freezes at most the
  model's `n_layer` layers."""
  if freeze_layers > n_layer:
    raise ValueError(f"--freeze_layers={freeze_layers} must be <= "
                     f"n_layer={n_layer} (the model's layers)")


def long_warmup_message(warmup_steps, train_steps):
  """The warning of a run that ends before warm-up does, or None.

  The schedule (optimizer.learning_rate_schedule) then only ramps up: the
  last step runs at train_steps / warmup_steps of the peak rate.
  """
  if warmup_steps <= train_steps:
    return None
  return (f"--warmup_steps={warmup_steps} > --train_steps={train_steps}: "
          "the run ends during warm-up; the learning rate stays below "
          f"{train_steps / warmup_steps:.3g} times --learning_rate")


def warn_long_warmup(warmup_steps, train_steps):
  """Logs `long_warmup_message` when there is one."""
  message = long_warmup_message(warmup_steps, train_steps)
  if message:
    logging.warning(message)
