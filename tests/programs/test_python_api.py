"""docs/python_api.md from end to end: its pretraining example pretrains a
tiny model and its fine-tuning example fine-tunes that model, from Python
(each example alone is checked against its program in
tests/pretraining/test_python_api.py and tests/finetuning/test_python_api.py);
its session (text -> records -> pretraining -> fine-tuning -> a classifier
loaded from its directory -> predictions in memory) runs as written."""
import ast
import contextlib
import io
import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import data_helpers
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
  # Read only: the record sets shared by the test run.
  records = fx.shared_program_records(num_core_per_host=1, num_lines=300)
  held_out = fx.shared_program_records(num_core_per_host=1, num_lines=120,
                                       split="valid")
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


def session_code():
  """The python blocks of the page's section "A session", joined."""
  with open(pretraining_doc.DOC) as f:
    text = f.read().split("\n## A session", 1)[1].split("\n## ", 1)[0]
  return "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))


def test_the_session_runs_as_written(tmp_path, monkeypatch):
  """The session runs as a user pastes it into `python` in a directory
  holding its inputs; here in this process, where the library is loaded
  already: so that it cannot lean on that, it takes the library's names
  with `from xlnet... import`, which loads what it names wherever it runs
  (after a plain `import xlnet` it would find here submodules a fresh
  `python` lacks)."""
  shutil.copy(data_helpers.corpus_slice(300), tmp_path / "corpus.txt")
  finetuning_doc.write_task(str(tmp_path))  # spiece.model, glue/SST-2
  code = session_code()
  assert not re.search(r"^\s*import\s+xlnet", code, re.M), code
  monkeypatch.chdir(tmp_path)
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    exec(compile(code, "docs/python_api.md", "exec"), {})  # pylint: disable=exec-used

  work = tmp_path / "session"
  with open(work / "data" / "corpus_info.json") as f:
    assert json.load(f)["seq_len"] == 32
  assert tf.train.latest_checkpoint(str(work / "pretrained")).endswith(
      "model.ckpt-4")
  finetuned = str(work / "sst-2")
  assert tf.train.latest_checkpoint(finetuned).endswith("model.ckpt-6")
  with open(work / "pretrained" / "config.json") as f, open(
      os.path.join(finetuned, "config.json")) as g:
    assert json.load(f) == json.load(g)
  # The printed labels and probabilities: two texts, two classes, the label
  # the more probable class (SST-2's labels are "0" and "1").
  labels, probs = re.search(r"^(\[.*?\]) (\[\[.*\]\])$", printed.getvalue(),
                            re.M).groups()
  labels, probs = ast.literal_eval(labels), np.array(ast.literal_eval(probs))
  assert probs.shape == (2, 2)
  np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-6)
  assert labels == [str(int(p[1] > p[0])) for p in probs]
