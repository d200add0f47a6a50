"""What `extract_features.py` (and `api.extract_features`) is asked: the
texts, the model, the vectors and the output file (no TensorFlow).

Every field is named after the program's flag, and checked when built by
the rules every program shares (`xlnet/validation.py`) and this task's own
(`check`).
"""
import dataclasses
from typing import Optional, Tuple

from xlnet import validation
from xlnet.finetuning.long_documents import settings as long_documents_lib

# Where a text comes from: a line of the file (" ||| " between a pair's
# texts, as BERT's extract_features.py reads them) or a TSV row's columns.
LINE_PAIR_SEPARATOR = " ||| "
# The output file's kinds, by its extension (else JSON lines).
NUMPY_SUFFIX = ".npy"


@dataclasses.dataclass(frozen=True)
class VectorsConfig:
  """The texts to turn into vectors, and how.

  Attributes:
    input_file: the texts: one a line ("a ||| b" a pair), or a TSV table.
    output_file: JSON lines (BERT's layout; docs/features.md) or, ending
      in .npy, a NumPy array of the pooled vectors.
    init_checkpoint: a checkpoint prefix or directory: a released model's
      (xlnet_model.ckpt), a pretraining run's or a fine-tuned model_dir.
    model_config_path, spiece_model_file: None: beside the checkpoint
      (config.json or xlnet_config.json; spiece.model).
    uncased: lower-case the text; None: the fine-tuned model_dir's
      task.json's, else False.
    input_format: "lines" or "tsv".
    text_a_column, text_b_column: "tsv": the columns (0-based index, or a
      header name: the file then has a header row); text_b_column None for
      single texts.
    contains_header: "tsv": the first row is a header (implied by a name).
    layers: the hidden states, as HF's `hidden_states` counts them: 0 the
      embeddings, i the output of layer i, -1 the last layer's.
    pooling: "cls" (the `<cls>` state), "mean" (over the text's pieces) or
      "none" (one vector per piece).
    max_seq_length: the sequence's (the window's) length.
    batch_size: texts per step.
    long_documents, window_pooling, max_windows, mem_len: texts longer
      than max_seq_length (`long_documents/settings.py`; bptt_windows is
      training's).
  """
  input_file: str
  output_file: str
  init_checkpoint: str
  model_config_path: Optional[str] = None
  spiece_model_file: Optional[str] = None
  uncased: Optional[bool] = None
  input_format: str = validation.first_choice("input_format")
  text_a_column: str = "0"
  text_b_column: Optional[str] = None
  contains_header: Optional[bool] = None
  layers: Tuple[int, ...] = (-1,)
  pooling: str = validation.first_choice("pooling")
  max_seq_length: int = 128
  batch_size: int = 8
  long_documents: str = long_documents_lib.DEFAULT.long_documents
  window_pooling: str = long_documents_lib.DEFAULT.window_pooling
  max_windows: int = long_documents_lib.DEFAULT.max_windows
  mem_len: Optional[int] = long_documents_lib.DEFAULT.mem_len

  def __post_init__(self):
    check(self)

  @property
  def long_document_settings(self):
    """How texts longer than one sequence are read (`LongDocuments`)."""
    return settings_of(self)

  @property
  def numpy_output(self):
    """Whether the output is a NumPy array (else JSON lines)."""
    return self.output_file.endswith(NUMPY_SUFFIX)


def check(values):
  """Raises a one-line ValueError naming the first setting that cannot
  work (the flags or a `VectorsConfig`)."""
  validation.check_all(values)
  if values.max_seq_length < 3:
    raise ValueError(f"--max_seq_length={values.max_seq_length} must be "
                     ">= 3 (one piece, <sep> and <cls>)")
  if not values.layers:
    raise ValueError("--layers is empty: name at least one hidden state "
                     "(-1: the last layer's)")
  if values.pooling == "none" and values.output_file.endswith(NUMPY_SUFFIX):
    raise ValueError(
        f"--pooling=none with --output_file={values.output_file}: one "
        "vector per piece makes rows of different lengths; write JSON "
        "lines (another extension) or pool (--pooling=cls or mean)")
  if values.input_format == "lines" and values.text_b_column is not None:
    raise ValueError("--text_b_column is for --input_format=tsv; a line "
                     f"holds a pair as 'a{LINE_PAIR_SEPARATOR}b'")
  long_documents_lib.check_memory(values)


def settings_of(values):
  """The `LongDocuments` of the flags or a `VectorsConfig`."""
  return long_documents_lib.LongDocuments(
      values.long_documents, values.window_pooling, values.max_windows,
      mem_len=values.mem_len)
