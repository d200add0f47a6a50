"""One rule, one message, per flag name, for every program.

Pretraining (train_gpu.py, train_tpu.py, eval_pretrain.py),
fine-tuning (run_classifier.py, run_squad.py,
run_race.py) and data_utils.py share flags such as `--save_steps` or
`--train_batch_size`; they check them here, so a value is refused (or
accepted) by all of them alike, with the same one-line message:

  flag                              rule
  train_steps, iterations,          >= 1
  accum_steps, num_hosts,
  num_core_per_host, bsz_per_host,
  *_batch_size
  save_steps, eval_batches          >= 1, or unset (save only at the end /
                                    evaluate every batch)
  warmup_steps, max_save,           >= 0 (max_save=0 keeps every checkpoint,
  mem_len, eval_steps               eval_steps=0 never evaluates)

`warmup_steps` above `train_steps` is a run that ends during warm-up (the
release accepts it); it is accepted with a warning.
"""
from absl import logging

# flag name -> (lowest value, what to do instead / what the lowest means).
# An unset (None) flag is not checked: None means "the default behaviour".
RULES = {
    "train_steps": (1, ""),
    "iterations": (1, ""),
    "accum_steps": (1, ""),
    "num_hosts": (1, ""),
    "num_core_per_host": (1, ""),
    "bsz_per_host": (1, ""),
    "train_batch_size": (1, ""),
    "eval_batch_size": (1, ""),
    "predict_batch_size": (1, ""),
    "save_steps": (1, " (leave it unset to save only at the end)"),
    "eval_batches": (1, " (leave it unset to evaluate every batch)"),
    "warmup_steps": (0, ""),
    "max_save": (0, " (0 keeps every checkpoint)"),
    "mem_len": (0, ""),
    "eval_steps": (0, " (0: no held-out evaluation)"),
}


def check_value(name, value):
  """Raises ValueError `--name=value must be >= low ...` if `value` breaks
  the rule of flag `name` (a key of RULES); None always passes."""
  low, hint = RULES[name]
  if value is not None and value < low:
    raise ValueError(f"--{name}={value} must be >= {low}{hint}")


def check_all(FLAGS):  # pylint: disable=invalid-name
  """Checks every flag of RULES that `FLAGS` defines; warns about a run
  that ends during warm-up.

  Args:
    FLAGS: absl FlagValues (or any object with the flags as attributes).

  Raises:
    ValueError: one line naming the first flag that breaks its rule.
  """
  for name in RULES:
    if hasattr(FLAGS, name):
      check_value(name, getattr(FLAGS, name))
  if hasattr(FLAGS, "warmup_steps") and hasattr(FLAGS, "train_steps"):
    warn_long_warmup(FLAGS.warmup_steps, FLAGS.train_steps)


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
