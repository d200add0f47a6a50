"""reproduce.py: the targets and settings with their sources, the commands
(batch plans, seeds, SQuAD preprocessing shards), medians over seeds, the
PNG chart, the earlier layout's migration, and whole tables on tiny
stand-in data (resumed after a SIGKILL). The children's loop, the work
dir's settings and the ETA line: tests/runs/."""
import dataclasses
import json
import os
import re
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
from tests import in_process
from tests import qa_fixtures
from xlnet.flags import finetuning as finetune_flags
from xlnet.programs import reproduce
from xlnet.reproduce import api as reproduce_api
from xlnet.reproduce import config as reproduce_config
from xlnet.reproduce import memory_plan
from xlnet.reproduce import paper_settings
from xlnet.reproduce import plan as reproduce_plan
from xlnet.reproduce import png_chart
from xlnet.reproduce import report as reproduce_report
from xlnet.reproduce import results as reproduce_results
from xlnet.training import run_lock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def _run_here(args):
  """reproduce.py's command line run in this process (tests/in_process.py):
  its flags, lines and exit code as `python reproduce.py ARGS` has them,
  without a TensorFlow import of its own; the programs it starts are
  processes still."""
  return in_process.run_program("reproduce.py", *args, cwd=REPO)


def _stopped_in_one_line(proc, work, code, line):
  """reproduce.py ended with `code`, its last line `reproduce.py: error:
  {line}`, no traceback, and left no lock nor temporary file in `work`."""
  assert proc.returncode == code, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr
  assert proc.stderr.strip().split("\n")[-1] == f"reproduce.py: error: {line}"
  assert not (work / "trainer.lock").exists() and not _temporaries(work)


def _model_args(model):
  return [f"--init_checkpoint={model}/xlnet_model.ckpt",
          f"--model_config_path={model}/xlnet_config.json",
          f"--spiece_model_file={model}/spiece.model"]


def _flags_of(command):
  """{flag: value} of one printed command line."""
  return dict(re.match(r"--(\w+)=(.*)", arg).groups()
              for arg in shlex.split(command) if arg.startswith("--"))


# ---- the targets, against the sources ---------------------------------------
# Written out by hand from the sources (docs/reproducing.md names them):
# README: the release's README (zihangdai/xlnet at bbaa3a6), "Results"
#   section: "Results on GLUE" (the XLNet-Large row; the XLNet-Base row
#   added in commit 7230e1e), "Results on Text Classification" (XLNet-Large
#   row, error rates), "Results on Reading Comprehension" (XLNet-Large row:
#   RACE accuracy, SQuAD1.1 EM, SQuAD2.0 EM; XLNet-Base row: SQuAD2.0 EM).
# V2: the paper's results as Papers with Code lists them (the arXiv tables
#   were not readable here), those that differ from the README: AG News
#   error 4.45, Amazon-2 2.11, Amazon-5 31.67, MultiNLI matched 90.8, MRPC
#   90.8, CoLA 69, SQuAD1.1 dev EM 89.7, SQuAD2.0 dev EM 87.9.
# V1: SQuAD 1.1 dev EM 88.95, "in the paper", quoted in zihangdai/xlnet#193.
# {task: (Large target, Base target, paper v1, paper v2)}
TARGETS = {
    "mnli": (89.8, 86.8, None, 90.8), "qnli": (93.9, 91.7, None, None),
    "qqp": (91.8, 91.4, None, None), "rte": (83.8, 74.0, None, None),
    "sst-2": (95.6, 94.7, None, None), "mrpc": (89.2, 88.2, None, 90.8),
    "cola": (63.6, 60.2, None, 69.0), "sts-b": (91.8, 89.5, None, None),
    "imdb": (3.79, None, None, None), "yelp2": (1.55, None, None, None),
    "yelp5": (27.80, None, None, None), "dbpedia": (0.62, None, None, None),
    "amazon2": (2.40, None, None, 2.11), "amazon5": (32.26, None, None, 31.67),
    "ag_news": (4.45, None, None, 4.45),
    "squad2.0": (86.12, 80.18, None, 87.9),
    "squad1.1": (88.95, None, 88.95, 89.7), "race": (81.75, None, None, None),
}


@pytest.mark.quick
def test_targets_and_paper_figures_are_the_sources():
  value = lambda figure: None if figure is None else figure.value
  got = {t.name: (value(t.target_large), value(t.target_base),
                  value(t.paper_v1), value(t.paper_v2))
         for table in paper_settings.TABLES.values() for t in table}
  assert got == TARGETS
  # Every figure names its source: the README's table and row, paper v2
  # (AG: the README has no AG column) or the issue quoting paper v1.
  readme = {"glue": "release README, Results on GLUE, XLNet-Large row",
            "classification": "release README, Results on Text "
            "Classification, XLNet-Large row",
            "squad": "release README, Results on Reading Comprehension, "
            "XLNet-Large row", "race": "release README, Results on Reading "
            "Comprehension, XLNet-Large row"}
  for name, table in paper_settings.TABLES.items():
    for t in table:
      expected = (paper_settings.PAPER_V2 if t.name == "ag_news" else
                  readme[name])
      assert t.target_large.source == expected, t.name
      if t.target_base is not None:
        assert t.target_base.source.endswith(
            "XLNet-Base row (commit 7230e1e)"), t.name
      assert t.paper_v1 is None or t.paper_v1.source.startswith("paper v1")
      assert t.paper_v2 is None or t.paper_v2.source.startswith("paper v2")


# ---- --dry_run against the release's and the author's settings ---------------
# Written out by hand from zihangdai/xlnet#96 (the first author's comment of
# 2019-07-01: QQP bsz=128, lr=3e-5, train_steps=14000, warmup_step=1000;
# MNLI 128, 3e-5, 10000, 1000; SST-2 32, 2e-5, 10000, 1000; CoLA 128, 3e-5,
# 3000, 500; STS-B 32, 5e-5, 1200, 120; MRPC 32, 5e-5, 800, 200; RTE 32,
# 3e-5, 800, 200; eval_all_ckpt=True for each), the release's README
# commands (STS-B on 4 GPUs x 8, max_seq_length 128; IMDB on a TPU v3-8
# with batch 32, 4000 steps, warmup 500, length 512; neither passes
# --adam_epsilon, so run_classifier.py's default 1e-8 applied) and scripts
# (tpu_squad_large.sh: 48, 3e-5, 8000, 1000, --adam_epsilon=1e-6, the
# layer-wise decay its run_squad.py defaults to, 0.75; gpu_squad_base.sh: 8
# per GPU on 3 GPUs, 2e-5, 12000, 1000; tpu_race_large_bsz32.sh: 32, 2e-5,
# 12000, 1000, max_qa_length 128, --weight_decay=0, --adam_epsilon=1e-6).
def _schedule(lr, batch, steps, warmup, **more):
  """The flags a command sets: the schedule's four, then `more`."""
  return dict(learning_rate=lr, train_batch_size=batch, train_steps=steps,
              warmup_steps=warmup, **more)


def _glue_96(task_name, lr, batch, steps, warmup, **more):
  """A GLUE command with #96's settings and the release's defaults."""
  return _schedule(lr, batch, steps, warmup, task_name=task_name,
                   eval_all_ckpt="True", adam_epsilon="1e-08",
                   max_seq_length="128", lr_layer_decay_rate="1.0", **more)


EXPECTED = [
    ("glue", "large", "sts-b", 4, _glue_96(
        "sts-b", "5e-05", "8", "1200", "120", save_steps="600",
        is_regression="True", num_core_per_host="4")),
    ("glue", "large", "mnli", 1,
     _glue_96("mnli_matched", "3e-05", "128", "10000", "1000")),
    ("glue", "large", "qqp", 1,
     _glue_96("qqp", "3e-05", "128", "14000", "1000")),
    ("glue", "large", "sst-2", 1,
     _glue_96("sst-2", "2e-05", "32", "10000", "1000")),
    ("glue", "large", "cola", 2,
     _glue_96("cola", "3e-05", "64", "3000", "500")),
    ("glue", "large", "mrpc", 1,
     _glue_96("mrpc", "5e-05", "32", "800", "200")),
    ("glue", "base", "rte", 1, _glue_96("rte", "3e-05", "32", "800", "200")),
    ("classification", "large", "imdb", 1, _schedule(
        "2e-05", "32", "4000", "500", task_name="imdb",
        max_seq_length="512", adam_epsilon="1e-08", eval_all_ckpt="True")),
    ("squad", "large", "squad2.0", 1, _schedule(
        "3e-05", "48", "8000", "1000", max_seq_length="512",
        lr_layer_decay_rate="0.75", adam_epsilon="1e-06")),
    ("squad", "base", "squad2.0", 3, _schedule(
        "2e-05", "8", "12000", "1000", num_core_per_host="3")),
    ("race", "large", "race", 1, _schedule(
        "2e-05", "32", "12000", "1000", max_seq_length="512",
        max_qa_length="128", weight_decay="0.0", adam_epsilon="1e-06")),
]


def _dry_run_text(capsys, args):
  """run_table in this process with --dry_run; returns its stdout."""
  flag_values = flags.FlagValues()
  reproduce.define_flags(flag_values)
  flag_values(["reproduce.py", "--dry_run"] + args)
  reproduce_api.run_table(finetune_flags.resolve_reproduce(flag_values))
  return capsys.readouterr().out


def _dry_run(capsys, args):
  """The training commands of a dry run (not its comments, preprocessing
  shards nor `wait`)."""
  return [line for line in _dry_run_text(capsys, args).strip().split("\n")
          if not line.startswith("#") and not line.endswith(" &")
          and line != "wait"]


@pytest.mark.quick
@pytest.mark.parametrize("table,size,task,gpus,expected", EXPECTED)
def test_dry_run_commands_carry_the_papers_settings(tmp_path, capsys, table,
                                                     size, task, gpus,
                                                     expected):
  lines = _dry_run(capsys, [
      f"--table={table}", f"--model_size={size}", f"--tasks={task}",
      f"--num_core_per_host={gpus}", "--data_root=/data", "--num_seeds=1",
      f"--work_dir={tmp_path}"] + _model_args("/m"))
  assert len(lines) == 1
  program = {"glue": "run_classifier.py", "classification":
             "run_classifier.py", "squad": "run_squad.py",
             "race": "run_race.py"}[table]
  assert shlex.split(lines[0])[1].endswith(program)
  got = _flags_of(lines[0])
  assert {k: got.get(k) for k in expected} == expected
  assert got["model_dir"] == os.path.join(str(tmp_path), task, "seed-1",
                                          "model")
  assert got["seed"] == "1" and got["accum_steps"] == "1"
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
                              "data_dir", "use_bfloat16")} == dict(
      use_tpu="True", tpu="my-tpu", train_batch_size="32",
      num_core_per_host="8", model_dir="gs://bucket/xlnet/imdb/seed-1/model",
      output_dir="gs://bucket/xlnet/imdb/records", data_dir="/data/aclImdb",
      use_bfloat16="True")


# ---- batch plans: devices, accumulation, precision ---------------------------
# XLNet-Large's sizes (the release's xlnet_config.json of
# cased_L-24_H-1024_A-16: 24 layers, d_model 1024, 16 heads of 64, d_inner
# 4096, 32000 pieces).
LARGE = dict(n_layer=24, d_model=1024, n_head=16, d_head=64, d_inner=4096,
             ff_activation="gelu", untie_r=True, n_token=32000)


@pytest.mark.tf_version
def test_device_memory_picks_the_memory_models_accumulation(tmp_path,
                                                              capsys):
  """--device_memory_gb passes, per task, the accumulation and micro-batch
  of `memory_plan.plan_accumulation` (the memory model, tested in
  test_memory_plan.py), keeping the global batch, and prints the plan."""
  config = fx.write_config(str(tmp_path / "large"), LARGE)
  base = ["--data_root=/data", f"--work_dir={tmp_path}", "--num_seeds=1",
          "--init_checkpoint=/m/x", "--spiece_model_file=/m/s",
          f"--model_config_path={config}", "--num_core_per_host=8"]
  common = base + ["--device_memory_gb=24", "--use_fp16"]
  for table, tasks in (("glue", "mnli,rte"), ("squad", "squad2.0"),
                       ("race", "race")):
    text = _dry_run_text(capsys, [f"--table={table}", f"--tasks={tasks}"] +
                         common)
    lines = text.strip().split("\n")
    plans = [line for line in lines if line.startswith("#")]
    commands = [line for line in lines
                if line.startswith("/") and not line.endswith(" &")]
    assert len(plans) == len(commands) == len(tasks.split(","))
    for plan, command in zip(plans, commands):
      name = plan[2:].split(" ")[0]
      task = paper_settings.select(table, [name])[0]
      batch = task.large.batch
      expected = memory_plan.plan_accumulation(
          LARGE, task.kind, task.large.seq_len, batch, 8, "fp16", 24)
      got = _flags_of(command)
      micro, accum = int(got["train_batch_size"]), int(got["accum_steps"])
      assert (micro, accum) == (expected.micro_batch, expected.accum_steps)
      assert micro * 8 * accum == batch
      assert (f"global batch {batch} = {micro} per device x 8 devices x "
              f"{accum} accumulation step") in plan
      assert f"; fp16; about {expected.estimated_gb:.1f} of 24 GiB per " \
          "device (memory model held to published GPU measurements" in plan
  # A two-layer model of width 8 fits 80 GB whole: no accumulation.
  tiny = fx.write_config(str(tmp_path / "tiny"))
  text = _dry_run_text(capsys, ["--table=race", "--data_root=/data",
                                f"--work_dir={tmp_path}", "--num_seeds=1",
                                "--device_memory_gb=80",
                                f"--model_config_path={tiny}",
                                "--init_checkpoint=/m/x",
                                "--spiece_model_file=/m/s"])
  got = _flags_of(text.strip().split("\n")[1])
  assert (got["train_batch_size"], got["accum_steps"]) == ("32", "1")
  # One RACE question (4 sequences of 512) of XLNet-Large in fp32 does not
  # fit 8 GiB: one line naming the task and the ways out.
  with pytest.raises(ValueError, match=
                     r"^--device_memory_gb=8: race: race at 512 tokens in "
                     r"fp32: even 1 example per micro-step needs about .* "
                     r"GiB.*; would fit: --freeze_layers=\d+ \(about .*\); "
                     r"\d+ GB devices; or a shorter --max_seq_length$"):
    _dry_run_text(capsys, ["--table=race", "--device_memory_gb=8"] + base)



def _fake_calibration(path, peaks_gib):
  """A calibration file as bench/finetune_memory.py --calibrate writes it,
  of made-up XLNet-Large classifier peaks {(seq_len, batch): GiB} on a
  made-up device."""
  with open(path, "w") as f:
    json.dump({"format": memory_plan.CALIBRATION_FORMAT,
               "device": "GPU:0 Fake-16GB",
               "points": [dict(config=LARGE, task_kind="classifier",
                               seq_len=n, micro_batch=b, precision="fp32",
                               accumulate=False, peak_bytes=int(gib * 2**30))
                          for (n, b), gib in peaks_gib.items()]}, f)
  return str(path)


def test_a_calibration_file_plans_and_is_named(tmp_path):
  """--memory_calibration=FILE (or work_dir/memory_calibration.json) is
  what the plan holds to, and each plan's line says so; without one, the
  published measurements. The made-up device fits 2 x 512 in 5.5 GiB,
  where the published measurements allow 1 on 16 GB: its plan on 24 GB is
  larger."""
  config = fx.write_config(str(tmp_path / "large"), LARGE)
  path = _fake_calibration(tmp_path / "cal.json",
                           {(512, 1): 4.8, (512, 2): 5.5})
  args = ["--table=squad", "--tasks=squad2.0", "--data_root=/data",
          "--num_seeds=1", "--init_checkpoint=/m/x", "--dry_run",
          "--spiece_model_file=/m/s", f"--model_config_path={config}",
          "--device_memory_gb=24"]
  plans = {}
  for name, extra in (("file", [f"--memory_calibration={path}"]),
                      ("published", [])):
    got = _run_here(args + extra + [f"--work_dir={tmp_path / name}"])
    assert got.returncode == 0, got.stderr
    plans[name] = got.stdout.split("\n")[0]
  assert (f"(memory model held to calibration file {path} (measured on "
          "GPU:0 Fake-16GB)); target") in plans["file"]
  assert "(memory model held to published GPU measurements" in (
      plans["published"])
  micro = lambda line: int(  # noqa: E731
      re.search(r"= (\d+) per device", line).group(1))
  assert micro(plans["file"]) > micro(plans["published"])
  # found in the work dir
  os.makedirs(tmp_path / "found")
  shutil.copy(path, tmp_path / "found" / reproduce_plan.CALIBRATION_FILE)
  got = _run_here(args + [f"--work_dir={tmp_path / 'found'}"])
  assert got.returncode == 0
  assert "calibration file " in got.stdout.split("\n")[0]
  os.remove(path)
  got = _run_here(args + [f"--memory_calibration={path}",
                          f"--work_dir={tmp_path}"])
  assert got.returncode != 0 and got.stderr.strip().endswith(
      f"--memory_calibration={path}: No such file or directory (bench/"
      "finetune_memory.py writes one on the device)"), got.stderr


def test_the_plan_keeps_the_global_batch_and_is_passed_to_the_programs(
    tmp_path, capsys):
  """global = per-device micro-batch x devices x accum_steps; the programs
  read --train_batch_size per GPU (the release's README: "train_batch_size
  refers to the per-GPU batch size"), the global micro-batch on a TPU."""
  common = ["--data_root=/data", f"--work_dir={tmp_path}", "--num_seeds=1"]
  text = _dry_run_text(capsys, [
      "--table=glue", "--tasks=mnli", "--num_core_per_host=4",
      "--worker_hosts=h0:2222,h1:2222", "--task_index=1", "--accum_steps=2",
      "--use_fp16"] + common + _model_args("/m"))
  plan, command = text.strip().split("\n")
  assert plan == (
      "# mnli (seed 1): global batch 128 = 8 per device x 8 devices x 2 "
      "accumulation steps; fp16; target 89.8 (release README, Results on "
      "GLUE, XLNet-Large row)")
  got = _flags_of(command)
  assert {k: got[k] for k in ("train_batch_size", "accum_steps",
                              "num_core_per_host", "num_hosts", "use_fp16",
                              "use_bfloat16")} == dict(
      train_batch_size="8", accum_steps="2", num_core_per_host="4",
      num_hosts="2", use_fp16="True", use_bfloat16="False")
  assert (got["worker_hosts"], got["task_index"]) == ("h0:2222,h1:2222", "1")
  # --num_hosts on GPUs names the workers of the cluster, as the programs
  # read it: without one, 2 hosts is refused before anything runs.
  with pytest.raises(ValueError, match=r"^--num_hosts=2 but the cluster has "
                     r"1 worker\(s\) \(--worker_hosts or TF_CONFIG\)$"):
    _dry_run_text(capsys, ["--table=glue", "--tasks=mnli", "--num_hosts=2"]
                  + common + _model_args("/m"))
  # A TPU v3-8 with 4 micro-batches: 32 = 1 per core x 8 cores x 4, and
  # the programs' --train_batch_size is the global micro-batch, 8.
  text = _dry_run_text(capsys, [
      "--table=race", "--use_tpu", "--tpu=t", "--gcs_dir=gs://b/w",
      "--num_core_per_host=8", "--accum_steps=4"] + common +
                       _model_args("/m"))
  plan, command = text.strip().split("\n")
  assert plan.startswith("# race (seed 1): global batch 32 = 1 per device x "
                         "8 devices x 4 accumulation steps; bf16 (questions, "
                         "4 sequences each); target 81.75 (release README")
  got = _flags_of(command)
  assert (got["train_batch_size"], got["accum_steps"], got["use_bfloat16"]
          ) == ("8", "4", "True")
  text = _dry_run_text(capsys, ["--table=glue", "--tasks=rte",
                                "--use_bfloat16"] + common +
                       _model_args("/m"))
  assert "x 1 accumulation step; bf16;" in text
  assert _flags_of(text.strip().split("\n")[1])["use_bfloat16"] == "True"


def test_override_flags_replace_every_tasks_value(tmp_path, capsys):
  lines = _dry_run(capsys, [
      "--table=glue", "--tasks=mnli,sts-b", "--learning_rate=1e-4",
      "--train_steps=7", "--train_batch_size=4", "--max_seq_length=16",
      "--data_root=/data", f"--work_dir={tmp_path}", "--num_seeds=1"] +
                   _model_args("/m"))
  assert len(lines) == 2
  for line in lines:
    got = _flags_of(line)
    assert (got["learning_rate"], got["train_steps"], got["warmup_steps"],
            got["save_steps"], got["train_batch_size"],
            got["max_seq_length"]) == ("0.0001", "7", "1", "7", "4", "16")


def test_a_shortened_run_keeps_the_papers_warmup_fraction(tmp_path):
  # The table's steps/warm-up: MNLI 10000/1000, RTE 800/200 (paper_settings
  # cites issue 96); 300 steps keep 10 % and 25 %: 30 and 75 (not 300).
  proc = _run_here(["--dry_run", "--table=glue", "--tasks=mnli,rte",
                    "--train_steps=300", "--data_root=/data",
                    f"--work_dir={tmp_path}", "--num_seeds=1"] +
                   _model_args("/m"))
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert [_flags_of(line)["warmup_steps"] for line in proc.stdout.split("\n")
          if "run_classifier.py" in line and " &" not in line] == ["30", "75"]
  notes = [l for l in proc.stderr.split("\n") if "warm-up" in l]
  assert notes == [
      "reproduce.py: mnli: --train_steps=300: warm-up scaled to 30 steps "
      "(the paper's 1000 of 10000, the same fraction); --warmup_steps sets "
      "it", "reproduce.py: rte: --train_steps=300: warm-up scaled to 75 "
      "steps (the paper's 200 of 800, the same fraction); --warmup_steps "
      "sets it"]


def _settings_of(args):
  """reproduce.py's resolved settings of the command line `args` (paths
  absolute, as `run_table` makes them)."""
  flag_values = flags.FlagValues()
  reproduce.define_flags(flag_values)
  flag_values(["reproduce.py"] + list(args))
  return reproduce_plan.absolute_paths(
      finetune_flags.resolve_reproduce(flag_values))


def _settings(work_dir, *extra):
  """reproduce.py's resolved settings for the GLUE table (paths absolute,
  as `run_table` makes them)."""
  flag_values = flags.FlagValues()
  reproduce.define_flags(flag_values)
  flag_values(["reproduce.py", "--table=glue", "--data_root=/data",
               f"--work_dir={work_dir}"] + _model_args("/m") + list(extra))
  return reproduce_plan.absolute_paths(
      finetune_flags.resolve_reproduce(flag_values))


RTE = paper_settings.select("glue", ["rte"])[0]


def _run_of(settings, seed=1, data_dir="/data/RTE"):
  """rte's `reproduce.Run` with `seed` under `settings`."""
  plan = reproduce_plan.batch_plan(RTE, 32, settings)
  command = reproduce_plan.task_command(RTE, data_dir, settings, seed, plan)
  return reproduce_plan.Run(RTE, seed, plan, (), tuple(command))


def test_recompute_is_passed_to_every_program(tmp_path):
  """--recompute reaches each task's command; without it no command names
  it (so that the commands of earlier results stay equal)."""
  assert "--recompute=True" in _run_of(_settings(tmp_path,
                                                 "--recompute")).command
  assert not [arg for arg in _run_of(_settings(tmp_path)).command
              if arg.startswith("--recompute")]


def _write_result(settings, legacy=False, data_dir="/data/RTE", seed=1,
                  ours=71.5):
  """Writes rte's result.json of `seed` in the documented layout
  (docs/reproducing.md; without "work_dir" as earlier versions wrote it
  when `legacy`). Returns (path, the row, the run)."""
  run = _run_of(settings, seed, data_dir)
  row = reproduce_report.run_row(RTE, seed, "done", ours, 12.5)
  content = {"row": row, "command": list(run.command)}
  if not legacy:
    content["work_dir"] = settings.work_dir
  path = os.path.join(settings.work_dir, "rte", f"seed-{seed}", "result.json")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    json.dump(content, f)
  return path, row, run


def test_a_result_of_other_settings_is_refused_naming_them(tmp_path):
  settings = _settings(tmp_path)
  path, row, run = _write_result(settings)
  assert reproduce_results.finished_row(run, settings) == row
  assert row["ours"] == 71.5 and row["wall_time_s"] == 12.5
  settings = dataclasses.replace(settings, learning_rate=5e-5)
  with pytest.raises(ValueError) as e:
    reproduce_results.finished_row(_run_of(settings), settings)
  # RTE's own learning rate: 3e-5 (zihangdai/xlnet#96).
  assert str(e.value) == (
      f"{path} was made with other settings (--learning_rate was 3e-05, "
      f"now 5e-05); use another --work_dir, or delete {tmp_path}/rte/seed-1 "
      "to run rte (seed 1) again with these")


def test_a_moved_work_dir_keeps_its_results(tmp_path):
  """Paths under the work dir are compared below it: a moved work dir is
  the same run; a result.json of an earlier version (no "work_dir") is
  accepted where it was made, and a move of it is named."""
  old = _settings(tmp_path / "old")
  _, row, _ = _write_result(old)
  shutil.move(str(tmp_path / "old"), str(tmp_path / "new"))
  new = _settings(tmp_path / "new")
  assert reproduce_results.finished_row(_run_of(new), new) == row

  path, row, run = _write_result(new, legacy=True)
  assert reproduce_results.finished_row(run, new) == row
  shutil.move(str(tmp_path / "new"), str(tmp_path / "moved"))
  moved = _settings(tmp_path / "moved")
  with pytest.raises(ValueError, match=re.escape(
      f"(--output_dir was {tmp_path}/new/rte/records, now {tmp_path}/moved/"
      f"rte/records; --model_dir was {tmp_path}/new/rte/seed-1/model, now ")):
    reproduce_results.finished_row(_run_of(moved), moved)


def _earlier_version_command(command, work_dir):
  """`command` as reproduce.py wrote it before seeds, batch plans and
  precision were passed: no --seed, --accum_steps, --use_fp16 nor
  --use_bfloat16, the model in work_dir/{task}/model."""
  dropped = ("--seed=", "--accum_steps=", "--use_fp16=", "--use_bfloat16=")
  return [arg.replace(f"{work_dir}/rte/seed-1/", f"{work_dir}/rte/")
          for arg in command if not arg.startswith(dropped)]


def test_an_earlier_layout_is_moved_into_the_seed_directory(tmp_path, capsys):
  """A work dir of an earlier version ({task}/model, log.txt and
  result.json, the command without --seed: the programs' default seed 1)
  is moved into {task}/seed-1/ and its finished run is kept."""
  settings = _settings(tmp_path, "--num_seeds=1")
  run = _run_of(settings)
  task_dir = tmp_path / "rte"
  (task_dir / "model").mkdir(parents=True)
  (task_dir / "model" / "checkpoint").write_text("model.ckpt-800")
  (task_dir / "records").mkdir()
  old_command = _earlier_version_command(run.command, str(tmp_path))
  (task_dir / "log.txt").write_text(f"\n$ {shlex.join(old_command)}\n")
  row = {"task": "rte", "label": "RTE", "ours": 71.5, "paper": 83.8,
         "wall_time_s": 12.5, "status": "done"}
  (task_dir / "result.json").write_text(json.dumps(
      {"row": row, "command": old_command, "work_dir": str(tmp_path)}))
  assert reproduce_results.migrate_earlier_layout(settings, RTE) == 1
  assert sorted(os.listdir(task_dir)) == ["records", "seed-1"]
  assert sorted(os.listdir(task_dir / "seed-1")) == [
      "log.txt", "model", "result.json"]
  assert (task_dir / "seed-1" / "model" / "checkpoint").read_text() == (
      "model.ckpt-800")
  assert reproduce_results.finished_row(
      run, settings) == reproduce_report.run_row(
      RTE, 1, "done", 71.5, 12.5)
  assert "rte: moved model, log.txt, result.json of an earlier" in (
      capsys.readouterr().out)
  assert reproduce_results.migrate_earlier_layout(settings, RTE) is None
  # An earlier run with --seed=7 goes to seed-7; a taken seed directory is
  # named rather than overwritten.
  (task_dir / "log.txt").write_text("\n$ python run_classifier.py --seed=7\n")
  assert reproduce_results.migrate_earlier_layout(settings, RTE) == 7
  assert (task_dir / "seed-7" / "log.txt").exists()
  (task_dir / "log.txt").write_text("\n$ python run_classifier.py --seed=7\n")
  with pytest.raises(ValueError, match=re.escape(
      f"{task_dir} holds log.txt of an earlier reproduce.py and "
      f"{task_dir}/seed-7 already holds log.txt; delete one of them")):
    reproduce_results.migrate_earlier_layout(settings, RTE)


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
      "data_dir": f"{tmp_path}/d/RTE",
      "model_dir": f"{tmp_path}/g/rte/seed-1/model",
      "init_checkpoint": f"{tmp_path}/m/x.ckpt",
      "model_config_path": f"{tmp_path}/m/c.json",
      "spiece_model_file": f"{tmp_path}/m/s.model"}


REMEDY = ("delete it to run rte (seed 1) again (it resumes from its "
          "checkpoints)")


@pytest.mark.parametrize("content,cause", [
    (b"", "the file is empty"),
    (b'{"row": {"task": "rte", "status": "do', "not JSON (Unterminated "
     "string starting at at line 1 column 35; truncated?)"),
    (b"\xff\xfe\x00garbage", "not UTF-8 text (binary bytes)"),
    (b"[1, 2]", "it holds [1, 2], expected a JSON object"),
    (b'{"row": {"status": "done", "ours": 1.0}, "command": "python x.py"}',
     'command is "python x.py", expected a list of at least 2 strings'),
    (b'{"command": ["python", "x.py"]}', "row is missing, expected a JSON "
     "object"),
    (b'{"row": {"status": "failed", "ours": 1.0}, "command": ["p", "x"]}',
     'row.status is "failed", expected one of "done"'),
    (b'{"row": {"status": "done", "ours": "71.5"}, "command": ["p", "x"]}',
     'row.ours is "71.5", expected a finite number'),
    (b'{"row": {"status": "done", "ours": 7, "wall_time_s": -1}, '
     b'"command": ["p", "x"]}', "row.wall_time_s is -1, expected a finite "
     "number >= 0 or null"),
])
def test_a_bad_result_file_is_one_line_naming_it(tmp_path, content, cause):
  settings = _settings(tmp_path)
  path, _, run = _write_result(settings)
  with open(path, "wb") as f:
    f.write(content)
  with pytest.raises(ValueError) as e:
    reproduce_results.finished_row(run, settings)
  assert str(e.value) == (f"{path} is not a valid finished run's result: "
                          f"{cause}; {REMEDY}")


def test_an_unreadable_result_file_is_one_line_naming_it(tmp_path):
  settings = _settings(tmp_path)
  path, _, run = _write_result(settings)
  os.remove(path)
  os.mkdir(path)
  with pytest.raises(ValueError, match=re.escape(
      f"cannot read finished run's result {path} (Is a directory); "
      f"{REMEDY}")):
    reproduce_results.finished_row(run, settings)


def test_a_result_file_of_the_wrong_shape_ends_the_program_in_one_line(
    tmp_path):
  data, work = glue_root(str(tmp_path / "glue")), tmp_path / "work"
  args = ["--table=glue", "--tasks=rte", f"--data_root={data}",
          f"--work_dir={work}"] + _model_args("/m")
  (work / "rte" / "seed-1").mkdir(parents=True)
  (work / "rte" / "seed-1" / "result.json").write_text(
      '{"row": [], "command": []}')
  proc = _run_here(args + ["--num_seeds=1"])
  _stopped_in_one_line(proc, work, 2, (
      f"{work}/rte/seed-1/result.json is not a valid finished run's result: "
      f"command is [], expected a list of at least 2 strings; {REMEDY}"))


def test_a_second_run_on_one_work_dir_is_refused(tmp_path):
  data, work = glue_root(str(tmp_path / "glue")), tmp_path / "work"
  with run_lock.hold(str(work)):  # as a running reproduce.py holds it
    proc = _run_here(["--table=glue", "--tasks=rte", f"--data_root={data}",
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


def test_dry_run_lists_every_run_of_the_table(tmp_path):
  """Five seeds by default for GLUE (its figures are medians of 5 runs,
  zihangdai/xlnet#96), seed by seed; task names in any case."""
  proc = _run_here(["--table=glue", "--data_root=/data", f"--work_dir={tmp_path}",
               "--dry_run"] + _model_args("/m"))
  assert proc.returncode == 0, proc.stderr[-2000:]
  runs = [(_flags_of(line)["task_name"], _flags_of(line)["seed"])
          for line in proc.stdout.split("\n") if line.startswith("/")]
  assert runs == [(task, str(seed)) for seed in range(1, 6) for task in (
      "mnli_matched", "qnli", "qqp", "rte", "sst-2", "mrpc", "cola",
      "sts-b")]
  # Every missing data set is named at once, as a warning.
  warning = [l for l in proc.stderr.split("\n") if "warning" in l]
  # Where download.py puts them (docs/reproducing.md's table), and the
  # command that does.
  assert warning == [
      "reproduce.py: warning: --data_root=/data: no data for mnli (expected "
      "/data/glue_data/MNLI); qnli (expected /data/glue_data/QNLI); qqp "
      "(expected /data/glue_data/QQP); rte (expected /data/glue_data/RTE); "
      "sst-2 (expected /data/glue_data/SST-2); mrpc (expected "
      "/data/glue_data/MRPC); cola (expected /data/glue_data/CoLA); sts-b "
      "(expected /data/glue_data/STS-B); `python download.py "
      "--only=mnli,qnli,qqp,rte,sst-2,mrpc,cola,sts-b --data_root=/data` "
      "fetches it"]


@pytest.mark.parametrize("table,tasks,seeds", [
    ("glue", "STS-B,Rte", ["1"] * 2 + ["2"] * 2 + ["3"] * 2),
    ("squad", "squad2.0", ["4", "5", "6"]), ("race", "RACE", ["4"]),
    ("classification", "AG_News", ["4"]),
])
def test_seeds_default_per_table_and_start_at_seed(tmp_path, capsys, table,
                                                   tasks, seeds):
  args = [f"--table={table}", f"--tasks={tasks}", "--data_root=/data",
          f"--work_dir={tmp_path}"] + _model_args("/m")
  first = [] if table == "glue" else ["--seed=4"]
  extra = ["--num_seeds=3"] if table == "glue" else []
  lines = _dry_run(capsys, args + first + extra)
  got = [_flags_of(line) for line in lines]
  assert [g["seed"] for g in got] == seeds
  for g in got:
    assert g["model_dir"].endswith(f"/seed-{g['seed']}/model")
    assert g["output_dir"].endswith("/records")  # shared by the seeds


def test_a_warmup_above_the_steps_is_warned_as_the_programs_do(tmp_path):
  proc = _run_here(["--table=glue", "--tasks=rte,mrpc", "--warmup_steps=900",
               "--data_root=/data", f"--work_dir={tmp_path}", "--dry_run"] +
              _model_args("/m"))
  assert proc.returncode == 0, proc.stderr[-2000:]
  warnings = [l for l in proc.stderr.split("\n") if "warm-up" in l]
  # rules.long_warmup_message's words, as run_classifier.py logs them.
  assert warnings == [
      f"reproduce.py: warning: {task}: --warmup_steps=900 > "
      "--train_steps=800: the run ends during warm-up; the learning rate "
      "stays below 0.889 times --learning_rate" for task in ("rte", "mrpc")]


@pytest.mark.parametrize("extra,message", [
    (["--table=glue", "--num_core_per_host=3", "--tasks=sts-b", "--dry_run"],
     "--num_core_per_host=3 does not divide the global batch 32 of sts-b"),
    (["--table=glue", "--num_core_per_host=4", "--accum_steps=3",
      "--tasks=sts-b", "--dry_run"], "--num_core_per_host=4 x "
     "--accum_steps=3 (12) does not divide the global batch 32 of sts-b"),
    (["--table=glue", "--tasks=sts-b,imdb"], "--tasks: imdb not in the glue"),
    (["--table=race"], "no data for race (expected /nonexistent/RACE)"),
    (["--table=glue", "--tasks=rte,STS-B"], "--data_root=/nonexistent: no "
     "data for rte (expected /nonexistent/glue_data/RTE); sts-b (expected "
     "/nonexistent/glue_data/STS-B); `python download.py --only=rte,sts-b "
     "--data_root=/nonexistent` fetches it"),
    (["--table=squad", "--tasks=squad2.0"], "no data for squad2.0 (expected "
     "/nonexistent/squad with train-v2.0.json, dev-v2.0.json)"),
    (["--table=race", "--warmup_steps=-1"], "--warmup_steps=-1 must be >= 0"),
    (["--table=race", "--num_seeds=0"], "--num_seeds=0 must be >= 1"),
    (["--table=race", "--work_dir=gs://b/w"], "give Cloud Storage as "
     "--gcs_dir"),
    (["--table=race", "--use_tpu", "--dry_run"], "--use_tpu needs --tpu "
     "(got None) and a gs:// --gcs_dir (got None)"),
    (["--table=race", "--use_tpu", "--tpu=t", "--gcs_dir=/local", "--dry_run"],
     "--use_tpu needs --tpu (got t) and a gs:// --gcs_dir (got /local)"),
    (["--table=race", "--use_fp16", "--use_bfloat16"], "--use_fp16 is for "
     "GPUs and excludes --use_bfloat16"),
    (["--table=race", "--device_memory_gb=16", "--accum_steps=2"],
     "--accum_steps and --device_memory_gb exclude each other"),
    (["--table=race", "--device_memory_gb=0"], "--device_memory_gb=0.0 "
     "must be > 0"),
    (["--table=race", "--memory_calibration=c.json"],
     "--memory_calibration=c.json needs --device_memory_gb"),
    (["--table=race", "--device_memory_gb=16", "--dry_run"],
     "--model_config_path=/m/xlnet_config.json: XLNetConfig: config file "
     "/m/xlnet_config.json not found (--device_memory_gb plans with the "
     "model's sizes)"),
])
@pytest.mark.quick
def test_bad_settings_are_one_line_errors(tmp_path, extra, message):
  proc = in_process.run_program(
      "reproduce.py", "--data_root=/nonexistent", f"--work_dir={tmp_path}",
      *_model_args("/m"), *extra)
  assert proc.returncode == 2
  last = proc.stderr.strip().split("\n")[-1]
  assert last.startswith("reproduce.py: error: ") and message in last
  assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("values,message", [
    (dict(table=None), "--table is required (one of glue, "),
    (dict(work_dir="gs://b/w"), "--work_dir=gs://b/w must be a local "
     "directory (logs and results); give Cloud Storage as --gcs_dir"),
    (dict(), "no data for race (expected /nonexistent/RACE)"),
])
@pytest.mark.quick
def test_the_python_api_refuses_what_the_program_refuses(tmp_path, values,
                                                         message):
  """plan_table and run_table refuse, in reproduce.py's words
  (test_bad_settings_are_one_line_errors), what the program refuses, and
  leave the work dir unmade."""
  config = reproduce_config.ReproduceConfig(**dict(dict(
      table="race", init_checkpoint="/m/xlnet_model.ckpt",
      model_config_path="/m/xlnet_config.json",
      spiece_model_file="/m/spiece.model", data_root="/nonexistent",
      work_dir=str(tmp_path / "work")), **values))
  for call in (reproduce_api.plan_table, reproduce_api.run_table):
    with pytest.raises(ValueError, match=re.escape(message)):
      call(config)
  assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("missing, words", [
    ("init_checkpoint", "the released model's files; `python download.py "
     "--data_root=DIR --only=models` fetches them and prints the flags to "
     "pass"),
    ("data_root", "the directory of the data sets; `python download.py "
     "--data_root=DIR --only=race` fetches the table's"),
])
def test_a_missing_path_flag_points_to_download_py(tmp_path, missing, words):
  args = [f"--work_dir={tmp_path}", "--table=race", "--data_root=/d"]
  args += _model_args("/m")
  proc = _run_here([a for a in args if not a.startswith(f"--{missing}=")])
  assert proc.returncode == 2
  assert proc.stderr.strip().split("\n")[-1] == (
      f"reproduce.py: error: --{missing} is required: {words}")


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


def test_chart_range_line_spans_the_runs_over_the_median_bar(tmp_path):
  # Medians 80 and 40, targets 100 and 50; runs of the first task from 60
  # to 90, the second's agree (40 to 40). One scale: 100 is 200 px, so 80
  # is 160 px, 60 -> 120, 90 -> 180, 40 -> 80.
  path = str(tmp_path / "chart.png")
  png_chart.write_bar_chart(path, [(80.0, 100.0), (40.0, 50.0)],
                            [(60.0, 90.0), (40.0, 40.0)])
  with open(path, "rb") as f:
    image = decode_png(f.read())
  line = np.all(image == np.array(png_chart.RANGE_COLOR, np.uint8), axis=-1)
  columns = np.nonzero(line.any(axis=0))[0]
  # 2 px wide at the centre of each blue bar (12 px from column 10, and
  # from 10 + 2 * 12 + 10 = 44): columns 15-16 and 49-50.
  assert list(columns) == [15, 16, 49, 50]
  baseline = 210  # margin 10 + plot height 200
  rows = lambda c: list(np.nonzero(line[:, c])[0])
  # The rows of a 180 px bar above a 120 px one; one row at 80 px.
  assert rows(15) == rows(16) == list(range(baseline - 180, baseline - 120))
  assert rows(49) == rows(50) == [baseline - 80]
  # The median bar still stands at 160 px beside the line.
  blue = _bar_pixels(image, png_chart.SERIES_COLORS[0])
  assert blue[10] == 160 and blue[15] == 160 - (160 - 120)


# ---- medians over seeds -----------------------------------------------------
@pytest.mark.quick
def test_a_task_row_is_the_median_and_range_of_its_runs():
  runs = [reproduce_report.run_row(RTE, seed, "done", ours, 10.0)
          for seed, ours in ((1, 71.0), (2, 75.5), (3, 68.25))]
  row = reproduce_report.task_row(RTE, "large", 800, runs)
  # Sorted 68.25, 71.0, 75.5: the median is 71.0; target 83.8 (README).
  assert (row["ours"], row["ours_min"], row["ours_max"], row["runs_done"],
          row["num_seeds"], row["diff"], row["wall_time_s"], row["status"]
          ) == (71.0, 68.25, 75.5, 3, 3, -12.8, 30.0, "done")
  assert row["target_source"] == "release README, Results on GLUE, " \
      "XLNet-Large row"
  # Four runs: the mean of the middle two, (71.0 + 72.0) / 2.
  four = runs + [reproduce_report.run_row(RTE, 4, "done", 72.0, 10.0)]
  assert reproduce_report.task_row(RTE, "large", 800, four)["ours"] == 71.5
  # Unfinished runs: the median of those done; the status says which.
  pending = runs[:2] + [reproduce_report.run_row(RTE, 3, "pending")]
  row = reproduce_report.task_row(RTE, "base", 800, pending)
  assert (row["ours"], row["runs_done"], row["target"], row["status"]) == (
      73.25, 2, 74.0, "partial")
  failed = runs[:2] + [reproduce_report.run_row(RTE, 3, "failed")]
  assert reproduce_report.task_row(RTE, "large", 800, failed)["status"] == (
      "failed")
  none = [reproduce_report.run_row(RTE, 1, "pending")]
  row = reproduce_report.task_row(RTE, "large", 800, none)
  assert (row["ours"], row["ours_min"], row["diff"], row["status"]) == (
      None, None, None, "pending")


def test_the_markdown_table_cites_each_figures_source():
  ag = paper_settings.select("classification", ["ag_news"])[0]
  amazon = paper_settings.select("classification", ["amazon2"])[0]
  rows = [reproduce_report.task_row(t, "large", 10000, [
      reproduce_report.run_row(t, 1, "done", 5.0, 3600.0)]) for t in (
          amazon, ag)]
  text = reproduce_report.markdown_report("T", rows)
  lines = text.split("\n")
  assert lines[4] == ("| Amazon-2 | error rate (%) | 5.00 | 5.00–5.00 | 1/1 | "
                      "2.40 [1] | 2.60 | — | 2.11 [2] | 10000 | 01:00:00 | "
                      "done |")
  assert lines[5] == ("| AG | error rate (%) | 5.00 | 5.00–5.00 | 1/1 | "
                      "4.45 [2] | 0.55 | — | 4.45 [2] | 10000 | 01:00:00 | "
                      "done |")
  assert "[1] release README, Results on Text Classification, XLNet-Large " \
      "row" in lines
  assert f"[2] {paper_settings.PAPER_V2}" in lines


# ---- whole tables on tiny stand-in data ------------------------------------
CONFIG = fx.PROGRAM_CONFIG
SMOKE = ["--train_steps=2", "--max_seq_length=32", "--train_batch_size=2",
         "--warmup_steps=0", "--save_steps=2", "--iterations=1",
         "--eval_batch_size=4", "--max_qa_length=8", "--max_query_length=8",
         "--seed=1", "--num_seeds=1", "--num_proc=2"]


@pytest.fixture(scope="module")
def model():
  """A stand-in for a released model directory: spiece.model,
  xlnet_config.json and a pretrained checkpoint (by the released names),
  shared read-only."""
  return fx.shared_released_model(CONFIG)


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
    values = [run["ours"] for run in r["runs"]]
    assert r["runs_done"] == r["num_seeds"] == len(values)
    assert r["ours"] == pytest.approx(float(np.median(values)), abs=1e-4)
    assert (r["ours_min"], r["ours_max"]) == (min(values), max(values))
    if r["target"] is not None:
      assert r["diff"] == pytest.approx(r["ours"] - r["target"], abs=1e-3)
  with open(os.path.join(work_dir, "results.md")) as f:
    table = f.read()
  for r in rows:
    line = next(l for l in table.split("\n") if l.startswith(
        f"| {r['label']} |"))
    assert f"| {r['ours']:.2f} |" in line and "| done |" in line
  with open(os.path.join(work_dir, "results.png"), "rb") as f:
    image = decode_png(f.read())
  assert _bar_pixels(image, png_chart.SERIES_COLORS[1]).any()  # the target
  return rows



# Larger than the work dir's lock, smaller than a task log's first line
# (the command) and results.md.
SMALL_FILES = 300


def _temporaries(root):
  return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names
          if ".tmp-" in n]


@pytest.mark.tf_version  # exercises xlnet/reproduce/runner.py there
def test_a_task_log_beyond_a_file_size_limit_is_one_line(tmp_path):
  data, work = glue_root(str(tmp_path / "glue")), tmp_path / "work"
  with in_process.file_size_limit(SMALL_FILES):
    proc = _run_here(["--table=glue", "--tasks=rte", f"--data_root={data}",
                      f"--work_dir={work}"] + _model_args("/m"))
  _stopped_in_one_line(proc, work, 1, (
      f"cannot write {work}/rte/seed-1/log.txt: file too large; the task was "
      "not started; make room (or fix the permission) and rerun the same "
      "command"))


def test_reports_beyond_a_file_size_limit_are_one_line(tmp_path):
  data, work = glue_root(str(tmp_path / "glue")), tmp_path / "work"
  args = [f"--data_root={data}", "--tasks=rte", "--num_seeds=1"]
  _write_result(_settings(work, *args), data_dir=f"{data}/RTE")
  with in_process.file_size_limit(SMALL_FILES):
    proc = _run_here(["--table=glue", f"--work_dir={work}"] +
                     _model_args("/m") + args)
  assert "[1/1] RTE (seed 1): done by an earlier run, skipped" in proc.stdout
  _stopped_in_one_line(proc, work, 1, (
      f"cannot write {work}/results.md: file too large; it is unchanged and "
      "no temporary file is left; make room (or fix the permission) and "
      "rerun"))
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
  lock. (A rerun resuming a run from a moved work dir:
  test_a_killed_table_resumes_from_a_moved_work_dir.) The task runs as
  long as needed for the signal to find it running (400 steps); it stops
  after 2 or 3."""
  data, work = glue_root(str(tmp_path / "glue")), str(tmp_path / "work")
  args = (["--table=glue", "--tasks=rte", f"--data_root={data}"] +
          _model_args(model) + SMOKE + ["--train_steps=400",
                                        "--save_steps=400"])
  proc = subprocess.Popen(
      [sys.executable, os.path.join(REPO, "reproduce.py"),
       f"--work_dir={work}"] + args, stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True, cwd=REPO, env=ENV,
      start_new_session=True)
  log = os.path.join(work, "rte", "seed-1", "log.txt")
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
      f"reproduce.py: stopped by {name} \\(passed on to rte \\(seed 1\\): "
      f"run_classifier.py exited with code {128 + signum}: "
      f"run_classifier.py: stopped by {name} after step (\\d+); checkpoint "
      f"model.ckpt-(\\d+) saved in {work}/rte/seed-1/model; rerun the same "
      "command "
      "to resume\\); rerun the same command to go on", last)
  assert stopped and stopped[1] == stopped[2], last
  step = int(stopped[1])
  assert 2 <= step < 400 and max(_logged_steps(log)) == step
  assert f"{name} received: passed on to the running task" in out
  with open(log) as f:
    assert f.read().count("received: stopping after this step") == 1
  model_dir = os.path.join(work, "rte", "seed-1", "model")
  assert tf.train.latest_checkpoint(model_dir) == os.path.join(
      model_dir, f"model.ckpt-{step}")
  assert not os.path.exists(os.path.join(work, "trainer.lock"))
  assert not os.path.exists(os.path.join(model_dir, "trainer.lock"))
  assert not _processes_mentioning(work)
  with open(os.path.join(work, "results.json")) as f:
    assert json.load(f)["rows"][0]["status"] == "interrupted"



def _published_steps(model_dir):
  """Steps of the checkpoints published in `model_dir` (their .index file
  renamed into place; not the `.tmp-` bundle a save writes first)."""
  if not os.path.isdir(model_dir):
    return []
  return sorted(int(m[1]) for m in map(re.compile(
      r"^model\.ckpt-(\d+)\.index$").match, os.listdir(model_dir)) if m)


@pytest.mark.slow
def test_a_killed_table_resumes_from_a_moved_work_dir(tmp_path, model):
  """One task with two seeds, seed 1 done by an earlier run (its
  result.json): reproduce.py skips it and, SIGKILLed while seed 2 trains,
  takes its running program with it. The same command, run from the work
  dir's new place after a move, skips seed 1 again and resumes seed 2 from
  its newest checkpoint (in the new place); the task's row is the median
  of the two runs. (A result.json a real run wrote, read back by a rerun:
  test_multi_worker.py's reproduce.py test; several tasks, each row of its
  own runs: test_a_table_groups_each_tasks_runs.)"""
  data, work = glue_root(str(tmp_path / "glue")), str(tmp_path / "work")
  # 3 steps, a checkpoint after each: killed after the first.
  args = (["--table=glue", "--tasks=rte", f"--data_root={data}"] +
          _model_args(model) + SMOKE +
          ["--train_steps=3", "--save_steps=1", "--num_seeds=2"])
  settings = _settings_of([f"--work_dir={work}"] + args)
  first_run = reproduce_plan.plan_runs([RTE], settings)[0]
  assert first_run.seed == 1
  first = reproduce_report.run_row(RTE, 1, "done", 61.5, 12.5)
  path = reproduce_plan.task_dirs(settings, RTE, 1)["result"]
  os.makedirs(os.path.dirname(path))
  with open(path, "w") as f:
    json.dump({"row": first, "command": list(first_run.command),
               "work_dir": work}, f)
  proc = subprocess.Popen(
      [sys.executable, os.path.join(REPO, "reproduce.py"),
       f"--work_dir={work}"] + args, stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT, text=True, cwd=REPO, env=ENV)
  second_model = os.path.join(work, "rte", "seed-2", "model")
  # A published checkpoint (a kill during the first save leaves nothing to
  # resume from: the rerun starts afresh).
  deadline = time.time() + 600
  while time.time() < deadline and not _published_steps(second_model):
    time.sleep(0.05)
  proc.send_signal(signal.SIGKILL)
  seen = proc.communicate(timeout=60)[0]
  # Its run_classifier.py died with it (no orphan writes beside a rerun).
  deadline = time.time() + 1
  while _processes_mentioning(work) and time.time() < deadline:
    time.sleep(0.2)
  assert not _processes_mentioning(work)
  assert "[1/2] RTE (seed 1): done by an earlier run, skipped" in seen
  assert ("[2/2] RTE (seed 2): starting; elapsed 00:00:00; ETA unknown "
          "until a run finishes") in seen
  assert ("# rte (seed 2): global batch 2 = 2 per device x 1 device x 1 "
          "accumulation step; fp32; target 83.8 (release README") in seen
  assert not os.path.exists(os.path.join(work, "rte", "seed-2",
                                         "result.json"))
  # (A kill that comes late, under load, may find step 3 saved too; the
  # rerun then resumes there and trains no more.)
  newest = _published_steps(second_model)[-1]
  assert 1 <= newest <= 3

  moved = str(tmp_path / "moved")
  shutil.move(work, moved)
  again = _run_here([f"--work_dir={moved}"] + args)
  assert again.returncode == 0, (again.stdout, again.stderr[-3000:])
  assert "[1/2] RTE (seed 1): done by an earlier run, skipped" in (
      again.stdout)
  assert "[2/2] RTE (seed 2): starting" in again.stdout
  # Seed 1 never ran a program here.
  assert not os.path.exists(os.path.join(moved, "rte", "seed-1", "log.txt"))
  second_log = os.path.join(moved, "rte", "seed-2", "log.txt")
  with open(second_log) as f:
    text = f.read()
  assert text.count("\n$ ") == 2
  resumed = text.split("\n$ ")[-1]
  assert (f"Resumed from {moved}/rte/seed-2/model/model.ckpt-{newest} at "
          f"step {newest}") in resumed
  assert [int(n) for n in re.findall(r"\] \[(\d+)\] \| loss", resumed)] == (
      list(range(newest + 1, 4)))
  (row,) = _check_reports(moved, ["rte"], steps=3)
  assert row["runs"][0] == first
  assert [run["seed"] for run in row["runs"]] == [1, 2]
  assert row["target"] == 83.8


@pytest.mark.quick
@pytest.mark.tf_version
def test_a_table_groups_each_tasks_runs(tmp_path):
  """Two tasks with two seeds, run seed by seed: each task's row holds its
  own runs in seed order, those done by an earlier run (their result.json)
  and those pending; its figure is the median of those done."""
  data = glue_root(str(tmp_path / "glue"))
  settings = _settings(tmp_path / "work", f"--data_root={data}",
                       "--tasks=rte,sts-b", "--num_seeds=2")
  tasks = paper_settings.select("glue", ["rte", "sts-b"])
  runs = reproduce_plan.plan_runs(tasks, settings)
  assert [r.name for r in runs] == ["rte (seed 1)", "sts-b (seed 1)",
                                    "rte (seed 2)", "sts-b (seed 2)"]
  # Done: rte's two runs (70.0, 74.0) and sts-b's first (80.0).
  for run, ours in zip(runs[:3], (70.0, 80.0, 74.0)):
    path = reproduce_plan.task_dirs(settings, run.task, run.seed)["result"]
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
      json.dump({"row": reproduce_report.run_row(run.task, run.seed, "done",
                                                 ours, 10.0),
                 "command": list(run.command),
                 "work_dir": settings.work_dir}, f)
  table = reproduce_api.Table(tasks, runs, settings)
  rte, stsb = table.rows()
  assert (rte["task"], stsb["task"]) == ("rte", "sts-b")
  assert [(r["seed"], r["status"], r["ours"]) for r in rte["runs"]] == [
      (1, "done", 70.0), (2, "done", 74.0)]
  assert (rte["ours"], rte["runs_done"], rte["status"]) == (72.0, 2, "done")
  assert [(r["seed"], r["status"]) for r in stsb["runs"]] == [
      (1, "done"), (2, "pending")]
  assert (stsb["ours"], stsb["runs_done"], stsb["status"]) == (
      80.0, 1, "partial")
  table.write()
  with open(os.path.join(settings.work_dir, "results.json")) as f:
    assert [(r["task"], r["ours"]) for r in json.load(f)["rows"]] == [
        ("rte", 72.0), ("sts-b", 80.0)]


@pytest.mark.slow
@pytest.mark.parametrize("table,task,layout", [
    ("classification", "yelp2", csv_root),
    ("squad", "squad2.0", squad_root),
    ("race", "race", race_root),
])
def test_other_tables_end_to_end(tmp_path, model, table, task, layout):
  data, work = layout(str(tmp_path / "data")), str(tmp_path / "work")
  proc = _run_here([f"--table={table}", f"--tasks={task}",
                    f"--data_root={data}", f"--work_dir={work}"] +
                   _model_args(model) + SMOKE)
  assert proc.returncode == 0, (proc.stdout, proc.stderr[-3000:])
  _check_reports(work, [task])
  if table == "squad":
    # The training records were written by --num_proc=2 shards in parallel
    # processes before the training, which reused them.
    seed_dir = os.path.join(work, task, "seed-1")
    for i in range(2):
      with open(os.path.join(seed_dir, f"prepro-{i}.log")) as f:
        assert f"--proc_id={i}" in f.read()
    with open(os.path.join(seed_dir, "log.txt")) as f:
      assert "Reusing the training records" in f.read()


@pytest.mark.slow
def test_a_failing_task_says_so_in_one_line_and_its_row(tmp_path, model):
  data = glue_root(str(tmp_path / "glue"))
  os.remove(os.path.join(data, "RTE", "dev.tsv"))
  work = str(tmp_path / "work")
  proc = _run_here(["--table=glue", "--tasks=rte", f"--data_root={data}",
                    f"--work_dir={work}"] + _model_args(model) + SMOKE)
  assert proc.returncode == 1
  errors = [l for l in proc.stderr.split("\n") if l.startswith(
      "reproduce.py:")]
  assert len(errors) == 2, proc.stderr[-3000:]
  assert errors[0].startswith("reproduce.py: rte (seed 1) failed: "
                              "run_classifier.py exited with code 2: ")
  assert "dev.tsv" in errors[0]
  with open(os.path.join(work, "results.json")) as f:
    assert json.load(f)["rows"][0]["status"] == "failed"
