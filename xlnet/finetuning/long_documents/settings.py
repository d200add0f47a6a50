"""How a model reads texts longer than one sequence (no TensorFlow): the
settings `run_classifier.py --long_documents=...` and `extract_features.py`
share, their rules, and what a fine-tuned model_dir records of them.

  truncate  the release's: the first max_seq_length - 2 pieces, the rest
            dropped (the default)
  windows   the text cut into up to `max_windows` windows
            (`windows.py`), each read alone, their outputs pooled
            (`window_pooling`: mean or max)
  memory    the windows read in order, each with the memory of the ones
            before (`mem_len` positions of every layer's input states),
            the output read at the last window; gradients through the
            memories of the last `bptt_windows` windows
"""
import dataclasses
from typing import Optional

from xlnet import validation

TRUNCATE, WINDOWS, MEMORY = validation.CHOICES["long_documents"]
# What a model_dir's task.json records of the settings (`record`).
RECORD_KEYS = ("long_documents", "window_pooling", "max_windows",
               "bptt_windows", "mem_len")


@dataclasses.dataclass(frozen=True)
class LongDocuments:
  """How texts longer than one window are read: the settings a config
  checked (`ClassifierConfig`, `VectorsConfig`: each its own rules, by
  `check` and `check_memory`) or a fine-tuned model_dir recorded.

  Attributes:
    long_documents: "truncate", "windows" or "memory".
    window_pooling: "windows": "mean" or "max" over a text's windows.
    max_windows: windows per text (the pieces after them are dropped).
    bptt_windows: "memory": the last windows whose memories pass
      gradients (1: none, the memory a constant as in pretraining).
    mem_len: "memory": the memory's length in positions; None: the
      window's length (the whole window before).
  """
  long_documents: str = TRUNCATE
  window_pooling: str = validation.first_choice("window_pooling")
  max_windows: int = 4
  bptt_windows: int = 1
  mem_len: Optional[int] = None

  @property
  def in_windows(self):
    """Whether texts are read as windows (records of max_windows)."""
    return self.long_documents != TRUNCATE

  def memory_length(self, max_seq_length):
    """The memory's length with windows of `max_seq_length`."""
    return max_seq_length if self.mem_len is None else self.mem_len

  def record(self):
    """The settings as task.json records them (dict of `RECORD_KEYS`)."""
    return {k: getattr(self, k) for k in RECORD_KEYS}

  @classmethod
  def from_record(cls, record):
    """The settings of a task.json record (`record`); a model_dir
    fine-tuned before they were recorded truncates."""
    return cls(**{k: record[k] for k in RECORD_KEYS if k in record})

  @classmethod
  def of(cls, values):
    """The settings of any object holding them as attributes (flags, a
    task config)."""
    return cls(**{k: getattr(values, k) for k in RECORD_KEYS})


def check(values):
  """Raises a one-line ValueError naming the first setting that cannot go
  with the others (each one's own rule is `validation.py`'s): training's
  (`bptt_windows`), then `check_memory`.

  Args:
    values: run_classifier.py's flags or a `ClassifierConfig`: an object
      with the settings of `RECORD_KEYS` as attributes.
  """
  if values.bptt_windows > values.max_windows:
    raise ValueError(f"--bptt_windows={values.bptt_windows} exceeds "
                     f"--max_windows={values.max_windows}: gradients can "
                     "pass through at most every window")
  if values.bptt_windows > 1 and values.long_documents != MEMORY:
    raise ValueError(f"--bptt_windows={values.bptt_windows} is for "
                     "--long_documents=memory (gradients through the "
                     f"memory), not --long_documents={values.long_documents}")
  check_memory(values)


def check_memory(values):
  """Raises unless memory mode has a memory (the settings as attributes)."""
  if values.long_documents == MEMORY and values.mem_len == 0:
    raise ValueError("--mem_len=0 with --long_documents=memory leaves no "
                     "memory: use --long_documents=windows, or --mem_len "
                     ">= 1 (unset: the window's length)")


def check_single_texts(settings, pairs, what):
  """Raises unless texts read as windows are single texts.

  Args:
    settings: a `LongDocuments`.
    pairs: whether the texts are pairs.
    what: names them in the message (e.g. "--task_name=mnli").
  """
  if settings.in_windows and pairs:
    raise ValueError(f"--long_documents={settings.long_documents} reads "
                     f"single texts as windows, but {what} has text pairs: "
                     "use --long_documents=truncate")


# The programs' and the task configs' defaults.
DEFAULT = LongDocuments()
