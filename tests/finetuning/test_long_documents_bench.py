"""bench/long_documents.py's own logic against hand-worked cases: the
reviews' draw (balanced, fixed, not the listing's first), the step time read
from a step log, and each mode's flags at the same budget."""
import importlib.util
import os
import random

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _bench():
  spec = importlib.util.spec_from_file_location(
      "long_documents_bench", os.path.join(REPO, "bench", "long_documents.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)  # defines no flags: cli.run does
  return module


bench = _bench()
NAMES = {"neg": [f"{i}_1.txt" for i in range(40)],
         "pos": [f"{i}_9.txt" for i in range(40)]}


@pytest.mark.quick
def test_draw_is_balanced_fixed_and_not_the_listing_s_first():
  drawn = bench.draw_names(NAMES, 10, 0, "train")
  for label in ("neg", "pos"):
    files = drawn[label]
    assert len(files) == 5 == len(set(files))
    assert set(files) <= set(NAMES[label]) and files == sorted(files)
    assert files != sorted(NAMES[label])[:5]
  # The listing's order does not matter (os.listdir's is arbitrary).
  shuffled = {label: random.Random(7).sample(files, len(files))
              for label, files in NAMES.items()}
  assert bench.draw_names(shuffled, 10, 0, "train") == drawn
  # Another seed or split draws other reviews.
  assert bench.draw_names(NAMES, 10, 1, "train") != drawn
  assert bench.draw_names(NAMES, 10, 0, "test") != drawn
  with pytest.raises(ValueError, match=r"^--imdb_dir: test/neg has 40 "
                     r"reviews, expected at least 50$"):
    bench.draw_names(NAMES, 100, 0, "test")


@pytest.mark.quick
def test_step_time_is_read_between_the_last_process_s_step_lines():
  def line(stamp, step):
    return (f"I1207 {stamp} 1 step_log.py:74] [{step}] | loss 0.69 | lr "
            "0.000500 | gnorm 1.00 | 9.0 examples/s | ETA 00:00:10")
  log = "\n".join([
      "\n$ python run_classifier.py ...", line("09:00:00.000000", 10),
      line("09:00:20.000000", 20),  # a first process, killed
      "\n$ python run_classifier.py ...", line("10:00:00.000000", 30),
      line("10:00:30.000000", 40),  # the traced first steps end here
      "I1207 10:00:40.000000 1 evaluator.py:9] [50] eval | accuracy 0.5",
      line("10:00:50.000000", 50), line("10:01:40.000000", 70)])
  # From step 40 to 70: 70 s over 30 steps.
  assert bench.step_seconds(log) == pytest.approx(70 / 30)
  across = "\n".join(["\n$ x", line("23:59:00.000000", 10),
                      line("23:59:50.000000", 20), line("00:00:10.500000", 30)])
  assert bench.step_seconds(across) == pytest.approx(20.5 / 10)


@pytest.mark.quick
def test_modes_read_windows_of_the_same_length():
  def value(args, name):
    found = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    assert len(found) <= 1, (name, args)
    return found[0] if found else None

  for mode, reading, pooling, bptt, windows, length in (
      ("truncate", "truncate", None, None, None, "128"),
      ("truncate_long", "truncate", None, None, None, "506"),
      ("windows", "windows", "mean", None, "4", "128"),
      ("windows_max", "windows", "max", None, "4", "128"),
      ("memory", "memory", None, "1", "4", "128"),
      ("memory_bptt_all", "memory", None, "4", "4", "128")):
    args = bench.mode_flags(mode, 128, 4)
    assert (value(args, "long_documents"), value(args, "window_pooling"),
            value(args, "bptt_windows"), value(args, "max_windows"),
            value(args, "max_seq_length")) == (
                reading, pooling, bptt, windows, length), mode
  # 126 pieces per window; truncate_long's one sequence holds 4 windows'.
  assert [bench.pieces_read(m, 128, 4) for m in (
      "truncate", "truncate_long", "windows", "memory")] == [126, 504, 504,
                                                             504]
  with pytest.raises(ValueError, match=r"^--modes: expected some of .*, "
                     r"got 'chunks'$"):
    bench.mode_flags("chunks", 128, 4)


@pytest.mark.quick
def test_the_sample_is_copied_and_read_as_the_imdb_task_reads_it(tmp_path):
  from xlnet.data import prepro_utils
  from xlnet.finetuning.classifier import datasets
  from xlnet.finetuning.classifier import features
  source = tmp_path / "aclImdb"
  for split in ("train", "test"):
    for label in ("neg", "pos"):
      (source / split / label).mkdir(parents=True)
      for i in range(6):
        text = f"  {label} {i}<br /><br />A film, " + "long " * i
        (source / split / label / f"{i}_3.txt").write_text(text + "\n")
  data_dir = bench.write_sample(str(source), str(tmp_path / "out"),
                                {"train": 4, "test": 6}, 0)
  assert data_dir == str(tmp_path / "out" / "aclImdb")
  counts = {(s, l): len(os.listdir(os.path.join(data_dir, s, l)))
            for s in ("train", "test") for l in ("neg", "pos")}
  assert counts == {("train", "neg"): 2, ("train", "pos"): 2,
                    ("test", "neg"): 3, ("test", "pos"): 3}
  # The texts and piece counts the summary reports are the classifier's.
  processor = datasets.make_processor("imdb")
  sp_path = os.path.join(REPO, "tests", "testdata", "golden-spiece.model")
  tokenize = features.make_tokenize_fn(
      prepro_utils.load_sp_model(sp_path, "spiece.model"), False)
  lines = bench.length_summary(data_dir, sp_path, [14])
  for split, name, line in (("train", "train", lines[0]),
                            ("dev", "test", lines[1])):
    examples = processor.get_examples(data_dir, split)
    assert bench.review_texts(data_dir, name) == [e.text_a for e in examples]
    lengths = sorted(len(tokenize(e.text_a)) for e in examples)
    longer = sum(n > 14 for n in lengths)
    assert 0 < longer < len(lengths), lengths  # the limit splits them
    middle = len(lengths) // 2
    median = (lengths[middle] if len(lengths) % 2 else
              (lengths[middle - 1] + lengths[middle]) / 2)
    assert line == (f"{split}: {len(lengths)} reviews, pieces median "
                    f"{median:.0f}, max {lengths[-1]}; "
                    f"{longer / len(lengths):.0%} longer than 14")
  with pytest.raises(ValueError, match=r"^--imdb_dir=.*: expected the "
                     r"directory .*test/pos \(aclImdb's layout\), not found$"):
    os.rename(source / "test" / "pos", source / "test" / "p")
    bench.write_sample(str(source), str(tmp_path / "other"),
                       {"train": 4, "test": 6}, 0)
