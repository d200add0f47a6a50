"""run_classifier: flags, data preparation, results files and bad input.

Here the two calls into the fine-tuning engine (`train`, `run_inference`)
are replaced by stand-ins that build the real input function and head and
return outputs whose metrics are known, so the orchestration (which
checkpoints are evaluated, what is written where) is checked exactly;
tests/finetuning/test_finetune.py runs the real engine.
"""
import json
import os
import shlex
import subprocess

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import data_helpers
from tests import in_process
from xlnet.finetuning import api
from xlnet.finetuning import checkpoint_eval
from xlnet.finetuning import finetune
from xlnet.finetuning.classifier import task as classifier_task
from xlnet.flags import finetuning as finetune_flags
from xlnet.programs import run_classifier
from xlnet.training import checkpoint_io

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A model config whose vocabulary covers the tiny SentencePiece model.
CONFIG = dict(fx.TINY_CONFIG, n_token=1000)


def parse(argv):
  """Fresh flag values holding every run_classifier flag, parsed."""
  flag_values = flags.FlagValues()
  run_classifier.define_flags(flag_values)
  flag_values(["run_classifier.py"] + list(argv))
  return flag_values


def run(flag_values):
  """What run_classifier.py's main does with parsed flags."""
  return api.run_classifier(**finetune_flags.resolve_classifier(flag_values))


def released_model_dir(root):
  """A stand-in for the released XLNet-Large directory: spiece.model,
  xlnet_config.json and xlnet_model.ckpt (backbone only, by name)."""
  large = os.path.join(root, "xlnet_cased_L-24_H-1024_A-16")
  os.makedirs(large, exist_ok=True)
  data_helpers.train_tiny_spm(large)
  os.rename(os.path.join(large, "spiece-1000.model"),
            os.path.join(large, "spiece.model"))
  fx.write_config(large, CONFIG)
  fx.write_checkpoint(os.path.join(large, "xlnet_model.ckpt"),
                      fx.random_values(fx.pretrained_shapes(CONFIG)))
  return large


def stsb_dir(root, n=6):
  """GLUE STS-B layout with n rows per split (scores 0..5)."""
  head = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
          "sentence1\tsentence2")
  data = os.path.join(root, "glue", "STS-B")
  os.makedirs(data, exist_ok=True)
  for split in ("train", "dev", "test"):
    rows = [f"{i}\tmain\tMSRvid\t2012\t{i:04d}\tnone\tnone\tA man plays "
            f"{i}.\tA man plays music {i}." for i in range(n)]
    if split != "test":
      rows = [f"{r}\t{i * 5 / (n - 1):.3f}" for i, r in enumerate(rows)]
    with open(os.path.join(data, f"{split}.tsv"), "w") as f:
      f.write(head + ("\tscore" if split != "test" else "") + "\n")
      f.write("\n".join(rows) + "\n")
  return data


def imdb_dir(root):
  """aclImdb layout with three reviews per label and split."""
  data = os.path.join(root, "aclImdb")
  for split in ("train", "test"):
    for label, word in (("neg", "awful"), ("pos", "great")):
      os.makedirs(os.path.join(data, split, label), exist_ok=True)
      for i in range(3):
        with open(os.path.join(data, split, label, f"{i}_{i + 1}.txt"),
                  "w") as f:
          f.write(f"A {word} film.<br />Number {i}.")
  return data


def fake_checkpoints(model_dir, steps):
  """Empty `model.ckpt-{step}.index` files and the `checkpoint` state file:
  enough for the checkpoint listing (the stand-in engine reads no weights)."""
  os.makedirs(model_dir, exist_ok=True)
  prefixes = [os.path.join(model_dir, f"model.ckpt-{step}") for step in steps]
  for prefix in prefixes:
    open(prefix + ".index", "w").close()
  tf.compat.v1.train.update_checkpoint_state(
      model_dir, prefixes[-1], all_model_checkpoint_paths=prefixes)


class FakeEngine:
  """Stands in for the engine: `train` builds the real input and head and
  saves (empty) checkpoints; `run_inference` reads the real eval input and
  returns logits that are right for the last checkpoint and noisy before."""

  def __init__(self, checkpoint_steps=(600, 1200)):
    self.steps = checkpoint_steps
    self.trained = []
    self.inferred = []

  def train(self, engine, input_fn, head_fn, head_record, record=None):
    self.head_record, self.record = head_record, record
    # The batch as its flag says (global with --use_tpu, else per GPU).
    batch_size = finetune.batch_layout_record(
        engine.layout, engine.device.use_tpu)["train_batch_size"]
    with tf.Graph().as_default():
      batch = tf.compat.v1.data.make_one_shot_iterator(
          input_fn({"batch_size": batch_size})).get_next()
      outputs = head_fn(batch, True)
      with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        loss, ids = sess.run([outputs["total_loss"], batch["input_ids"]])
    assert np.isfinite(loss)
    self.trained.append((batch_size, ids.shape))
    fake_checkpoints(engine.model_dir, self.steps)

  def run_inference(self, engine, checkpoint, input_fn, head_fn, batch_size):
    del engine, head_fn
    with tf.Graph().as_default():
      rows = data_helpers.batches_of(input_fn({"batch_size": batch_size}))
    got = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    assert all(len(r["input_ids"]) == batch_size for r in rows)
    labels = got["label_ids"]
    good = checkpoint.endswith(f"-{self.steps[-1]}")
    noise = np.where(np.arange(len(labels)) % 2 == 0, 1.0, -1.0) * 2.0
    if labels.dtype == np.float32:
      logits = labels + (0.0 if good else noise)
      loss = (logits - labels) ** 2
    else:
      logits = np.eye(2)[labels if good else 1 - labels] * 3.0
      loss = np.where(np.argmax(logits, -1) == labels, 0.1, 3.0)
    self.inferred.append(checkpoint)
    return {"logits": logits, "per_example_loss": loss, "label_ids": labels,
            "is_real_example": got["is_real_example"]}


@pytest.fixture(name="engine")
def fixture_engine(monkeypatch):
  engine = FakeEngine()
  monkeypatch.setattr(classifier_task, "train", engine.train)
  monkeypatch.setattr(classifier_task, "run_inference", engine.run_inference)
  return engine


def read_results(model_dir):
  with open(os.path.join(model_dir, "eval_results.txt")) as f:
    return [line.rstrip("\n").split("\t") for line in f]


def event_scalars(logdir):
  """{(tag, step): value} of every event file in logdir."""
  out = {}
  for name in os.listdir(logdir):
    for event in tf.compat.v1.train.summary_iterator(
        os.path.join(logdir, name)):
      for value in event.summary.value:
        out[(value.tag, event.step)] = value.simple_value
  return out


################################################################################
# The original README's commands on stand-in data.
################################################################################
def test_readme_stsb_gpu_commands(tmp_path, engine, monkeypatch):
  large = released_model_dir(str(tmp_path))
  glue = stsb_dir(str(tmp_path))
  monkeypatch.chdir(tmp_path)
  common = [f"--data_dir={glue}", "--task_name=sts-b",
            "--output_dir=proc_data/sts-b", "--model_dir=exp/sts-b",
            "--uncased=False", f"--spiece_model_file={large}/spiece.model",
            f"--model_config_path={large}/xlnet_config.json",
            "--max_seq_length=128", "--num_hosts=1", "--is_regression=True"]
  run(parse([
      "--do_train=True", "--do_eval=False", *common,
      f"--init_checkpoint={large}/xlnet_model.ckpt", "--train_batch_size=8",
      "--num_core_per_host=4", "--learning_rate=5e-5", "--train_steps=1200",
      "--warmup_steps=120", "--save_steps=600"]))
  assert engine.trained == [(8, (8, 128))]
  records = sorted(os.listdir("proc_data/sts-b"))
  assert [r.split(".")[:3] for r in records if r.endswith("tf_record")] == [
      ["sts-b", "train", "len-128"]]

  run(parse([
      "--do_train=False", "--do_eval=True", *common, "--eval_batch_size=8",
      "--num_core_per_host=1", "--eval_all_ckpt=True"]))
  assert [os.path.basename(c) for c in engine.inferred] == [
      "model.ckpt-600", "model.ckpt-1200"]
  lines = read_results("exp/sts-b")
  assert [line[0] for line in lines] == ["eval", "eval", "best"]
  assert "step=1200" in lines[2] and "metric=eval_pearsonr" in lines[2]
  assert "eval_pearsonr=1.000000" in lines[1]
  assert "num_examples=6" in lines[0]
  scalars = event_scalars("exp/sts-b/eval_sts-b_dev")
  assert scalars[("eval_pearsonr", 1200)] == pytest.approx(1.0)
  assert ("eval_spearmanr", 600) in scalars


def test_readme_imdb_tpu_command(tmp_path, engine):
  large = released_model_dir(str(tmp_path))
  imdb = imdb_dir(str(tmp_path))
  gs_root = str(tmp_path / "bucket")
  run(parse([
      "--use_tpu=True", "--tpu=my-tpu", "--do_train=True", "--do_eval=True",
      "--eval_all_ckpt=True", "--task_name=imdb", f"--data_dir={imdb}",
      f"--output_dir={gs_root}/proc_data/imdb",
      f"--model_dir={gs_root}/exp/imdb", "--uncased=False",
      f"--spiece_model_file={large}/spiece.model",
      f"--model_config_path={large}/xlnet_config.json",
      f"--init_checkpoint={large}/xlnet_model.ckpt", "--max_seq_length=512",
      "--train_batch_size=32", "--eval_batch_size=8", "--num_hosts=1",
      "--num_core_per_host=8", "--learning_rate=2e-5", "--train_steps=4000",
      "--warmup_steps=500", "--save_steps=500", "--iterations=500"]))
  # With --use_tpu the batch flags are global: 6 dev reviews padded to 8.
  assert engine.trained[0][0] == 32
  lines = read_results(f"{gs_root}/exp/imdb")
  assert lines[-1][:4] == ["best", "task=imdb", "split=dev",
                           "metric=eval_accuracy"]
  assert "eval_accuracy=1.000000" in lines[-1]
  assert "eval_accuracy=0.000000" in lines[0]
  assert "num_examples=6" in lines[0]


def predict_args(tmp_path, large, glue, *extra):
  return ["--do_predict", "--task_name=sts-b", f"--data_dir={glue}",
          f"--output_dir={tmp_path}/proc", f"--model_dir={tmp_path}/exp",
          f"--spiece_model_file={large}/spiece.model",
          f"--model_config_path={large}/xlnet_config.json",
          "--predict_batch_size=4", f"--predict_dir={tmp_path}/pred", *extra]


def read_predictions(predict_dir, task):
  """(lines of {task}.tsv, {task}.logits.json, lines of {task}.ids.tsv)."""
  with open(os.path.join(predict_dir, f"{task}.tsv")) as f:
    tsv = f.read().splitlines()
  with open(os.path.join(predict_dir, f"{task}.logits.json")) as f:
    logits = json.load(f)
  with open(os.path.join(predict_dir, f"{task}.ids.tsv")) as f:
    ids = f.read().splitlines()
  return tsv, logits, ids


def test_predict_labels_the_eval_split_dev_by_default(tmp_path, engine):
  large = released_model_dir(str(tmp_path))
  glue = stsb_dir(str(tmp_path), n=5)
  fake_checkpoints(str(tmp_path / "exp"), engine.steps)
  run(parse(predict_args(tmp_path, large, glue)))
  assert engine.inferred == [f"{tmp_path}/exp/model.ckpt-1200"]
  # The stand-in predicts the dev scores 0, 1.25, ..., 5 (exact in float32);
  # the 3 fake examples that padded the second batch are not written.
  tsv, logits, ids = read_predictions(tmp_path / "pred", "sts-b")
  assert tsv == ["index\tprediction", "0\t0.0", "1\t1.25", "2\t2.5",
                 "3\t3.75", "4\t5.0"]
  assert logits == [[0.0], [1.25], [2.5], [3.75], [5.0]]
  assert ids == ["index\tid"] + [f"{i}\t{i}" for i in range(5)]

  # --eval_split=test: the unlabelled test rows (score 0 in the records).
  run(parse(predict_args(tmp_path, large, glue,
                                        "--eval_split=test")))
  tsv, logits, _ = read_predictions(tmp_path / "pred", "sts-b")
  assert tsv == ["index\tprediction"] + [f"{i}\t0.0" for i in range(5)]
  assert logits == [[0.0]] * 5


def test_evaluating_an_unlabelled_test_split_is_a_one_line_error(tmp_path,
                                                                   engine):
  large = released_model_dir(str(tmp_path))
  glue = stsb_dir(str(tmp_path), n=5)
  fake_checkpoints(str(tmp_path / "exp"), engine.steps)
  with pytest.raises(ValueError, match=r"^--do_eval with --eval_split=test: "
                     r"the test split of --task_name=sts-b has no labels"):
    run(parse(predict_args(tmp_path, large, glue, "--do_eval",
                                          "--eval_split=test")))
  assert engine.inferred == [] and not os.path.exists(tmp_path / "proc")


@pytest.mark.quick
def test_prediction_files_have_the_release_format(tmp_path):
  """Hand-made logits; the expected bytes are written out: the release's
  `index<TAB>prediction` lines (running index, label by the logit gap for
  two classes, argmax otherwise, the float as Python prints it for
  regression) and `json.dump(logits, indent=4)`."""
  write = classifier_task.write_predictions
  paths = write(str(tmp_path), "rte", ["a/1", "b/2", "c/3"],
                np.array([[0.5, -1.0], [0.0, 0.25], [1.0, 1.5]], np.float32),
                ["entailment", "not_entailment"], threshold=0.3)
  assert [os.path.basename(p) for p in paths] == [
      "rte.tsv", "rte.logits.json", "rte.ids.tsv"]
  # Gaps -1.5, 0.25, 0.5 against the threshold 0.3.
  assert (tmp_path / "rte.tsv").read_text() == (
      "index\tprediction\n0\tentailment\n1\tentailment\n"
      "2\tnot_entailment\n")
  assert (tmp_path / "rte.logits.json").read_text() == (
      "[\n    [\n        0.5,\n        -1.0\n    ],\n"
      "    [\n        0.0,\n        0.25\n    ],\n"
      "    [\n        1.0,\n        1.5\n    ]\n]")
  assert (tmp_path / "rte.ids.tsv").read_text() == (
      "index\tid\n0\ta/1\n1\tb/2\n2\tc/3\n")

  write(str(tmp_path), "mnli_matched", ["7", "8"],
        np.array([[0.0, 2.0, 1.0], [3.0, 2.0, 1.0]], np.float32),
        ["contradiction", "entailment", "neutral"])
  assert (tmp_path / "mnli_matched.tsv").read_text() == (
      "index\tprediction\n0\tentailment\n1\tcontradiction\n")

  # Regression: float32 0.1 is 0.100000001490116119384765625.
  write(str(tmp_path), "sts-b", ["x", "y"], np.array([0.1, 4.0], np.float32),
        None)
  assert (tmp_path / "sts-b.tsv").read_text() == (
      "index\tprediction\n0\t0.10000000149011612\n1\t4.0\n")
  assert (tmp_path / "sts-b.logits.json").read_text() == (
      "[\n    [\n        0.10000000149011612\n    ],\n"
      "    [\n        4.0\n    ]\n]")


################################################################################
# Results files.
################################################################################
@pytest.mark.quick
def test_eval_results_file_keeps_every_checkpoint_and_the_best(tmp_path):
  path = str(tmp_path / "eval_results.txt")
  update = checkpoint_eval.update_eval_results
  update(path, "cola", "dev", "/m/model.ckpt-200", {"eval_mcc": 0.3,
                                                    "eval_accuracy": 0.9},
         "eval_mcc")
  best = update(path, "cola", "dev", "/m/model.ckpt-100",
                {"eval_mcc": 0.5, "eval_accuracy": 0.8}, "eval_mcc")
  assert best["checkpoint"] == "/m/model.ckpt-100"
  update(path, "sst-2", "dev", "/m/model.ckpt-100", {"eval_accuracy": 0.7},
         "eval_accuracy")
  # Re-evaluating a checkpoint replaces its line and may change the best.
  best = update(path, "cola", "dev", "/m/model.ckpt-100",
                {"eval_mcc": 0.1, "eval_accuracy": 0.8}, "eval_mcc")
  assert best["step"] == "200"
  with open(path) as f:
    lines = f.read().splitlines()
  assert lines == [
      "eval\ttask=sst-2\tsplit=dev\tstep=100\tcheckpoint=/m/model.ckpt-100\t"
      "eval_accuracy=0.700000",
      "best\ttask=sst-2\tsplit=dev\tmetric=eval_accuracy\tstep=100\t"
      "checkpoint=/m/model.ckpt-100\teval_accuracy=0.700000",
      "eval\ttask=cola\tsplit=dev\tstep=100\tcheckpoint=/m/model.ckpt-100\t"
      "eval_mcc=0.100000\teval_accuracy=0.800000",
      "eval\ttask=cola\tsplit=dev\tstep=200\tcheckpoint=/m/model.ckpt-200\t"
      "eval_mcc=0.300000\teval_accuracy=0.900000",
      "best\ttask=cola\tsplit=dev\tmetric=eval_mcc\tstep=200\t"
      "checkpoint=/m/model.ckpt-200\teval_mcc=0.300000\t"
      "eval_accuracy=0.900000"]
  assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


def test_scalar_summaries_are_readable_event_files(tmp_path):
  classifier_task.write_scalar_summaries(str(tmp_path), 7, {"eval_loss": 0.5})
  classifier_task.write_scalar_summaries(str(tmp_path), 9, {"eval_loss": 0.25})
  assert event_scalars(str(tmp_path)) == {("eval_loss", 7): 0.5,
                                          ("eval_loss", 9): 0.25}


def test_predicted_labels_and_threshold():
  logits = np.array([[0.0, 1.0], [0.5, 0.0], [0.0, 0.3]])
  labels = ["neg", "pos"]
  assert classifier_task.predicted_labels(logits, labels) == [
      "pos", "neg", "pos"]
  # The second label needs a logit lead above the threshold.
  assert classifier_task.predicted_labels(logits, labels, 0.5) == [
      "pos", "neg", "neg"]
  assert classifier_task.predicted_labels(np.array([[0.0, 0.0]]), labels) == [
      "neg"]
  three = np.array([[0.0, 2.0, 1.0], [3.0, 2.0, 1.0]])
  assert classifier_task.predicted_labels(three, ["a", "b", "c"]) == ["b", "a"]
  assert classifier_task.predicted_labels(np.array([1.5, -2.0]), None) == [
      1.5, -2.0]


def test_checkpoints_sorted_by_step(tmp_path):
  for name in ("model.ckpt-1000", "model.ckpt-500", "model.ckpt-1500"):
    open(tmp_path / f"{name}.index", "w").close()
  prefixes = checkpoint_eval.checkpoints_to_evaluate(str(tmp_path),
                                                     eval_all_ckpt=True)
  assert [os.path.basename(p) for p in prefixes] == [
      "model.ckpt-500", "model.ckpt-1000", "model.ckpt-1500"]


@pytest.mark.parametrize("damage", ["newest index missing",
                                    "state file names a deleted checkpoint"])
def test_eval_reads_the_newest_intact_checkpoint(tmp_path, damage, caplog):
  """--do_eval on a directory whose newest checkpoint lost its index, or
  whose `checkpoint` file names a deleted one, evaluates the newest intact
  checkpoint and says so in one line (it said the directory holds no
  checkpoint, train first), as the other readers of a directory do
  (docs/reliability.md)."""
  model_dir = str(tmp_path)
  for step in (10, 20):
    checkpoint_io.write_checkpoint(
        os.path.join(model_dir, f"model.ckpt-{step}"),
        {"w": np.full([2], step, np.float32)}, model_dir)
  if damage == "newest index missing":
    os.remove(os.path.join(model_dir, "model.ckpt-20.index"))
    intact, skipped = "model.ckpt-10", f"{model_dir}/model.ckpt-20.index"
  else:
    for name in os.listdir(model_dir):
      if name.startswith("model.ckpt-20"):
        os.remove(os.path.join(model_dir, name))
    checkpoint_io.write_state_file(model_dir, os.path.join(
        model_dir, "model.ckpt-20"), [os.path.join(model_dir, name) for name
                                      in ("model.ckpt-10", "model.ckpt-20")])
    intact, skipped = "model.ckpt-10", f"{model_dir}/model.ckpt-20.index"
  assert checkpoint_eval.checkpoints_to_evaluate(model_dir) == [
      os.path.join(model_dir, intact)]
  (line,) = [r.getMessage() for r in caplog.records if "intact" in
             r.getMessage()]
  assert line == (f"--model_dir={model_dir}: reading {intact}, the newest "
                  f"intact checkpoint of {model_dir} (skipped: {skipped} is "
                  "missing)")
  with pytest.raises(ValueError, match=r"holds no checkpoint to evaluate"):
    checkpoint_eval.checkpoints_to_evaluate(str(tmp_path / "empty"))


################################################################################
# Bad input.
################################################################################
@pytest.fixture(name="setup", scope="module")
def fixture_setup(tmp_path_factory):
  root = str(tmp_path_factory.mktemp("run_classifier"))
  return dict(root=root, large=released_model_dir(root),
              glue=stsb_dir(root))


def base_args(setup, **overrides):
  large = setup["large"]
  args = dict(do_train="True", task_name="sts-b", data_dir=setup["glue"],
              output_dir=f"{setup['root']}/proc",
              model_dir=f"{setup['root']}/exp",
              spiece_model_file=f"{large}/spiece.model",
              model_config_path=f"{large}/xlnet_config.json",
              init_checkpoint=f"{large}/xlnet_model.ckpt")
  args.update(overrides)
  return [f"--{k}={v}" for k, v in args.items() if v is not None]


def bad_label_dir(root):
  data = os.path.join(root, "bad_label")
  os.makedirs(data, exist_ok=True)
  with open(os.path.join(data, "train.tsv"), "w") as f:
    f.write("sentence\tlabel\ngood\t1\nbad\tnegative\n")
  return data


def headless_checkpoint(root):
  """A checkpoint without one backbone variable."""
  values = fx.random_values(fx.pretrained_shapes(CONFIG))
  del values["model/transformer/layer_1/ff/layer_2/kernel"]
  return fx.write_checkpoint(os.path.join(root, "partial", "model.ckpt"),
                             values)


@pytest.mark.parametrize("overrides,message", [
    (dict(task_name="glue"), r"--task_name=glue: unknown task; expected one "
     r"of .*sst-2"),
    (dict(data_dir="{root}"), r"--data_dir=.*: expected .*/train.tsv \(GLUE "
     r"STS-B.*\), not found"),
    (dict(data_dir="{bad_label}", task_name="SST-2"), r"train.tsv line 3: "
     r"label 'negative' is not one of the labels \['0', '1'\]"),
    (dict(is_regression="False"), r"--is_regression=False but "
     r"--task_name=sts-b is a regression task"),
    (dict(max_seq_length="2"), r"--max_seq_length=2 must be >= 3"),
    (dict(model_dir="{large}"), r"--model_dir=.* is the directory of "
     r"--init_checkpoint"),
    (dict(init_checkpoint="{root}/nowhere/model.ckpt"),
     r"--init_checkpoint=.*nowhere/model.ckpt: not a checkpoint"),
    (dict(init_checkpoint="{partial}"), r"init_checkpoint=.*partial/"
     r"model.ckpt lacks 1 \(model/transformer/layer_1/ff/layer_2/kernel\) "
     r"model variables"),
    (dict(model_config_path="{small_config}"), r"--spiece_model_file=.*"
     r"spiece.model has 1000 pieces but --model_config_path=.* has "
     r"n_token=500: they belong to different models"),
    (dict(do_train="False"), r"nothing to do"),
    (dict(do_predict="True", do_train="False"), r"--predict_dir is required"),
    (dict(spiece_model_file=None), r"--spiece_model_file is required"),
    # (warmup_steps > train_steps is a valid schedule: test_flags.py)
    (dict(warmup_steps="-1"), r"--warmup_steps=-1 must be >= 0"),
])
def test_bad_input_one_line_errors(setup, engine, overrides, message):
  del engine
  paths = dict(setup, bad_label=bad_label_dir(setup["root"]),
               small_config=fx.write_config(
                   os.path.join(setup["root"], "small"),
                   dict(CONFIG, n_token=500)))
  if "{partial}" in str(overrides.get("init_checkpoint")):
    paths["partial"] = headless_checkpoint(setup["root"])
  overrides = {k: v.format(**paths) if isinstance(v, str) else v
               for k, v in overrides.items()}
  with pytest.raises(ValueError, match=message) as info:
    run(parse(base_args(setup, **overrides)))
  assert "\n" not in str(info.value)


def test_a_checkpoint_without_the_head_is_accepted(setup, engine):
  # The released checkpoint has no pooler and no head: they are new.
  run(parse(base_args(setup)))
  assert engine.trained


def test_the_model_config_beside_the_checkpoint_is_the_default(
    setup, engine, caplog, tmp_path):
  """Without --model_config_path: the released model's xlnet_config.json
  beside --init_checkpoint (our trainers' config.json likewise), named in
  a log line; a checkpoint with no config beside it needs the flag."""
  with caplog.at_level("INFO", logger="absl"):
    run(parse(base_args(setup, model_config_path=None)))
  assert engine.trained
  large = setup["large"]
  assert f"The model's sizes: {large}/xlnet_config.json (--model_config_path " \
      "not given)" in caplog.messages
  alone = fx.write_checkpoint(str(tmp_path / "alone" / "model.ckpt"),
                              fx.random_values(fx.pretrained_shapes(CONFIG)))
  with pytest.raises(ValueError, match=r"^--model_config_path is required "
                     r"\(the pretrained model's config json\): no config\.json "
                     r"or xlnet_config\.json beside --init_checkpoint or in "
                     r"--model_dir$"):
    run(parse(base_args(setup, model_config_path=None, init_checkpoint=alone,
                        model_dir=str(tmp_path / "exp2"))))


@pytest.mark.parametrize("extra,message", [
    (["--task_name=foo"], "--task_name=foo: unknown task"),
    (["--data_dir={bad_label}", "--task_name=sst-2"],
     "train.tsv line 3: label 'negative' is not one of the labels"),
])
@pytest.mark.quick
def test_command_line_errors_are_one_line(setup, extra, message):
  """The program's exit code and last line (its command line run in this
  process, tests/in_process.py; real processes of run_classifier.py:
  test_multi_worker.py, test_reproduce.py)."""
  paths = dict(setup, bad_label=bad_label_dir(setup["root"]))
  args = base_args(setup) + [e.format(**paths) for e in extra]
  proc = in_process.run_program("run_classifier.py", *args, cwd=REPO)
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith("run_classifier.py: error: ") and message in last


def test_help_says_train_batch_size_is_per_gpu():
  proc = in_process.run_program("run_classifier.py", "--help", cwd=REPO)
  assert proc.returncode == 1  # as absl's --help
  assert "Traceback" not in proc.stderr
  text = " ".join(proc.stdout.split())
  assert "--train_batch_size: Training batch size: PER GPU without --use_tpu" \
      in text
  assert "--max_seq_length" in text and "--[no]eval_all_ckpt:" in text


################################################################################
# scripts/: every command they run parses with the program's flags.
################################################################################
@pytest.mark.parametrize("script,env", [
    ("finetune_stsb_gpu.sh", dict(GLUE_DIR="/glue", LARGE_DIR="/large")),
    ("finetune_imdb_tpu.sh", dict(TPU_NAME="tpu", IMDB_DIR="/aclImdb",
                                  GS_ROOT="gs://b", LARGE_DIR="large")),
    ("finetune_glue.sh", dict(GLUE_DIR="/glue", XLNET_DIR="/base",
                              NUM_GPUS="4")),
    ("finetune_glue.sh", dict(GLUE_DIR="/glue", XLNET_DIR="/large",
                              TPU_NAME="tpu")),
])
def test_script_commands_parse(script, env):
  proc = subprocess.run(["bash", os.path.join(REPO, "scripts", script)],
                        env=dict(os.environ, DRY_RUN="1", **env),
                        capture_output=True, text=True, timeout=60)
  assert proc.returncode == 0, proc.stderr
  commands = [shlex.split(line) for line in proc.stdout.splitlines()]
  assert commands and all(c[1] == "run_classifier.py" for c in commands)
  parsed = [parse(c[2:]) for c in commands]
  tasks = [p.task_name for p in parsed]
  if script == "finetune_glue.sh":
    # Each task: train and evaluate on dev, then label the unlabelled test.
    assert tasks == [t for t in ("cola", "sst-2", "mrpc", "sts-b", "qqp",
                                 "mnli_matched", "mnli_mismatched", "qnli",
                                 "rte", "wnli") for _ in range(2)]
    assert all(p.do_eval and p.eval_split == "dev" and not p.do_predict
               for p in parsed[::2])
    assert all(p.do_predict and p.eval_split == "test" and not p.do_eval
               and not p.do_train for p in parsed[1::2])
    # zihangdai/xlnet#96 (the first author's comment of 2019-07-01): bsz,
    # lr, train_steps, warmup_step per task; QNLI (not in #96) SST-2's.
    issue_96 = {"cola": (128, 3e-5, 3000, 500), "sst-2": (32, 2e-5, 10000, 1000),
                "mrpc": (32, 5e-5, 800, 200), "sts-b": (32, 5e-5, 1200, 120),
                "qqp": (128, 3e-5, 14000, 1000),
                "mnli_matched": (128, 3e-5, 10000, 1000),
                "qnli": (32, 2e-5, 10000, 1000), "rte": (32, 3e-5, 800, 200)}
    for p in parsed[::2]:
      if p.task_name in issue_96:
        per_step = p.train_batch_size * (1 if p.use_tpu else 4)
        assert (per_step, p.learning_rate, p.train_steps, p.warmup_steps
                ) == issue_96[p.task_name], p.task_name
        assert p.eval_all_ckpt, p.task_name
    assert parsed[12].cls_scope == parsed[13].cls_scope == "mnli_matched"
    # the release's run_classifier.py default epsilon, README's length
    assert all(p.adam_epsilon == 1e-8 and p.max_seq_length == 128
               for p in parsed)
  elif script == "finetune_stsb_gpu.sh":
    train, evaluate = parsed
    assert (train.train_batch_size, train.num_core_per_host,
            train.learning_rate, train.train_steps, train.warmup_steps,
            train.is_regression) == (8, 4, 5e-5, 1200, 120, True)
    assert evaluate.eval_all_ckpt and not evaluate.do_train
  else:
    (imdb,) = parsed
    assert (imdb.use_tpu, imdb.train_batch_size, imdb.max_seq_length,
            imdb.learning_rate, imdb.train_steps, imdb.warmup_steps) == (
                True, 32, 512, 2e-5, 4000, 500)
