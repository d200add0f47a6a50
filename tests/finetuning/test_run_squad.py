"""run_squad.py: flags, the release's scripts, sharded preprocessing, the
training input handed to the engine, and prediction end to end with a
stand-in for the engine."""
import copy
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from tests import data_helpers
from tests import in_process
from tests import qa_fixtures
from tests.data_helpers import REPO_ROOT
from tests.data_helpers import train_tiny_spm
from xlnet.data import prepro_utils
from xlnet.finetuning import api
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning import finetune
from xlnet.finetuning import qa_records
from xlnet.finetuning.squad import features as squad_features
from xlnet.finetuning.squad import predictions as squad_predictions
from xlnet.finetuning.squad import task as squad_task
from xlnet.flags import finetuning as finetune_flags
from xlnet.programs import run_squad
from xlnet.training import checkpoint_io
from xlnet.training.config import DEFAULT_SEED

SMALL = ["--max_seq_length=48", "--max_query_length=8", "--doc_stride=12",
         "--max_answer_length=10", "--start_n_top=3", "--end_n_top=2",
         "--n_best_size=3", "--dropout=0", "--dropatt=0"]


def _seed(flags):
  """The run's seed of api.run_squad's keyword arguments `flags`."""
  return finetune_config.run_seed(flags["engine"], flags["seed"])


def _sp_model(flags):
  """The SentencePiece model of api.run_squad's keyword arguments."""
  return prepro_utils.load_sp_model(flags["task"].spiece_model_file,
                                    "--spiece_model_file")


def _write_shard(flags, sp_model=None):
  """Writes the one training shard of `flags`' run; returns its path."""
  if sp_model is None:
    sp_model = _sp_model(flags)
  return squad_task.prepro_train_shard(flags["task"], sp_model, 0, 1,
                                       seed=_seed(flags))


@pytest.fixture()
def squad(tmp_path):
  """Paths and flags of a tiny SQuAD run."""
  data = qa_fixtures.synthetic_squad(np.random.default_rng(5), 8, 4)
  train = qa_fixtures.write_json(tmp_path / "train-v2.0.json", {"data": data})
  dev = qa_fixtures.write_json(tmp_path / "dev-v2.0.json", {"data": data})
  base = ["run_squad.py", f"--spiece_model_file={train_tiny_spm()}",
          f"--output_dir={tmp_path / 'proc'}",
          f"--model_dir={tmp_path / 'model'}",
          f"--model_config_path={qa_fixtures.write_tiny_config(tmp_path)}",
          f"--train_file={train}", f"--predict_file={dev}",
          "--seed=3"] + SMALL

  def flags(*extra):
    """The keyword arguments of api.run_squad for these flags."""
    return finetune_flags.resolve_squad(
        run_squad.parse_flags(base + list(extra)))

  return dict(flags=flags, argv=base, data=data, train=train, dev=dev,
              tmp=tmp_path)


def _count_records(path):
  return sum(1 for _ in tf.compat.v1.io.tf_record_iterator(path))


def test_sharded_prepro_and_the_training_input(squad, monkeypatch):
  for proc_id in (0, 1):
    api.run_squad(**squad["flags"]("--do_prepro", "--num_proc=2",
                                 f"--proc_id={proc_id}"))
  proc = squad["tmp"] / "proc"
  paths = sorted(glob.glob(str(proc / "*.tf_record")))
  assert [os.path.basename(p) for p in paths] == [
      f"train-v2.0.spiece-1000.slen-48.qlen-8.stride-12.train-{i}-of-2"
      ".seed-3.tf_record" for i in range(2)]
  # Beside each shard, the key of what made it (record_cache).
  assert sorted(glob.glob(str(proc / "*"))) == sorted(
      paths + [p + ".json" for p in paths])
  # Together the shards hold every window of every question, once.
  flags = squad["flags"]("--do_prepro")
  paragraphs, examples, _ = squad_features.read_squad_examples(squad["train"],
                                                               True)
  converter = squad_features.FeatureConverter(
      _sp_model(flags), paragraphs, 48, 8, 12, False, is_training=True)
  want = sum(len(f["input_ids"]) for f in converter.iter_features(examples))
  assert sum(_count_records(p) for p in paths) == want

  captured = {}
  monkeypatch.setattr(finetune, "train",
                      lambda engine, input_fn, loss_fn, allow_missing,
                      record: captured.update(fn=input_fn,
                                              allow_missing=allow_missing,
                                              record=record))
  flags = squad["flags"]("--do_train", "--num_proc=2")
  api.run_squad(**flags)
  assert captured["allow_missing"] == squad_task.NEW_VARIABLE_PATTERNS
  features, loss = qa_fixtures.first_batch(
      captured["fn"], 4, lambda f: squad_task.loss_fn(flags["model"])(
          f, True))
  assert features["input_ids"].shape == (4, 48)
  assert features["input_ids"].dtype == np.int32
  assert features["p_mask"].dtype == np.float32
  assert features["input_mask"].dtype == np.float32
  assert features["cls_index"].shape == (4,)
  assert features["is_impossible"].dtype == np.float32
  rows = np.arange(4)
  assert (features["input_ids"][rows, features["cls_index"]] == 3).all()
  assert np.isfinite(loss) and loss > 0

  os.remove(paths[1])
  with pytest.raises(ValueError, match=r"training records of shard\(s\) "
                     r"\[1\] of --num_proc=2 are not ready \(shard 1 is "
                     r"missing; expected .*train-1-of-2.seed-3.tf_record"):
    api.run_squad(**flags)


def test_training_writes_missing_records_itself(squad, monkeypatch):
  monkeypatch.setattr(finetune, "train", lambda *args, **kwargs: None)
  api.run_squad(**squad["flags"]("--do_train"))
  (path,) = glob.glob(str(squad["tmp"] / "proc" / "*.tf_record"))
  assert path.endswith(".train-0-of-1.seed-3.tf_record")
  assert _count_records(path)
  # The options that change the targets are part of the name.
  api.run_squad(**squad["flags"]("--do_train", "--trim_answer_whitespace",
                               "--keep_unaligned"))
  assert os.path.exists(path.replace(".seed-3.",
                                     ".seed-3.trim.keep-unaligned."))
  monkeypatch.undo()


def _edit_first_question(squad, text):
  """Rewrites --train_file (same name) with question p0q0 asking `text`."""
  data = copy.deepcopy(squad["data"])
  data[0]["paragraphs"][0]["qas"][0]["question"] = text
  qa_fixtures.write_json(squad["train"], {"data": data})


def _fresh_records(squad, tmp_name, *extra):
  """The training records the current files and flags make in an empty
  --output_dir (what a first run trains on)."""
  out = squad["tmp"] / tmp_name
  api.run_squad(**squad["flags"]("--do_prepro", f"--output_dir={out}",
                                 *extra))
  (path,) = glob.glob(str(out / "*.tf_record"))
  return qa_fixtures.read_records(path)


def test_training_records_follow_the_data_and_vocabulary(squad, monkeypatch,
                                                         caplog):
  """The cached records are keyed by the bytes of --train_file and of the
  SentencePiece model, not their names: an edited file or another model
  under the same name rebuilds them (one log line saying what differs); an
  unchanged rerun reuses them."""
  monkeypatch.setattr(finetune, "train", lambda *args, **kwargs: None)
  writes = []
  write_records = qa_records.write_records
  monkeypatch.setattr(qa_records, "write_records", lambda *a: (
      writes.append(a[0]), write_records(*a))[1])
  caplog.set_level("INFO")
  vocab = squad["tmp"] / "vocab" / "spiece.model"
  vocab.parent.mkdir()
  shutil.copyfile(train_tiny_spm(), vocab)
  args = ("--do_train", f"--spiece_model_file={vocab}")
  api.run_squad(**squad["flags"](*args))
  (path,) = glob.glob(str(squad["tmp"] / "proc" / "*.tf_record"))
  before = qa_fixtures.read_records(path)
  assert len(writes) == 1

  caplog.clear()
  api.run_squad(**squad["flags"](*args))
  api.run_squad(**squad["flags"]("--do_prepro", *args[1:]))
  assert len(writes) == 1 and "Reusing" in caplog.text

  _edit_first_question(squad, "Which school went over the river?")
  caplog.clear()
  api.run_squad(**squad["flags"](*args))
  assert len(writes) == 2
  qa_fixtures.assert_rewritten_for(caplog, path, "train_file_sha1")
  after = qa_fixtures.read_records(path)
  assert after != before and after == _fresh_records(squad, "fresh-data",
                                                     *args[1:])

  shutil.copyfile(train_tiny_spm(vocab_size=800), vocab)
  caplog.clear()
  api.run_squad(**squad["flags"](*args))
  assert len(writes) == 4  # ours and the fresh ones above
  assert "(differing: spiece_sha1); rewriting it" in caplog.text
  assert qa_fixtures.read_records(path) == _fresh_records(
      squad, "fresh-vocab", *args[1:])


def test_shards_made_from_other_data_are_refused(squad, monkeypatch):
  """Each shard of a sharded preprocessing records the digest of the
  --train_file it read: training refuses a shard made before the file was
  edited, instead of mixing two versions of the data."""
  for proc_id in (0, 1):
    api.run_squad(**squad["flags"]("--do_prepro", "--num_proc=2",
                                   f"--proc_id={proc_id}"))
  _edit_first_question(squad, "Which school went over the river?")
  api.run_squad(**squad["flags"]("--do_prepro", "--num_proc=2",
                                 "--proc_id=0"))
  trained = []
  monkeypatch.setattr(finetune, "train", lambda *a, **k: trained.append(1))
  with pytest.raises(ValueError, match=r"shard\(s\) \[1\] of --num_proc=2 are "
                     r"not ready \(shard 1 was made from other data or "
                     r"settings \(differing: train_file_sha1\);"):
    api.run_squad(**squad["flags"]("--do_train", "--num_proc=2"))
  assert not trained
  api.run_squad(**squad["flags"]("--do_prepro", "--num_proc=2",
                                 "--proc_id=1"))
  api.run_squad(**squad["flags"]("--do_train", "--num_proc=2"))
  assert trained == [1]


# The release's SQuAD record types (its FeatureWriter).
RELEASE_FLOATS = ("input_mask", "p_mask", "is_impossible")
RELEASE_INTS = ("unique_ids", "input_ids", "segment_ids", "cls_index",
                "start_positions", "end_positions")


def test_training_order_follows_the_seed(squad):
  sp_model = _sp_model(squad["flags"]("--do_prepro"))
  paragraphs, examples, _ = squad_features.read_squad_examples(squad["train"],
                                                               True)
  converter = squad_features.FeatureConverter(sp_model, paragraphs, 48, 8, 12,
                                              False, is_training=True)
  # The windows (input ids) of each question, in file order (none for the
  # questions of paragraphs the release could not align).
  features = [converter.convert(0, e) for e in examples]
  groups = [[] if f is None else f["input_ids"].tolist() for f in features]
  assert 0 < sum(not g for g in groups) < len(groups) / 4
  orders = {}
  for seed in (1, 2):
    flags = squad["flags"]("--do_prepro", f"--seed={seed}")
    path = _write_shard(flags, sp_model)
    assert path.endswith(f".train-0-of-1.seed-{seed}.tf_record")
    with open(path, "rb") as f:
      first = f.read()
    os.remove(path)
    _write_shard(flags, sp_model)
    with open(path, "rb") as f:
      assert f.read() == first  # same seed, same bits
    written = [r["input_ids"][1] for r in qa_fixtures.read_records(path)]
    # The questions in the documented permutation, each with its windows.
    order = np.random.default_rng([seed, 0]).permutation(len(groups))
    assert written == [row for i in order for row in groups[i]]
    orders[seed] = order.tolist()
  assert orders[1] != orders[2]
  # Without --seed the order seed is --seed's default, DEFAULT_SEED.
  assert run_squad.parse_flags(["run_squad.py"]).seed == DEFAULT_SEED == 1


@pytest.mark.tf_version
def test_records_have_the_release_format_and_old_ones_still_read(squad):
  path = _write_shard(squad["flags"]("--do_prepro"))
  records = qa_fixtures.read_records(path)
  for record in records:
    assert {k: kind for k, (kind, _) in record.items()} == dict(
        [(k, "float_list") for k in RELEASE_FLOATS] +
        [(k, "int64_list") for k in RELEASE_INTS])
    pad = [s == 3 for s in record["segment_ids"][1]]
    assert record["input_mask"][1] == [float(p) for p in pad]
  values = [{k: v for k, (_, v) in r.items()} for r in records]
  release = squad["tmp"] / "release.tf_record"
  qa_fixtures.write_protobuf_records(release, values, RELEASE_FLOATS)
  old = squad["tmp"] / "old.tf_record"  # earlier versions: all int64
  qa_fixtures.write_protobuf_records(old, values)
  spec = squad_features.feature_spec(48, is_training=True)
  ours = qa_fixtures.assert_read_alike(qa_records.make_input_fn, spec,
                                      (path, release, old))
  assert ours["p_mask"].dtype == ours["is_impossible"].dtype == np.float32
  assert ours["p_mask"].tolist() == [r["p_mask"] for r in values]


def test_training_uses_the_releases_records_when_ours_are_missing(squad):
  flags = squad["flags"]("--do_train")
  sp_model = _sp_model(flags)
  ours = _write_shard(flags, sp_model)
  values = [{k: v for k, (_, v) in r.items()}
            for r in qa_fixtures.read_records(ours)]
  os.remove(ours)
  # The release's name: {spiece file}.{proc_id}.slen-L.qlen-Q.train....
  release = [str(squad["tmp"] / "proc" /
                 f"spiece-1000.model.{i}.slen-48.qlen-8.train.tf_record")
             for i in range(2)]
  for i, path in enumerate(release):
    qa_fixtures.write_protobuf_records(path, values[i::2], RELEASE_FLOATS)
  assert squad_task.train_record_paths(flags["task"], sp_model,
                                       seed=_seed(flags)) == release
  assert not os.path.exists(ours)
  got = data_helpers.all_batches(qa_records.make_input_fn(
      release, squad_features.feature_spec(48, True), False, False))
  assert sorted(got["unique_ids"].tolist()) == list(range(len(values)))


@pytest.mark.tf_version
def test_float_features_equal_protobuf_bytes():
  features = {"ids": np.array([[5, 300], [0, 1]]),
              "mask": np.array([[1.0, 0.0], [0.5, -2.25]], np.float32)}
  for i, raw in enumerate(
      qa_records.example_proto.serialize_examples(features)):
    expected = tf.train.Example(features=tf.train.Features(feature={
        "ids": tf.train.Feature(int64_list=tf.train.Int64List(
            value=features["ids"][i].tolist())),
        "mask": tf.train.Feature(float_list=tf.train.FloatList(
            value=features["mask"][i].tolist()))}))
    assert raw == expected.SerializeToString(deterministic=True)


@pytest.mark.tf_version
@pytest.mark.eager
def test_training_runs_on_the_engine_and_resumes(squad):
  """Two real steps write model.ckpt-2 (heads under the release's root
  scopes); a rerun to step 3 resumes from it."""
  api.run_squad(**squad["flags"]("--do_train", "--train_steps=2"))
  model_dir = str(squad["tmp"] / "model")
  names = {n for n, _ in tf.train.list_variables(model_dir)}
  assert {"start_logits/dense/kernel", "end_logits/dense_0/kernel",
          "answer_class/dense_1/kernel", "global_step"} <= names
  assert "answer_class/dense_1/bias" not in names
  api.run_squad(**squad["flags"]("--do_train", "--train_steps=3"))
  assert tf.train.latest_checkpoint(model_dir).endswith("model.ckpt-3")


@pytest.mark.tf_version
def test_predict_end_to_end_with_a_stand_in_engine(squad, monkeypatch,
                                                   caplog):
  monkeypatch.setattr(squad_task, "predict", qa_fixtures.session_predict(
      squad_task.outputs_fn))
  caplog.set_level("INFO")
  model_dir = squad["tmp"] / "model"
  model_dir.mkdir()
  job = squad["flags"]("--do_predict")
  qa_fixtures.fresh_checkpoint(
      squad_task.outputs_fn(job["task"], job["model"]),
      squad_features.feature_spec(48, is_training=False),
      str(model_dir / "model.ckpt-1"))
  rules = []
  real = squad_predictions.get_predictions
  monkeypatch.setattr(squad_predictions, "get_predictions", lambda *a, **k: (
      rules.append(k), real(*a, **k))[1])
  predict_dir = squad["tmp"] / "pred"
  metrics = api.run_squad(**squad["flags"]("--do_predict",
                                         f"--predict_dir={predict_dir}",
                                         "--target_eval_key=has_ans_f1"))
  assert rules == [dict(answer_on_last_piece=False, skip_empty_answers=False)]
  assert (f"Checkpoint rating (--target_eval_key=has_ans_f1): "
          f"{metrics['has_ans_f1']}") in caplog.text
  contexts = {qa["id"]: p["context"] for p in squad["data"][0]["paragraphs"]
              for qa in p["qas"]}
  with open(predict_dir / "predictions.json") as f:
    predictions = json.load(f)
  with open(predict_dir / "null_odds.json") as f:
    null_odds = json.load(f)
  with open(predict_dir / "nbest_predictions.json") as f:
    nbest = json.load(f)
  with open(predict_dir / "eval_results.json") as f:
    assert json.load(f) == metrics
  assert set(predictions) == set(null_odds) == set(nbest) == set(contexts)
  for qid, text in predictions.items():
    assert text in contexts[qid]
    assert isinstance(null_odds[qid], float)
    assert 1 <= len(nbest[qid]) <= 3 and nbest[qid][0]["text"] == text
    for entry in nbest[qid]:
      if entry["text"]:
        assert contexts[qid][entry["start_char"]:entry["end_char"]] == (
            entry["text"])
  for key in ("exact", "f1", "HasAns_f1", "NoAns_f1", "best_f1",
              "best_f1_thresh", "best_exact", "has_ans_exact", "has_ans_f1",
              "no_ans_exact", "no_ans_f1"):
    assert key in metrics
  assert metrics["total"] == len(contexts)
  assert not glob.glob(str(predict_dir / "*.tmp-*"))
  api.run_squad(**squad["flags"]("--do_predict", f"--predict_dir={predict_dir}",
                               "--answer_on_last_piece",
                               "--skip_empty_answers"))
  assert rules[1] == dict(answer_on_last_piece=True, skip_empty_answers=True)


def _stand_in_by_checkpoint(beams):
  """A stand-in for `squad_task.predict` whose beams depend on the
  checkpoint: `beams[checkpoint name][question word]` = (start, end,
  cls_logits), the question recognized by its first word's piece."""
  sp_model = spm.SentencePieceProcessor(model_file=train_tiny_spm())

  def predict(task, model, engine, input_fn, checkpoint):
    del task, model, engine
    features = data_helpers.all_batches(input_fn)
    rows = []
    for i, uid in enumerate(features["unique_ids"]):
      question = features["input_ids"][i][features["segment_ids"][i] == 1]
      word, = [w for w in ("who", "what")
               if sp_model.piece_to_id("\u2581" + w) in question]
      start, end, cls = beams[os.path.basename(checkpoint)][word]
      rows.append(dict(unique_ids=uid, cls_logits=np.float32(cls),
                       start_top_index=np.array([start]),
                       start_top_log_probs=np.zeros(1, np.float32),
                       end_top_index=np.array([end]),
                       end_top_log_probs=np.zeros(1, np.float32)))
    return rows
  return predict


def test_every_checkpoint_is_rated_and_the_best_picked(squad, monkeypatch,
                                                      caplog):
  """Two checkpoints over "the river said over" (pieces ▁the ▁ r ive r
  ▁said ▁over), q1 "who?" (answer "river") and q2 "what?" (impossible).
  model.ckpt-1 answers q1 "river" (pieces 1-4) but rates q1 less
  answerable than q2: has_ans_f1 100, best_f1 50 (no threshold does better
  than leaving both unanswered). model.ckpt-2 answers "river said" (pieces
  1-5; F1 2/3) with the right null scores: has_ans_f1 66.67, best_f1
  (1 + 2/3) / 2 = 83.33."""
  data = [{"title": "t", "paragraphs": [{
      "context": "the river said over", "qas": [
          {"id": "q1", "question": "who?", "is_impossible": False,
           "answers": [{"text": "river", "answer_start": 4}]},
          {"id": "q2", "question": "what?", "is_impossible": True,
           "answers": []}]}]}]
  dev = qa_fixtures.write_json(squad["tmp"] / "dev-hand.json",
                               {"data": data})
  model_dir = squad["tmp"] / "model"
  model_dir.mkdir()
  for step in (1, 2):  # intact checkpoints of one variable (predict stands in)
    checkpoint_io.write_checkpoint(str(model_dir / f"model.ckpt-{step}"),
                                   {"step": np.array(step, np.int64)})
  (model_dir / "checkpoint").write_text(
      'model_checkpoint_path: "model.ckpt-2"\n')
  monkeypatch.setattr(squad_task, "predict", _stand_in_by_checkpoint({
      "model.ckpt-1": {"who": (1, 4, 5.0), "what": (1, 4, -5.0)},
      "model.ckpt-2": {"who": (1, 5, -5.0), "what": (1, 5, 5.0)}}))
  caplog.set_level("INFO")
  expected = {"model.ckpt-1": dict(has_ans_f1=100.0, best_f1=50.0),
              "model.ckpt-2": dict(has_ans_f1=200 / 3, best_f1=250 / 3)}
  for key, best in (("has_ans_f1", "model.ckpt-1"),
                    ("best_f1", "model.ckpt-2")):
    predict_dir = squad["tmp"] / key
    metrics = api.run_squad(**squad["flags"](
        "--do_predict", f"--predict_file={dev}", "--eval_all_ckpt",
        f"--predict_dir={predict_dir}", f"--target_eval_key={key}"))
    # The prediction files are the latest checkpoint's.
    assert metrics["has_ans_f1"] == pytest.approx(200 / 3)
    assert json.loads((predict_dir / "eval_results.json").read_text()) == (
        metrics)
    assert json.loads((predict_dir / "predictions.json").read_text()) == {
        "q1": "river said", "q2": "river said"}
    lines = (predict_dir / "eval_results.txt").read_text().splitlines()
    entries = [dict(f.split("=", 1) for f in line.split("\t")[1:])
               for line in lines]
    assert [line.split("\t")[0] for line in lines] == ["eval", "eval",
                                                       "best"]
    for entry in entries[:2]:
      name = os.path.basename(entry["checkpoint"])
      assert entry["task"] == "squad" and entry["split"] == "dev-hand"
      for metric, value in expected[name].items():
        assert float(entry[metric]) == pytest.approx(value, abs=1e-6)
    assert os.path.basename(entries[2]["checkpoint"]) == best
    assert entries[2]["metric"] == key
    assert (f"Best checkpoint by --target_eval_key={key}: "
            f"{model_dir / best}") in caplog.text
  # Without --eval_all_ckpt only the latest is evaluated.
  predict_dir = squad["tmp"] / "latest"
  api.run_squad(**squad["flags"]("--do_predict", f"--predict_file={dev}",
                               f"--predict_dir={predict_dir}"))
  lines = (predict_dir / "eval_results.txt").read_text().splitlines()
  assert [(line.split("\t")[0], f"checkpoint={model_dir / 'model.ckpt-2'}"
           in line.split("\t")) for line in lines] == [("eval", True),
                                                       ("best", True)]


@pytest.mark.parametrize("extra,match", [
    ([], "nothing to do: set --do_prepro, --do_train and/or --do_predict"),
    (["--do_predict", "--predict_file="],
     "--predict_file is required with --do_predict"),
    (["--do_train", "--max_seq_length=11"],
     r"--max_seq_length=11 leaves no room for the paragraph: it must be at "
     r"least --max_query_length \+ 4 = 12"),
    (["--do_prepro", "--num_proc=2", "--proc_id=2"],
     r"--proc_id=2 must be in \[0, --num_proc=2\)"),
    (["--do_predict", "--n_best_size=0"], "--n_best_size=0 must be >= 1"),
    (["--do_predict", "--start_n_top=60"],
     "--start_n_top=60 exceeds --max_seq_length=48"),
    (["--do_train", "--seed=-1"],
     "--seed=-1: the order of the training examples needs a seed >= 0"),
    (["--do_predict", "--eval_all_ckpt"],
     r"--model_dir=.*/model holds no checkpoint to evaluate \(train first "
     r"with --do_train\)"),
])
@pytest.mark.quick
def test_bad_flags_name_the_flag(squad, extra, match):
  with pytest.raises(ValueError, match=match):
    api.run_squad(**squad["flags"](*extra))


def test_command_line_errors_are_one_line(squad, tmp_path):
  """The program's exit code and one line (its command line run in this
  process, tests/in_process.py; real processes of run_squad.py:
  test_prepro_script_runs_on_the_official_layout, test_reproduce.py)."""
  empty = qa_fixtures.write_json(tmp_path / "empty.json", {"data": []})
  args = [a for a in squad["argv"] if not a.startswith("--predict_file")]
  proc = in_process.run_program("run_squad.py", *args[1:], "--do_predict",
                                f"--predict_file={empty}", cwd=REPO_ROOT)
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines()[-1] == (
      f"run_squad.py: error: --predict_file={empty}: no questions found")
  assert "Traceback" not in proc.stderr


def _script_commands(tmp_path, script, env):
  """Runs scripts/{script} with a python stand-in that records its argv;
  returns one argv list per call."""
  log_dir = tmp_path / "calls"
  log_dir.mkdir(exist_ok=True)
  fake = tmp_path / "fake_python"
  fake.write_text("#!/bin/sh\nprintf '%s\\n' \"$@\" > "
                  f"{log_dir}/call.$$\n")
  fake.chmod(0o755)
  subprocess.run(["bash", os.path.join(REPO_ROOT, "scripts", script)],
                 check=True, cwd=REPO_ROOT, timeout=60,
                 env=dict(os.environ, PYTHON=str(fake), **env))
  calls = []
  for path in sorted(log_dir.iterdir()):
    calls.append(path.read_text().splitlines())
    path.unlink()
  return calls


def test_release_scripts_parse_with_the_papers_settings(tmp_path):
  env = dict(TPU_NAME="tpu", SQUAD_DIR="sq", INIT_CKPT_DIR="gs://b/ck",
             LOCAL_INIT_CKPT_DIR="ck", PROC_DATA_DIR="gs://b/proc",
             MODEL_DIR="gs://b/model", NUM_PROC="3")
  calls = _script_commands(tmp_path, "prepro_squad.sh", env)
  assert len(calls) == 3
  proc_ids = set()
  for argv in calls:
    flags = run_squad.parse_flags(argv)
    assert flags.do_prepro and flags.num_proc == 3
    assert flags.train_file == "sq/train-v2.0.json"
    proc_ids.add(flags.proc_id)
  assert proc_ids == {0, 1, 2}

  (argv,) = _script_commands(tmp_path, "tpu_squad_large.sh", env)
  flags = run_squad.parse_flags(argv)
  assert argv[0] == "run_squad.py" and flags.use_tpu and flags.tpu == "tpu"
  assert (flags.learning_rate, flags.train_batch_size, flags.train_steps,
          flags.warmup_steps, flags.max_seq_length, flags.adam_epsilon,
          flags.lr_layer_decay_rate) == (3e-5, 48, 8000, 1000, 512, 1e-6,
                                         0.75)
  assert flags.do_train and flags.do_predict and flags.num_proc == 3

  (argv,) = _script_commands(tmp_path, "gpu_squad_base.sh", env)
  flags = run_squad.parse_flags(argv)
  assert not flags.use_tpu and flags.num_core_per_host == 3
  assert (flags.learning_rate, flags.train_batch_size,
          flags.train_steps) == (2e-5, 8, 12000)


def test_prepro_script_runs_on_the_official_layout(tmp_path):
  squad_dir = tmp_path / "squad"
  squad_dir.mkdir()
  data = qa_fixtures.synthetic_squad(np.random.default_rng(9), 4, 3)
  qa_fixtures.write_json(squad_dir / "train-v2.0.json", {"data": data})
  ckpt_dir = tmp_path / "ckpt"
  ckpt_dir.mkdir()
  os.symlink(train_tiny_spm(), ckpt_dir / "spiece.model")
  subprocess.run(
      ["bash", os.path.join(REPO_ROOT, "scripts", "prepro_squad.sh"),
       "--max_seq_length=128", "--seed=5"], check=True, cwd=REPO_ROOT, timeout=600,
      capture_output=True,
      env=dict(os.environ, PYTHON=sys.executable, SQUAD_DIR=str(squad_dir),
               INIT_CKPT_DIR=str(ckpt_dir), NUM_PROC="2",
               PROC_DATA_DIR=str(tmp_path / "proc"),
               TF_CPP_MIN_LOG_LEVEL="3"))
  names = sorted(os.listdir(tmp_path / "proc"))
  assert names == [f"train-v2.0.spiece.slen-128.qlen-64.stride-128.train-"
                   f"{i}-of-2.seed-5.tf_record{key}" for i in range(2)
                   for key in ("", ".json")]
