"""run_ner.py's task settings (`TaggingConfig`), typed and checked as the
other tasks' (`xlnet/finetuning/config.py`); no TensorFlow."""
import dataclasses
from typing import Optional, Tuple

from xlnet import validation
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning.tagging import features as tagging_features


@dataclasses.dataclass(frozen=True)
class TaggingConfig:
  """A tagging task: NER, POS, chunking (`run_ner.py`).

  Attributes:
    spiece_model_file: the pretrained model's SentencePiece model.
    output_dir: where the training records are cached.
    train_file: the tagged training file (labelled).
    eval_file: the tagged file `--do_eval` scores.
    predict_file: the file `--do_predict` tags (None: eval_file).
    predict_dir: where the predictions file goes.
    file_layout: "conll2003", "columns" or "conllu"; None: by each file's
      name (`layouts.layout_of`).
    conllu_column: CoNLL-U's tag column, "upos" or "xpos".
    tag_scheme: "iob1", "iob2", "iobes" or "none" (POS: token accuracy);
      None: detected in the training file (`schemes.detect`); each file
      scored or predicted is read in its own scheme, detected the same
      way.
    label_list: the tags, in the head's order (None: the training file's,
      sorted).
    max_seq_length: pieces per window, `<sep>` and `<cls>` included.
    window_stride: pieces between the starts of a sentence's windows.
    document_context: fill the windows with the neighbouring sentences of
      the document (conll2003's -DOCSTART-, conllu's # newdoc).
    uncased: lower-case the words.
    shuffle_buffer: the training input's shuffle buffer.
    overwrite_data: rewrite the training records even when valid.
    records_timeout: seconds a non-chief worker waits for the chief's
      training records.
    eval_batch_size, predict_batch_size: windows of one step over all
      replicas.
    eval_all_ckpt: evaluate every checkpoint of model_dir.
  """
  spiece_model_file: str
  output_dir: str
  train_file: Optional[str] = None
  eval_file: Optional[str] = None
  predict_file: Optional[str] = None
  predict_dir: Optional[str] = None
  file_layout: Optional[str] = None
  conllu_column: str = "upos"
  tag_scheme: Optional[str] = None
  label_list: Optional[Tuple[str, ...]] = None
  max_seq_length: int = 128
  window_stride: int = 64
  document_context: bool = False
  uncased: bool = False
  shuffle_buffer: int = 2048
  overwrite_data: bool = False
  records_timeout: int = finetune_config.RECORDS_TIMEOUT
  eval_batch_size: int = 32
  predict_batch_size: int = 32
  eval_all_ckpt: bool = False

  def __post_init__(self):
    check_tagging(self)

  @property
  def file_to_predict(self):
    """The file `--do_predict` tags."""
    return self.predict_file or self.eval_file


def check_tagging(values):
  """Raises a one-line ValueError naming the first bad setting of a
  tagging task (a `TaggingConfig` or run_ner.py's flags)."""
  validation.check_all(values)
  least = tagging_features.MIN_SEQ_LENGTH
  if values.max_seq_length < least:
    raise ValueError(f"--max_seq_length={values.max_seq_length} must be >= "
                     f"{least} (one piece, <sep> and <cls>)")
  labels = values.label_list
  if labels is not None and len(set(labels)) != len(labels):
    raise ValueError(f"--label_list={','.join(labels)} names a tag twice")
