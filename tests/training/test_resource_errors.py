"""Writers that run out of a resource (here: a file size limit, as a full
disk would) end with one line naming the file, the cause and what is safe,
exit code 1, and leave no temporary file; a rerun with room succeeds.

The programs run in this process (`fx.run_program`) under RLIMIT_FSIZE with
SIGXFSZ ignored (`fx.file_size_limit`, lifted afterwards): a write past it
fails with EFBIG ("File too large"), like ENOSPC.
"""
import glob
import os

import pytest

from tests import classifier_fixtures
from tests import data_helpers
from tests import in_process
from tests import train_fixtures as fx

# The writers' errors are TensorFlow's file errors, translated.
pytestmark = pytest.mark.tf_version


def run(program, args, max_file_bytes=None):
  """Runs `program` (a top-level script) in this process; with
  `max_file_bytes`, no file it writes may grow past that many bytes."""
  if max_file_bytes is None:
    return fx.run_program(program, *args)
  with in_process.file_size_limit(max_file_bytes):
    return fx.run_program(program, *args)


def assert_one_line_resource_error(res, program, path):
  last = res.stderr.strip().splitlines()[-1]
  assert res.returncode == 1, res.stderr[-3000:]
  assert last == (f"{program}: error: cannot write {path}: file too large; "
                  "it is unchanged and no temporary file is left; make room "
                  "(or fix the permission) and rerun")
  assert "Traceback" not in res.stderr


def temporaries(root):
  return glob.glob(os.path.join(root, "**", "*.tmp-*"), recursive=True)


@pytest.mark.parametrize("kind,max_bytes", [("examples", 20000),
                                            ("tokens", 4000)])
def test_record_writer_out_of_space(tmp_path, tiny_spm, kind, max_bytes):
  out = str(tmp_path / "out")
  args = [f"--input_glob={data_helpers.corpus_slice(300)}",
          f"--sp_path={tiny_spm}", f"--save_dir={out}", "--num_workers=1",
          f"--record_kind={kind}"] + [
              f"--{k}={v}" for k, v in data_helpers.TINY_CONFIG.items()]
  res = run("data_utils.py", args, max_file_bytes=max_bytes)
  # The record file's name, written out from TINY_CONFIG (docs/data.md).
  assert_one_line_resource_error(res, "data_utils.py", os.path.join(
      out, "tfrecords", "train-0-0.bsz-4.seqlen-64.reuse-32.bi.alpha-6."
      "beta-1.fnp-12.tfrecords"))
  assert not temporaries(out)
  assert not glob.glob(os.path.join(out, "tfrecords", "*.tfrecords"))
  res = run("data_utils.py", args)
  assert res.returncode == 0, res.stderr[-3000:]
  assert not temporaries(out)


def stsb_dir(root, n=6):
  """GLUE STS-B train.tsv with n rows (scores 0..5)."""
  data = os.path.join(root, "STS-B")
  os.makedirs(data)
  rows = [f"{i}\tmain\tMSRvid\t2012\t{i:04d}\tnone\tnone\tA man plays {i}."
          f"\tA man plays music {i}.\t{i * 5 / (n - 1):.3f}" for i in range(n)]
  with open(os.path.join(data, "train.tsv"), "w") as f:
    f.write("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
            "sentence1\tsentence2\tscore\n" + "\n".join(rows) + "\n")
  return data


def test_classifier_feature_writing_out_of_space(tmp_path):
  proc = str(tmp_path / "proc")
  config = classifier_fixtures.write_config(
      str(tmp_path), dict(classifier_fixtures.TINY_CONFIG, n_token=1000))
  args = ["--do_train", "--task_name=sts-b",
          f"--data_dir={stsb_dir(str(tmp_path))}", f"--output_dir={proc}",
          f"--model_dir={tmp_path / 'exp'}", f"--model_config_path={config}",
          f"--spiece_model_file={data_helpers.train_tiny_spm()}",
          "--max_seq_length=16"]
  res = run("run_classifier.py", args, max_file_bytes=1000)
  (path,) = [line.split("cannot write ")[1].split(":")[0]
             for line in res.stderr.splitlines() if "cannot write" in line]
  assert os.path.dirname(path) == proc and path.endswith(".tf_record")
  assert_one_line_resource_error(res, "run_classifier.py", path)
  assert not temporaries(proc) and not os.path.exists(path)
