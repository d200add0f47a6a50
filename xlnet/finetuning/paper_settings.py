"""The paper's tables: each task's fine-tuning settings and published figure.

One source of truth for `reproduce.py`: which program runs a task, where its
data lies under `--data_root`, the settings (batch sizes are the GLOBAL batch,
examples per optimizer step), the metric and the figure of the paper or the
release's README. Where each number comes from is in docs/reproducing.md.

XLNet-Base uses the XLNet-Large settings (as the release's README says for
STS-B) except for SQuAD, where the release ships a separate Base script.
A figure is None where neither the paper nor the release gives one.
"""
import dataclasses
from typing import Optional

CLASSIFIER = "run_classifier.py"
SQUAD = "run_squad.py"
RACE = "run_race.py"


@dataclasses.dataclass(frozen=True)
class Settings:
  """Fine-tuning settings of one task (batch: global, examples per step)."""
  learning_rate: float
  batch: int
  steps: int
  warmup: int
  seq_len: int
  save_steps: int
  layer_decay: float = 1.0


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
    large, base: Settings for XLNet-Large / XLNet-Base.
    metric: Metric.
    paper_large, paper_base: the published figure, or None.
    data_files: files the data directory must hold (SQuAD JSON files).
  """
  name: str
  label: str
  program: str
  data: tuple
  flags: dict
  large: Settings
  metric: Metric
  paper_large: Optional[float]
  paper_base: Optional[float] = None
  base: Optional[Settings] = None
  data_files: tuple = ()

  def settings(self, model_size):
    """Settings for "large" or "base"."""
    return self.base if model_size == "base" and self.base else self.large

  def paper(self, model_size):
    """The published figure for `model_size`, or None."""
    return self.paper_base if model_size == "base" else self.paper_large


def _glue(name, label, task_name, lr, batch, steps, save, metric, large,
          **flags):
  """A GLUE task: data in GLUE_DIR/{label} (or glue_data/{label})."""
  warmup = steps // 10
  return Task(name, label, CLASSIFIER, (label, f"glue_data/{label}"),
              dict(task_name=task_name, **flags),
              Settings(lr, batch, steps, warmup, 128, save), metric, large)


_ACC = Metric("accuracy (%)", "eval_accuracy")
_ERR = Metric("error rate (%)", "eval_accuracy", error_rate=True)

GLUE = (
    _glue("mnli", "MNLI", "mnli_matched", 2e-5, 128, 10000, 2000, _ACC, 89.8),
    _glue("qnli", "QNLI", "qnli", 2e-5, 32, 10000, 2000, _ACC, 93.9),
    _glue("qqp", "QQP", "qqp", 2e-5, 128, 10000, 2000, _ACC, 91.8),
    _glue("rte", "RTE", "rte", 3e-5, 32, 800, 400, _ACC, 83.8),
    _glue("sst-2", "SST-2", "sst-2", 2e-5, 32, 6000, 2000, _ACC, 95.6),
    _glue("mrpc", "MRPC", "mrpc", 5e-5, 32, 800, 400, _ACC, 89.2),
    _glue("cola", "CoLA", "cola", 2e-5, 32, 1200, 400,
          Metric("Matthews corr. (x100)", "eval_mcc"), 63.6),
    _glue("sts-b", "STS-B", "sts-b", 5e-5, 32, 1200, 600,
          Metric("Pearson r (x100)", "eval_pearsonr"), 91.8,
          is_regression=True),
)

# Yelp-5 is the paper's appendix column; the other CSV sets of the same
# family use it too (the paper gives no separate settings for them).
_YELP5 = Settings(1e-5, 128, 10000, 1000, 512, 2000)


def _csv(name, label, directory, paper):
  """A dataset of Zhang et al. (2015): data in {directory}/."""
  return Task(name, label, CLASSIFIER, (directory,), dict(task_name=name),
              _YELP5, _ERR, paper)


CLASSIFICATION = (
    Task("imdb", "IMDB", CLASSIFIER, ("aclImdb",), dict(task_name="imdb"),
         Settings(2e-5, 32, 4000, 500, 512, 500), _ERR, 3.79),
    _csv("yelp2", "Yelp-2", "yelp_review_polarity_csv", 1.55),
    _csv("yelp5", "Yelp-5", "yelp_review_full_csv", 27.80),
    _csv("dbpedia", "DBpedia", "dbpedia_csv", 0.62),
    _csv("amazon2", "Amazon-2", "amazon_review_polarity_csv", 2.40),
    _csv("amazon5", "Amazon-5", "amazon_review_full_csv", 32.26),
    _csv("ag_news", "AG", "ag_news_csv", 4.45),
)

_SQUAD_LARGE = Settings(3e-5, 48, 8000, 1000, 512, 1000, layer_decay=0.75)
_SQUAD_BASE = Settings(2e-5, 24, 12000, 1000, 512, 1000, layer_decay=0.75)
_SQUAD_DIRS = ("", "squad", "SQuAD")

SQUAD_TABLE = (
    Task("squad2.0", "SQuAD 2.0", SQUAD, _SQUAD_DIRS,
         dict(train_file="train-v2.0.json", predict_file="dev-v2.0.json",
              max_query_length=64),
         _SQUAD_LARGE, Metric("EM (best threshold)", "best_exact", scale=1.0),
         86.12, paper_base=80.18, base=_SQUAD_BASE,
         data_files=("train-v2.0.json", "dev-v2.0.json")),
    Task("squad1.1", "SQuAD 1.1", SQUAD, _SQUAD_DIRS,
         dict(train_file="train-v1.1.json", predict_file="dev-v1.1.json",
              max_query_length=64),
         _SQUAD_LARGE, Metric("EM", "exact", scale=1.0), 88.95,
         base=_SQUAD_BASE, data_files=("train-v1.1.json", "dev-v1.1.json")),
)

RACE_TABLE = (
    Task("race", "RACE", RACE, ("RACE",),
         dict(eval_split="test", max_qa_length=128),
         Settings(2e-5, 32, 12000, 1000, 512, 1000),
         Metric("test accuracy (%)", "accuracy"), 81.75),
)

TABLES = {"glue": GLUE, "classification": CLASSIFICATION,
          "squad": SQUAD_TABLE, "race": RACE_TABLE}

TITLES = {"glue": "GLUE (dev)", "classification":
          "text classification (test error rate)",
          "squad": "SQuAD (dev)", "race": "RACE (test)"}


def select(table, names=None):
  """The tasks of `table`, all or those named (in the table's order).

  Raises:
    ValueError: naming an unknown table or task.
  """
  if table not in TABLES:
    raise ValueError(f"--table={table}: expected one of "
                     f"{', '.join(TABLES)}")
  tasks = TABLES[table]
  if not names:
    return list(tasks)
  known = {t.name for t in tasks}
  unknown = [n for n in names if n not in known]
  if unknown:
    raise ValueError(f"--tasks: {', '.join(unknown)} not in the {table} "
                     f"table (expected some of {', '.join(sorted(known))})")
  return [t for t in tasks if t.name in names]
