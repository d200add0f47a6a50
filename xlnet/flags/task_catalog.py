"""The task flags of the fine-tuning programs and reproduce.py, in groups
(the flags every fine-tuning program shares: `catalog.py`'s
`define_common_flags`, of the groups of `groups.py`).

  define_task_flags       the task flags two or more programs share, each
                          program giving its default and help
  define_classifier_flags run_classifier.py
  define_squad_flags      run_squad.py
  define_race_flags       run_race.py
  define_ner_flags        run_ner.py
  define_reproduce_flags  reproduce.py
"""
import dataclasses

from absl import flags

from xlnet import validation
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning.classifier import tasks as classifier_tasks
from xlnet.finetuning.tagging import config as tagging_config
from xlnet.flags import groups
from xlnet.reproduce import paper_settings


# The task flags that more than one fine-tuning program has, each program
# giving its default and help: name -> definer.
_TASK_FLAGS = {
    "data_dir": flags.DEFINE_string,
    "max_seq_length": flags.DEFINE_integer,
    "do_eval": flags.DEFINE_bool,
    "do_predict": flags.DEFINE_bool,
    "eval_batch_size": flags.DEFINE_integer,
    "predict_batch_size": flags.DEFINE_integer,
    "eval_all_ckpt": flags.DEFINE_bool,
    "predict_dir": flags.DEFINE_string,
}


class NumberOrWord(flags.ArgumentParser):
  """A flag holding a number or a word (`validation.NUMBER_OR_WORD` of its
  name): the float, or the word as it is."""

  def __init__(self, name):
    super().__init__()
    self.name = name

  def parse(self, argument):
    try:
      return validation.number_or_word(self.name, argument)
    except ValueError:
      raise ValueError(validation.number_or_word_expected(self.name)
                       ) from None

  def flag_type(self):
    return f"number or {validation.NUMBER_OR_WORD[self.name][0]}"


def config_defaults(config_class):
  """The defaults of a task config's fields (dict field name -> value): the
  defaults of the flags of those names, which the config holds."""
  return {field.name: field.default
          for field in dataclasses.fields(config_class)
          if field.default is not dataclasses.MISSING}


def define_task_flags(flag_values, **settings):
  """The shared task flags (`_TASK_FLAGS`) a fine-tuning program has.

  Args:
    flag_values: an `absl.flags.FlagValues`.
    **settings: flag name -> (default, help text), one per flag of
      `_TASK_FLAGS` the program defines.
  """
  for name, (default, help_text) in settings.items():
    _TASK_FLAGS[name](name, default, help_text, flag_values=flag_values)


def define_text_column_flags(flag_values, about, text_a_default):
  """--text_a_column, --text_b_column and --contains_header of a table's
  texts; `about` says what they are for ("tsv/csv tasks")."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("text_a_column", text_a_default,
                      f"{about}: first text column (index or name).", **fv)
  flags.DEFINE_string("text_b_column", None,
                      f"{about}: second text column (index or name), for "
                      "text pairs.", **fv)
  flags.DEFINE_bool("contains_header", None,
                    f"{about}: the first row is a header (implied when a "
                    "column is given by name).", **fv)


@groups.group("Task")
def define_classifier_flags(flag_values, *, min_seq_length,
                            pretrain_seq_length):
  """run_classifier.py's task flags (--task_name: one of the tasks of
  `classifier/tasks.py`).

  Args:
    flag_values: an `absl.flags.FlagValues`.
    min_seq_length: int, the smallest --max_seq_length.
    pretrain_seq_length: int, the released models' pretraining length.
  """
  fv = dict(flag_values=flag_values)
  default = config_defaults(finetune_config.ClassifierConfig)
  flags.DEFINE_string("task_name", None, "Task: "
                      + ", ".join(classifier_tasks.NAMES)
                      + " (case-insensitive).", **fv)
  define_task_flags(
      flag_values,
      data_dir=(None, "The task's data directory."),
      max_seq_length=(
          default["max_seq_length"],
          f"Pieces per example, >= {min_seq_length}. XLNet's positions "
          "are relative, so there is no hard upper limit, but the released "
          f"models were pretrained on sequences of {pretrain_seq_length}: "
          "longer inputs use relative distances they never saw (a warning "
          "is logged)."),
      do_eval=(False, "Evaluate on --eval_split."),
      do_predict=(False, "Label the --eval_split examples."),
      eval_batch_size=(128, "Eval batch size (per GPU without --use_tpu, "
                       "as train_batch_size)."),
      predict_batch_size=(128, "Predict batch size (per GPU without "
                          "--use_tpu, as train_batch_size)."),
      eval_all_ckpt=(False, "Evaluate every checkpoint in model_dir, not "
                     "only the latest."),
      predict_dir=(None, "Where {task}.tsv, {task}.logits.json and "
                   "{task}.ids.tsv go."))
  groups.define_eval_split_flag(
      flag_values, "Split for --do_eval and --do_predict (GLUE test sets "
      "have no labels: predict only).",
      choices=finetune_config.CLASSIFIER_EVAL_SPLITS)
  flags.DEFINE_string("predict_ckpt", None,
                      "Checkpoint to predict with (default: the latest in "
                      "model_dir).", **fv)
  flags.DEFINE_float("predict_threshold", default["predict_threshold"],
                     "Binary tasks: predict the second label when its logit "
                     "exceeds the first one's by more than this.", **fv)
  flags.DEFINE_bool("is_regression", None,
                    "Regression (one output, squared error); default: the "
                    "task's kind (sts-b: True). Required for tsv/csv "
                    "regression.", **fv)
  flags.DEFINE_string("cls_scope", None,
                      "Name of the classification head "
                      "(model/classification_{cls_scope}); default: the task "
                      "name. E.g. evaluate mnli_mismatched with the head "
                      "trained as mnli_matched.", **fv)
  flags.DEFINE_integer("num_passes", 1,
                       "Accepted for the released commands; training "
                       "repeats its examples indefinitely, so it changes "
                       "nothing.", **fv)
  # Your own data (--task_name=tsv or csv).
  flags.DEFINE_string("label_column", default["label_column"],
                      "tsv/csv tasks: label column, a 0-based index or a "
                      "header name.", **fv)
  define_text_column_flags(flag_values, "tsv/csv tasks",
                           default["text_a_column"])
  flags.DEFINE_list("label_list", None,
                    "tsv/csv tasks: the labels, comma-separated (default: "
                    "the sorted labels found in train.{tsv,csv}).", **fv)
  # Several labels per text (your own data).
  flags.DEFINE_bool("multi_label", default["multi_label"],
                    "tsv/csv tasks: the label column holds a set of labels "
                    "(--label_delimiter between them, an empty cell the "
                    "empty set): one sigmoid output per label, binary "
                    "cross-entropy, micro and macro F1.", **fv)
  flags.DEFINE_string("label_delimiter", default["label_delimiter"],
                      "With --multi_label: what separates the labels of a "
                      "set, in the data and in the predictions.", **fv)
  flags.DEFINE(NumberOrWord("multi_label_threshold"), "multi_label_threshold",
               default["multi_label_threshold"],
               "With --multi_label: the probability a label must exceed to "
               "be predicted, in (0, 1), or 'dev': the threshold with the "
               "best micro F1 on the dev split (for each checkpoint "
               "evaluated or predicted with).", **fv)
  groups.define_long_documents_flags(flag_values, what="documents")


@groups.group("Task: SQuAD")
def define_squad_flags(flag_values, *, target_eval_keys):
  """run_squad.py's task flags (the paper's XLNet-Large settings are its
  optimizer's and loop's defaults: `program_defaults.py`).

  Args:
    flag_values: an `absl.flags.FlagValues` holding the common flags.
    target_eval_keys: list of str, the metrics --target_eval_key accepts.
  """
  fv = dict(flag_values=flag_values)
  default = config_defaults(finetune_config.SquadConfig)
  define_task_flags(
      flag_values,
      max_seq_length=(default["max_seq_length"],
                      "Pieces per sequence, padding included."),
      do_predict=(False, "Predict --predict_file and evaluate."),
      predict_dir=(None, "Where the prediction files go (default: "
                   "--model_dir)."),
      predict_batch_size=(32, "Prediction batch size."),
      eval_all_ckpt=(False, "Predict with and evaluate every checkpoint of "
                     "--model_dir, not only the latest."))
  flags.DEFINE_bool("do_prepro", False,
                    "Write the training records of shard --proc_id.", **fv)
  flags.DEFINE_string("train_file", None,
                      "SQuAD JSON for training, e.g. train-v2.0.json.", **fv)
  flags.DEFINE_string("predict_file", None,
                      "SQuAD JSON to predict, e.g. dev-v2.0.json.", **fv)
  flags.DEFINE_integer("num_proc", default["num_proc"],
                       "Number of preprocessing shards.", **fv)
  flags.DEFINE_integer("proc_id", default["proc_id"],
                       "Shard written by this --do_prepro run.", **fv)
  flags.DEFINE_integer("max_query_length", default["max_query_length"],
                       "Question pieces kept (the first ones).", **fv)
  flags.DEFINE_integer("doc_stride", default["doc_stride"],
                       "Pieces between the starts of two windows.", **fv)
  flags.DEFINE_integer("max_answer_length", default["max_answer_length"],
                       "Longest predicted answer, in pieces.", **fv)
  flags.DEFINE_integer("start_n_top", default["start_n_top"],
                       "Beam size of answer starts.", **fv)
  flags.DEFINE_integer("end_n_top", default["end_n_top"],
                       "Answer ends kept per start.", **fv)
  flags.DEFINE_integer("n_best_size", default["n_best_size"],
                       "Answers kept per question in "
                       "nbest_predictions.json.", **fv)
  # Our earlier behaviour where it differs from the release's (which is the
  # default); see docs/differences.md.
  flags.DEFINE_bool("answer_on_last_piece", False,
                    "Let a window's last paragraph piece start or end a "
                    "predicted answer (the release never does).", **fv)
  flags.DEFINE_bool("skip_empty_answers", False,
                    "Skip predicted spans whose text is empty (the release "
                    "keeps them and can predict \"\").", **fv)
  flags.DEFINE_bool("trim_answer_whitespace", False,
                    "End a training answer whose text ends in whitespace on "
                    "its last word (the release ends it on the next "
                    "piece).", **fv)
  flags.DEFINE_bool("keep_unaligned", False,
                    "Train on and predict the questions of paragraphs the "
                    "release's character alignment fails on (it drops "
                    "them: no training features, the prediction \"\").",
                    **fv)
  flags.DEFINE_enum("target_eval_key", default["target_eval_key"],
                    target_eval_keys,
                    "Metric of eval_results.json that rates a checkpoint "
                    "and picks the best in eval_results.txt (has_ans_f1 "
                    "for the paper's Model I).", **fv)


@groups.group("Task: RACE")
def define_race_flags(flag_values):
  """run_race.py's task flags (`flag_values` holds the common flags; the
  paper's XLNet-Large settings are the defaults: `program_defaults.py`)."""
  fv = dict(flag_values=flag_values)
  default = config_defaults(finetune_config.RaceConfig)
  define_task_flags(
      flag_values,
      max_seq_length=(default["max_seq_length"],
                      "Pieces per sequence, padding included."),
      data_dir=(None, "RACE directory: {train,dev,test}/{middle,high}/"
                "*.txt."),
      do_eval=(False, "Evaluate --eval_split."),
      eval_batch_size=(32, "Evaluation batch size."))
  groups.define_eval_split_flag(flag_values, "Split scored by --do_eval.",
                                choices=finetune_config.RACE_EVAL_SPLITS)
  flags.DEFINE_integer("max_qa_length", default["max_qa_length"],
                       "Question+option pieces kept (the last ones).", **fv)
  flags.DEFINE_bool("high_only", False, "Use only RACE-H.", **fv)
  flags.DEFINE_bool("middle_only", False, "Use only RACE-M.", **fv)


@groups.group("Task: tagging")
def define_ner_flags(flag_values):
  """run_ner.py's task flags (`flag_values` holds the common flags; its
  defaults: `task_kinds.TAGGING`)."""
  fv = dict(flag_values=flag_values)
  default = config_defaults(tagging_config.TaggingConfig)
  define_task_flags(
      flag_values,
      max_seq_length=(default["max_seq_length"],
                      "Pieces per window, <sep> and <cls> included; a "
                      "longer sentence is cut into windows."),
      do_eval=(False, "Score --eval_file (conlleval's precision, recall "
               "and F1 per type and overall; token accuracy)."),
      do_predict=(False, "Write --predict_file (default: --eval_file) "
                  "with each token's predicted tag added to "
                  "--predict_dir."),
      eval_batch_size=(default["eval_batch_size"], "Windows per "
                       "evaluation step (per GPU without --use_tpu)."),
      predict_batch_size=(default["predict_batch_size"], "Windows per "
                          "prediction step (per GPU without --use_tpu)."),
      eval_all_ckpt=(False, "Score every checkpoint of --model_dir, not "
                     "only the latest."),
      predict_dir=(None, "Where {name}.predictions{ext} goes."))
  flags.DEFINE_string("train_file", None, "Tagged training file.", **fv)
  flags.DEFINE_string("eval_file", None, "Tagged file --do_eval scores.",
                      **fv)
  flags.DEFINE_string("predict_file", None, "File --do_predict tags "
                      "(default: --eval_file); it may be unlabelled.", **fv)
  flags.DEFINE_enum("file_layout", None,
                    validation.CHOICES["file_layout"],
                    "The files' layout (default: .conllu files conllu, "
                    ".tsv columns, others conll2003).", **fv)
  flags.DEFINE_enum("conllu_column", default["conllu_column"],
                    validation.CHOICES["conllu_column"],
                    "CoNLL-U: the tags' column.", **fv)
  flags.DEFINE_enum("tag_scheme", None, validation.CHOICES["tag_scheme"],
                    "The tags' scheme (none: plain tags such as POS, "
                    "scored by accuracy); default: detected in each "
                    "file.", **fv)
  flags.DEFINE_list("label_list", None, "The tags, comma-separated, in "
                    "the head's order (default: the training file's, "
                    "sorted).", **fv)
  flags.DEFINE_integer("window_stride", default["window_stride"],
                       "Pieces between the starts of a long sentence's "
                       "windows.", **fv)
  flags.DEFINE_bool("document_context", False,
                    "Fill each window with the neighbouring sentences of "
                    "its document (-DOCSTART-, # newdoc) as context.", **fv)


@groups.group("Reproduction")
def define_reproduce_flags(flag_values, *, tables):
  """reproduce.py's flags: the table, the pretrained model, the data and
  work directories, the devices and the override flags (default None: the
  task's own setting).

  Args:
    flag_values: an `absl.flags.FlagValues`.
    tables: list of str, the tables --table accepts.
  """
  fv = dict(flag_values=flag_values)
  flags.DEFINE_enum("table", None, tables, "The paper's table to run.", **fv)
  flags.DEFINE_enum("model_size", validation.first_choice("model_size"),
                    validation.CHOICES["model_size"],
                    "XLNet-Large or XLNet-Base: picks the settings and the "
                    "paper's figures.", **fv)
  flags.DEFINE_list("tasks", None, "Run only these tasks of the table "
                    "(default: all), e.g. sts-b,rte.", **fv)
  flags.DEFINE_string("init_checkpoint", None, "Pretrained checkpoint.",
                      **fv)
  flags.DEFINE_string("model_config_path", None,
                      "xlnet_config.json of the pretrained model.", **fv)
  flags.DEFINE_string("spiece_model_file", None,
                      "SentencePiece model of the pretrained model.", **fv)
  groups.define_uncased_flag(flag_values, False,
                             "Lower-case text (uncased models).")
  flags.DEFINE_string("data_root", None,
                      "Directory holding the public datasets in their "
                      "layouts: SST-2/ ... (or glue_data/SST-2/), aclImdb/, "
                      "yelp_review_full_csv/, ..., train-v2.0.json (or "
                      "squad/...), RACE/.", **fv)
  flags.DEFINE_string("work_dir", None, "Where every task's records, "
                      "checkpoints, logs and the results go.", **fv)
  groups.define_core_flags(
      flag_values, use_tpu=False,
      use_tpu_help="Run on a TPU (batches stay global; needs --tpu and a "
      "gs:// --gcs_dir).",
      num_core_per_host=1, num_core_per_host_help="GPUs (or TPU cores) per "
      "host; the table's batch is global and is divided among all devices "
      "and --accum_steps.")
  flags.DEFINE_integer("num_hosts", 1, "Hosts (e.g. 4 for a TPU v3-32); "
                       "devices = num_hosts x num_core_per_host.", **fv)
  flags.DEFINE_string("tpu", None, "TPU name (with --use_tpu).", **fv)
  groups.define_worker_flags(flag_values)
  flags.DEFINE_string("gcs_dir", None,
                      "A gs:// directory for every task's records, "
                      "checkpoints and predictions (a TPU reads and writes "
                      "only Cloud Storage); logs and results stay in "
                      "--work_dir. Default: --work_dir.", **fv)
  flags.DEFINE_integer("accum_steps", None,
                       "Micro-batches accumulated per optimizer step, for "
                       "every task (default 1): each device trains on "
                       "global batch / (devices x accum_steps) examples at "
                       "a time, the update is the same.", **fv)
  flags.DEFINE_float("device_memory_gb", None,
                     "Memory of one device in GiB (e.g. 16, 24, 40, 80): "
                     "each task's --accum_steps is the smallest whose "
                     "micro-batch fits, by the fine-tuning memory model "
                     "(xlnet/reproduce/memory_plan.py); needs "
                     "--model_config_path readable.", **fv)
  flags.DEFINE_string("memory_calibration", None,
                      "With --device_memory_gb: a calibration file that "
                      "bench/finetune_memory.py wrote on this kind of "
                      "device (its measured peaks) to plan with. Default: "
                      "work_dir/memory_calibration.json if present, else "
                      "the published GPU measurements.", **fv)
  flags.DEFINE_bool("use_fp16", False, "Passed to every program: float16 "
                    "activations with dynamic loss scaling (GPUs).", **fv)
  flags.DEFINE_bool("use_bfloat16", False, "Passed to every program: "
                    "bfloat16 activations (implied by --use_tpu).", **fv)
  groups.define_recompute_flag(
      flag_values, "Passed to every program: activation recomputation (the "
      "same results in less memory, for about one more forward pass of "
      "time); --device_memory_gb plans with it.")
  groups.define_freeze_layers_flag(
      flag_values, "Passed to every fine-tuning program: the embeddings and "
      "the lower N layers are not trained (no gradients, no optimizer "
      "slots); --device_memory_gb plans with it.")
  define_task_flags(
      flag_values, eval_batch_size=(8, "Evaluation/prediction batch per GPU "
                                    "(global with --use_tpu)."))
  groups.define_seed_flag(flag_values, None,
                          "The first seed (default: the programs' default "
                          "seed, 1); run s of a task uses seed + s.")
  flags.DEFINE_integer("num_seeds", None,
                       "Runs of each task, with consecutive seeds; the "
                       "table reports their median and range (default: 5 "
                       "for glue, as the GLUE figures are medians of 5 "
                       "runs, 3 for squad, 1 for classification and "
                       "race).", **fv)
  flags.DEFINE_integer("num_proc", 8,
                       "SQuAD: training-record shards, preprocessed in "
                       "parallel processes (at most one per core) before "
                       "training; a setting (the shards decide the "
                       "examples' order), keep it when resuming.", **fv)
  flags.DEFINE_bool("dry_run", False, "Print every command (a shell "
                    "script, each run's batch plan and target as a "
                    "comment), run nothing.", **fv)
  for name, kind, text in paper_settings.OVERRIDE_FLAGS:
    getattr(flags, f"DEFINE_{kind}")(
        name, None, f"Override every task's {text} (e.g. a smoke run with "
        "a small model).", **fv)
