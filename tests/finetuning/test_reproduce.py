"""reproduce.py: the paper's settings in its commands, the PNG chart, the
progress text, and whole tables on tiny stand-in data (resumed after a
SIGKILL)."""
import dataclasses
import json
import os
import re
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

from tests import classifier_fixtures as fx
from tests import data_helpers
from tests import qa_fixtures
from xlnet.finetuning import paper_settings
from xlnet.finetuning import png_chart
from xlnet.finetuning import reproduce
from xlnet.flags import finetuning as finetune_flags
from xlnet.training import run_lock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _run(args, **kwargs):
  return subprocess.run([sys.executable, os.path.join(REPO, "reproduce.py")]
                        + args, capture_output=True, text=True, cwd=REPO,
                        env=ENV, timeout=600, **kwargs)


def _model_args(model):
  return [f"--init_checkpoint={model}/xlnet_model.ckpt",
          f"--model_config_path={model}/xlnet_config.json",
          f"--spiece_model_file={model}/spiece.model"]


def _flags_of(command):
  """{flag: value} of one printed command line."""
  return dict(re.match(r"--(\w+)=(.*)", arg).groups()
              for arg in shlex.split(command) if arg.startswith("--"))


# ---- --dry_run against the paper's and the release's settings -------------
# Written out by hand from the release's README commands (STS-B on 4 GPUs x 8,
# IMDB on a TPU v3-8 with batch 32) and scripts (tpu_squad_large.sh,
# gpu_squad_base.sh: 8 per GPU on 3 GPUs, tpu_race_large_bsz32.sh), and the
# paper's appendix (MNLI: batch 128, lr 2e-5, 10K steps, length 128).
EXPECTED = [
    ("glue", "large", "sts-b", 4, dict(
        task_name="sts-b", learning_rate="5e-05", train_batch_size="8",
        train_steps="1200", warmup_steps="120", max_seq_length="128",
        save_steps="600", is_regression="True", num_core_per_host="4")),
    ("glue", "large", "mnli", 1, dict(
        task_name="mnli_matched", learning_rate="2e-05",
        train_batch_size="128", train_steps="10000", max_seq_length="128",
        lr_layer_decay_rate="1.0", adam_epsilon="1e-06")),
    ("classification", "large", "imdb", 1, dict(
        task_name="imdb", learning_rate="2e-05", train_batch_size="32",
        train_steps="4000", warmup_steps="500", max_seq_length="512")),
    ("squad", "large", "squad2.0", 1, dict(
        learning_rate="3e-05", train_batch_size="48", train_steps="8000",
        warmup_steps="1000", max_seq_length="512", lr_layer_decay_rate="0.75",
        adam_epsilon="1e-06")),
    ("squad", "base", "squad2.0", 3, dict(
        learning_rate="2e-05", train_batch_size="8", train_steps="12000",
        warmup_steps="1000", num_core_per_host="3")),
    ("race", "large", "race", 1, dict(
        learning_rate="2e-05", train_batch_size="32", train_steps="12000",
        warmup_steps="1000", max_seq_length="512", max_qa_length="128",
        weight_decay="0.0", adam_epsilon="1e-06")),
]


def _dry_run(capsys, args):
  """reproduce.run in this process with --dry_run; returns its lines."""
  flag_values = flags.FlagValues()
  reproduce.define_flags(flag_values)
  flag_values(["reproduce.py", "--dry_run"] + args)
  reproduce.run(finetune_flags.resolve_reproduce(flag_values))
  return capsys.readouterr().out.strip().split("\n")


@pytest.mark.parametrize("table,size,task,gpus,expected", EXPECTED)
def test_dry_run_commands_carry_the_papers_settings(tmp_path, capsys, table,
                                                     size, task, gpus,
                                                     expected):
  lines = _dry_run(capsys, [
      f"--table={table}", f"--model_size={size}", f"--tasks={task}",
      f"--num_core_per_host={gpus}", "--data_root=/data",
      f"--work_dir={tmp_path}"] + _model_args("/m"))
  assert len(lines) == 1
  program = {"glue": "run_classifier.py", "classification":
             "run_classifier.py", "squad": "run_squad.py",
             "race": "run_race.py"}[table]
  assert shlex.split(lines[0])[1].endswith(program)
  got = _flags_of(lines[0])
  assert {k: got.get(k) for k in expected} == expected
  assert got["model_dir"] == os.path.join(str(tmp_path), task, "model")
  assert not os.listdir(tmp_path)  # nothing ran, nothing written


def test_dry_run_on_a_tpu_keeps_the_batch_global(tmp_path, capsys):
  # The release's IMDB command: TPU v3-8, --train_batch_size=32 (global),
  # records and checkpoints in Cloud Storage, the data read locally.
  lines = _dry_run(capsys, [
      "--table=classification", "--tasks=imdb", "--use_tpu", "--tpu=my-tpu",
      "--num_core_per_host=8", "--gcs_dir=gs://bucket/xlnet",
      "--data_root=/data", f"--work_dir={tmp_path}"] + _model_args("/m"))
  got = _flags_of(lines[0])
  assert {k: got[k] for k in ("use_tpu", "tpu", "train_batch_size",
                              "num_core_per_host", "model_dir", "output_dir",
                              "data_dir")} == dict(
      use_tpu="True", tpu="my-tpu", train_batch_size="32",
      num_core_per_host="8", model_dir="gs://bucket/xlnet/imdb/model",
      output_dir="gs://bucket/xlnet/imdb/records", data_dir="/data/aclImdb")


def test_override_flags_replace_every_tasks_value(tmp_path, capsys):
  lines = _dry_run(capsys, [
      "--table=glue", "--tasks=mnli,sts-b", "--learning_rate=1e-4",
      "--train_steps=7", "--train_batch_size=4", "--max_seq_length=16",
      "--data_root=/data", f"--work_dir={tmp_path}"] + _model_args("/m"))
  for line in lines:
    got = _flags_of(line)
    assert (got["learning_rate"], got["train_steps"], got["warmup_steps"],
            got["save_steps"], got["train_batch_size"],
            got["max_seq_length"]) == ("0.0001", "7", "7", "7", "4", "16")


def _settings(work_dir, *extra):
  """reproduce.py's resolved settings for the GLUE table (paths absolute,
  as `reproduce.run` makes them)."""
  flag_values = flags.FlagValues()
  reproduce.define_flags(flag_values)
  flag_values(["reproduce.py", "--table=glue", "--data_root=/data",
               f"--work_dir={work_dir}"] + _model_args("/m") + list(extra))
  return reproduce.absolute_paths(
      finetune_flags.resolve_reproduce(flag_values))


RTE = paper_settings.select("glue", ["rte"])[0]


def _write_result(settings, legacy=False, data_dir="/data/RTE"):
  """Writes rte's result.json in the documented layout (docs/reproducing.md;
  without "work_dir" as earlier versions wrote it when `legacy`). Returns
  (path, the row, the command)."""
  command = reproduce.task_command(RTE, data_dir, settings)
  row = reproduce.make_row(RTE, settings, "done", 71.5, 12.5)
  content = {"row": row, "command": command}
  if not legacy:
    content["work_dir"] = settings.work_dir
  path = os.path.join(settings.work_dir, "rte", "result.json")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(content, f)
  return path, row, command


def test_a_result_of_other_settings_is_refused_naming_them(tmp_path):
  settings = _settings(tmp_path)
  path, row, command = _write_result(settings)
  assert reproduce.finished_row(RTE, command, settings) == row
  assert row["ours"] == 71.5 and row["wall_time_s"] == 12.5
  settings = dataclasses.replace(settings, learning_rate=5e-5)
  other = reproduce.task_command(RTE, "/data/RTE", settings)
  with pytest.raises(ValueError) as e:
    reproduce.finished_row(RTE, other, settings)
  # RTE's own learning rate: 3e-5 (the paper's appendix, Table 8).
  assert str(e.value) == (
      f"{path} was made with other settings (--learning_rate was 3e-05, "
      f"now 5e-05); use another --work_dir, or delete {tmp_path}/rte to "
      "run rte again with these")


def test_a_moved_work_dir_keeps_its_results(tmp_path):
  """Paths under the work dir are compared below it: a moved work dir is
  the same run; a result.json of an earlier version (no "work_dir") is
  accepted where it was made, and a move of it is named."""
  old = _settings(tmp_path / "old")
  _, row, _ = _write_result(old)
  shutil.move(str(tmp_path / "old"), str(tmp_path / "new"))
  new = _settings(tmp_path / "new")
  command = reproduce.task_command(RTE, "/data/RTE", new)
  assert reproduce.finished_row(RTE, command, new) == row

  path, row, command = _write_result(new, legacy=True)
  assert reproduce.finished_row(RTE, command, new) == row
  shutil.move(str(tmp_path / "new"), str(tmp_path / "moved"))
  moved = _settings(tmp_path / "moved")
  with pytest.raises(ValueError, match=re.escape(
      f"(--output_dir was {tmp_path}/new/rte/records, now {tmp_path}/moved/"
      f"rte/records; --model_dir was {tmp_path}/new/rte/model, now ")):
    reproduce.finished_row(RTE, reproduce.task_command(
        RTE, "/data/RTE", moved), moved)


def test_relative_paths_are_made_absolute(tmp_path, capsys, monkeypatch):
  # The programs run in the repository's directory, not in the caller's.
  monkeypatch.chdir(tmp_path)
  lines = _dry_run(capsys, ["--table=glue", "--tasks=rte", "--data_root=d",
                            "--work_dir=w", "--init_checkpoint=m/x.ckpt",
                            "--model_config_path=m/c.json",
                            "--spiece_model_file=m/s.model", "--gcs_dir=g"])
  got = _flags_of(lines[0])
  assert {k: got[k] for k in ("data_dir", "model_dir", "init_checkpoint",
                              "model_config_path", "spiece_model_file")} == {
      "data_dir": f"{tmp_path}/d/RTE", "model_dir": f"{tmp_path}/g/rte/model",
      "init_checkpoint": f"{tmp_path}/m/x.ckpt",
      "model_config_path": f"{tmp_path}/m/c.json",
      "spiece_model_file": f"{tmp_path}/m/s.model"}


REMEDY = "delete it to run rte again (it resumes from its checkpoints)"


@pytest.mark.parametrize("content,cause", [
    (b"", "is empty"),
    (b'{"row": {"task": "rte", "status": "do', "is not valid JSON (truncated "
     "or edited? Unterminated string starting at: line 1 column 35 (char "
     "34))"),
    (b"\xff\xfe\x00garbage", "is not valid JSON (truncated or edited? "),
    (b"[1, 2]", "does not hold a finished task's result (not a JSON "
     "object)"),
    (b'{"row": {"status": "done", "ours": 1.0}, "command": "python x.py"}',
     "does not hold a finished task's result (\"command\" is not a list of "
     "strings)"),
    (b'{"command": ["python", "x.py"]}', "does not hold a finished task's "
     "result (\"row\" is not an object with \"status\": \"done\")"),
    (b'{"row": {"status": "done", "ours": "71.5"}, "command": ["p", "x"]}',
     "does not hold a finished task's result (\"row\" has \"ours\": "
     "\"71.5\", not a number)"),
    (b'{"row": {"status": "done", "ours": 7, "wall_time_s": -1}, '
     b'"command": ["p", "x"]}', "does not hold a finished task's result "
     "(\"row\" has \"wall_time_s\": -1, not a number >= 0)"),
])
def test_a_bad_result_file_is_one_line_naming_it(tmp_path, content, cause):
  settings = _settings(tmp_path)
  path, _, command = _write_result(settings)
  with open(path, "wb") as f:
    f.write(content)
  with pytest.raises(ValueError) as e:
    reproduce.finished_row(RTE, command, settings)
  message = str(e.value)
  assert message.startswith(f"{path} {cause}") and message.endswith(
      REMEDY) and "\n" not in message


def test_an_unreadable_result_file_is_one_line_naming_it(tmp_path):
  settings = _settings(tmp_path)
  path, _, command = _write_result(settings)
  os.remove(path)
  os.mkdir(path)
  with pytest.raises(ValueError, match=re.escape(
      f"cannot read {path} (Is a directory); {REMEDY}")):
    reproduce.finished_row(RTE, command, settings)


def test_a_result_file_of_the_wrong_shape_ends_the_program_in_one_line(
    tmp_path):
  data, work = glue_root(str(tmp_path / "glue")), tmp_path / "work"
  args = ["--table=glue", "--tasks=rte", f"--data_root={data}",
          f"--work_dir={work}"] + _model_args("/m")
  (work / "rte").mkdir(parents=True)
  (work / "rte" / "result.json").write_text('{"row": [], "command": []}')
  proc = _run(args)
  assert proc.returncode == 2 and "Traceback" not in proc.stderr
  assert proc.stderr.strip().split("\n")[-1] == (
      f"reproduce.py: error: {work}/rte/result.json does not hold a "
      "finished task's result (\"command\" is not a list of strings); "
      f"{REMEDY}")
  assert not (work / "trainer.lock").exists()


def test_a_second_run_on_one_work_dir_is_refused(tmp_path):
  data, work = glue_root(str(tmp_path / "glue")), tmp_path / "work"
  with run_lock.hold(str(work)):  # as a running reproduce.py holds it
    proc = _run(["--table=glue", "--tasks=rte", f"--data_root={data}",
                 f"--work_dir={work}"] + _model_args("/m"))
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().split("\n")[-1]
    assert re.fullmatch(
        f"reproduce.py: error: --work_dir={work} is in use by another "
        f"reproduce.py run \\(pid {os.getpid()} on host .* since .*; "
        f"{work}/trainer.lock\\); wait for it to finish or use another "
        "--work_dir", last), last
    assert sorted(os.listdir(work)) == ["trainer.lock"]  # nothing else
  assert not os.listdir(work)


def test_dry_run_lists_every_task_of_the_table(tmp_path):
  proc = _run(["--table=glue", "--data_root=/data", f"--work_dir={tmp_path}",
               "--dry_run"] + _model_args("/m"))
  assert proc.returncode == 0, proc.stderr[-2000:]
  tasks = [_flags_of(line)["task_name"] for line in proc.stdout.split("\n")
           if line]
  assert tasks == ["mnli_matched", "qnli", "qqp", "rte", "sst-2", "mrpc",
                   "cola", "sts-b"]


@pytest.mark.parametrize("extra,message", [
    (["--table=glue", "--num_core_per_host=3", "--tasks=sts-b", "--dry_run"],
     "--num_core_per_host=3 does not divide the global batch 32 of sts-b"),
    (["--table=glue", "--tasks=sts-b,imdb"], "--tasks: imdb not in the glue"),
    (["--table=race"], "no data for race (expected /nonexistent/RACE)"),
    (["--table=race", "--warmup_steps=-1"], "--warmup_steps=-1 must be >= 0"),
    (["--table=race", "--work_dir=gs://b/w"], "give Cloud Storage as "
     "--gcs_dir"),
])
def test_bad_settings_are_one_line_errors(tmp_path, extra, message):
  proc = _run(["--data_root=/nonexistent", f"--work_dir={tmp_path}"]
              + _model_args("/m") + extra)
  assert proc.returncode == 2
  last = proc.stderr.strip().split("\n")[-1]
  assert last.startswith("reproduce.py: error: ") and message in last
  assert "Traceback" not in proc.stderr


# ---- the PNG writer ---------------------------------------------------------
def decode_png(data):
  """A minimal PNG reader written from the PNG specification: checks the
  signature and every chunk's CRC; 8-bit RGB, filter type 0 only."""
  assert data[:8] == b"\x89PNG\r\n\x1a\n"
  pos, chunks = 8, []
  while pos < len(data):
    length, = struct.unpack(">I", data[pos:pos + 4])
    kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
    crc, = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
    assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
    chunks.append((kind, body))
    pos += 12 + length
  assert [k for k, _ in chunks][0] == b"IHDR"
  assert chunks[-1] == (b"IEND", b"")
  width, height, depth, color, _, _, interlace = struct.unpack(
      ">IIBBBBB", chunks[0][1])
  assert (depth, color, interlace) == (8, 2, 0)
  raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
  rows = np.frombuffer(raw, np.uint8).reshape(height, 1 + 3 * width)
  assert not rows[:, 0].any()  # filter type 0 on every scanline
  return rows[:, 1:].reshape(height, width, 3)


def test_png_round_trips_through_an_independent_reader():
  pixels = np.random.default_rng(0).integers(0, 256, (7, 5, 3), np.uint8)
  assert np.array_equal(decode_png(png_chart.encode_png(pixels)), pixels)


def _bar_pixels(image, color):
  """Per column, the number of pixels of `color`."""
  return np.all(image == np.array(color, np.uint8), axis=-1).sum(axis=0)


def test_chart_bars_have_the_values_relative_heights(tmp_path):
  groups = [(90.0, 45.0), (30.0, None), (60.0, 15.0)]
  path = str(tmp_path / "chart.png")
  png_chart.write_bar_chart(path, groups)
  with open(path, "rb") as f:
    image = decode_png(f.read())
  ours, paper = (_bar_pixels(image, c) for c in png_chart.SERIES_COLORS)
  # Bars 12 px wide, one scale from 0: the tallest (90) is 200 px, so 30 is
  # 66.7 -> 67 px, 60 -> 133, 45 -> 100 and 15 -> 33; None draws nothing.
  ours_cols, paper_cols = np.nonzero(ours)[0], np.nonzero(paper)[0]
  assert len(ours_cols) == 3 * 12 and len(paper_cols) == 2 * 12
  assert [int(ours[c]) for c in ours_cols[::12]] == [200, 67, 133]
  assert [int(paper[c]) for c in paper_cols[::12]] == [100, 33]
  # The paper's bar stands right of ours in its group; bars share a
  # baseline (their lowest pixel is the row above the grey line).
  assert paper_cols[0] == ours_cols[0] + 12
  baseline = int(np.nonzero(np.all(image == png_chart.GREY, axis=-1)
                            .all(axis=1))[0][0])
  assert all(np.all(image[baseline - 1, c] != 255) for c in ours_cols)


# ---- progress text ----------------------------------------------------------
def test_progress_line_and_eta():
  assert reproduce.progress_line(1, 3, "STS-B", 0.0, []) == (
      "[1/3] STS-B: starting; elapsed 0s; ETA unknown until a task finishes")
  # Two tasks took 100 s and 200 s: 150 s each for the 2 tasks left.
  assert reproduce.progress_line(3, 4, "RTE", 305.0, [100.0, 200.0]) == (
      "[3/4] RTE: starting; elapsed 5m05s; ETA 5m00s from 2 finished "
      "task(s)")
  assert reproduce.format_duration(7380) == "2h03m"


# ---- whole tables on tiny stand-in data ------------------------------------
CONFIG = dict(fx.TINY_CONFIG, n_token=1000)
SMOKE = ["--train_steps=2", "--max_seq_length=32", "--train_batch_size=2",
         "--warmup_steps=0", "--save_steps=2", "--iterations=1",
         "--eval_batch_size=4", "--max_qa_length=8", "--max_query_length=8",
         "--seed=1"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
  """A stand-in for a released model directory: spiece.model,
  xlnet_config.json and a pretrained checkpoint (by the released names)."""
  root = str(tmp_path_factory.mktemp("xlnet_tiny"))
  spm = data_helpers.train_tiny_spm(root)
  os.rename(spm, os.path.join(root, "spiece.model"))
  fx.write_config(root, CONFIG)
  fx.write_checkpoint(os.path.join(root, "xlnet_model.ckpt"),
                      fx.random_values(fx.pretrained_shapes(CONFIG)))
  return root


def _write(path, text):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)


def glue_root(root):
  """GLUE_DIR with STS-B and RTE (train and dev, 6 rows each)."""
  head = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
          "sentence1\tsentence2\tscore\n")
  for split in ("train", "dev"):
    _write(os.path.join(root, "STS-B", f"{split}.tsv"), head + "".join(
        f"{i}\tmain\tMSRvid\t2012\t{i:04d}\tnone\tnone\tA man plays {i}.\t"
        f"A man sings {i}.\t{i:.1f}\n" for i in range(6)))
    _write(os.path.join(root, "RTE", f"{split}.tsv"),
           "index\tsentence1\tsentence2\tlabel\n" + "".join(
               f"{i}\tThe school is {i}.\tA teacher said {i}.\t"
               f"{'entailment' if i % 2 else 'not_entailment'}\n"
               for i in range(6)))
  return root


def csv_root(root):
  """yelp_review_polarity_csv/{train,test}.csv (class 1-2, text)."""
  for split in ("train", "test"):
    _write(os.path.join(root, "yelp_review_polarity_csv", f"{split}.csv"),
           "".join(f'"{1 + i % 2}","The food was {("bad", "good")[i % 2]} '
                   f'number {i}."\n' for i in range(6)))
  return root


def squad_root(root):
  data = qa_fixtures.synthetic_squad(np.random.default_rng(3), 2, 2)
  os.makedirs(root)
  for name in ("train-v2.0.json", "dev-v2.0.json"):
    qa_fixtures.write_json(os.path.join(root, name),
                           {"version": "v2.0", "data": data})
  return root


def race_root(root):
  words = ["the", "school", "teacher", "said", "river", "man", "home"]
  files = {f"{split}/{level}/1.txt": {
      "article": " ".join(words * 3), "questions": ["Who _ home?"],
      "options": [words[:4]], "answers": ["B"], "id": f"{level}1.txt"}
           for split in ("train", "test") for level in ("middle", "high")}
  qa_fixtures.write_race_dir(os.path.join(root, "RACE"), files)
  return root


def _processes_mentioning(text):
  """Ids of live processes whose command line contains `text` (Linux)."""
  found = []
  for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
      with open(f"/proc/{pid}/cmdline", "rb") as f:
        if text.encode() in f.read():
          found.append(pid)
    except OSError:
      pass
  return found


def _check_reports(work_dir, names, steps=2):
  with open(os.path.join(work_dir, "results.json")) as f:
    report = json.load(f)
  rows = report["rows"]
  assert [r["task"] for r in rows] == names
  for r in rows:
    assert r["status"] == "done", r
    assert isinstance(r["ours"], float) and r["steps"] == steps
    assert r["wall_time_s"] > 0
    if r["paper"] is not None:
      assert r["diff"] == pytest.approx(r["ours"] - r["paper"], abs=1e-3)
  with open(os.path.join(work_dir, "results.md")) as f:
    table = f.read()
  for r in rows:
    line = next(l for l in table.split("\n") if l.startswith(
        f"| {r['label']} |"))
    assert f"| {r['ours']:.2f} |" in line and "| done |" in line
  with open(os.path.join(work_dir, "results.png"), "rb") as f:
    image = decode_png(f.read())
  assert _bar_pixels(image, png_chart.SERIES_COLORS[1]).any()  # the paper's
  return rows


def _file_size_limit(limit):
  """A preexec_fn: no file may grow beyond `limit` bytes (`ulimit -f`); with
  SIGXFSZ ignored, a write beyond it fails with EFBIG as on a full disk."""
  def preexec():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
  return preexec


# Larger than the work dir's lock, smaller than a task log's first line
# (the command) and results.md.
SMALL_FILES = 300


def _temporaries(root):
  return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names
          if ".tmp-" in n]


def test_a_task_log_beyond_a_file_size_limit_is_one_line(tmp_path):
  data, work = glue_root(str(tmp_path / "glue")), tmp_path / "work"
  proc = _run(["--table=glue", "--tasks=rte", f"--data_root={data}",
               f"--work_dir={work}"] + _model_args("/m"),
              preexec_fn=_file_size_limit(SMALL_FILES))
  assert proc.returncode == 1, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr
  assert proc.stderr.strip().split("\n")[-1] == (
      f"reproduce.py: error: cannot write {work}/rte/log.txt: file too "
      "large; the task was not started; make room (or fix the permission) "
      "and rerun the same command")
  assert not (work / "trainer.lock").exists() and not _temporaries(work)


def test_reports_beyond_a_file_size_limit_are_one_line(tmp_path):
  data, work = glue_root(str(tmp_path / "glue")), tmp_path / "work"
  args = [f"--data_root={data}", "--tasks=rte"]
  _write_result(_settings(work, *args), data_dir=f"{data}/RTE")
  proc = _run(["--table=glue", f"--work_dir={work}"] + _model_args("/m") +
              args, preexec_fn=_file_size_limit(SMALL_FILES))
  assert proc.returncode == 1, proc.stderr[-3000:]
  assert "[1/1] RTE: done by an earlier run, skipped" in proc.stdout
  assert "Traceback" not in proc.stderr
  assert proc.stderr.strip().split("\n")[-1] == (
      f"reproduce.py: error: cannot write {work}/results.md: file too "
      "large; it is unchanged and no temporary file is left; make room (or "
      "fix the permission) and rerun")
  assert not (work / "trainer.lock").exists() and not _temporaries(work)
  assert sorted(os.listdir(work)) == ["rte"]


def _logged_steps(log_path):
  """The training steps logged so far in a task's log.txt."""
  try:
    with open(log_path) as f:
      text = f.read()
  except FileNotFoundError:
    return []
  return [int(n) for n in re.findall(r"\] \[(\d+)\] \| loss", text)]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_reaches_the_running_task_which_saves(tmp_path, model,
                                                       signum):
  """SIGTERM to reproduce.py (as a scheduler sends it), or SIGINT to its
  process group (Ctrl-C at a terminal), reaches the running task once: it
  saves a checkpoint of the step it is on and stops; reproduce.py waits for
  it, exits with 128 + the signal's number and one line, and leaves no
  lock. The same command, run from the work dir's new place after a move,
  resumes from that step."""
  data, work = glue_root(str(tmp_path / "glue")), str(tmp_path / "work")
  args = (["--table=glue", "--tasks=rte", f"--data_root={data}"] +
          _model_args(model) + SMOKE + ["--train_steps=400",
                                        "--save_steps=400"])
  proc = subprocess.Popen(
      [sys.executable, os.path.join(REPO, "reproduce.py"),
       f"--work_dir={work}"] + args, stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True, cwd=REPO, env=ENV,
      start_new_session=True)
  log = os.path.join(work, "rte", "log.txt")
  deadline = time.time() + 300
  while len(_logged_steps(log)) < 2 and time.time() < deadline:
    assert proc.poll() is None, proc.communicate()
    time.sleep(0.05)
  if signum == signal.SIGTERM:
    proc.send_signal(signum)
  else:
    os.killpg(proc.pid, signum)
  out, err = proc.communicate(timeout=300)
  name = signal.Signals(signum).name
  assert proc.returncode == 128 + signum, err[-3000:]
  assert "Traceback" not in err
  last = err.strip().split("\n")[-1]
  stopped = re.fullmatch(
      f"reproduce.py: stopped by {name} \\(passed on to rte: "
      f"run_classifier.py exited with code {128 + signum}: "
      f"run_classifier.py: stopped by {name} after step (\\d+); checkpoint "
      f"model.ckpt-(\\d+) saved in {work}/rte/model; rerun the same command "
      "to resume\\); rerun the same command to go on", last)
  assert stopped and stopped[1] == stopped[2], last
  step = int(stopped[1])
  assert 2 <= step < 400 and max(_logged_steps(log)) == step
  assert f"{name} received: passed on to the running task" in out
  with open(log) as f:
    assert f.read().count("received: stopping after this step") == 1
  model_dir = os.path.join(work, "rte", "model")
  assert tf.train.latest_checkpoint(model_dir) == os.path.join(
      model_dir, f"model.ckpt-{step}")
  assert not os.path.exists(os.path.join(work, "trainer.lock"))
  assert not os.path.exists(os.path.join(model_dir, "trainer.lock"))
  assert not _processes_mentioning(work)
  with open(os.path.join(work, "results.json")) as f:
    assert json.load(f)["rows"][0]["status"] == "interrupted"

  moved = str(tmp_path / "moved")
  shutil.move(work, moved)
  again = _run([f"--work_dir={moved}"] + args)
  assert again.returncode == 0, (again.stdout, again.stderr[-3000:])
  with open(os.path.join(moved, "rte", "log.txt")) as f:
    second = f.read().split("\n$ ")[-1]
  assert f"Resumed from {moved}/rte/model/model.ckpt-{step} at step {step}" \
      in second
  assert min(_logged_steps(os.path.join(moved, "rte", "log.txt"))[
      -(400 - step):]) == step + 1
  _check_reports(moved, ["rte"], steps=400)


@pytest.mark.slow
def test_glue_table_resumes_after_a_kill(tmp_path, model):
  data, work = glue_root(str(tmp_path / "glue")), str(tmp_path / "work")
  # 3 steps, a checkpoint after each: STS-B (second in the table) is
  # killed after the first.
  args = (["--table=glue", "--tasks=rte,sts-b", f"--data_root={data}",
           f"--work_dir={work}"] + _model_args(model) + SMOKE +
          ["--train_steps=3", "--save_steps=1"])
  proc = subprocess.Popen(
      [sys.executable, os.path.join(REPO, "reproduce.py")] + args,
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
      env=ENV)
  second_model = os.path.join(work, "sts-b", "model")
  # A published checkpoint, not the `.tmp-` bundle a save writes first (a
  # kill then leaves nothing to resume from: the rerun starts afresh).
  published = re.compile(r"^model\.ckpt-\d+\.index$")
  deadline = time.time() + 300
  while time.time() < deadline and not (
      os.path.isdir(second_model) and
      any(published.match(n) for n in os.listdir(second_model))):
    time.sleep(0.05)
  proc.send_signal(signal.SIGKILL)
  seen = proc.communicate(timeout=60)[0]
  # Its run_classifier.py died with it (no orphan writes beside a rerun).
  deadline = time.time() + 1
  while _processes_mentioning(work) and time.time() < deadline:
    time.sleep(0.2)
  assert not _processes_mentioning(work)
  assert "[1/2] RTE: starting; elapsed" in seen
  assert "[2/2] STS-B: starting; elapsed" in seen and "from 1 finished" in seen
  with open(os.path.join(work, "rte", "result.json")) as f:
    first = json.load(f)["row"]
  assert not os.path.exists(os.path.join(work, "sts-b", "result.json"))

  again = _run(args)
  assert again.returncode == 0, (again.stdout, again.stderr[-3000:])
  assert "[1/2] RTE: done by an earlier run, skipped" in again.stdout
  assert "[2/2] STS-B: starting" in again.stdout
  with open(os.path.join(work, "rte", "log.txt")) as f:
    assert f.read().count("\n$ ") == 1  # RTE ran once
  with open(os.path.join(work, "sts-b", "log.txt")) as f:
    second_log = f.read()
  assert second_log.count("\n$ ") == 2 and "Resumed from" in second_log
  rows = _check_reports(work, ["rte", "sts-b"], steps=3)
  assert rows[0] == first
  assert rows[0]["paper"] == 83.8 and rows[1]["paper"] == 91.8


@pytest.mark.slow
@pytest.mark.parametrize("table,task,layout", [
    ("classification", "yelp2", csv_root),
    ("squad", "squad2.0", squad_root),
    ("race", "race", race_root),
])
def test_other_tables_end_to_end(tmp_path, model, table, task, layout):
  data, work = layout(str(tmp_path / "data")), str(tmp_path / "work")
  proc = _run([f"--table={table}", f"--tasks={task}", f"--data_root={data}",
               f"--work_dir={work}"] + _model_args(model) + SMOKE)
  assert proc.returncode == 0, (proc.stdout, proc.stderr[-3000:])
  _check_reports(work, [task])


@pytest.mark.slow
def test_a_failing_task_says_so_in_one_line_and_its_row(tmp_path, model):
  data = glue_root(str(tmp_path / "glue"))
  os.remove(os.path.join(data, "RTE", "dev.tsv"))
  work = str(tmp_path / "work")
  proc = _run(["--table=glue", "--tasks=rte", f"--data_root={data}",
               f"--work_dir={work}"] + _model_args(model) + SMOKE)
  assert proc.returncode == 1
  errors = [l for l in proc.stderr.split("\n") if l.startswith(
      "reproduce.py:")]
  assert len(errors) == 2, proc.stderr[-3000:]
  assert errors[0].startswith("reproduce.py: rte failed: run_classifier.py "
                              "exited with code 2: ")
  assert "dev.tsv" in errors[0]
  with open(os.path.join(work, "results.json")) as f:
    assert json.load(f)["rows"][0]["status"] == "failed"
