"""The groups of flags the programs compose, each flag defined once.

A group is one concern (the model's sizes, the optimizer, checkpoints, ...)
and carries a title (`@group`): a program's `--help` lists its flags under
their groups' titles (`xlnet/programs/cli.py`). Where programs give a flag a
different default or help text (pretraining's paper recipe against the
fine-tuning release's defaults, the TPU trainer's `--use_tpu`), the group
takes them as arguments, so each flag keeps one definition; a flag that
several groups hold is defined by one function here. Which program
composes which groups: `catalog.py` (the pretraining and fine-tuning
programs), `task_catalog.py`, `tool_catalog.py`, `chain_catalog.py`.

The optimizer's and the loop's defaults of every program are in
`xlnet/program_defaults.py`, which the typed configs read too.
Pretraining's model defaults follow the paper's XLNet-Large recipe
(docs/training.md): a 24-layer 1024-wide gelu model with untied relative
biases, dropout 0.1, attention dropout 0.1, mem_len 384. The data flags
(`seq_len`, `reuse_len`, `uncased`, `bi_data`, `mask_alpha`, `mask_beta`,
`num_predict`, `train_batch_size`) default to None in the pretraining
programs: they are read from the records' `corpus_info.json`, and when
given they are checked against it (`xlnet/flags/pretraining.py`).
"""
import functools
import weakref

from absl import flags

from xlnet import program_defaults
from xlnet import validation
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning.long_documents import settings as long_documents_settings
from xlnet.training import config as train_config


# The title of the group that defined each flag: absl Flag -> str.
_GROUP_TITLES = weakref.WeakKeyDictionary()


def group(title):
  """Marks a function defining flags as the group `title`.

  The flags the function defines on its `flag_values` (the first argument,
  or the global FLAGS by default) get this title, unless a group it calls
  gave them one (the innermost group wins).
  """

  def mark(define):

    @functools.wraps(define)
    def define_group(*args, **kwargs):
      flag_values = args[0] if args else kwargs.get("flag_values",
                                                     flags.FLAGS)
      before = set(flag_values)
      define(*args, **kwargs)
      for name in set(flag_values) - before:
        _GROUP_TITLES.setdefault(flag_values[name], title)

    return define_group

  return mark


def group_title(flag):
  """The title of the group that defined `flag` (an absl Flag), or None."""
  return _GROUP_TITLES.get(flag)


# ----------------------------------------------------------------------------
# Flags that more than one group holds, each with its program's help text.
# ----------------------------------------------------------------------------
def define_model_dir_flag(flag_values, help_text):
  flags.DEFINE_string("model_dir", None, help_text, flag_values=flag_values)


def define_record_info_dir_flag(flag_values, help_text):
  flags.DEFINE_string("record_info_dir", None, help_text,
                      flag_values=flag_values)


def define_eval_split_flag(flag_values, help_text, choices=None):
  """Pretraining's held-out split is a free name ("valid"); a fine-tuning
  task's is one of `choices`, the first being the default."""
  if choices:
    flags.DEFINE_enum("eval_split", choices[0], choices, help_text,
                      flag_values=flag_values)
  else:
    flags.DEFINE_string("eval_split", "valid", help_text,
                        flag_values=flag_values)


def define_seed_flag(flag_values, default, help_text):
  flags.DEFINE_integer("seed", default, help_text, flag_values=flag_values)


def define_uncased_flag(flag_values, default, help_text):
  flags.DEFINE_bool("uncased", default, help_text, flag_values=flag_values)


def define_model_config_path_flag(flag_values, help_text):
  flags.DEFINE_string("model_config_path", None, help_text,
                      flag_values=flag_values)


def define_mem_len_flag(flag_values, default, help_text):
  flags.DEFINE_integer("mem_len", default, help_text, flag_values=flag_values)


def define_recompute_flag(flag_values, help_text):
  flags.DEFINE_bool("recompute", False, help_text, flag_values=flag_values)


def define_freeze_layers_flag(flag_values, help_text):
  flags.DEFINE_integer("freeze_layers", 0, help_text,
                       flag_values=flag_values)


def define_spiece_model_file_flag(flag_values):
  flags.DEFINE_string("spiece_model_file", None,
                      "SentencePiece model of the pretrained checkpoint.",
                      flag_values=flag_values)


# ----------------------------------------------------------------------------
# Groups.
# ----------------------------------------------------------------------------
@group("Model size")
def define_model_size_flags(flag_values):
  """The model's sizes and attention span, from which pretraining builds its
  XLNetConfig (fine-tuning reads them from --model_config_path)."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_integer("n_layer", 24, "Number of layers.", **fv)
  flags.DEFINE_integer("d_model", 1024, "Hidden size.", **fv)
  flags.DEFINE_integer("d_embed", None,
                       "Embedding size; accepted for the original commands, "
                       "must equal d_model.", **fv)
  flags.DEFINE_integer("n_head", 16, "Number of attention heads.", **fv)
  flags.DEFINE_integer("d_head", 64, "Dimension of each attention head.", **fv)
  flags.DEFINE_integer("d_inner", 4096, "Feed-forward inner size.", **fv)
  flags.DEFINE_enum("ff_activation", "gelu", ["relu", "gelu"],
                    "Feed-forward activation.", **fv)
  flags.DEFINE_bool("untie_r", True, "Untie relative biases across layers.",
                    **fv)
  flags.DEFINE_integer("n_token", 0,
                       "Vocabulary size; 0 = the data's vocab_size from "
                       "corpus_info.json.", **fv)
  define_mem_len_flag(flag_values, 384, "Number of steps to cache (memory).")
  flags.DEFINE_bool("same_length", False, "Same length attention.", **fv)


@group("Model")
def define_model_flags(flag_values, *, model_config_path_help,
                       clamp_len_help, summary_type_help, init_help):
  """The model's config file, regularization, sequence summary and
  initializer (RunConfig), shared by pretraining and fine-tuning."""
  fv = dict(flag_values=flag_values)
  # Every program's alike (run_classifier.py's are the configs' defaults).
  default = program_defaults.of(program_defaults.LIBRARY)
  define_model_config_path_flag(flag_values, model_config_path_help)
  flags.DEFINE_float("dropout", default["dropout"], "Dropout rate.", **fv)
  flags.DEFINE_float("dropatt", default["dropatt"], "Attention dropout rate.",
                     **fv)
  flags.DEFINE_integer("clamp_len", default["clamp_len"], clamp_len_help,
                       **fv)
  flags.DEFINE_enum("summary_type", "last",
                    validation.CHOICES["summary_type"], summary_type_help,
                    **fv)
  flags.DEFINE_enum("init", default["init"], validation.CHOICES["init"],
                    init_help, **fv)
  flags.DEFINE_float("init_std", default["init_std"],
                     "Stddev of the normal initializer.", **fv)
  flags.DEFINE_float("init_range", default["init_range"],
                     "Range of the uniform initializer.", **fv)
  define_recompute_flag(
      flag_values, "Activation recomputation: each layer keeps only its "
      "input for the backward pass, which computes the layer again (the "
      "same gradients and dropout masks; the activations of one layer at "
      "a time instead of all, for about one more forward pass of time).")


@group("Precision")
def define_precision_flags(flag_values, *, use_bfloat16_help):
  """Activation precision: bfloat16, or float16 with dynamic loss
  scaling."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_bool("use_bfloat16", False, use_bfloat16_help, **fv)
  flags.DEFINE_bool("use_fp16", False,
                    "Compute activations in float16 (GPUs; variables, "
                    "softmax, LayerNorm statistics and the loss stay "
                    "float32) with dynamic loss scaling.", **fv)
  flags.DEFINE_float("loss_scale", 2.0 ** 15,
                     "--use_fp16: the first loss scale; it halves after a "
                     "step whose gradients overflow (the update is "
                     "skipped) and doubles after 2000 finite steps.", **fv)


@group("Records")
def define_pretraining_data_flags(flag_values):
  """Where the pretraining records are, and the factorization block."""
  fv = dict(flag_values=flag_values)
  define_record_info_dir_flag(
      flag_values, "Directory (or comma-separated directories) with the "
      "record_info-*.json files, e.g. $DATA/tfrecords.")
  flags.DEFINE_string("corpus_info_path", None,
                      "corpus_info.json written by data_utils.py (as in the "
                      "released README's command); None = the one next to "
                      "the first --record_info_dir directory.", **fv)
  flags.DEFINE_integer("perm_size", None,
                       "Permutation block size; None = reuse_len. Must "
                       "divide and not exceed reuse_len and "
                       "seq_len-reuse_len.", **fv)
  flags.DEFINE_enum("sample_strategy",
                    validation.first_choice("sample_strategy"),
                    validation.CHOICES["sample_strategy"],
                    "Token records (data_utils.py --record_kind=tokens) "
                    "only: where the span masks drawn online may start: "
                    "word_span at word starts (the release's rule), "
                    "token_span at any piece.", **fv)


# The records' settings, which data_utils.py writes with the release's
# defaults and the pretraining programs check against corpus_info.json (their
# default None takes the data's value): (name, definer, data_utils.py's
# default, its help, the pretraining programs' help).
_RECORD_LAYOUT = (
    ("seq_len", flags.DEFINE_integer, 512, "Sequence length.",
     "Sequence length."),
    ("reuse_len", flags.DEFINE_integer, 256,
     "Tokens reusable as memory; the row step.",
     "Tokens of each sequence that become memory."),
    ("bi_data", flags.DEFINE_bool, True, "Add backward rows.",
     "Bidirectional data."),
    ("mask_alpha", flags.DEFINE_integer, 6, "Context size is n*alpha//beta.",
     "Span-masking context factor."),
    ("mask_beta", flags.DEFINE_integer, 1, "See mask_alpha.",
     "Span-masking span factor."),
    ("num_predict", flags.DEFINE_integer, 85, "Masked tokens per example.",
     "Number of tokens to predict per sequence."),
    ("num_passes", flags.DEFINE_integer, 1,
     "Accepted for compatibility with the released README; one run writes "
     "one pass (--pass_id).",
     "Use at most this many data passes (None = all)."),
)


@group("Data settings")
def define_record_layout_flags(flag_values, *, writing):
  """The records' settings (`_RECORD_LAYOUT`) and --uncased.

  Args:
    flag_values: an `absl.flags.FlagValues`.
    writing: True for data_utils.py (the release's defaults), False for the
      pretraining programs (None: the value of corpus_info.json).
  """
  for name, define, default, written_help, checked_help in _RECORD_LAYOUT:
    define(name, default if writing else None,
           written_help if writing else checked_help,
           flag_values=flag_values)
  define_uncased_flag(flag_values, False if writing else None,
                      "Lowercase the text." if writing else "Uncased data.")


@group("Optimizer")
def define_optimizer_flags(flag_values, *, program, lr_layer_decay_rate_help):
  """AdamW with warmup and decay (OptimizerConfig), with `program`'s
  defaults (`program_defaults.of`)."""
  fv = dict(flag_values=flag_values)
  default = program_defaults.of(program)
  flags.DEFINE_float("learning_rate", default["learning_rate"],
                     "Peak learning rate.", **fv)
  flags.DEFINE_float("clip", default["clip"],
                     "Gradient clipping (global norm).", **fv)
  flags.DEFINE_float("min_lr_ratio", default["min_lr_ratio"],
                     "Final learning rate as a fraction of the peak.", **fv)
  flags.DEFINE_integer("warmup_steps", default["warmup_steps"],
                       "Linear warmup steps.", **fv)
  flags.DEFINE_float("adam_epsilon", default["adam_epsilon"], "Adam epsilon.",
                     **fv)
  flags.DEFINE_enum("decay_method", default["decay_method"],
                    validation.CHOICES["decay_method"],
                    "Learning rate decay after warmup.", **fv)
  flags.DEFINE_float("weight_decay", default["weight_decay"],
                     "Decoupled weight decay.", **fv)
  flags.DEFINE_float("lr_layer_decay_rate", default["lr_layer_decay_rate"],
                     lr_layer_decay_rate_help, **fv)
  define_freeze_layers_flag(
      flag_values, "Train nothing of the backbone below layer N: the "
      "embeddings, the relative-attention biases and segment embeddings, "
      "and layers 0..N-1 get no update, no gradient and no optimizer slots "
      "(0: train everything); a resumed run keeps it.")


@group("Training loop")
def define_training_flags(flag_values, *, program, train_batch_size_help,
                          iterations_help, seed_help, accum_steps_help):
  """The training loop: batch, steps, log interval, seed, accumulation,
  XLA (TrainConfig, BatchLayout), with `program`'s defaults."""
  fv = dict(flag_values=flag_values)
  default = program_defaults.of(program)
  flags.DEFINE_integer("train_batch_size", default["train_batch_size"],
                       train_batch_size_help, **fv)
  flags.DEFINE_integer("train_steps", default["train_steps"],
                       "Number of training steps.", **fv)
  flags.DEFINE_integer("iterations", default["iterations"], iterations_help,
                       **fv)
  define_seed_flag(flag_values, default["seed"], seed_help)
  flags.DEFINE_integer("accum_steps", 1, accum_steps_help, **fv)
  flags.DEFINE_bool("use_xla", False,
                    "Jit-compile the training step with XLA.", **fv)


@group("Checkpoints")
def define_checkpoint_flags(flag_values, *, program, model_dir_help,
                            init_checkpoint_help, save_steps_help,
                            max_save_help):
  """Where checkpoints go, which one starts the run, how many are kept
  (CheckpointConfig), with `program`'s defaults."""
  fv = dict(flag_values=flag_values)
  default = program_defaults.of(program)
  define_model_dir_flag(flag_values, model_dir_help)
  flags.DEFINE_string("init_checkpoint", None, init_checkpoint_help, **fv)
  flags.DEFINE_integer("save_steps", default["save_steps"], save_steps_help,
                       **fv)
  flags.DEFINE_integer("max_save", default["max_save"], max_save_help, **fv)


@group("Held-out evaluation")
def define_heldout_eval_flags(flag_values):
  """Held-out evaluation of pretraining (train_gpu.py --eval_steps,
  eval_pretrain.py)."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_integer("eval_steps", 0,
                       "Evaluate on the held-out split every this many "
                       "steps and at the end (0: never).", **fv)
  define_eval_split_flag(flag_values, "Split name of the held-out records "
                         "(data_utils.py --split).")
  flags.DEFINE_string("eval_record_info_dir", None,
                      "Directory of the held-out record infos (default: "
                      "--record_info_dir).", **fv)
  flags.DEFINE_integer("eval_batches", None,
                       "Held-out host batches per evaluation (default: one "
                       "pass over the held-out records).", **fv)
  flags.DEFINE_string("eval_ckpt", None,
                      "eval_pretrain.py: the checkpoint to evaluate "
                      "(default: the latest in --model_dir).", **fv)


@group("Devices")
def define_core_flags(flag_values, *, use_tpu, use_tpu_help,
                      num_core_per_host, num_core_per_host_help):
  """TPU or not, and the cores (GPUs) of each host (DeviceConfig)."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_bool("use_tpu", use_tpu, use_tpu_help, **fv)
  flags.DEFINE_integer("num_core_per_host", num_core_per_host,
                       num_core_per_host_help, **fv)


@group("TPU")
def define_tpu_flags(flag_values, *, num_hosts_help):
  """The TPU to run on: hosts, name, zone, project, job, master."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_integer("num_hosts", 1, num_hosts_help, **fv)
  flags.DEFINE_string("master", None, "TensorFlow master URL.", **fv)
  flags.DEFINE_string("tpu", None, "TPU name or grpc://ip:port.", **fv)
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.", **fv)
  flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.", **fv)
  flags.DEFINE_string("tpu_job_name", None, "TPU worker job name.", **fv)


@group("Several hosts")
def define_worker_flags(flag_values):
  """Multi-worker GPU training (MultiWorkerMirroredStrategy)."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("worker_hosts", None,
                      "Multi-host GPU training: comma-separated host:port "
                      "of every worker (the same list on every host); "
                      "builds TF_CONFIG. A TF_CONFIG in the environment "
                      "works as well.", **fv)
  flags.DEFINE_integer("task_index", 0,
                       "This host's index in --worker_hosts (0 = chief: "
                       "writes checkpoints, summaries and results).", **fv)
  flags.DEFINE_float("cluster_timeout", train_config.CLUSTER_TIMEOUT,
                     "Seconds each host waits for the others to start "
                     "before it stops with one line naming those that did "
                     "not.", **fv)


@group("TPU engine")
def define_pretraining_device_flags(flag_values):
  """Multi-worker GPU training and the TPU trainer's engine."""
  fv = dict(flag_values=flag_values)
  define_worker_flags(flag_values)
  flags.DEFINE_enum("tpu_engine", "auto", validation.CHOICES["tpu_engine"],
                    "train_tpu.py: TPUEstimator (the release's trainer; "
                    "TensorFlow 2.15 only) or the shared tf.distribute "
                    "engine on a TPUStrategy; auto = TPUEstimator where it "
                    "exists.", **fv)


@group("Input on tf.data service")
def define_data_service_flags(flag_values):
  """The pretraining input pipeline on tf.data service workers."""
  flags.DEFINE_string("data_service", "",
                      "grpc://HOST:PORT of a tf.data service dispatcher "
                      "(data_service.py --port): its workers run the "
                      "training input pipeline (the engine only; "
                      "docs/distributed.md). Empty: the trainer runs it.",
                      flag_values=flag_values)
  flags.DEFINE_float("data_service_timeout",
                     train_config.DATA_SERVICE_TIMEOUT,
                     "Seconds a training step waits for its batches from "
                     "the service (a dispatcher with no worker, or one "
                     "that died, sends none) before the trainer stops with "
                     "one line naming the last checkpoint.",
                     flag_values=flag_values)


@group("Accepted for the release's commands")
def define_unused_release_flags(flag_values):
  """Flags of the release's train.py commands that change nothing here."""
  flags.DEFINE_bool("track_mean", False,
                    "Accepted for the original train.py's commands; "
                    "unused.", flag_values=flag_values)


@group("Memory plan")
def define_memory_plan_flags(flag_values=flags.FLAGS):
  """--device_memory_gb and --memory_calibration of the fine-tuning
  programs (`xlnet/flags/finetuning.py` `memory_planned`)."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_float("device_memory_gb", None,
                     "Memory of one GPU in GiB (e.g. 16, 24, 40, 80): each "
                     "device's examples per step (--train_batch_size x "
                     "--accum_steps) are split into the fewest micro-batches "
                     "that fit, by the fine-tuning memory model "
                     "(xlnet/reproduce/memory_plan.py); the plan replaces "
                     "both flags and is logged first.", **fv)
  flags.DEFINE_string("memory_calibration", None,
                      "With --device_memory_gb: a calibration file that "
                      "bench/finetune_memory.py wrote on this kind of "
                      "device (its measured peaks) to plan with. Default: "
                      "the published GPU measurements.", **fv)


@group("Long documents")
def define_long_documents_flags(flag_values, *, what, training=True):
  """How texts longer than one sequence are read
  (`finetuning/long_documents/settings.py`); `what` names the texts in
  the help ("documents", "texts"); `training` adds --bptt_windows."""
  fv = dict(flag_values=flag_values)
  default = long_documents_settings.DEFAULT
  flags.DEFINE_enum(
      "long_documents", default.long_documents,
      validation.CHOICES["long_documents"],
      f"How {what} longer than --max_seq_length are read: truncate (the "
      "release's: the first --max_seq_length - 2 pieces), windows (cut "
      "into windows of --max_seq_length, each read alone, their outputs "
      "pooled) or memory (the windows read in order, each with the "
      "previous windows' states as memory of --mem_len; the output read "
      "at the last window). docs/long_documents.md.", **fv)
  flags.DEFINE_enum("window_pooling", default.window_pooling,
                    validation.CHOICES["window_pooling"],
                    "--long_documents=windows: how the windows' outputs "
                    "are pooled.", **fv)
  flags.DEFINE_integer("max_windows", default.max_windows,
                       f"--long_documents=windows/memory: windows per "
                       f"{what[:-1]} (the pieces after them are dropped).",
                       **fv)
  if training:
    flags.DEFINE_integer("bptt_windows", default.bptt_windows,
                         "--long_documents=memory: gradients flow through "
                         "the memories of the last this many windows (1: "
                         "none; the memory a constant, as in pretraining).",
                         **fv)
  define_mem_len_flag(flag_values, default.mem_len,
                      "--long_documents=memory: the memory's length, in "
                      "positions of each layer (default: --max_seq_length, "
                      "the whole window before).")


@group("Fine-tuning input")
def define_finetuning_flags(flag_values):
  """Fine-tuning's own: the summary projection, the text, the feature
  records' cache, --do_train and the shuffle buffer."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_bool("use_summ_proj", True,
                    "Apply the tanh projection sequnece_summary/summary to "
                    "the pooled vector.", **fv)
  define_spiece_model_file_flag(flag_values)
  define_uncased_flag(flag_values, False,
                      "Lower-case the text (for uncased models).")
  flags.DEFINE_string("output_dir", None,
                      "Directory of the cached feature records.", **fv)
  flags.DEFINE_bool("overwrite_data", False,
                    "Rewrite the feature records even when valid ones "
                    "exist.", **fv)
  flags.DEFINE_integer("records_timeout", finetune_config.RECORDS_TIMEOUT,
                       "Several hosts: seconds the workers other than the "
                       "chief wait, at most, for the chief to write the "
                       "training records into --output_dir.", **fv)
  flags.DEFINE_bool("do_train", False, "Fine-tune.", **fv)
  flags.DEFINE_integer("shuffle_buffer", 2048,
                       "Training examples in the shuffle buffer.", **fv)
