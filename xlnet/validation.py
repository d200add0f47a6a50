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
  max_windows, bptt_windows,
  batch_size,
  the fine-tuning tasks' lengths
  (max_seq_length, doc_stride,
  window_stride, ...),
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
  clip, adam_epsilon,               > 0
  lr_layer_decay_rate,
  device_memory_gb
  the timeouts: cluster_timeout,    > 0 and at most MAX_TIMEOUT_SECONDS
  data_service_timeout,             (worker_timeout_ms: that many
  dispatcher_timeout,               milliseconds); inf and nan are refused
  records_timeout, timeout,
  worker_timeout_ms
  pretrain_batch_size               a multiple of 2 (the chain's bi_data)
  multi_label_threshold             in (0, 1), or the word "dev" (chosen on
                                    the dev split)
  summary_type, init,               one of CHOICES
  decay_method, tpu_engine,
  record_kind, sample_strategy,
  model_size, file_layout,
  conllu_column, tag_scheme,
  long_documents,
  window_pooling, pooling,
  input_format
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
    # run_ner.py: pieces between two windows' starts.
    "window_stride": (1, ""),
    # Long documents' windows (`finetuning/long_documents/settings.py`
    # checks them together).
    "max_windows": (1, ""),
    # extract_features.py's texts per step.
    "batch_size": (1, ""),
    "bptt_windows": (1, " (1: no gradient through the memory)"),
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
# the chain's task text: 1 would leave no room for the corpus; a
# multi-label threshold: a probability, 0 and 1 predict every label or
# none).
BELOW = {"dropout": 1, "dropatt": 1, "task_text_share": 1,
         "multi_label_threshold": 1}
# name -> the value it may reach, not pass (the final learning rate: at
# most the peak).
AT_MOST = {"min_lr_ratio": 1.0}
# name -> the value it must exceed.
ABOVE = {"clip": 0, "adam_epsilon": 0, "lr_layer_decay_rate": 0,
         "device_memory_gb": 0, "multi_label_threshold": 0}
# The longest wait a timeout may ask for, in seconds (about 31 years): every
# timer the waits use takes it (the watchdog outside the interpreter,
# faulthandler's, refuses 1e10 s; Python's thread waits 9.2e9 s), and
# TensorFlow's millisecond settings hold it.
MAX_TIMEOUT_SECONDS = 10 ** 9
# name -> the unit of a timeout: (its word, units per second).
TIMEOUTS = {"cluster_timeout": ("seconds", 1),
            "data_service_timeout": ("seconds", 1),
            "dispatcher_timeout": ("seconds", 1),
            "records_timeout": ("seconds", 1),
            "timeout": ("seconds", 1),
            "worker_timeout_ms": ("milliseconds", 1000)}
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
    # How texts longer than one sequence are read; how a text's windows
    # are pooled (`finetuning/long_documents/settings.py`).
    "long_documents": ("truncate", "windows", "memory"),
    "window_pooling": ("mean", "max"),
    # extract_features.py: a text's vector (`<cls>`, the mean of its
    # pieces) or one per piece.
    "pooling": ("cls", "mean", "none"),
    # extract_features.py's input: one text a line, or TSV columns.
    "input_format": ("lines", "tsv"),
    # run_ner.py's tagged files: their layout, the CoNLL-U column of the
    # tags, the tag scheme (None: from the file, the scheme detected).
    "file_layout": ("conll2003", "columns", "conllu"),
    "conllu_column": ("upos", "xpos"),
    "tag_scheme": ("iob1", "iob2", "iobes", "none"),
}
# name -> the word it may be instead of a number (the number keeps the
# rules above), and what the word means; a string flag holds either.
NUMBER_OR_WORD = {
    "multi_label_threshold": ("dev", "chosen on the dev split"),
}
# Settings that are true or false: a config given another value (a
# string "False" is true to Python) would run otherwise than asked.
BOOLEANS = ("recompute",)
# Every name with a rule.
NAMES = tuple(dict.fromkeys([*AT_LEAST, *BELOW, *AT_MOST, *ABOVE,
                             *TIMEOUTS, *MULTIPLE_OF, *CHOICES,
                             *NUMBER_OR_WORD, *BOOLEANS]))


def first_choice(name):
  """The default of the setting `name` that has CHOICES: the first."""
  return CHOICES[name][0]


def check_value(name, value):
  """Raises a one-line ValueError (`--name=value must be >= low ...`) if
  `value` breaks a rule of `name` (one of NAMES); None always passes."""
  if value is None:
    return
  if name in TIMEOUTS:
    check_timeout(name, value)
    return
  if name in BOOLEANS:
    if not isinstance(value, bool):
      raise ValueError(f"--{name}={value!r} must be True or False")
    return
  if name in NUMBER_OR_WORD:
    if value == NUMBER_OR_WORD[name][0]:
      return
    value = number_or_word(name, value)
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


def number_or_word(name, value):
  """The value of a setting of NUMBER_OR_WORD: its word, or `value` as a
  float (a flag gives a string).

  Raises:
    ValueError: one line when it is neither.
  """
  if value == NUMBER_OR_WORD[name][0]:
    return value
  try:
    return float(value)
  except (TypeError, ValueError):
    raise ValueError(f"--{name}={value}: {number_or_word_expected(name)}"
                     ) from None


def number_or_word_expected(name):
  """What a setting of NUMBER_OR_WORD takes, in words."""
  word, meaning = NUMBER_OR_WORD[name]
  return f"expected a number or {word} ({meaning})"


def check_timeout(name, value):
  """Raises a one-line ValueError naming `--name` unless the timeout
  `value` is > 0 and at most `MAX_TIMEOUT_SECONDS` (in its unit,
  `TIMEOUTS`): 0, negative values and nan would end the wait at once or
  never, inf and 1e12 overflowed the timers (OverflowError)."""
  unit, per_second = TIMEOUTS[name]
  most = MAX_TIMEOUT_SECONDS * per_second
  if not 0 < value <= most:  # (nan fails both)
    raise ValueError(f"--{name}={value} must be > 0 and at most {most:g} "
                     f"{unit} (about 31 years)")


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
