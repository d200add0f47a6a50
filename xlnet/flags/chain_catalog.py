"""The flags of bench/chain.py (the paper's chain in miniature) and
bench/chain_hf_check.py. Each numeric flag is a field of `ChainConfig`,
its default the field's: one place per setting."""
import dataclasses
import os

from absl import flags

from xlnet import validation
from xlnet.chain import config as chain_config
from xlnet.flags import groups

_HELP = {
    "heldout_every": "Every N-th document of the corpus is held out.",
    "task_text_share": "About this share of the pretraining text is the "
                       "labelled sets' training texts (labels unused, dev "
                       "texts never; whole copies, or a seeded draw when "
                       "they are more), spread among the "
                       "corpus's documents; 0: the corpus alone.",
    "vocab_size": "SentencePiece pieces (trained on the training text).",
    "n_layer": "Layers of the model.",
    "d_model": "Width of the model.",
    "n_head": "Attention heads (d_head = d_model / n_head).",
    "d_inner": "Width of the feed-forward layers.",
    "seq_len": "Pretraining sequence length.",
    "reuse_len": "Pieces of a sequence the next one reuses (and perm_size).",
    "mem_len": "Pretraining memory length (Transformer-XL recurrence).",
    "num_predict": "Targets per pretraining sequence.",
    "pretrain_batch_size": "Pretraining batch size (even: bi_data).",
    "pretrain_steps": "Pretraining steps.",
    "pretrain_learning_rate": "Pretraining peak learning rate.",
    "pretrain_warmup_steps": "Pretraining warmup steps.",
    "pretrain_seed": "Pretraining's seed (train_gpu.py --seed: initial "
                     "weights, input order, factorization orders, dropout).",
    "min_lm_gain": "Fine-tuning starts only when pretraining's last "
                   "held-out loss is at least this many nats per target "
                   "below the unigram baseline (a run stuck on the "
                   "unigram plateau stops the chain); 0: no check.",
    "train_examples": "Training examples drawn from each labelled set.",
    "dev_examples": "Dev examples drawn from each labelled set (all of "
                    "them when it has fewer).",
    "max_seq_length": "Fine-tuning pieces per example.",
    "finetune_batch_size": "Fine-tuning batch size.",
    "finetune_steps": "Fine-tuning steps of every run.",
    "finetune_learning_rate": "Fine-tuning peak learning rate (both arms).",
    "finetune_warmup_steps": "Fine-tuning warmup steps.",
    "eval_every": "Steps between the dev evaluations of a fine-tuning run "
                  "(the curve).",
    "data_seed": "Seed of the draws: the training and dev examples (the "
                 "same for every run), and the task texts when they are "
                 "more than their share.",
}


def _venv_python(name):
  """.venvs/NAME/bin/python of this checkout when it exists, else ''."""
  root = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  path = os.path.join(root, ".venvs", name, "bin", "python")
  return path if os.path.exists(path) else ""


@groups.group("The chain")
def define_chain_flags(flag_values=flags.FLAGS):
  """Defines bench/chain.py's flags."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("work_dir", "chain_out", "Where every stage writes "
                      "(rerun the same command to resume).", **fv)
  flags.DEFINE_string("corpus_glob", "data/chain/corpus/*/*.txt",
                      "Comma-separated globs of the raw text files to "
                      "pretrain on (scripts/get_chain_data.py).", **fv)
  flags.DEFINE_string(
      "tasks", "sentiment=imdb:data/chain/sentiment,"
      "topic=csv:data/chain/topic", "The labelled sets, comma-separated "
      "NAME=TASK_NAME:DATA_DIR, TASK_NAME as run_classifier.py's "
      "--task_name (its layout; csv/tsv: columns label, text_a[, text_b]).",
      **fv)
  flags.DEFINE_list("seeds", ["1", "2", "3"], "Fine-tuning seeds of each "
                    "arm.", **fv)
  flags.DEFINE_string("hf_python", _venv_python("interop"),
                      "Python with PyTorch and transformers for the HF "
                      "check ('' skips it; default: .venvs/interop, built "
                      "by `bash scripts/setup_env.sh interop`).", **fv)
  flags.DEFINE_string("plot_python", _venv_python("plot"),
                      "Python with matplotlib for curves.png ('': none; "
                      "default: .venvs/plot).", **fv)
  flags.DEFINE_enum("summary_type", chain_config.ChainConfig.summary_type,
                    validation.CHOICES["summary_type"], "How the fine-tuned "
                    "classifier pools the sequence (run_classifier.py "
                    "--summary_type; both arms).", **fv)
  for field in dataclasses.fields(chain_config.ChainConfig):
    if field.name not in _HELP:
      continue
    define = {"float": flags.DEFINE_float, "bool": flags.DEFINE_bool}.get(
        getattr(field.type, "__name__", field.type), flags.DEFINE_integer)
    define(field.name, field.default, _HELP[field.name], **fv)


def chain_config_from(values, python):
  """The `ChainConfig` of parsed flag `values`; `python` runs the
  programs.

  Raises:
    ValueError: one line naming the flag at fault.
  """
  try:
    seeds = tuple(int(s) for s in values.seeds)
  except ValueError:
    raise ValueError(f"--seeds={','.join(values.seeds)}: expected "
                     "integers") from None
  return chain_config.ChainConfig(
      work_dir=values.work_dir, corpus_glob=values.corpus_glob,
      tasks=chain_config.parse_tasks(values.tasks), python=python,
      hf_python=values.hf_python or None,
      plot_python=values.plot_python or None, seeds=seeds,
      summary_type=values.summary_type,
      **{name: values[name].value for name in _HELP})


@groups.group("The chain's HF check")
def define_chain_hf_flags(flag_values=flags.FLAGS):
  """Defines bench/chain_hf_check.py's flags."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("work_dir", None, "The chain's work dir (its pretrain/, "
                      "records/ and hf/ are read).", **fv)
  flags.DEFINE_string("model_dir", None, "The fine-tuned run exported to "
                      "work_dir/hf/finetuned.", **fv)
  flags.DEFINE_string("dev", None, "Its set's dev.csv.", **fv)
  flags.DEFINE_string("heldout", None, "The held-out text (valid.txt).",
                      **fv)
  for name in ("work_dir", "model_dir", "dev", "heldout"):
    flags.mark_flag_as_required(name, flag_values=flag_values)
