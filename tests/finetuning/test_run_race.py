"""run_race.py: flags, the release's scripts, records, the training input
handed to the engine, and evaluation with a stand-in for the engine."""
import json
import os
import shutil

import numpy as np
import pytest

from tests import qa_fixtures
from tests.data_helpers import train_tiny_spm
from tests.finetuning.test_run_squad import _script_commands
from xlnet.data import prepro_utils
from xlnet.finetuning import api
from xlnet.finetuning import finetune
from xlnet.finetuning import qa_records
from xlnet.finetuning.race import features as race_features
from xlnet.finetuning.race import task as race_task
from xlnet.flags import finetuning as finetune_flags
from xlnet.programs import run_race

WORDS = ["the", "school", "teacher", "said", "Botchan", "river", "over",
         "a", "man", "went", "home", "quickly", "and", "slept"]


def _race_files(rng, split, level, num_files):
  files = {}
  for f in range(num_files):
    article = " ".join(rng.choice(WORDS, 40))
    questions = ["What did the _ do?", "Who went home"]
    files[f"{split}/{level}/{f}.txt"] = {
        "article": article, "questions": questions,
        "options": [list(rng.choice(WORDS, 4)) for _ in questions],
        "answers": list(rng.choice(list("ABCD"), len(questions))),
        "id": f"{level}{f}.txt"}
  return files


@pytest.fixture()
def race(tmp_path):
  rng = np.random.default_rng(0)
  files = {}
  for split in ("train", "dev"):
    for level, count in (("middle", 2), ("high", 3)):
      files.update(_race_files(rng, split, level, count))
  data_dir = qa_fixtures.write_race_dir(tmp_path / "RACE", files)
  base = ["run_race.py", f"--data_dir={data_dir}",
          f"--spiece_model_file={train_tiny_spm()}",
          f"--output_dir={tmp_path / 'proc'}",
          f"--model_dir={tmp_path / 'model'}",
          f"--model_config_path={qa_fixtures.write_tiny_config(tmp_path)}",
          "--max_seq_length=24", "--max_qa_length=8", "--dropout=0",
          "--dropatt=0"]
  def flags(*extra):
    """The keyword arguments of api.run_race for these flags."""
    return finetune_flags.resolve_race(run_race.parse_flags(base + list(extra)))

  flags.argv = base  # the command line (tests/programs runs it)
  return flags


def _session_predict(task, model, engine, input_fn):
  """`race_task.predict` in a session (latest checkpoint, or fresh
  variables)."""
  return qa_fixtures.session_predict(
      lambda task, model: race_task.outputs_fn(model))(task, model, engine,
                                                       input_fn)


def test_train_input_and_eval_with_a_stand_in_engine(race, tmp_path,
                                                     monkeypatch):
  captured = {}
  monkeypatch.setattr(finetune, "train",
                      lambda engine, input_fn, loss_fn, allow_missing, head,
                      record: captured.update(
                          fn=input_fn, allow_missing=allow_missing, head=head,
                          record=record))
  monkeypatch.setattr(race_task, "predict", _session_predict)
  flags = race("--do_train", "--do_eval", "--seed=7")
  metrics = api.run_race(**flags)
  assert captured["allow_missing"] == race_task.NEW_VARIABLE_PATTERNS
  # What the model_dir records: the model's sizes and its vocabulary.
  assert captured["record"].xlnet_config is flags["model"].xlnet_config
  assert captured["record"].spiece_model_file == (
      flags["task"].spiece_model_file)
  assert captured["head"] == {"summary_type": "last", "use_summ_proj": True}
  assert metrics["num_middle"] == 4 and metrics["num_high"] == 6
  assert metrics["num_examples"] == 10
  assert 0 <= metrics["accuracy"] <= 1
  with open(tmp_path / "model" / "eval_results_dev.json") as f:
    assert json.load(f) == metrics

  features, loss = qa_fixtures.first_batch(
      captured["fn"], 2, lambda f: race_task.loss_fn(flags["model"])(
          f, True))
  assert features["input_ids"].shape == (2, 4 * 24)
  assert features["input_mask"].dtype == np.float32
  assert features["label_ids"].shape == (2,)
  # Every option sequence ends with <sep> <cls>.
  ids = features["input_ids"].reshape(2, 4, 24)
  assert (ids[:, :, -1] == 3).all() and (ids[:, :, -2] == 4).all()
  assert np.isfinite(loss) and loss > 0

  # Training records are reused; evaluation records are written again.
  names = sorted(os.listdir(tmp_path / "proc"))
  assert names == [
      "spiece-1000.len-24.qa-8.middle-high.dev.tf_record",
      "spiece-1000.len-24.qa-8.middle-high.train.seed-7.tf_record",
      "spiece-1000.len-24.qa-8.middle-high.train.seed-7.tf_record.json"]
  os.utime(tmp_path / "proc" / names[1], ns=(1, 1))
  os.utime(tmp_path / "proc" / names[0], ns=(1, 1))
  api.run_race(**flags)
  assert os.stat(tmp_path / "proc" / names[1]).st_mtime_ns == 1
  assert os.stat(tmp_path / "proc" / names[0]).st_mtime_ns != 1


def test_training_order_follows_the_seed(race):
  sp_model = prepro_utils.load_sp_model(train_tiny_spm(), "spiece_model_file")
  flags = race("--do_train")
  _, dev_path = race_task.prepro(flags["task"], sp_model, "dev")
  # The ids of the train split's questions, in file order.
  articles, examples = race_features.read_race_examples(
      flags["task"].data_dir, "train", race_features.LEVELS)
  converter = race_features.FeatureConverter(sp_model, articles, 24, 8, False)
  unshuffled = [converter.convert(e)["input_ids"][0].tolist()
                for e in examples]
  orders = {}
  for seed in (1, 2):
    run = race("--do_train", f"--seed={seed}")
    task = run["task"]
    _, path = race_task.prepro(task, sp_model, "train",
                               seed=run["engine"].seed)
    assert path.endswith(f".train.seed-{seed}.tf_record")
    with open(path, "rb") as f:
      first = f.read()
    os.remove(path)
    race_task.prepro(task, sp_model, "train", seed=run["engine"].seed)
    with open(path, "rb") as f:
      assert f.read() == first  # same seed, same bits
    written = [r["input_ids"][1] for r in qa_fixtures.read_records(path)]
    order = [unshuffled.index(ids) for ids in written]
    # The documented permutation of the questions read in file order.
    expected = np.random.default_rng([seed]).permutation(len(unshuffled))
    assert order == expected.tolist()
    orders[seed] = order
  assert orders[1] != orders[2] and len(set(map(tuple, unshuffled))) == 10
  assert dev_path.endswith(".dev.tf_record")


@pytest.mark.tf_version
def test_records_have_the_release_format_and_old_ones_still_read(race,
                                                                 tmp_path):
  sp_model = prepro_utils.load_sp_model(train_tiny_spm(), "spiece_model_file")
  flags = race("--do_eval")
  _, path = race_task.prepro(flags["task"], sp_model, "dev")
  records = qa_fixtures.read_records(path)
  assert len(records) == 10
  for record in records:
    # The release's keys and types: float input_mask, is_real_example.
    assert {k: kind for k, (kind, _) in record.items()} == {
        "input_ids": "int64_list", "input_mask": "float_list",
        "segment_ids": "int64_list", "label_ids": "int64_list",
        "is_real_example": "int64_list"}
    assert record["is_real_example"][1] == [1]
    pad = [s == 4 for s in record["segment_ids"][1]]
    assert record["input_mask"][1] == [float(p) for p in pad]
  values = [{k: v for k, (_, v) in r.items()} for r in records]
  release = tmp_path / "release.tf_record"
  qa_fixtures.write_protobuf_records(release, values, ["input_mask"])
  # Earlier versions of this project: all int64, example_index.
  old = tmp_path / "old.tf_record"
  qa_fixtures.write_protobuf_records(old, [
      dict({k: v for k, v in r.items() if k != "is_real_example"},
           example_index=[i]) for i, r in enumerate(values)])
  spec = race_features.feature_spec(flags["task"].max_seq_length)
  ours = qa_fixtures.assert_read_alike(qa_records.make_input_fn, spec,
                                      (path, release, old))
  assert ours["input_mask"].dtype == np.float32
  assert ours["input_mask"].tolist() == [r["input_mask"] for r in values]
  with pytest.raises(ValueError, match="'input_mask' is stored as int64 but "
                     "as float32 in"):
    qa_records.make_input_fn([path, str(old)], spec, True, True)


def test_training_uses_the_releases_records_when_ours_are_missing(race):
  sp_model = prepro_utils.load_sp_model(train_tiny_spm(), "spiece_model_file")
  flags = race("--do_train")
  _, ours = race_task.prepro(flags["task"], sp_model, "train",
                             seed=flags["engine"].seed)
  release = os.path.join(flags["task"].output_dir,
                         "spiece-1000.model.len-24.train.tf_record")
  os.rename(ours, release)
  _, path = race_task.prepro(flags["task"], sp_model, "train",
                             seed=flags["engine"].seed)
  assert path == release and not os.path.exists(ours)


def test_training_records_follow_the_data_and_vocabulary(race, tmp_path,
                                                         monkeypatch, caplog):
  """The cached training records are keyed by the bytes of the RACE files
  and of the SentencePiece model, not their names: a corrected answer (same
  file size) or another model under the same name rebuilds them (one log
  line saying what differs); an unchanged rerun reuses them."""
  writes = []
  write_records = qa_records.write_records
  monkeypatch.setattr(qa_records, "write_records", lambda *a: (
      writes.append(a[0]), write_records(*a))[1])
  caplog.set_level("INFO")
  vocab = tmp_path / "vocab" / "spiece.model"
  vocab.parent.mkdir()
  shutil.copyfile(train_tiny_spm(), vocab)

  def prepare(output_dir="proc"):
    run = race("--do_train", f"--spiece_model_file={vocab}",
               f"--output_dir={tmp_path / output_dir}")
    sp_model = prepro_utils.load_sp_model(str(vocab), "spiece_model_file")
    _, path = race_task.prepro(run["task"], sp_model, "train",
                               seed=run["engine"].seed)
    return path

  path = prepare()
  before = qa_fixtures.read_records(path)
  caplog.clear()
  assert prepare() == path and len(writes) == 1
  assert "Reusing" in caplog.text
  # Records without their key (an earlier version's, a killed run's).
  os.remove(path + ".json")
  caplog.clear()
  assert prepare() == path and len(writes) == 2
  assert "has no valid key file" in caplog.text
  writes.clear()

  edited = tmp_path / "RACE" / "train" / "high" / "1.txt"
  content = json.loads(edited.read_text())
  content["answers"][0] = "ABCD"[("ABCD".index(content["answers"][0]) + 1) % 4]
  size = edited.stat().st_size
  qa_fixtures.write_json(edited, content)
  assert edited.stat().st_size == size
  caplog.clear()
  prepare()
  assert len(writes) == 1
  qa_fixtures.assert_rewritten_for(caplog, path, "source")
  after = qa_fixtures.read_records(path)
  assert after != before and after == qa_fixtures.read_records(
      prepare("fresh-data"))

  shutil.copyfile(train_tiny_spm(vocab_size=800), vocab)
  caplog.clear()
  prepare()
  assert len(writes) == 3  # ours and the fresh ones above
  assert "(differing: spiece_sha1); rewriting it" in caplog.text
  assert qa_fixtures.read_records(path) == qa_fixtures.read_records(
      prepare("fresh-vocab"))


def test_levels_select_the_files(race, monkeypatch):
  monkeypatch.setattr(race_task, "predict", _session_predict)
  metrics = api.run_race(**race("--do_eval", "--high_only"))
  assert metrics["num_examples"] == 6 and "num_middle" not in metrics


@pytest.mark.parametrize("extra,match", [
    ([], "nothing to do: set --do_train and/or --do_eval"),
    (["--do_eval", "--high_only", "--middle_only"], "exclude each other"),
    (["--do_eval", "--max_seq_length=10"],
     r"--max_seq_length=10 leaves no room for the article: it must be at "
     r"least --max_qa_length \+ 4 = 12"),
    (["--do_train", "--data_dir="], "--data_dir is required"),
])
def test_bad_flags_name_the_flag(race, extra, match):
  with pytest.raises(ValueError, match=match):
    api.run_race(**race(*extra))


def test_release_scripts_parse_with_the_papers_settings(tmp_path):
  env = dict(TPU_NAME="tpu", RACE_DIR="RACE", INIT_CKPT_DIR="gs://b/ck",
             LOCAL_INIT_CKPT_DIR="ck", PROC_DATA_DIR="gs://b/proc",
             MODEL_DIR="gs://b/model")
  for script, hosts, bsz in (("tpu_race_large_bsz8.sh", 1, 8),
                             ("tpu_race_large_bsz32.sh", 4, 32)):
    (argv,) = _script_commands(tmp_path, script, env)
    flags = run_race.parse_flags(argv)
    assert argv[0] == "run_race.py" and flags.use_tpu
    assert (flags.num_hosts, flags.num_core_per_host,
            flags.train_batch_size) == (hosts, 8, bsz)
    assert (flags.learning_rate, flags.train_steps, flags.warmup_steps,
            flags.max_seq_length, flags.max_qa_length, flags.weight_decay,
            flags.adam_epsilon) == (2e-5, 12000, 1000, 512, 128, 0.0, 1e-6)
    assert flags.do_train and flags.do_eval and flags.data_dir == "RACE"
