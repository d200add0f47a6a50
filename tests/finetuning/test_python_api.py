"""docs/python_api.md, section "Fine-tuning": its example runs as written (on a tiny
random pretrained model and a tiny SST-2) and gives the same checkpoint,
bit for bit, and the same eval_results.txt as the run_classifier.py command
the page says it stands for."""
import os
import re
import shlex
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import data_helpers
from tests import in_process

pytestmark = pytest.mark.eager
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
DOC = os.path.join(REPO, "docs", "python_api.md")
CONFIG = dict(fx.TINY_CONFIG, n_token=1000)  # the tiny SentencePiece model's


def blocks(language):
  """The fenced code blocks in `language` of the page's section
  "Fine-tuning", in order."""
  with open(DOC) as f:
    text = f.read().split("\n## Fine-tuning\n", 1)[1]
  return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def _write_inputs(root):
  """Under `root`, what the example names: pretrained/ (config and a
  random model.ckpt-100), spiece.model and glue/SST-2/{train,dev}.tsv."""
  pretrained = os.path.join(root, "pretrained")
  fx.write_config(pretrained, CONFIG)
  fx.write_checkpoint(os.path.join(pretrained, "model.ckpt-100"),
                      fx.random_values(fx.pretrained_shapes(CONFIG)))
  write_task(root)


def write_task(root):
  """Under `root`: spiece.model (the tests' tiny SentencePiece model, 1000
  pieces) and a tiny SST-2 in the GLUE layout, glue/SST-2/{train,dev}.tsv."""
  shutil.copy(data_helpers.train_tiny_spm(), os.path.join(root,
                                                          "spiece.model"))
  data = os.path.join(root, "glue", "SST-2")
  os.makedirs(data)
  words = ("a fine film", "an awful plot", "great acting", "dull and long",
           "a wonderful cast", "a terrible ending")
  for split, n in (("train", 12), ("dev", 6)):
    with open(os.path.join(data, f"{split}.tsv"), "w") as f:
      f.write("sentence\tlabel\n" + "".join(
          f"{words[i % 6]} {i}\t{(i + 1) % 2 if i % 6 > 3 else i % 2}\n"
          for i in range(n)))


def _variables(model_dir):
  """name -> value of the latest checkpoint of `model_dir`."""
  prefix = tf.train.latest_checkpoint(model_dir)
  return {name: tf.train.load_variable(prefix, name)
          for name, _ in tf.train.list_variables(prefix)}


def _results(model_dir):
  """eval_results.txt without the checkpoint paths (they differ)."""
  with open(os.path.join(model_dir, "eval_results.txt")) as f:
    return [re.sub(r"checkpoint=\S*", "", line) for line in f]


def test_the_example_equals_the_command(tmp_path, monkeypatch, capsys):
  (example,) = blocks("python")
  (command,) = blocks("sh")
  _write_inputs(str(tmp_path))
  monkeypatch.chdir(tmp_path)
  exec(compile(example, DOC, "exec"), {"__name__": "example"})  # pylint: disable=exec-used
  printed = capsys.readouterr().out.split()
  assert printed[0].endswith(os.path.join("sst-2", "model", "model.ckpt-6"))

  # The command, into other directories (in this process:
  # tests/in_process.py).
  argv = shlex.split(command.replace("\\\n", " "))
  argv = [a.replace("sst-2/", "cli/") for a in argv]
  proc = in_process.run_program(argv[1], *argv[2:], cwd=tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]

  ours, theirs = _variables("sst-2/model"), _variables("cli/model")
  assert ours.keys() == theirs.keys()
  assert "model/classification_sst-2/logit/kernel" in ours
  for name in ours:
    np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
  assert _results("sst-2/model") == _results("cli/model")
  assert float(printed[1]) == float(re.search(
      r"eval_accuracy=(\S+)", _results("cli/model")[0]).group(1))
