"""docs/python_api.md: its example runs as written on small records (a
checkpoint, finite losses, held-out results), and the API computes what the
programs compute: `train_gpu.py` and `eval_pretrain.py` on the same settings
give the same checkpoint, the same step losses and the same held-out
results, bit for bit."""
import dataclasses
import json
import math
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from tests import train_fixtures as fx
from tests.data_helpers import REPO_ROOT
from xlnet.pretraining import api

pytestmark = pytest.mark.eager

DOC = os.path.join(REPO_ROOT, "docs", "python_api.md")


def example_code():
  """The python block of the doc's section "A complete example"."""
  with open(DOC) as f:
    text = f.read()
  section = text.split("## A complete example", 1)[1]
  return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
  """The doc's example run on demo-corpus records (its paths replaced).

  Returns:
    the namespace the example ran in (configs, history, results, ...).
  """
  root = tmp_path_factory.mktemp("api")
  records = fx.shared_program_records(1, num_lines=300)
  held_out = fx.shared_program_records(1, num_lines=120, split="valid")
  code = example_code()
  for name, value in (("RECORDS", records), ("HELD_OUT", held_out),
                      ("MODEL_DIR", str(root / "api"))):
    code, count = re.subn(rf'^{name} = "[^"]*"', f"{name} = {value!r}", code,
                          flags=re.M)
    assert count == 1, name
  namespace = {}
  exec(compile(code, DOC, "exec"), namespace)  # pylint: disable=exec-used
  return namespace


def test_the_example_trains_and_evaluates(example):
  configs = example["configs"]
  model_dir = configs.checkpoint.model_dir
  assert [step for step, _ in example["history"]] == [1, 2, 3, 4]
  assert all(math.isfinite(loss) for _, loss in example["history"])
  assert tf.train.latest_checkpoint(model_dir).endswith("model.ckpt-4")
  with open(os.path.join(model_dir, "config.json")) as f:
    assert json.load(f) == configs.model.to_dict()
  results = example["results"]
  assert results["checkpoint"].endswith("model.ckpt-4")
  assert math.isfinite(results["loss"]) and results["num_targets"] > 0
  assert results["split"] == "valid"
  with open(os.path.join(model_dir, "eval_results_pretrain.json")) as f:
    assert json.load(f) == results


def program_flags(configs, model_dir, config_path):
  """The programs' flags that mean `configs`: every config field is named
  after its flag (xlnet/training/config.py), so every setting is given."""
  values = {}
  for part in (configs.data, configs.batch, configs.run, configs.optimizer,
               configs.train, configs.checkpoint, configs.held_out):
    values.update(dataclasses.asdict(part))
  for not_a_flag in ("corpus_info", "is_training", "n_layer", "eval_ckpt"):
    del values[not_a_flag]
  values.update(model_dir=model_dir, model_config_path=config_path)
  return [f"--{k}={v}" for k, v in values.items() if v is not None]


def _program(name, flags):
  """The program's command line, run in this process (`fx.run_program`:
  its flags, their resolution and its calls; what only a process of its
  own shows is tests/pretraining/test_train_gpu.py's kill test)."""
  proc = fx.run_program(name, *flags)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return proc


def _scalars(model_dir, tag):
  """{step: value} of the TensorBoard scalar `tag` written in `model_dir`."""
  out = {}
  for path in tf.io.gfile.glob(os.path.join(model_dir, "events.out.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == tag:
          out[event.step] = tf.make_ndarray(value.tensor).item()
  return out


def _checkpoint(model_dir):
  reader = tf.train.load_checkpoint(model_dir)
  return {n: reader.get_tensor(n)
          for n in reader.get_variable_to_shape_map()}


@pytest.mark.slow
def test_the_programs_compute_what_the_api_computes(example, tmp_path):
  configs = example["configs"]
  config_path = str(tmp_path / "model.json")
  configs.model.to_json(config_path)
  model_dir = str(tmp_path / "program")
  flags = program_flags(configs, model_dir, config_path)
  _program("train_gpu.py", flags)
  api_dir = configs.checkpoint.model_dir

  want, got = _checkpoint(api_dir), _checkpoint(model_dir)
  assert sorted(got) == sorted(want)
  for name, value in want.items():
    np.testing.assert_array_equal(got[name], value, err_msg=name)
  for tag in ("loss", "eval/loss"):
    assert _scalars(model_dir, tag) == _scalars(api_dir, tag), tag
  losses = _scalars(api_dir, "loss")
  assert sorted(losses) == [1, 2, 3, 4]
  assert sorted(_scalars(api_dir, "eval/loss")) == [2, 4]
  assert [np.float32(loss) for _, loss in example["history"]] == [
      np.float32(losses[s]) for s in sorted(losses)]

  want = dict(example["results"])
  want.pop("checkpoint")
  # Every flag given; then only the checkpoint and the held-out records:
  # the run's recorded settings (mem_len 16, not the flag's 384; seed 7,
  # not 1: the factorization orders; perm_size, clamp_len, same_length)
  # evaluate as training did.
  bare = [f"--model_dir={model_dir}",
          f"--record_info_dir={configs.held_out.eval_record_info_dir}"]
  for eval_flags in (flags, bare):
    proc = _program("eval_pretrain.py", eval_flags)
    with open(os.path.join(model_dir, "eval_results_pretrain.json")) as f:
      results = json.load(f)
    assert results.pop("checkpoint") == os.path.join(model_dir,
                                                     "model.ckpt-4")
    assert results == want, eval_flags
  assert re.search(r"Settings of the training run \(.*objective\.json\): "
                   r"clamp_len=-1 mem_len=16 perm_size=\d+ same_length=False "
                   r"seed=7",
                   proc.stderr), proc.stderr[-2000:]
  # A flag given wins, with a word.
  proc = _program("eval_pretrain.py", bare + ["--mem_len=8"])
  assert re.search(r"--mem_len=8: the training run used 16 \(", proc.stderr)
  with open(os.path.join(model_dir, "eval_results_pretrain.json")) as f:
    assert json.load(f)["loss"] != want["loss"]
  # Without objective.json (a run of an older version): the flags'
  # defaults, named in one line (mem_len 384, not 16: another loss).
  record = os.path.join(model_dir, "objective.json")
  os.rename(record, record + ".away")
  proc = _program("eval_pretrain.py", bare)
  os.rename(record + ".away", record)
  assert re.search(
      rf"{re.escape(record)} is missing: evaluating with the flags' "
      r"defaults clamp_len=-1 mem_len=384 perm_size=\d+ same_length=False "
      r"seed=1; give the training run's values where they differ \(they "
      r"change the loss\)\n", proc.stderr), proc.stderr[-2000:]


def test_configs_that_disagree_are_refused(example):
  """The RunConfig must describe the data's rows; pretrain needs a
  model_dir."""
  configs = example["configs"]
  run = dataclasses.replace(configs.run, bi_data=not configs.data.bi_data)
  with pytest.raises(ValueError, match=r"RunConfig\.bi_data=.* differs from "
                     r"PretrainData\.bi_data"):
    dataclasses.replace(configs, run=run)
  with pytest.raises(ValueError, match="configs.checkpoint"):
    api.pretrain(dataclasses.replace(configs, checkpoint=None))
