"""docs/python_api.md from end to end: its pretraining example pretrains a
tiny model and its fine-tuning example fine-tunes that model, from Python
(each example alone is checked against its program in
tests/pretraining/test_python_api.py and tests/finetuning/test_python_api.py)."""
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from tests import train_fixtures as fx
from tests.finetuning import test_python_api as finetuning_doc
from tests.pretraining import test_python_api as pretraining_doc

pytestmark = [pytest.mark.eager, pytest.mark.slow]


def _set(code, name, value):
  """`code` with its line `NAME = ...` assigning `value` instead."""
  code, count = re.subn(rf"^{name} = .*$", f"{name} = {value!r}", code,
                        flags=re.M)
  assert count == 1, name
  return code


def _variables(model_dir):
  """name -> value of the newest checkpoint of `model_dir`."""
  prefix = tf.train.latest_checkpoint(model_dir)
  return {name: tf.train.load_variable(prefix, name)
          for name, _ in tf.train.list_variables(prefix)}


def test_the_pretraining_example_then_the_finetuning_example(
    tmp_path, monkeypatch, capsys):
  records = fx.program_records(tmp_path / "data", num_core_per_host=1,
                               num_lines=300)
  held_out = fx.program_records(tmp_path / "data_valid", num_core_per_host=1,
                                num_lines=120, split="valid")
  finetuning_doc.write_task(str(tmp_path))  # the same 1000-piece spm
  monkeypatch.chdir(tmp_path)

  pretrain = pretraining_doc.example_code()
  for name, value in (("RECORDS", records), ("HELD_OUT", held_out),
                      ("MODEL_DIR", "pretrained")):
    pretrain = _set(pretrain, name, value)
  exec(compile(pretrain, "pretraining example", "exec"), {})  # pylint: disable=exec-used
  (finetune,) = finetuning_doc.blocks("python")
  finetune = _set(finetune, "MODEL_CONFIG",
                  os.path.join("pretrained", "config.json"))
  exec(compile(finetune, "fine-tuning example", "exec"), {})  # pylint: disable=exec-used

  printed = capsys.readouterr().out.split()
  assert printed[-3].endswith(os.path.join("sst-2", "model", "model.ckpt-6"))
  assert 0.0 <= float(printed[-2]) <= 1.0
  pretrained = _variables("pretrained")
  finetuned = _variables(os.path.join("sst-2", "model"))
  # Started from the pretrained weights: 6 Adam steps at a rate <= 2e-5
  # move a weight by at most 6 * 2e-5 * (1 - b1) / sqrt(1 - b2) ~ 3.8e-4
  # (a fresh initialisation would be ~0.02 away).
  for name, value in finetuned.items():
    if name.startswith("model/transformer/") and "/Adam" not in name:
      np.testing.assert_allclose(value, pretrained[name], rtol=0, atol=4e-4,
                                 err_msg=name)
  assert any(n.startswith("model/classification_sst-2/") for n in finetuned)
