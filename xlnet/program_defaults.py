"""The defaults a run inherits from its program, in one table.

The programs' flags (`xlnet/flags/`) take their defaults from here, and so
do the typed configs (`xlnet/model.py`'s RunConfig,
`xlnet/training/config.py`, `xlnet/finetuning/config.py`'s DEFAULT_RUN): a
config's own defaults are run_classifier.py's, and `for_program` builds a
config with another program's (`OptimizerConfig.for_program("run_squad",
...)` trains as `run_squad.py` with the same flags). Each value is the
flag's default in that program:

  pretraining (train_gpu.py, train_tpu.py, eval_pretrain.py): the paper's
    XLNet-Large recipe (docs/training.md), where the release shipped toy
    values (its train_gpu.py: --adam_epsilon=1e-8, --weight_decay=0,
    --warmup_steps=0); --train_batch_size None is the data's
  the fine-tuning programs (run_classifier.py, run_squad.py, run_race.py):
    their kind's (`task_kinds.py`, which says where each comes from)
"""
from xlnet import configs
from xlnet import task_kinds

# Every program alike: the model's run (RunConfig), the optimizer, the loop.
_SHARED = dict(dropout=0.1, dropatt=0.1, init="normal", init_range=0.1,
               init_std=0.02, clamp_len=-1,
               clip=1.0, min_lr_ratio=0.0, decay_method="poly",
               lr_layer_decay_rate=1.0, iterations=1000,
               seed=configs.DEFAULT_SEED, save_steps=None)
_PRETRAINING = dict(learning_rate=4e-4, warmup_steps=40000,
                    weight_decay=0.01, adam_epsilon=1e-6,
                    train_batch_size=None, train_steps=500000,
                    max_save=100000)
# program -> its own defaults (over _SHARED).
_OWN = {
    "train_gpu": _PRETRAINING,
    "train_tpu": _PRETRAINING,
    "eval_pretrain": _PRETRAINING,
    **{kind.program: kind.defaults for kind in task_kinds.KINDS},
}
PROGRAMS = tuple(_OWN)
# Whose defaults the configs' fields have.
LIBRARY = task_kinds.CLASSIFIER.program


def of(program):
  """The defaults of `program` (one of PROGRAMS): dict flag name -> value.

  Raises:
    ValueError: an unknown program (the message lists them).
  """
  if program not in _OWN:
    raise ValueError(f"program={program!r}: the programs with defaults are "
                     f"{', '.join(PROGRAMS)}")
  return {**_SHARED, **_OWN[program]}
