"""The kinds of fine-tuning task, each described once: its program and the
defaults that program gives a run, the sequences one example runs as, and
its heads, as a checkpoint holds them and as HuggingFace transformers
names them.

  kind        program            sequences  heads (HF class)
  classifier  run_classifier.py  1          classification, regression
                                            (XLNetForSequenceClassification)
  squad       run_squad.py       1          squad (XLNetForQuestionAnswering)
  race        run_race.py        4          race (XLNetForMultipleChoice)
  tagging     run_ner.py         1          tagging
                                            (XLNetForTokenClassification)

TensorFlow-free and below every package, so that all read it: the
programs' defaults (`program_defaults.py`), the fine-tuning flags
(`xlnet/flags/`), the memory plan and the paper's tables
(`xlnet/reproduce/`), the exports (`xlnet/interop/`). A new kind is one
entry of KINDS, and its folder under `xlnet/finetuning/` (its head, data,
records and task).

The fine-tuning programs' defaults: run_classifier.py's are the release's
(--adam_epsilon=1e-8: its README's STS-B and IMDB commands ran with it),
and the typed configs' own (`program_defaults.LIBRARY`); run_squad.py's and
run_race.py's the paper's XLNet-Large settings, with the release's
--adam_epsilon=1e-6; run_ner.py's (no release, no paper figure) those of
run_squad.py with a batch of 32 windows and 3,000 steps (about 6 passes
over CoNLL-2003's 14,041 training sentences). --train_batch_size is per GPU without --use_tpu in
every fine-tuning program.
"""
import dataclasses
from typing import Tuple


@dataclasses.dataclass(frozen=True)
class TaskKind:
  """One kind of fine-tuning task.

  Attributes:
    name: the kind: what the memory plan, the paper's tables and a
      fine-tuned model_dir's task.json call it.
    program: its program as `program_defaults.of` names it (`script`: the
      file).
    sequences_per_example: the batch's sequences one example runs as (a
      RACE question: its four options, side by side in a record).
    examples: what its examples are called (the memory plans' lines).
    heads: the heads a checkpoint fine-tuned on it holds
      (`interop/hf_names.find_heads`).
    hf_class: the HuggingFace transformers class of those heads.
    scoped_by_task: the head's variable scope names the task
      (`classification_sts-b`), so that one checkpoint may hold several;
      else the kind has one head, named as the kind, under a fixed scope,
      and `--task_name=<kind>` picks it (`interop/hf_export.choose_head`).
    pools_sequence: the head reads the sequence summary (`summary_type`,
      `use_summ_proj`: `modeling.summarize_sequence`).
    defaults: the program's own defaults (optimizer, loop, checkpoints)
      over every program's (`program_defaults.of`).
  """
  name: str
  program: str
  sequences_per_example: int
  examples: str
  heads: Tuple[str, ...]
  hf_class: str
  scoped_by_task: bool
  pools_sequence: bool
  defaults: dict

  def __post_init__(self):
    if not self.scoped_by_task and self.heads != (self.name,):
      raise ValueError(f"task kind {self.name}: a head not scoped by the "
                       f"task is named as its kind, got heads {self.heads}")

  @property
  def script(self):
    """The program's file (`run_classifier.py`)."""
    return f"{self.program}.py"


CLASSIFIER = TaskKind(
    "classifier", "run_classifier", 1, "sequences",
    ("classification", "regression"), "XLNetForSequenceClassification",
    scoped_by_task=True, pools_sequence=True,
    defaults=dict(learning_rate=1e-5, warmup_steps=0, weight_decay=0.0,
                  adam_epsilon=1e-8, train_batch_size=8, train_steps=1000,
                  max_save=0))
SQUAD = TaskKind(
    "squad", "run_squad", 1, "sequences", ("squad",),
    "XLNetForQuestionAnswering", scoped_by_task=False, pools_sequence=False,
    defaults=dict(learning_rate=3e-5, warmup_steps=1000, weight_decay=0.0,
                  adam_epsilon=1e-6, lr_layer_decay_rate=0.75,
                  train_batch_size=48, train_steps=8000, save_steps=1000,
                  max_save=0))
RACE = TaskKind(
    "race", "run_race", 4, "questions", ("race",), "XLNetForMultipleChoice",
    scoped_by_task=False, pools_sequence=True,
    defaults=dict(learning_rate=2e-5, warmup_steps=1000, weight_decay=0.0,
                  adam_epsilon=1e-6, train_batch_size=32, train_steps=12000,
                  save_steps=1000, max_save=0))
TAGGING = TaskKind(
    "tagging", "run_ner", 1, "windows", ("tagging",),
    "XLNetForTokenClassification", scoped_by_task=False,
    pools_sequence=False,
    defaults=dict(learning_rate=3e-5, warmup_steps=300, weight_decay=0.0,
                  adam_epsilon=1e-6, train_batch_size=32, train_steps=3000,
                  save_steps=1000, max_save=0))
KINDS = (CLASSIFIER, SQUAD, RACE, TAGGING)
NAMES = tuple(kind.name for kind in KINDS)


def get(name):
  """The kind named `name` (one of NAMES).

  Raises:
    ValueError: one line naming the kinds.
  """
  for kind in KINDS:
    if kind.name == name:
      return kind
  raise ValueError(f"task_kind must be one of {', '.join(NAMES)}, got "
                   f"{name!r}")

