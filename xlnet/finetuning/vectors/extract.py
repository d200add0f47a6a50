"""Texts -> vectors from a checkpoint: `extract_features(config)`, what
`extract_features.py` and `api.extract_features` run (docs/features.md).

The checkpoint is a released model's (`xlnet_model.ckpt` beside
`xlnet_config.json` and `spiece.model`), a pretraining run's or a
fine-tuned model_dir (its `config.json`, `spiece.model` and `task.json`,
whose casing it takes); only the backbone's variables are read. Texts go
through in batches of `batch_size`, each row of a batch computed alone
(left padding masked, dropout off), the vectors pooled per text
(`extractor.pool`), so a text's vectors do not depend on the batch it is
in (to float rounding: the matrix kernels may sum in another order for
another batch size).
"""
import os
import time

from absl import logging
import numpy as np

from xlnet.data import prepro_utils
from xlnet.finetuning import config as finetuning_config
from xlnet.finetuning.long_documents import settings as long_documents
from xlnet.finetuning.vectors import extractor as extractor_lib
from xlnet.finetuning.vectors import inputs
from xlnet.finetuning.vectors import output
from xlnet.model_config import XLNetConfig
from xlnet.training import checkpoint_io
from xlnet.training import train_state

_LOG_EVERY_SECONDS = 10


def _beside(prefix, names, flag):
  """The first of `names` in the checkpoint's directory; one line naming
  `flag` when there is none."""
  directory = os.path.dirname(prefix) or "."
  for name in names:
    if os.path.isfile(os.path.join(directory, name)):
      return os.path.join(directory, name)
  raise ValueError(f"--init_checkpoint={prefix}: its directory holds no "
                   f"{' or '.join(names)}; give {flag}")


def model_files(prefix, config):
  """The checkpoint's `XLNetConfig`, SentencePiece model and casing.

  Returns:
    (XLNetConfig, spiece model path, uncased).
  """
  config_path = config.model_config_path or _beside(
      prefix, finetuning_config.CONFIG_FILES, "--model_config_path")
  try:
    xlnet_config = XLNetConfig(json_path=config_path)
  except ValueError as e:
    raise ValueError(f"--model_config_path={config_path}: {e}") from None
  spiece = config.spiece_model_file or _beside(
      prefix, (finetuning_config.SPIECE_FILE,), "--spiece_model_file")
  uncased = config.uncased
  if uncased is None:
    task = train_state.read_run_record(os.path.join(
        os.path.dirname(prefix), finetuning_config.TASK_FILE))
    uncased = bool(isinstance(task, dict) and task.get("uncased"))
  return xlnet_config, spiece, uncased


def extract_features(config):
  """Writes the vectors of `config.input_file`'s texts to
  `config.output_file`.

  Args:
    config: a `vectors.config.VectorsConfig`.

  Returns:
    the number of texts.

  Raises:
    ValueError: one line naming the setting or file at fault.
  """
  prefix = checkpoint_io.resolve_checkpoint(config.init_checkpoint,
                                            "--init_checkpoint")
  xlnet_config, spiece, uncased = model_files(prefix, config)
  sp_model = prepro_utils.load_sp_model(spiece, "--spiece_model_file")
  settings = config.long_document_settings
  layers = extractor_lib.layer_indices(config.layers, xlnet_config.n_layer)
  texts = inputs.read_texts(config)
  long_documents.check_single_texts(
      settings, any(b is not None for _, b in texts),
      f"--input_file={config.input_file}")
  encoder = inputs.Encoder(sp_model, uncased, config.max_seq_length,
                           settings)
  extractor = extractor_lib.Extractor(
      xlnet_config, settings, config.max_seq_length, layers, prefix,
      config.batch_size, encoder.windows_per_text) if texts else None
  start = last_log = time.time()
  with output.writer(config.output_file, config.layers,
                     config.pooling != "none", config.numpy_output) as write:
    for first in range(0, len(texts), config.batch_size):
      encoded = [encoder.encode(*text)
                 for text in texts[first:first + config.batch_size]]
      states = extractor.states({k: np.stack([e[0][k] for e in encoded])
                                 for k in encoded[0][0]})
      for i, ((arrays, places), text_states) in enumerate(zip(encoded,
                                                              states)):
        write(first + i, extractor_lib.pool(
            text_states, arrays["window_mask"], places, config.pooling,
            settings), places)
      done = first + len(encoded)
      if time.time() - last_log > _LOG_EVERY_SECONDS or done == len(texts):
        last_log = time.time()
        rate = done / max(last_log - start, 1e-9)
        logging.info("%d/%d texts (%.1f/s), ETA %.0fs", done, len(texts),
                     rate, (len(texts) - done) / rate)
  logging.info("Wrote the vectors of %d texts to %s", len(texts),
               config.output_file)
  return len(texts)
