"""Settings files read strictly (xlnet/settings_files.py): an objective.json,
a chain.json or a memory calibration file that cannot be trusted is one
line naming the file, the key and what was expected (they were
AttributeErrors, TypeErrors, raw JSON or UTF-8 errors, "needs about inf
GiB", or read as if missing); a calibration measured on another device is
named in a warning; a resumed pretraining run without objective.json says
what it cannot check. The expected lines are written out here."""
import json
import types

import pytest

from xlnet.pretraining import pretrain
from xlnet.reproduce import memory_plan
from xlnet.runs import work_dir

pytestmark = pytest.mark.quick

OBJECTIVE = {"clamp_len": -1, "mask_alpha": 6, "mask_beta": 1, "mem_len": 16,
             "num_predict": 6, "perm_size": 8, "record_kind": "tokens",
             "same_length": False, "sample_strategy": "word_span", "seed": 1}
_OBJECTIVE_END = "; restore it, or move it away to record this command's " \
                 "settings"
# What a chain run records (a few of its settings, of each JSON kind).
CHAIN = {"mem_len": 64, "pretrain_learning_rate": 5e-4, "seeds": [1, 2, 3],
         "corpus_glob": "c/*.txt", "bi_data": True}
_CONFIG = {"n_layer": 2, "d_model": 64, "n_head": 4, "d_head": 16,
           "d_inner": 256, "n_token": 2000}
_POINT = {"config": _CONFIG, "task_kind": "classifier", "seq_len": 128,
          "micro_batch": 4, "precision": "fp32", "accumulate": False,
          "peak_bytes": 10 ** 9}
CALIBRATION = {"format": memory_plan.CALIBRATION_FORMAT, "device": "GPU:0 A",
               "points": [_POINT]}
_CALIBRATION_END = "; bench/finetune_memory.py writes one on the device"


def _bytes(value):
  return value if isinstance(value, bytes) else json.dumps(value).encode()


# (file, its content, what the line says after "PATH is not a valid ...: ").
CASES = [
    ("objective", [OBJECTIVE], 'it holds [{"clamp_len": -1, "mask_alpha": '
     '6, "mask_beta": 1, "mem_..., expected a JSON object'),
    ("objective", dict(OBJECTIVE, mem_len="sixteen"),
     'mem_len is "sixteen", expected an integer or null'),
    ("objective", dict(OBJECTIVE, sample_strategy="whole_word"),
     'sample_strategy is "whole_word", expected one of "word_span", '
     '"token_span" or null'),
    ("objective", dict(OBJECTIVE, same_length=1),
     "same_length is 1, expected true or false"),
    ("objective", json.dumps(OBJECTIVE).encode()[:40],
     "not JSON (Unterminated string starting at at line 1 column 36; "
     "truncated?)"),
    ("objective", b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text (binary "
     "bytes)"),
    ("objective", b"", "the file is empty"),
    ("chain", 7, "it holds 7, expected a JSON object"),
    ("chain", dict(CHAIN, seeds=3), "seeds is 3, expected a list"),
    ("chain", dict(CHAIN, seeds=[1, "2"]), 'seeds[1] is "2", expected an '
     "integer"),
    ("chain", dict(CHAIN, mem_len="64"), 'mem_len is "64", expected an '
     "integer"),
    ("chain", dict(CHAIN, pretrain_learning_rate=float("nan")),
     "pretrain_learning_rate is NaN, expected a finite number"),
    ("calibration", [], "it holds [], expected a JSON object"),
    ("calibration", dict(CALIBRATION, points={}),
     "points is {}, expected a non-empty list"),
    ("calibration", dict(CALIBRATION, points=[dict(
        _POINT, peak_bytes=float("inf"))]),
     "points[0].peak_bytes is Infinity, expected a finite number > 0"),
    ("calibration", dict(CALIBRATION, points=[dict(_POINT, config=5)]),
     "points[0].config is 5, expected a JSON object"),
    ("calibration", dict(CALIBRATION, points=[_POINT, dict(
        _POINT, seq_len="512")]),
     'points[1].seq_len is "512", expected an integer >= 1'),
    ("calibration", dict(CALIBRATION, points=[{
        k: v for k, v in _POINT.items() if k != "peak_bytes"}]),
     "points[0].peak_bytes is missing, expected a finite number > 0"),
    ("calibration", dict(CALIBRATION, format="v0"),
     'format is "v0", expected one of "xlnet-tf fine-tuning memory '
     'calibration 1"'),
]


def _read(which, directory):
  """Reads the file `which` of `directory` as its program does; returns
  (its path, the file's name in messages, what it is, the message's end)."""
  if which == "objective":
    path = str(directory / "objective.json")
    return path, path, "run record", _OBJECTIVE_END, lambda: (
        pretrain.read_objective(str(directory)))
  if which == "chain":
    path = str(directory / "chain.json")
    return path, path, "settings record", (
        "; restore it, or use a new work dir"), lambda: (
            work_dir.recorded_settings(path, CHAIN))
  path = str(directory / "c.json")
  return path, f"--memory_calibration={path}", "memory calibration", (
      _CALIBRATION_END), lambda: memory_plan.read_calibration(path)


@pytest.mark.parametrize("which,content,problem", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_settings_file_that_cannot_be_trusted_is_one_line(
    tmp_path, which, content, problem):
  path, name, what, end, read = _read(which, tmp_path)
  with open(path, "wb") as f:
    f.write(_bytes(content))
  with pytest.raises(ValueError) as caught:
    read()
  assert str(caught.value) == f"{name} is not a valid {what}: {problem}{end}"
  # The file is left as it was (a rerun never rewrites what it refused).
  with open(path, "rb") as f:
    assert f.read() == _bytes(content)


def test_the_files_as_written_are_read_back(tmp_path):
  (tmp_path / "objective.json").write_text(json.dumps(OBJECTIVE))
  assert pretrain.read_objective(str(tmp_path))[1] == OBJECTIVE
  assert work_dir.recorded_settings(str(tmp_path / "chain.json"),
                                    CHAIN) == CHAIN
  (tmp_path / "c.json").write_text(json.dumps(CALIBRATION))
  assert memory_plan.read_calibration(str(tmp_path / "c.json")).source == (
      f"calibration file {tmp_path / 'c.json'} (measured on GPU:0 A)")


def test_a_calibration_of_another_device_is_named_in_a_warning(tmp_path,
                                                               caplog):
  path = tmp_path / "c.json"
  path.write_text(json.dumps(CALIBRATION))
  with caplog.at_level("WARNING", logger="absl"):
    memory_plan.read_calibration(str(path), "GPU:0 A")
    assert caplog.messages == []
    memory_plan.read_calibration(str(path), "CPU:0")
  assert caplog.messages == [
      f"--memory_calibration={path} was measured on GPU:0 A, this run's "
      "device is CPU:0: the plan may not hold (bench/finetune_memory.py "
      "writes one on the device)"]


def _configs(model_dir):
  """What `pretrain.check_objective` reads of a run's configs."""
  part = types.SimpleNamespace
  return part(checkpoint=part(model_dir=str(model_dir)),
              data=part(record_info_dir="records", perm_size=None,
                        reuse_len=8),
              train=part(seed=1),
              run=part(mem_len=16, clamp_len=-1, same_length=False))


def test_a_resume_without_objective_json_says_what_it_cannot_check(
    tmp_path, caplog):
  """A resumed run whose objective.json is gone (or lacks settings) goes
  on with the command's objective, saying which settings it could not
  check and the values it took; with the file whole it says nothing."""
  sampling = {"record_kind": "tokens", "sample_strategy": "token_span",
              "num_predict": 6, "mask_alpha": 6, "mask_beta": 1}
  path = tmp_path / "objective.json"
  with caplog.at_level("WARNING", logger="absl"):
    pretrain.check_objective(_configs(tmp_path), sampling, resuming=True)
    assert json.loads(path.read_text()) == dict(OBJECTIVE, **sampling)
    path.write_text(json.dumps({"record_kind": "tokens", "mask_alpha": 6}))
    pretrain.check_objective(_configs(tmp_path), sampling, resuming=True)
    pretrain.check_objective(_configs(tmp_path), sampling, resuming=True)
  assert caplog.messages == [
      f"{path} is missing (removed, or the run is of an older version): the "
      "objective this run was trained with cannot be checked; resuming "
      "with this command's record_kind=tokens sample_strategy=token_span "
      "num_predict=6 mask_alpha=6 mask_beta=1 perm_size=8, recorded there "
      "now",
      f"{path} records no sample_strategy, num_predict, mask_beta, "
      "perm_size: these settings of the objective cannot be checked; "
      "resuming with this command's sample_strategy=token_span "
      "num_predict=6 mask_beta=1 perm_size=8, recorded there now"]
