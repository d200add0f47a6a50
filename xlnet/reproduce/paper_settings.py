"""The paper's tables: each task's fine-tuning settings and published figures.

One source of truth for `reproduce.py`: which program runs a task, where its
data lies under `--data_root`, the settings (batch sizes are the GLOBAL batch,
examples per optimizer step), the metric, the figure to compare with and the
paper's figures, each with the place it is printed (`Figure.source`,
`Settings.source`). docs/reproducing.md explains every source and every
deliberate difference.

The target of XLNet-Large is the release README's figure (its results
section describes the released checkpoint) where it has one; the paper's
figures (v1, June 2019; v2, January 2020, from a longer-pretrained model)
are shown beside it where a source for them could be read. XLNet-Base uses
the XLNet-Large settings (as the release's README says for STS-B) except for
SQuAD, where the release ships a separate Base script.
"""
import dataclasses
from typing import Optional

from xlnet import program_defaults
from xlnet import task_kinds
from xlnet import validation

# The programs that run the tables' tasks.
CLASSIFIER = task_kinds.CLASSIFIER.script
SQUAD = task_kinds.SQUAD.script
RACE = task_kinds.RACE.script
# The kind (`task_kinds`) of each program's task.
_KIND_OF_PROGRAM = {kind.script: kind.name for kind in task_kinds.KINDS}

# Where the figures are printed. "Release README": the results section of
# zihangdai/xlnet's README (its XLNet-Base rows added in commit 7230e1e).
README_GLUE = "release README, Results on GLUE, XLNet-Large row"
README_GLUE_BASE = ("release README, Results on GLUE, XLNet-Base row (commit "
                    "7230e1e)")
README_CLASSIFICATION = ("release README, Results on Text Classification, "
                         "XLNet-Large row")
README_RC = "release README, Results on Reading Comprehension, XLNet-Large row"
README_RC_BASE = ("release README, Results on Reading Comprehension, "
                  "XLNet-Base row (commit 7230e1e)")
# Paper v2 (the NeurIPS 2019 version): its arXiv tables could not be read
# here; these figures are those Papers with Code lists as the paper's
# results, where they differ from the release README (so are not v1's).
PAPER_V2 = "paper v2, as listed by Papers with Code (arXiv table not read)"
# Paper v1, SQuAD 1.1 dev without data augmentation, quoted in an issue.
PAPER_V1_SQUAD11 = "paper v1 (SQuAD 1.1 dev, EM), quoted in zihangdai/xlnet#193"

# Settings sources.
ISSUE_96 = "zihangdai/xlnet#96 (first author's GLUE settings)"
QNLI_SETTING = ("ours: zihangdai/xlnet#96's SST-2 setting (QNLI is not in "
                "#96; SST-2 is the nearest in size)")
README_IMDB = "release README, IMDB command (TPU v3-8)"
PAPER_APPENDIX = ("paper appendix, Yelp-5 column (as cited before; not "
                  "re-read), warmup ours")
SQUAD_LARGE_SCRIPT = "release scripts/tpu_squad_large.sh"
SQUAD_BASE_SCRIPT = "release scripts/gpu_squad_base.sh (8 per GPU x 3 GPUs)"
RACE_SCRIPT = "release scripts/tpu_race_large_bsz32.sh"

# Adam epsilon as the release's commands ran: run_classifier.py's default
# (1e-8; the README's STS-B and IMDB commands do not pass it), run_squad.py's
# and run_race.py's scripts pass 1e-6 (our programs' defaults).
CLASSIFIER_EPSILON = program_defaults.of(
    task_kinds.CLASSIFIER.program)["adam_epsilon"]
QA_EPSILON = program_defaults.of(task_kinds.SQUAD.program)["adam_epsilon"]

# reproduce.py's flags that replace every task's setting: (name, type, what).
OVERRIDE_FLAGS = (
    ("train_steps", "integer", "training steps"),
    ("max_seq_length", "integer", "sequence length"),
    ("train_batch_size", "integer", "GLOBAL training batch"),
    ("learning_rate", "float", "peak learning rate"),
    ("warmup_steps", "integer", "warmup steps"),
    ("save_steps", "integer", "steps between checkpoints"),
    ("iterations", "integer", "steps between log lines"),
    ("max_qa_length", "integer", "RACE question+option pieces"),
    ("max_query_length", "integer", "SQuAD question pieces"),
)


@dataclasses.dataclass(frozen=True)
class Figure:
  """A published number (in the task's metric units) and where it is."""
  value: float
  source: str


@dataclasses.dataclass(frozen=True)
class Settings:
  """Fine-tuning settings of one task (batch: global, examples per step);
  `source` names where they come from."""
  learning_rate: float
  batch: int
  steps: int
  warmup: int
  seq_len: int
  save_steps: int
  source: str
  layer_decay: float = 1.0
  adam_epsilon: float = CLASSIFIER_EPSILON


@dataclasses.dataclass(frozen=True)
class Metric:
  """How a program's result becomes the paper's number.

  `key` is read from the program's result file; the value is multiplied by
  `scale` (fractions -> percent); `error_rate` reports 100 - that.
  """
  name: str
  key: str
  scale: float = 100.0
  error_rate: bool = False

  def paper_units(self, value):
    """The program's `value` (float) in the paper's units."""
    value = float(value) * self.scale
    return 100.0 - value if self.error_rate else value


@dataclasses.dataclass(frozen=True)
class Task:
  """One row of a paper table.

  Attributes:
    name: the `--tasks` name (e.g. "sts-b").
    label: the paper's column name (e.g. "STS-B").
    program: the program that runs it (CLASSIFIER, SQUAD or RACE).
    data: paths under --data_root where the data may lie, first match wins.
    flags: the program's task flags (str -> value).
    large, base: Settings for XLNet-Large / XLNet-Base (None: Large's).
    metric: Metric.
    target_large, target_base: the Figure to compare with, or None.
    paper_v1, paper_v2: the paper's XLNet-Large Figure, or None where no
      source for it could be read.
    eval_examples: examples scored per evaluation (dev or test set; SQuAD:
      questions, RACE: questions of 4 options), for the cost estimate.
    data_files: files the data directory must hold (SQuAD JSON files).
  """
  name: str
  label: str
  program: str
  data: tuple
  flags: dict
  large: Settings
  metric: Metric
  target_large: Optional[Figure]
  eval_examples: int
  target_base: Optional[Figure] = None
  base: Optional[Settings] = None
  paper_v1: Optional[Figure] = None
  paper_v2: Optional[Figure] = None
  data_files: tuple = ()

  @property
  def kind(self):
    """The name of its program's kind (`task_kinds`): "classifier",
    "squad" or "race"."""
    return _KIND_OF_PROGRAM[self.program]

  def settings(self, model_size):
    """Settings for "large" or "base"."""
    return self.base if model_size == "base" and self.base else self.large

  def target(self, model_size):
    """The Figure to compare with for `model_size`, or None."""
    return self.target_base if model_size == "base" else self.target_large


def _glue(name, label, task_name, settings, metric, large, base, v2=None,
          *, eval_examples, **flags):
  """A GLUE task: data in GLUE_DIR/{label} (or glue_data/{label})."""
  return Task(name, label, CLASSIFIER, (label, f"glue_data/{label}"),
              dict(task_name=task_name, **flags), settings, metric,
              Figure(large, README_GLUE), eval_examples,
              target_base=Figure(base, README_GLUE_BASE),
              paper_v2=None if v2 is None else Figure(v2, PAPER_V2))


def _s96(lr, batch, steps, warmup, save, source=ISSUE_96):
  """A GLUE setting of zihangdai/xlnet#96 (length 128, as the README's
  STS-B command; the checkpoint interval is ours)."""
  return Settings(lr, batch, steps, warmup, 128, save, source)


_ACC = Metric("accuracy (%)", "eval_accuracy")
_ERR = Metric("error rate (%)", "eval_accuracy", error_rate=True)

# Dev set sizes (examples) for the cost estimate.
GLUE = (
    _glue("mnli", "MNLI", "mnli_matched", _s96(3e-5, 128, 10000, 1000, 2000),
          _ACC, 89.8, 86.8, v2=90.8, eval_examples=9815),
    _glue("qnli", "QNLI", "qnli",
          _s96(2e-5, 32, 10000, 1000, 2000, QNLI_SETTING), _ACC, 93.9, 91.7,
          eval_examples=5463),
    _glue("qqp", "QQP", "qqp", _s96(3e-5, 128, 14000, 1000, 2000), _ACC, 91.8,
          91.4, eval_examples=40430),
    _glue("rte", "RTE", "rte", _s96(3e-5, 32, 800, 200, 400), _ACC, 83.8,
          74.0, eval_examples=277),
    _glue("sst-2", "SST-2", "sst-2", _s96(2e-5, 32, 10000, 1000, 2000), _ACC,
          95.6, 94.7, eval_examples=872),
    _glue("mrpc", "MRPC", "mrpc", _s96(5e-5, 32, 800, 200, 400), _ACC, 89.2,
          88.2, v2=90.8, eval_examples=408),
    _glue("cola", "CoLA", "cola", _s96(3e-5, 128, 3000, 500, 500),
          Metric("Matthews corr. (x100)", "eval_mcc"), 63.6, 60.2, v2=69.0,
          eval_examples=1043),
    _glue("sts-b", "STS-B", "sts-b", _s96(5e-5, 32, 1200, 120, 600),
          Metric("Pearson r (x100)", "eval_pearsonr"), 91.8, 89.5,
          eval_examples=1500, is_regression=True),
)

# Yelp-5 is the paper's appendix column; the other CSV sets of the same
# family use it too (the paper gives no separate settings for them).
_YELP5 = Settings(1e-5, 128, 10000, 1000, 512, 2000, PAPER_APPENDIX)


def _csv(name, label, directory, target, eval_examples, v2=None):
  """A dataset of Zhang et al. (2015): data in {directory}/ (`target`: a
  Figure; test set size `eval_examples`)."""
  return Task(name, label, CLASSIFIER, (directory,), dict(task_name=name),
              _YELP5, _ERR, target, eval_examples,
              paper_v2=None if v2 is None else Figure(v2, PAPER_V2))


def _readme_error(value):
  return Figure(value, README_CLASSIFICATION)


CLASSIFICATION = (
    Task("imdb", "IMDB", CLASSIFIER, ("aclImdb",), dict(task_name="imdb"),
         Settings(2e-5, 32, 4000, 500, 512, 500, README_IMDB), _ERR,
         _readme_error(3.79), 25000),
    _csv("yelp2", "Yelp-2", "yelp_review_polarity_csv", _readme_error(1.55),
         38000),
    _csv("yelp5", "Yelp-5", "yelp_review_full_csv", _readme_error(27.80),
         50000),
    _csv("dbpedia", "DBpedia", "dbpedia_csv", _readme_error(0.62), 70000),
    _csv("amazon2", "Amazon-2", "amazon_review_polarity_csv",
         _readme_error(2.40), 400000, v2=2.11),
    _csv("amazon5", "Amazon-5", "amazon_review_full_csv",
         _readme_error(32.26), 650000, v2=31.67),
    # The release README has no AG column: the target is paper v2's.
    _csv("ag_news", "AG", "ag_news_csv", Figure(4.45, PAPER_V2), 7600,
         v2=4.45),
)

_SQUAD_LARGE = Settings(3e-5, 48, 8000, 1000, 512, 1000, SQUAD_LARGE_SCRIPT,
                        layer_decay=0.75, adam_epsilon=QA_EPSILON)
_SQUAD_BASE = Settings(2e-5, 24, 12000, 1000, 512, 1000, SQUAD_BASE_SCRIPT,
                       layer_decay=0.75, adam_epsilon=QA_EPSILON)
_SQUAD_DIRS = ("", "squad", "SQuAD")

SQUAD_TABLE = (
    Task("squad2.0", "SQuAD 2.0", SQUAD, _SQUAD_DIRS,
         dict(train_file="train-v2.0.json", predict_file="dev-v2.0.json",
              max_query_length=64),
         _SQUAD_LARGE, Metric("EM (best threshold)", "best_exact", scale=1.0),
         Figure(86.12, README_RC), 11873,
         target_base=Figure(80.18, README_RC_BASE), base=_SQUAD_BASE,
         paper_v2=Figure(87.9, PAPER_V2),
         data_files=("train-v2.0.json", "dev-v2.0.json")),
    Task("squad1.1", "SQuAD 1.1", SQUAD, _SQUAD_DIRS,
         dict(train_file="train-v1.1.json", predict_file="dev-v1.1.json",
              max_query_length=64),
         _SQUAD_LARGE, Metric("EM", "exact", scale=1.0),
         Figure(88.95, README_RC), 10570, base=_SQUAD_BASE,
         paper_v1=Figure(88.95, PAPER_V1_SQUAD11),
         paper_v2=Figure(89.7, PAPER_V2),
         data_files=("train-v1.1.json", "dev-v1.1.json")),
)

RACE_TABLE = (
    Task("race", "RACE", RACE, ("RACE",),
         dict(eval_split="test", max_qa_length=128),
         Settings(2e-5, 32, 12000, 1000, 512, 1000, RACE_SCRIPT,
                  adam_epsilon=QA_EPSILON),
         Metric("test accuracy (%)", "accuracy"), Figure(81.75, README_RC),
         4934),
)

TABLES = {"glue": GLUE, "classification": CLASSIFICATION,
          "squad": SQUAD_TABLE, "race": RACE_TABLE}

TITLES = {"glue": "GLUE (dev)", "classification":
          "text classification (test error rate)",
          "squad": "SQuAD (dev)", "race": "RACE (test)"}

# Runs per task by default (--num_seeds): GLUE's figures are medians of 5
# runs (zihangdai/xlnet#96); the release README's SQuAD 2.0 F1 is "the
# median of our multiple runs" (3: the fewest with a median that drops an
# outlier); one run of the long classification and RACE tasks.
DEFAULT_SEEDS = {"glue": 5, "classification": 1, "squad": 3, "race": 1}


def check_table(table):
  """Raises unless `table` is one of TABLES, in the words of reproduce.py's
  --table (an enum flag)."""
  validation.check_choice("table", table, tuple(TABLES))


def select(table, names=None):
  """The tasks of `table`, all or those named (case-insensitively; in the
  table's order).

  Raises:
    ValueError: naming an unknown table or task.
  """
  check_table(table)
  tasks = TABLES[table]
  if not names:
    return list(tasks)
  wanted = {n.strip().lower() for n in names}
  known = {t.name for t in tasks}
  unknown = [n for n in names if n.strip().lower() not in known]
  if unknown:
    raise ValueError(f"--tasks: {', '.join(unknown)} not in the {table} "
                     f"table (expected some of {', '.join(sorted(known))})")
  return [t for t in tasks if t.name in wanted]
