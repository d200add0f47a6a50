"""Fine-tuning on the engine (xlnet/finetuning/finetune.py): a tiny model
pretrained with train_gpu.py is fine-tuned with run_classifier.py's command
line (in this process: tests/in_process.py) on learnable labelled sets;
inference returns every example once, in order."""
import json
import os
import random
import re

import numpy as np
import pytest
import tensorflow as tf

from tests import data_helpers
from tests import in_process
from tests import train_fixtures
from xlnet.training import checkpoint_io
from xlnet.finetuning import finetune
from xlnet.training import predictor as predictor_lib
from xlnet.training import strategies
from xlnet.finetuning import config as finetune_config
from xlnet.training import config as train_config

pytestmark = pytest.mark.eager
WORDS = ("the a man woman dog cat walked ran saw house park city river "
         "went home").split()


def _run(args):
  """run_classifier.py's command line `args` in this process; returns its
  result (exit code, output)."""
  return in_process.run_program("run_classifier.py", *args)


def _ok(args):
  result = _run(args)
  assert result.returncode == 0, result.stderr[-3000:]
  return result


@pytest.fixture(scope="module")
def pretrained():
  """A tiny XLNet (configs/xlnet_tiny.json) pretrained for 4 steps by
  train_gpu.py on demo-corpus records, shared by the run: its checkpoint
  (with optimizer slots and memories, as train_gpu.py writes it), config
  and SentencePiece model."""
  _, model_dir = train_fixtures.shared_train_gpu_run("--train_steps=4")
  return dict(ckpt=os.path.join(model_dir, "model.ckpt-4"),
              config=os.path.join(model_dir, "config.json"),
              spm=data_helpers.train_tiny_spm())


def _tsv(path, rows):
  with open(path, "w") as f:
    f.write("label\ttext\n")
    f.write("".join(f"{label}\t{text}\n" for label, text in rows))


def _task_dir(tmp_path, sizes, row):
  """`tmp_path/data` with a labelled table per split of `sizes` (split ->
  rows), row i of each `row(i)` = (label, text), made in that order."""
  data = tmp_path / "data"
  data.mkdir()
  for split, n in sizes.items():
    _tsv(data / f"{split}.tsv", [row(i) for i in range(n)])
  return data


# 60 steps of 16: measured dev accuracy 1.00 on the cue-word task and
# Pearson 0.97 on the counting score (the tests ask for 0.85 and 0.6).
def _classifier_args(pretrained, tmp_path, data, *extra):
  return ["--task_name=tsv", f"--data_dir={data}",
          "--text_a_column=text", "--label_column=label",
          f"--output_dir={tmp_path / 'records'}",
          f"--model_dir={tmp_path / 'finetuned'}",
          f"--spiece_model_file={pretrained['spm']}",
          f"--model_config_path={pretrained['config']}",
          f"--init_checkpoint={pretrained['ckpt']}", "--do_train",
          "--do_eval", "--max_seq_length=24", "--train_batch_size=16",
          "--eval_batch_size=8", "--train_steps=60", "--warmup_steps=10",
          "--learning_rate=3e-3", "--iterations=30", "--dropout=0",
          "--dropatt=0", "--seed=1", *extra]


def _results(tmp_path):
  line = (tmp_path / "finetuned" / "eval_results.txt").read_text().split(
      "\n")[0]
  return dict(kv.split("=", 1) for kv in line.split("\t") if "=" in kv)


def test_classifier_learns_a_cue_word_task(tmp_path, pretrained):
  """The label is the cue word's (wonderful/terrible) among filler words:
  dev accuracy far above the majority class (0.5)."""
  rng = random.Random(0)

  def row(i):
    words = [rng.choice(WORDS) for _ in range(6)]
    words.insert(rng.randrange(7), "wonderful" if i % 2 else "terrible")
    return i % 2, " ".join(words)

  data = _task_dir(tmp_path, {"train": 200, "dev": 60}, row)
  _ok(_classifier_args(pretrained, tmp_path, data, "--label_list=0,1"))
  results = _results(tmp_path)
  assert int(results["num_examples"]) == 60
  assert float(results["eval_accuracy"]) > 0.85, results
  # The head starts fresh; the backbone came from the pretraining run.
  names = {n for n, _ in tf.train.list_variables(
      str(tmp_path / "finetuned"))}
  assert "model/classification_tsv/logit/kernel" in names
  assert not any(n.startswith("mems/") for n in names)


def test_regression_learns_a_counting_score(tmp_path, pretrained):
  """The score is the number of times 'wonderful' occurs (0-3): the dev
  Pearson correlation is clearly positive."""
  rng = random.Random(1)

  def row(_):
    count = rng.randrange(4)
    words = [rng.choice(WORDS) for _ in range(5)]
    for _ in range(count):
      words.insert(rng.randrange(len(words) + 1), "wonderful")
    return float(count), " ".join(words)

  data = _task_dir(tmp_path, {"train": 240, "dev": 60}, row)
  _ok(_classifier_args(pretrained, tmp_path, data, "--is_regression=True"))
  results = _results(tmp_path)
  assert float(results["eval_pearsonr"]) > 0.6, results


def test_a_model_dir_keeps_the_summary_its_head_was_trained_with(
    tmp_path, pretrained):
  """Fine-tuning records how its head pools (head.json, read by the
  export); resuming, evaluating or predicting with another --summary_type
  is a one-line error naming the flag, not a silently different model."""
  data = _task_dir(tmp_path, {"train": 16, "dev": 16},
                   lambda i: (i % 2, " ".join(WORDS[i % 5:i % 5 + 4])))
  args = _classifier_args(pretrained, tmp_path, data, "--label_list=0,1")
  short = [a for a in args if not a.startswith(("--train_steps",
                                                "--iterations"))]
  _ok(short + ["--train_steps=2", "--iterations=1", "--summary_type=mean"])
  model_dir = tmp_path / "finetuned"
  assert json.loads((model_dir / "head.json").read_text()) == {
      "summary_type": "mean", "use_summ_proj": True}

  def refused(args):
    result = _run(args)
    assert result.returncode != 0
    return result.stderr.strip().splitlines()[-1]

  resumed = refused(short + ["--train_steps=4", "--iterations=1"])  # "last"
  assert resumed.startswith(
      f"run_classifier.py: error: --summary_type=last but {model_dir} was "
      "trained "
      f"with --summary_type=mean ({model_dir / 'head.json'}): its head pools "
      "the sequence that way; rerun with --summary_type=mean"), resumed
  evaluated = [a for a in short if a != "--do_train"]
  for extra, flag in ((["--summary_type=first"], "--summary_type=first"),
                      (["--summary_type=mean", "--use_summ_proj=false"],
                       "--use_summ_proj=False"),
                      (["--nodo_eval", "--do_predict",
                        f"--predict_dir={tmp_path / 'predictions'}",
                        f"--predict_ckpt={model_dir / 'model.ckpt-2'}"],
                       "--summary_type=last")):
    line = refused(evaluated + extra)
    assert line.startswith(f"run_classifier.py: error: {flag} but "
                           f"{model_dir} was trained with "), line
  _ok(evaluated + ["--summary_type=mean"])
  assert "eval_accuracy" in _results(tmp_path)


def test_a_warning_when_init_checkpoint_pooled_otherwise(tmp_path, caplog):
  """Starting a fine-tuning from a checkpoint whose directory records
  another summary (an HF model converted back, or another run) is allowed
  for a new head, and said in one warning; the same summary says
  nothing."""
  prefix = checkpoint_io.write_checkpoint(
      str(tmp_path / "model.ckpt-1"), {"w": np.zeros([2], np.float32)})
  (tmp_path / "head.json").write_text(
      '{"summary_type": "mean", "use_summ_proj": true}')
  caplog.set_level("WARNING")
  finetune.warn_if_init_head_differs(
      prefix, {"summary_type": "mean", "use_summ_proj": True})
  assert not caplog.records
  finetune.warn_if_init_head_differs(
      str(tmp_path), {"summary_type": "last", "use_summ_proj": True})
  assert [r.levelname for r in caplog.records] == ["WARNING"]
  message = caplog.records[0].getMessage()
  assert "was fine-tuned with {'summary_type': 'mean'" in message
  assert "this run pools with {'summary_type': 'last'" in message


def _scale_fn(features, is_training):
  """outputs = x * w for a variable w (to be read from a checkpoint)."""
  del is_training
  w = tf.compat.v1.get_variable("w", [3], initializer=tf.zeros_initializer())
  return {"y": features["x"] * w, "id": features["id"]}


@pytest.mark.quick
@pytest.mark.tf_version
@pytest.mark.parametrize("replicas", [1, 2])
def test_predict_returns_every_example_once_in_order(tmp_path, replicas,
                                                      monkeypatch):
  """11 examples in batches of 4 (last one partial) over 1 or 2 replicas:
  padded to full steps inside, returned exactly once each, in order, from
  the checkpoint's weights."""
  prefix = str(tmp_path / "model.ckpt-1")
  checkpoint_io.write_checkpoint(prefix, {"w": np.array([1., 2., 3.],
                                                        np.float32)})
  x = np.arange(33, dtype=np.float32).reshape(11, 3)

  def input_fn(params):
    return tf.data.Dataset.from_tensor_slices(
        {"x": x, "id": np.arange(11)}).batch(params["batch_size"])

  run = finetune_config.EngineConfig(
      checkpoint=train_config.CheckpointConfig(model_dir=str(tmp_path)),
      layout=train_config.BatchLayout(train_batch_size=replicas,
                                      num_core_per_host=replicas))
  strategy = (tf.distribute.get_strategy() if replicas == 1 else
              tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
  monkeypatch.setattr(strategies, "for_inference",
                      lambda device, num_core_per_host: strategy)
  out = finetune.predict(run, prefix, input_fn, _scale_fn, 4 * replicas)
  np.testing.assert_array_equal(out["id"], np.arange(11))
  np.testing.assert_allclose(out["y"], x * [1., 2., 3.])


@pytest.mark.quick
@pytest.mark.tf_version
def test_padding_to_full_steps_keeps_order_and_marks_fakes():
  dataset = tf.data.Dataset.from_tensor_slices(
      {"v": np.arange(7)}).batch(3)
  batches = list(predictor_lib.pad_to_full_steps(dataset, 2, 2))
  assert len(batches) == 4  # two full steps of 2 replicas x 2 examples
  values = np.concatenate([b["v"].numpy() for b in batches])
  real = np.concatenate([b[predictor_lib.REAL].numpy() for b in batches])
  np.testing.assert_array_equal(values[real == 1], np.arange(7))
  assert real.sum() == 7 and (values[real == 0] == 0).all()


def test_a_resume_with_other_model_sizes_is_refused_in_one_line(tmp_path):
  """config.json of a fine-tuned model_dir holds the sizes its checkpoints
  have; another --model_config_path is refused naming that flag (the sizes
  are no flags of the fine-tuning programs)."""
  import json  # pylint: disable=import-outside-toplevel
  path = tmp_path / "config.json"
  path.write_text(json.dumps({"n_layer": 2, "d_model": 32}))
  finetune._compare_sizes(str(path), {"n_layer": 2, "d_model": 32},
                          str(tmp_path))  # the same sizes: no error
  with pytest.raises(ValueError) as info:
    finetune._compare_sizes(str(path), {"n_layer": 2, "d_model": 64},
                            str(tmp_path))
  assert str(info.value) == (
      f"--model_config_path gives d_model=64 but {tmp_path} was trained with "
      f"d_model=32 ({path}): its checkpoints have those sizes; give the "
      "config it was trained with or use another --model_dir")


def test_a_step_out_of_memory_stops_with_a_safer_command_that_resumes(
    tmp_path, pretrained, monkeypatch):
  """A planned step that runs out of device memory (injected: the 2nd step
  raises what TensorFlow's allocator raises) ends the program with one line
  naming the plan, the device and the command with --accum_steps doubled
  (--train_batch_size halved: the same batch); the newest checkpoint stays
  as it was, and that command resumes from it to the end."""
  from xlnet.training import trainer as trainer_lib  # pylint: disable=import-outside-toplevel
  rng = random.Random(0)
  data = _task_dir(tmp_path, {"train": 40}, lambda i: (
      i % 2, " ".join(rng.choice(WORDS) for _ in range(8))))
  args = [a for a in _classifier_args(pretrained, tmp_path, data)
          if a.split("=")[0] not in ("--do_eval", "--train_steps",
                                     "--train_batch_size", "--iterations")]
  args += ["--train_batch_size=4", "--train_steps=3", "--save_steps=1",
           "--iterations=1"]
  model_dir = tmp_path / "finetuned"
  make_step = trainer_lib.Trainer.make_train_step

  def failing_second(self):
    step_fn, calls = make_step(self), []

    def run(iterator, stop_flag):
      calls.append(1)
      if len(calls) == 2:
        raise tf.errors.ResourceExhaustedError(
            None, None, "OOM when allocating tensor with shape[4,2,24,48]")
      return step_fn(iterator, stop_flag)
    return run

  with monkeypatch.context() as patch:
    patch.setattr(trainer_lib.Trainer, "make_train_step", failing_second)
    result = _run(args)
  assert result.returncode == 1
  line = result.stderr.strip().split("\n")[-1]
  want = ("run_classifier.py: error: out of device memory in step 2: the "
          "plan --train_batch_size=4 per device x --accum_steps=1 does not "
          "fit CPU:0; the same batch, split further: run_classifier.py ")
  assert line.startswith(want), line
  assert line.endswith(f" --train_batch_size=2 --accum_steps=2 (it resumes "
                       f"from model.ckpt-1 in {model_dir})"), line
  assert [s for s, _ in checkpoint_io.list_checkpoints(str(model_dir))] == [1]
  command = line[len(want) - len("run_classifier.py "):-len(
      f" (it resumes from model.ckpt-1 in {model_dir})")]
  resumed = _ok(command.split()[1:])
  assert re.search(r"Resumed from \S*model.ckpt-1 at step 1", resumed.stderr)
  assert [s for s, _ in checkpoint_io.list_checkpoints(str(model_dir))][
      -1] == 3


def test_evaluation_out_of_memory_names_eval_batch_size(tmp_path, pretrained,
                                                       monkeypatch):
  """An evaluation that runs out of device memory (injected: a batch of
  more than 4 examples raises what TensorFlow's allocator raises) names
  --eval_batch_size, not training's plan (it advised accumulation and
  resuming training); the advice followed evaluates the trained
  checkpoint without training again."""
  rng = random.Random(0)
  data = _task_dir(tmp_path, {"train": 16, "dev": 12}, lambda i: (
      i % 2, " ".join(rng.choice(WORDS) for _ in range(8))))
  args = [a for a in _classifier_args(pretrained, tmp_path, data)
          if a.split("=")[0] not in ("--train_steps", "--train_batch_size",
                                     "--iterations", "--eval_batch_size")]
  args += ["--train_batch_size=4", "--train_steps=2", "--iterations=1"]
  predict = predictor_lib.Predictor.predict

  def small_batches_only(self, dataset, per_replica):
    if per_replica > 4:
      raise tf.errors.ResourceExhaustedError(
          None, None, f"OOM when allocating tensor with shape[{per_replica},"
          "24,64]")
    return predict(self, dataset, per_replica)

  monkeypatch.setattr(predictor_lib.Predictor, "predict", small_batches_only)
  result = _run(args + ["--eval_batch_size=8"])
  assert result.returncode == 1
  assert result.stderr.strip().split("\n")[-1] == (
      "run_classifier.py: error: out of device memory while evaluating with "
      "--eval_batch_size=8 (OOM when allocating tensor with shape[8,24,64]): "
      "a smaller --eval_batch_size fits better (e.g. --eval_batch_size=4); "
      "the trained checkpoints are kept, and a rerun trains no step again")
  assert re.search(r"\] \[2\] \|", result.stderr)  # trained: step 2 logged
  model_dir = str(tmp_path / "finetuned")
  assert [s for s, _ in checkpoint_io.list_checkpoints(model_dir)] == [2]
  done = _ok(args + ["--eval_batch_size=4"])
  assert re.search(r"Resumed from \S*model.ckpt-2 at step 2", done.stderr)
  assert not re.search(r"\] \[\d+\] \|", done.stderr)  # no step logged
  assert int(_results(tmp_path)["num_examples"]) == 12


def test_the_next_safer_split_keeps_each_devices_examples():
  """By hand: the next smaller micro-batch that divides the device's
  examples per step (8 x 1 -> 4 x 2; 3 x 1 -> 1 x 3), none below 1; the
  command keeps every other argument and drops both forms of a flag."""
  assert finetune.safer_split(8, 1) == (4, 2)
  assert finetune.safer_split(6, 2) == (3, 4)
  assert finetune.safer_split(3, 1) == (1, 3)
  assert finetune.safer_split(1, 4) is None
  assert finetune.with_flags(
      ["--a=1", "--train_batch_size", "8", "x", "--accum_steps=1", "-b"],
      train_batch_size=4, accum_steps=2) == [
          "--a=1", "x", "-b", "--train_batch_size=4", "--accum_steps=2"]
