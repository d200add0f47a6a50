"""docs/python_api.md from end to end: its pretraining example pretrains a
tiny model and its fine-tuning example fine-tunes that model, from Python
(each example alone is checked against its program in
tests/pretraining/test_python_api.py and tests/finetuning/test_python_api.py);
its session (text -> records -> pretraining -> fine-tuning -> a classifier
loaded from its directory -> predictions in memory) runs as written in a
fresh Python process."""
import ast
import json
import os
import re
import shutil
import subprocess
import sys

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


def session_code():
  """The python blocks of the page's section "A session", joined."""
  with open(pretraining_doc.DOC) as f:
    text = f.read().split("\n## A session", 1)[1].split("\n## ", 1)[0]
  return "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))


def test_the_session_runs_as_written(tmp_path):
  shutil.copy(data_helpers.corpus_slice(300), tmp_path / "corpus.txt")
  finetuning_doc.write_task(str(tmp_path))  # spiece.model, glue/SST-2
  script = tmp_path / "session.py"
  script.write_text(session_code())
  proc = subprocess.run([sys.executable, str(script)], capture_output=True,
                        text=True, cwd=tmp_path, timeout=600,
                        env=dict(os.environ, PYTHONPATH=data_helpers.REPO_ROOT,
                                 TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 0, proc.stderr[-3000:]

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
  labels, probs = re.search(r"^(\[.*?\]) (\[\[.*\]\])$", proc.stdout,
                            re.M).groups()
  labels, probs = ast.literal_eval(labels), np.array(ast.literal_eval(probs))
  assert probs.shape == (2, 2)
  np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-6)
  assert labels == [str(int(p[1] > p[0])) for p in probs]
