"""ChainConfig: every setting of the chain (`bench/chain.py`), one field a
flag, checked when built.

The defaults are the measured run of docs/chain.md: a 4-layer, width-128
XLNet pretrained for 9,000 steps (memories of 64, bi_data, 32 targets per
128-piece sequence) on the public-domain corpus of
`scripts/get_chain_data.py` with the labelled sets' training texts as
about half the text, then fine-tuned for 500 steps on 1,000 examples of
each labelled set (evaluated on up to 3,000 dev examples), from that
checkpoint and from a random initialization, seeds 1, 2 and 3.
"""
import dataclasses
import json
from typing import Optional, Tuple

from xlnet import validation
from xlnet.finetuning.classifier import tasks as classifier_tasks

ARMS = ("pretrained", "random")


@dataclasses.dataclass(frozen=True)
class Task:
  """A labelled set: `name` (the chain's label: a word), `task_name` (how
  `run_classifier.py --task_name` reads its layout) and `data_dir`."""
  name: str
  task_name: str
  data_dir: str


def parse_tasks(spec):
  """`name=task_name:data_dir,...` -> tuple of Task.

  Raises:
    ValueError: naming --tasks and the entry at fault.
  """
  tasks = []
  for entry in filter(None, (e.strip() for e in spec.split(","))):
    name, eq, rest = entry.partition("=")
    task_name, colon, data_dir = rest.partition(":")
    if not (eq and colon and name and data_dir) or not name.isidentifier():
      raise ValueError(f"--tasks: {entry!r} is not NAME=TASK_NAME:DATA_DIR "
                       "(NAME a word, e.g. sentiment=imdb:data/aclImdb)")
    if task_name.lower() not in classifier_tasks.NAMES:
      raise ValueError(f"--tasks: {entry!r}: unknown TASK_NAME "
                       f"{task_name!r}; expected one of "
                       f"{', '.join(classifier_tasks.NAMES)}")
    tasks.append(Task(name, task_name.lower(), data_dir))
  names = [t.name for t in tasks]
  if len(set(names)) != len(names) or not tasks:
    raise ValueError(f"--tasks={spec}: expected one or more sets with "
                     f"distinct names, got {names}")
  return tuple(tasks)


@dataclasses.dataclass(frozen=True)
class ChainConfig:
  """The chain's settings (the flags of `bench/chain.py`, same names).

  Attributes (the less obvious):
    corpus_glob: the raw text files to pretrain on (comma-separated globs).
    tasks: the labelled sets (`parse_tasks`).
    heldout_every: every N-th document of the corpus is held out (the
      held-out LM loss of pretraining).
    task_text_share: about this share of the pretraining text's training
      bytes is the labelled sets' training texts (labels unused; never
      their dev texts): whole copies of all of them, or a draw
      (`corpus.task_share`); 0: the corpus alone.
    pretrain_seed: pretraining's seed (`train_gpu.py --seed`);
      another one is the cure for a run that stays on the unigram
      plateau (docs/chain.md).
    min_lm_gain: the nats per target pretraining's last held-out loss must
      be below the unigram baseline for fine-tuning to start (0: no
      check). Not a setting of the results: it only stops the chain.
    data_seed: draws the training and dev examples (the same for every arm
      and seed: the seeds vary initialization, order and dropout only), and
      the task texts when they are more than their share.
    python: the interpreter of the programs (TensorFlow's environment).
    hf_python: an interpreter with PyTorch and transformers for the HF
      check (None: the check is skipped, and the report says so).
    plot_python: an interpreter with matplotlib for the plot (None: none).
  """
  work_dir: str
  corpus_glob: str
  tasks: Tuple[Task, ...]
  python: str
  hf_python: Optional[str] = None
  plot_python: Optional[str] = None
  heldout_every: int = 50
  task_text_share: float = 0.5
  vocab_size: int = 8000
  n_layer: int = 4
  d_model: int = 128
  n_head: int = 4
  d_inner: int = 512
  seq_len: int = 128
  reuse_len: int = 64
  mem_len: int = 64
  num_predict: int = 32
  pretrain_batch_size: int = 16
  pretrain_steps: int = 9000
  pretrain_learning_rate: float = 5e-4
  pretrain_warmup_steps: int = 300
  pretrain_seed: int = 1
  min_lm_gain: float = 0.5
  train_examples: int = 1000
  dev_examples: int = 3000
  max_seq_length: int = 128
  finetune_batch_size: int = 16
  finetune_steps: int = 500
  finetune_learning_rate: float = 5e-4
  finetune_warmup_steps: int = 50
  eval_every: int = 100
  summary_type: str = "last"
  seeds: Tuple[int, ...] = (1, 2, 3)
  data_seed: int = 0

  def __post_init__(self):
    """Each setting by its rule (`xlnet/validation.py`), then what two
    settings must agree on."""
    validation.check_fields(self)
    if self.d_model % self.n_head:
      raise ValueError(f"--d_model={self.d_model} must be a multiple of "
                       f"--n_head={self.n_head}")
    if not self.seeds or len(set(self.seeds)) != len(self.seeds):
      raise ValueError(f"--seeds={','.join(map(str, self.seeds))}: expected "
                       "one or more distinct seeds")

  def model_config(self):
    """The XLNet config (the json `--model_config_path` reads)."""
    return {"n_layer": self.n_layer, "d_model": self.d_model,
            "n_head": self.n_head, "d_head": self.d_model // self.n_head,
            "d_inner": self.d_inner, "ff_activation": "gelu",
            "untie_r": True, "n_token": self.vocab_size}

  def settings(self):
    """What the work dir's results depend on, as a json-able dict (the
    NOT_SETTINGS fields excluded)."""
    out = dataclasses.asdict(self)
    for name in NOT_SETTINGS:
      out.pop(name)
    return json.loads(json.dumps(out))


# Fields that change no number of the results: the work dir, the
# interpreters, and the plateau check (it only stops the chain).
NOT_SETTINGS = ("work_dir", "python", "hf_python", "plot_python",
                "min_lm_gain")


def default_settings():
  """{setting: its default} of the settings that have one (json-able)."""
  return json.loads(json.dumps(
      {f.name: f.default for f in dataclasses.fields(ChainConfig)
       if f.default is not dataclasses.MISSING
       and f.name not in NOT_SETTINGS}))
