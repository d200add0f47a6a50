"""Tests of record creation as a whole: output bytes, workers, validation."""
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import sentencepiece as spm

from tests import data_helpers
from tests import in_process
from tests.data_reference import ref_stream
from xlnet.data import record_format
from xlnet.data import example_proto
from xlnet.data import record_writer
from xlnet.data import token_stream
from xlnet.data import worker_pool

TESTDATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "testdata")

# SHA-256 of the .tfrecords file and num_batch written for GOLDEN_CONFIGS by
# the record writer as it was at commit 266101f (before the writer was split
# into modules and given worker processes), computed with
#   record_writer.create_data(golden_inputs(tmp) glob, GOLDEN_SP, save_dir, **cfg)
# on both TensorFlow environments (identical). GOLDEN_SP
# (tests/testdata/golden-spiece.model, 400 pieces) was trained once with
#   spm.SentencePieceTrainer.train(input="data/demo/botchan.txt",
#       model_prefix=..., vocab_size=400, model_type="unigram",
#       control_symbols=spm_train.CONTROL_SYMBOLS,
#       user_defined_symbols=spm_train.USER_DEFINED_SYMBOLS,
#       normalization_rule_name="identity", num_threads=1)
# and is committed because SentencePiece training is not reproducible.
GOLDEN_SP = os.path.join(TESTDATA, "golden-spiece.model")
GOLDEN_CONFIGS = {
    "bi": (dict(bsz_per_host=8, num_core_per_host=2, seq_len=64, reuse_len=32,
                num_predict=12, bi_data=True, mask_alpha=6, mask_beta=1,
                uncased=False, pass_id=0),
           "dc593d7f8a1b905b60deeeb2c617988a9dfced4cc07a6073225587f91815a364",
           239),
    "uni": (dict(bsz_per_host=4, num_core_per_host=1, seq_len=40,
                 reuse_len=24, num_predict=7, bi_data=False, mask_alpha=4,
                 mask_beta=2, uncased=True, pass_id=1),
            "6c32800c778abc50d648e49f2b5fbb193efed09f074ed36409becf175aa1c81c",
            322),
}


def golden_inputs(demo_corpus, dest):
  """Writes lines [0, 400) and [400, 700) of the demo corpus as two files.

  Returns:
    the glob matching both.
  """
  with open(demo_corpus, encoding="utf-8") as f:
    lines = f.read().split("\n")
  for k, (lo, hi) in enumerate([(0, 400), (400, 700)]):
    with open(os.path.join(dest, f"part{k}.txt"), "w", encoding="utf-8") as f:
      f.write("\n".join(lines[lo:hi]) + "\n")
  return os.path.join(dest, "part*.txt")


def sha256(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize("name", sorted(GOLDEN_CONFIGS))
@pytest.mark.quick
@pytest.mark.tf_version
def test_output_bytes_unchanged(tmp_path, demo_corpus, name):
  cfg, digest, num_batch = GOLDEN_CONFIGS[name]
  input_glob = golden_inputs(demo_corpus, str(tmp_path))
  save_dir = str(tmp_path / "out")
  record_writer.create_data(input_glob, GOLDEN_SP, save_dir, **cfg)
  (record,) = glob.glob(os.path.join(save_dir, "tfrecords", "*.tfrecords"))
  (info,) = glob.glob(os.path.join(save_dir, "tfrecords", "*.json"))
  assert sha256(record) == digest
  with open(info) as f:
    assert json.load(f)["num_batch"] == num_batch


def test_output_does_not_depend_on_workers(tmp_path, demo_corpus):
  cfg, digest, _ = GOLDEN_CONFIGS["bi"]
  input_glob = golden_inputs(demo_corpus, str(tmp_path))
  for num_workers in (1, 3):
    save_dir = str(tmp_path / f"out{num_workers}")
    record_writer.create_data(input_glob, GOLDEN_SP, save_dir,
                           num_workers=num_workers, **cfg)
    (record,) = glob.glob(os.path.join(save_dir, "tfrecords", "*.tfrecords"))
    assert sha256(record) == digest, num_workers


def test_many_small_files_do_not_depend_on_workers(tmp_path, demo_corpus,
                                                   monkeypatch):
  """Files of several kinds of text, smaller than an encoding job: the
  default workers write the bytes of one process."""
  monkeypatch.setattr(record_writer, "_LINES_PER_TASK", 64)
  lines = open(demo_corpus, encoding="utf-8").read().split("\n")[:1200]
  src = tmp_path / "src"
  src.mkdir()
  for k in range(40):
    extra = [f"(c) {1990 + k}, {2000 + k}, Jos\u00e9 M\u00fcller", "",
             "  short  line ``quoted''"]
    (src / f"doc{k:02d}.txt").write_text(
        "\n".join(lines[k * 30:(k + 1) * 30] + extra) + "\n",
        encoding="utf-8")
  cfg, _, _ = GOLDEN_CONFIGS["bi"]
  digests = set()
  for num_workers in (1, None):
    save_dir = str(tmp_path / f"out{num_workers}")
    record_writer.create_data(str(src / "*.txt"), GOLDEN_SP, save_dir,
                              num_workers=num_workers, **cfg)
    (record,) = glob.glob(os.path.join(save_dir, "tfrecords", "*.tfrecords"))
    digests.add(sha256(record))
  assert len(digests) == 1


def test_tasks_and_passes(tmp_path, tiny_spm, demo_corpus):
  lines = open(demo_corpus, encoding="utf-8").read().splitlines()
  src = tmp_path / "src"
  src.mkdir()
  for k in range(3):
    (src / f"part{k}.txt").write_text(
        "\n".join(lines[k * 151:(k + 1) * 151]) + "\n", encoding="utf-8")
  cfg = dict(data_helpers.TINY_CONFIG, seq_len=32, reuse_len=16,
             num_predict=6)
  kw = dict(input_glob=str(src / "*.txt"), sp_path=tiny_spm, num_workers=1,
            **cfg)
  # Task t takes sorted(glob)[t::num_task]; only task 0 writes corpus_info.
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  for task, files in [(0, ["part0.txt", "part2.txt"]), (1, ["part1.txt"])]:
    d = str(tmp_path / f"task{task}")
    record_writer.create_data(save_dir=d, num_task=2, task=task, **kw)
    first = data_helpers.read_records(os.path.join(d, "tfrecords"))[0]
    starts = [ref_stream([str(src / f)], sp)[0][:16] for f in files]
    assert list(first["input"][:16]) in starts
    assert os.path.exists(os.path.join(d, "corpus_info.json")) == (task == 0)
  # Same (task, pass_id): identical bytes; other pass_id: other B and masks.
  runs = {}
  for name, pass_id in [("a", 0), ("b", 0), ("c", 1)]:
    d = str(tmp_path / name)
    record_writer.create_data(save_dir=d, pass_id=pass_id, **kw)
    (path,) = glob.glob(os.path.join(d, "tfrecords", "*.tfrecords"))
    runs[name] = (sha256(path),
                  data_helpers.read_records(os.path.join(d, "tfrecords")))
  assert runs["a"][0] == runs["b"][0]
  ex_a, ex_c = runs["a"][1], runs["c"][1]
  n = min(len(ex_a), len(ex_c))
  same_mask = np.mean([np.array_equal(ex_a[i]["is_masked"],
                                      ex_c[i]["is_masked"]) for i in range(n)])
  same_input = np.mean([np.array_equal(ex_a[i]["input"], ex_c[i]["input"])
                        for i in range(n)])
  assert same_mask < 0.05 and same_input < 0.9
  assert not glob.glob(str(tmp_path / "*" / "tfrecords" / "*.tmp-*"))


def test_crash_leaves_no_output(tmp_path, monkeypatch):
  calls = []
  real = example_proto.serialize_examples

  def failing(features):
    calls.append(1)
    if len(calls) > 3:
      raise RuntimeError("killed")
    return real(features)

  monkeypatch.setattr(example_proto, "serialize_examples", failing)
  with pytest.raises(RuntimeError, match="killed"):
    data_helpers.make_records(str(tmp_path), num_lines=300)
  assert os.listdir(tmp_path / "tfrecords") == []
  assert not os.path.exists(tmp_path / "corpus_info.json")


def test_stale_temporary_files_are_removed(tmp_path):
  record_dir = data_helpers.make_records(str(tmp_path), num_lines=300)
  outputs = glob.glob(os.path.join(record_dir, "*")) + [
      str(tmp_path / "corpus_info.json")]
  stale = [f"{path}.tmp-{data_helpers.dead_pid()}-deadbeef"
           for path in outputs]
  # A run writing the same files at this moment keeps its own.
  live = f"{outputs[0]}.tmp-{os.getpid()}-0a1b2c3d"
  for path in stale:
    with open(path, "w") as f:
      f.write("half-written by a killed run")
  with open(live, "w") as f:
    f.write("being written by a live run")
  data_helpers.make_records(str(tmp_path), num_lines=300)
  assert not [p for p in stale if os.path.exists(p)]
  assert os.path.exists(live)
  os.remove(live)
  assert sorted(glob.glob(os.path.join(record_dir, "*")) +
                [str(tmp_path / "corpus_info.json")]) == sorted(outputs)


def tree_digest(root):
  """{relative path: sha256} of every file under root."""
  out = {}
  for dirpath, _, files in os.walk(root):
    for name in files:
      path = os.path.join(dirpath, name)
      out[os.path.relpath(path, root)] = sha256(path)
  return out


def write_file(path, text):
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)
  return str(path)


def test_bad_input_is_refused_before_anything_is_written(tmp_path, tiny_spm):
  corpus = data_helpers.corpus_slice(300)
  save_dir = str(tmp_path / "good")
  data_helpers.make_records(save_dir, num_lines=300)
  before = tree_digest(save_dir)
  plain = str(tmp_path / "plain")
  spm.SentencePieceTrainer.train(input=corpus, model_prefix=plain,
                                 vocab_size=200, minloglevel=2)
  (tmp_path / "adir.txt").mkdir()
  bad_utf8 = tmp_path / "bad.txt"
  bad_utf8.write_bytes(b"fine line\nbad \xff byte\n")
  blank = write_file(tmp_path / "blank.txt", "\n  \n\t\n")
  empty = write_file(tmp_path / "empty.txt", "")
  short = write_file(tmp_path / "short.txt", "Just one short line.\n")
  not_a_dir = write_file(tmp_path / "file", "x")
  cases = [
      (r"--input_glob is empty", dict(input_glob="")),
      (r"--input_glob=.*nothing\*.txt matches no file",
       dict(input_glob=str(tmp_path / "nothing*.txt"))),
      (r"--input_glob=.*nothing.txt matches no file",
       dict(input_glob=corpus + "," + str(tmp_path / "nothing.txt"))),
      (r"--input_glob=.*\*.txt matches the directory .*adir.txt; give text "
       r"files", dict(input_glob=str(tmp_path / "*.txt"))),
      (r"bad.txt line 2 is not UTF-8", dict(input_glob=str(bad_utf8))),
      (r"--input_glob: .*blank.txt holds no text \(it is empty or has only "
       r"blank lines\)", dict(input_glob=corpus + "," + blank)),
      (r"--input_glob: .*empty.txt holds no text", dict(input_glob=empty)),
      (r"--input_glob: the corpus is too short for one batch of "
       r"--bsz_per_host=4 rows: \d+ tokens per row, --seq_len=64 needs more",
       dict(input_glob=short)),
      (r"--task=1 of --num_task=2 gets no file: --input_glob=.* matches only "
       r"1", dict(task=1, num_task=2)),
      (r"--sp_path=.*missing.model: SentencePiece model not found",
       dict(sp_path=str(tmp_path / "missing.model"))),
      (r"plain.model is not an XLNet SentencePiece model",
       dict(sp_path=plain + ".model")),
      (r"--num_predict=70 .* a part cannot hold", dict(num_predict=70)),
      (r"--num_predict=0 must be >= 1 \(no target, no loss\)",
       dict(num_predict=0)),
      (r"--bsz_per_host=6 must be a multiple of --num_core_per_host=4",
       dict(bsz_per_host=6, num_core_per_host=4)),
      (r"--bi_data needs --bsz_per_host=6 to be a multiple of 2 \* "
       r"--num_core_per_host = 4", dict(bsz_per_host=6, num_core_per_host=2)),
      (r"--reuse_len=61 must be in \[1, --seq_len - 3\)", dict(reuse_len=61)),
      (r"--mask_alpha=1 must be >= --mask_beta=2",
       dict(mask_alpha=1, mask_beta=2)),
      (r"--split='a/b' must be a non-empty name", dict(split="a/b")),
      (r"--num_workers=0 must be >= 1", dict(num_workers=0)),
      # Another layout into a good save_dir: refused, the records stay valid.
      (r"--save_dir=.*good holds records written with other settings "
       r"\(--bsz_per_host=8 \(it has 4\)\); write to another --save_dir",
       dict(bsz_per_host=8)),
      (r"--num_predict=10 \(it has 12\)", dict(num_predict=10, pass_id=1)),
      (r"--save_dir=.*file: .*file exists and is not a directory",
       dict(save_dir=not_a_dir)),
      (r"--save_dir=.*file/sub is not writable",
       dict(save_dir=not_a_dir + "/sub")),
      (r"--save_dir=/sys/xlnet-test is not writable",
       dict(save_dir="/sys/xlnet-test")),
  ]
  for match, kw in cases:
    args = dict(input_glob=corpus, sp_path=tiny_spm, save_dir=save_dir,
                num_workers=1, **data_helpers.TINY_CONFIG)
    args.update(kw)
    with pytest.raises(ValueError, match=match) as e:
      record_writer.create_data(**args)
    assert "\n" not in str(e.value), match
    assert tree_digest(save_dir) == before, match
  # The same flags still rerun (and give the same bytes).
  data_helpers.make_records(save_dir, num_lines=300)
  assert tree_digest(save_dir) == before


def run_cli(args, cwd):
  """`python data_utils.py ARGS` in `cwd`, run in this process (the
  program's own process is tested by the kills below)."""
  return in_process.run_program("data_utils.py", *args, cwd=str(cwd))


def test_cli_error_is_one_line(tmp_path):
  res = run_cli(["--input_glob=missing/*.txt", "--sp_path=spiece.model",
                 f"--save_dir={tmp_path}"], tmp_path)
  assert res.returncode == 2
  assert res.stderr.strip().splitlines()[-1] == (
      "data_utils.py: error: --input_glob=missing/*.txt matches no file")
  assert "Traceback" not in res.stderr
  res = run_cli(["--help"], tmp_path)
  assert "--verify" in res.stdout and "--num_workers" in res.stdout


def test_cli_readme_command_verbatim(tmp_path):
  shutil.copy(data_helpers.corpus_slice(1200), tmp_path / "botchan.txt")
  shutil.copy(data_helpers.train_tiny_spm(), tmp_path / "spiece.model")
  save_dir = str(tmp_path / "proc")
  # The released README's command, verbatim.
  cmd = ("--bsz_per_host=32 --num_core_per_host=16 --seq_len=512 "
         "--reuse_len=256 --input_glob=*.txt --save_dir=${SAVE_DIR} "
         "--num_passes=20 --bi_data=True --sp_path=spiece.model "
         "--mask_alpha=6 --mask_beta=1 --num_predict=85")
  res = run_cli(cmd.replace("${SAVE_DIR}", save_dir).split(), tmp_path)
  assert res.returncode == 0, res.stderr[-2000:]
  info = record_format.load_corpus_info(save_dir)
  assert info["num_core_per_host"] == 16 and info["bsz_per_host"] == 32
  (info_path,) = glob.glob(os.path.join(save_dir, "tfrecords",
                                        "record_info-train-0-0.bsz-32.seqlen-"
                                        "512.reuse-256.bi.alpha-6.beta-1."
                                        "fnp-85.json"))
  with open(info_path) as f:
    assert json.load(f)["num_batch"] >= 1
  assert "ETA" in res.stderr


def test_worker_errors_are_reported(tmp_path, tiny_spm):
  ids_file = tmp_path / "ids.txt"
  ids_file.write_text("5 6 7\n" * 3000 + "5 1000\n")
  with pytest.raises(ValueError, match=(
      r"--from_raw_text=False but .*ids.txt holds id 1000, outside the "
      r"vocabulary \[0, 1000\) of --sp_path")):
    record_writer.create_data(str(ids_file), tiny_spm, str(tmp_path / "out"),
                           from_raw_text=False, num_workers=2,
                           **data_helpers.TINY_CONFIG)
  with open(tiny_spm, "rb") as f:
    encoder = token_stream.LineEncoder(f.read(), False, True)
  with worker_pool.worker_processes(2, encoder) as workers:
    with pytest.raises(OSError, match=r"a --num_workers process died \(exit "
                       r"code 3\); rerun, or try --num_workers=1"):
      list(workers.imap(os._exit, [3]))


def start_big_writer(tmp_path, tiny_spm, demo_corpus):
  """Starts data_utils.py with --num_workers=2 on 30 copies of the demo
  corpus; returns (the Popen, its output dir)."""
  text = open(demo_corpus, encoding="utf-8").read()
  big = tmp_path / "big.txt"
  big.write_text(text * 30, encoding="utf-8")
  out = tmp_path / "out"
  proc = subprocess.Popen(
      [sys.executable, os.path.join(data_helpers.REPO_ROOT, "data_utils.py"),
       f"--input_glob={big}", f"--sp_path={tiny_spm}", f"--save_dir={out}",
       "--num_workers=2", "--bsz_per_host=8", "--num_core_per_host=1",
       "--seq_len=128", "--reuse_len=64", "--num_predict=20"],
      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  return proc, out


def wait_for(condition, proc, what, seconds=120):
  """Polls `condition()` while `proc` runs; fails the test on timeout."""
  deadline = time.time() + seconds
  while not condition() and proc.poll() is None and time.time() < deadline:
    time.sleep(0.02)
  assert condition() and proc.poll() is None, f"{what} never happened"


def child_pids(pid):
  found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                         text=True).stdout.split()
  return [int(p) for p in found]


def running(pids):
  """The pids of `pids` still running (zombies count as ended)."""
  return [pid for pid in pids if os.path.exists(f"/proc/{pid}") and
          "Z" not in open(f"/proc/{pid}/stat").read().split()[2]]


def temporaries(out):
  return glob.glob(str(out / "**" / "*.tmp-*"), recursive=True)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM],
                         ids=["SIGKILL", "SIGTERM"])
def test_killed_writer_takes_its_worker_processes_with_it(
    tmp_path, tiny_spm, demo_corpus, signum):
  """A signal to data_utils.py while it writes the record file (its
  --num_workers=2 processes serializing): no worker outlives it (they used
  to keep each other's pipes open and wait forever). SIGTERM also removes
  the temporary file and ends with one line and exit code 143."""
  proc, out = start_big_writer(tmp_path, tiny_spm, demo_corpus)
  wait_for(lambda: len(child_pids(proc.pid)) == 2 and temporaries(out),
           proc, "writing with two workers")
  workers = child_pids(proc.pid)
  proc.send_signal(signum)
  stderr = proc.communicate(timeout=60)[1]
  deadline = time.time() + 20
  while running(workers) and time.time() < deadline:
    time.sleep(0.1)
  assert not running(workers), "worker processes outlived their parent"
  assert not glob.glob(str(out / "**" / "*.tfrecords"), recursive=True)
  if signum == signal.SIGTERM:
    assert proc.returncode == 143
    assert stderr.strip().splitlines()[-1] == (
        "data_utils.py: stopped by SIGTERM; no temporary file is left; rerun "
        "the same command to redo the work")
    assert "Traceback" not in stderr
    assert not temporaries(out)


def test_command_line_writes_the_bytes_of_create_data(tmp_path, tiny_spm,
                                                      demo_corpus):
  """`python data_utils.py` with every setting away from its default writes
  the files `create_data` writes with the same settings."""
  lines = open(demo_corpus, encoding="utf-8").read().split("\n")
  inputs = []
  for k in range(2):
    path = tmp_path / f"part{k}.txt"
    path.write_text("\n".join(lines[k * 300:(k + 1) * 300]), encoding="utf-8")
    inputs.append(str(path))
  settings = dict(bsz_per_host=4, num_core_per_host=2, seq_len=48,
                  reuse_len=16, uncased=True, bi_data=False, mask_alpha=4,
                  mask_beta=2, num_predict=7, use_eod=False, split="dev",
                  pass_id=1, num_task=2, task=1, num_workers=1)
  argv = [f"--{k}={v}" for k, v in settings.items()]
  proc = run_cli([f"--input_glob={tmp_path}/part*.txt",
                  f"--sp_path={tiny_spm}", f"--save_dir={tmp_path}/cli",
                  "--num_passes=2"] + argv, tmp_path)
  assert proc.returncode == 0, proc.stderr[-2000:]
  record_writer.create_data(f"{tmp_path}/part*.txt", tiny_spm,
                            str(tmp_path / "api"), **settings)

  def files(save_dir):
    out = {}
    for root, _, names in os.walk(save_dir):
      for name in names:
        with open(os.path.join(root, name), "rb") as f:
          out[os.path.relpath(os.path.join(root, name), save_dir)] = f.read()
    return out

  written = files(tmp_path / "cli")
  assert sorted(written) == [
      "tfrecords/dev-1-1.bsz-4.seqlen-48.reuse-16.uncased.uni.alpha-4.beta-2."
      "fnp-7.tfrecords",
      "tfrecords/record_info-dev-1-1.bsz-4.seqlen-48.reuse-16.uncased.uni."
      "alpha-4.beta-2.fnp-7.json"]
  assert written == files(tmp_path / "api")
