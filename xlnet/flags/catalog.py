"""The command-line flags of every program, defined in one place.

`define_flags` defines the pretraining programs' flags (train_gpu.py,
train_tpu.py, eval_pretrain.py) with the released code's names, so the
original README's commands work verbatim; `define_common_flags` the flags
every fine-tuning program shares (run_classifier.py, run_squad.py,
run_race.py), each program adding its task flags.

Pretraining defaults follow the paper's XLNet-Large recipe (docs/training.md)
where the release shipped toy values: a 24-layer 1024-wide gelu model with
untied relative biases, dropout 0.1, attention dropout 0.1, Adam epsilon 1e-6,
40K warmup steps, linear ("poly") decay over 500K steps, weight decay 0.01,
mem_len 384. The data flags (`seq_len`, `reuse_len`, `uncased`, `bi_data`,
`mask_alpha`, `mask_beta`, `num_predict`, `train_batch_size`) default to
None: they are read from the records' `corpus_info.json`, and when given
they are checked against it (`xlnet/flags/pretraining.py`).

Fine-tuning defaults are the released scripts' defaults, except
`adam_epsilon`, which is the paper's fine-tuning value 1e-6 (the release's
flag said 1e-8).
"""
from absl import flags

from xlnet.training import config as train_config


def define_flags(flag_values=flags.FLAGS, tpu_defaults=False):
  """Defines all pretraining flags on `flag_values` (no-op if already there).

  Args:
    flag_values: an `absl.flags.FlagValues`; the global `FLAGS` by default.
    tpu_defaults: the TPU trainer's defaults, as in the release's train.py:
      `--use_tpu=True`, `--num_core_per_host=8`.
  """
  if "record_info_dir" in flag_values:
    return
  fv = dict(flag_values=flag_values)

  # Model configuration (XLNetConfig).
  flags.DEFINE_string("model_config_path", None,
                      "XLNetConfig json; when given it overrides the model "
                      "flags below.", **fv)
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
  flags.DEFINE_enum("summary_type", "last", ["last", "first", "mean", "attn"],
                    "Sequence summary for fine-tuning heads; accepted for "
                    "the original commands, unused in pretraining.", **fv)
  flags.DEFINE_bool("untie_r", True, "Untie relative biases across layers.",
                    **fv)
  flags.DEFINE_integer("n_token", 0,
                       "Vocabulary size; 0 = the data's vocab_size from "
                       "corpus_info.json.", **fv)

  # Run configuration (RunConfig).
  flags.DEFINE_bool("use_tpu", tpu_defaults, "Run on TPU (train_tpu.py).",
                    **fv)
  flags.DEFINE_bool("use_bfloat16", False, "Use bfloat16 activations.", **fv)
  flags.DEFINE_bool("use_fp16", False,
                    "Compute activations in float16 (GPUs; variables, "
                    "softmax, LayerNorm statistics and the loss stay "
                    "float32) with dynamic loss scaling.", **fv)
  flags.DEFINE_float("loss_scale", 2.0 ** 15,
                     "--use_fp16: the first loss scale; it halves after a "
                     "step whose gradients overflow (the update is "
                     "skipped) and doubles after 2000 finite steps.", **fv)
  flags.DEFINE_float("dropout", 0.1, "Dropout rate.", **fv)
  flags.DEFINE_float("dropatt", 0.1, "Attention dropout rate.", **fv)
  flags.DEFINE_enum("init", "normal", ["normal", "uniform"],
                    "Initialization method.", **fv)
  flags.DEFINE_float("init_std", 0.02, "Stddev of the normal initializer.",
                     **fv)
  flags.DEFINE_float("init_range", 0.1, "Range of the uniform initializer.",
                     **fv)
  flags.DEFINE_integer("mem_len", 384, "Number of steps to cache (memory).",
                       **fv)
  flags.DEFINE_bool("same_length", False, "Same length attention.", **fv)
  flags.DEFINE_integer("clamp_len", -1, "Clamp length (-1 = no clamping).",
                       **fv)

  # Data (must agree with corpus_info.json; None = take the data's value).
  flags.DEFINE_string("record_info_dir", None,
                      "Directory (or comma-separated directories) with the "
                      "record_info-*.json files, e.g. $DATA/tfrecords.", **fv)
  flags.DEFINE_string("corpus_info_path", None,
                      "corpus_info.json written by data_utils.py (as in the "
                      "released README's command); None = the one next to "
                      "the first --record_info_dir directory.", **fv)
  flags.DEFINE_integer("train_batch_size", None,
                       "Global batch size (= bsz_per_host * num_hosts); "
                       "None = from corpus_info.json.", **fv)
  flags.DEFINE_integer("seq_len", None, "Sequence length.", **fv)
  flags.DEFINE_integer("reuse_len", None,
                       "Tokens of each sequence that become memory.", **fv)
  flags.DEFINE_integer("perm_size", None,
                       "Permutation block size; None = reuse_len. Must "
                       "divide and not exceed reuse_len and "
                       "seq_len-reuse_len.", **fv)
  flags.DEFINE_bool("bi_data", None, "Bidirectional data.", **fv)
  flags.DEFINE_integer("mask_alpha", None, "Span-masking context factor.",
                       **fv)
  flags.DEFINE_integer("mask_beta", None, "Span-masking span factor.", **fv)
  flags.DEFINE_integer("num_predict", None,
                       "Number of tokens to predict per sequence.", **fv)
  flags.DEFINE_bool("uncased", None, "Uncased data.", **fv)
  flags.DEFINE_integer("num_passes", None,
                       "Use at most this many data passes (None = all).", **fv)

  # Optimizer.
  flags.DEFINE_float("learning_rate", 4e-4, "Peak learning rate.", **fv)
  flags.DEFINE_float("clip", 1.0, "Gradient clipping (global norm).", **fv)
  flags.DEFINE_float("min_lr_ratio", 0.0,
                     "Final learning rate as a fraction of the peak.", **fv)
  flags.DEFINE_integer("warmup_steps", 40000, "Linear warmup steps.", **fv)
  flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon.", **fv)
  flags.DEFINE_enum("decay_method", "poly", ["poly", "cos"],
                    "Learning rate decay after warmup.", **fv)
  flags.DEFINE_float("weight_decay", 0.01, "Decoupled weight decay.", **fv)
  flags.DEFINE_float("lr_layer_decay_rate", 1.0,
                     "Layer l's gradients are scaled by "
                     "rate^(n_layer-1-l).", **fv)

  # Training loop.
  flags.DEFINE_integer("train_steps", 500000, "Number of training steps.",
                       **fv)
  flags.DEFINE_integer("iterations", 1000,
                       "Steps between log lines (GPU) / per TPU loop.", **fv)
  flags.DEFINE_integer("save_steps", None,
                       "Steps between checkpoints; None = only at the end.",
                       **fv)
  flags.DEFINE_integer("max_save", 100000, "Max checkpoints to keep.", **fv)
  flags.DEFINE_string("model_dir", None,
                      "Checkpoints, summaries; training resumes from the "
                      "latest checkpoint found here.", **fv)
  flags.DEFINE_string("init_checkpoint", None,
                      "Checkpoint to initialize the model from (e.g. the "
                      "released weights); ignored when resuming.", **fv)
  flags.DEFINE_integer("seed", train_config.DEFAULT_SEED,
                       "Random seed of the initial weights, the input order, "
                       "the factorization orders and dropout.", **fv)
  flags.DEFINE_bool("track_mean", False,
                    "Accepted for the original train.py's commands; "
                    "unused.", **fv)

  flags.DEFINE_integer("accum_steps", 1,
                       "Micro-batches accumulated per optimizer step: each "
                       "step averages the gradients of accum_steps "
                       "consecutive per-core batches (memories advance from "
                       "one to the next); global_step, the schedule and the "
                       "log count optimizer steps.", **fv)
  flags.DEFINE_bool("use_xla", False,
                    "Jit-compile the training step with XLA.", **fv)

  # Held-out evaluation (train_gpu.py --eval_steps, eval_pretrain.py).
  flags.DEFINE_integer("eval_steps", 0,
                       "Evaluate on the held-out split every this many "
                       "steps and at the end (0: never).", **fv)
  flags.DEFINE_string("eval_split", "valid",
                      "Split name of the held-out records (data_utils.py "
                      "--split).", **fv)
  flags.DEFINE_string("eval_record_info_dir", None,
                      "Directory of the held-out record infos (default: "
                      "--record_info_dir).", **fv)
  flags.DEFINE_integer("eval_batches", None,
                       "Held-out host batches per evaluation (default: one "
                       "pass over the held-out records).", **fv)
  flags.DEFINE_string("eval_ckpt", None,
                      "eval_pretrain.py: the checkpoint to evaluate "
                      "(default: the latest in --model_dir).", **fv)

  # Devices.
  flags.DEFINE_integer("num_hosts", 1,
                       "Number of hosts (TPU hosts; for train_gpu.py the "
                       "number of workers, which --worker_hosts/TF_CONFIG "
                       "determine).", **fv)
  flags.DEFINE_integer("num_core_per_host", 8 if tpu_defaults else 1,
                       "Cores per host: GPUs (or logical CPU devices) / TPU "
                       "cores.", **fv)
  flags.DEFINE_string("worker_hosts", None,
                      "Multi-host GPU training: comma-separated host:port "
                      "of every worker (the same list on every host); "
                      "builds TF_CONFIG. A TF_CONFIG in the environment "
                      "works as well.", **fv)
  flags.DEFINE_integer("task_index", 0,
                       "This host's index in --worker_hosts (0 = chief: "
                       "writes checkpoints and summaries).", **fv)
  flags.DEFINE_string("master", None, "TensorFlow master URL.", **fv)
  flags.DEFINE_string("tpu", None, "TPU name or grpc://ip:port.", **fv)
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.", **fv)
  flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.", **fv)
  flags.DEFINE_string("tpu_job_name", None, "TPU worker job name.", **fv)
  flags.DEFINE_enum("tpu_engine", "auto", ["auto", "estimator", "strategy"],
                    "train_tpu.py: TPUEstimator (the release's trainer; "
                    "TensorFlow 2.15 only) or the shared tf.distribute "
                    "engine on a TPUStrategy; auto = TPUEstimator where it "
                    "exists.", **fv)


def parse_flags(argv, tpu_defaults=False):
  """Returns a fresh, parsed `FlagValues` holding every pretraining flag.

  Args:
    argv: list of strings, e.g. `["prog", "--n_layer=2"]` (argv[0] ignored).
    tpu_defaults: see `define_flags`.

  Returns:
    an `absl.flags.FlagValues` independent of the global `FLAGS`.
  """
  flag_values = flags.FlagValues()
  define_flags(flag_values, tpu_defaults)
  flag_values(list(argv))
  return flag_values


def define_common_flags(flag_values=flags.FLAGS):
  """Defines the common fine-tuning flags (no-op if already defined).

  Args:
    flag_values: an `absl.flags.FlagValues`; the global FLAGS by default.
  """
  if "model_config_path" in flag_values:
    return
  fv = dict(flag_values=flag_values)

  # Model.
  flags.DEFINE_string("model_config_path", None,
                      "XLNetConfig json of the pretrained model (e.g. "
                      "xlnet_config.json of the released checkpoints).", **fv)
  flags.DEFINE_float("dropout", 0.1, "Dropout rate.", **fv)
  flags.DEFINE_float("dropatt", 0.1, "Attention dropout rate.", **fv)
  flags.DEFINE_integer("clamp_len", -1,
                       "Clamp relative distances to this (-1: no clamping).",
                       **fv)
  flags.DEFINE_enum("summary_type", "last", ["last", "first", "mean", "attn"],
                    "How a sequence is pooled into one vector: 'last' is "
                    "the <cls> state.", **fv)
  flags.DEFINE_bool("use_summ_proj", True,
                    "Apply the tanh projection sequnece_summary/summary to "
                    "the pooled vector.", **fv)
  flags.DEFINE_bool("use_bfloat16", False,
                    "Compute activations in bfloat16 (variables stay "
                    "float32).", **fv)
  flags.DEFINE_bool("use_fp16", False,
                    "Compute activations in float16 (GPUs; variables, "
                    "softmax, LayerNorm statistics and the loss stay "
                    "float32) with dynamic loss scaling.", **fv)
  flags.DEFINE_float("loss_scale", 2.0 ** 15,
                     "--use_fp16: the first loss scale; it halves after a "
                     "step whose gradients overflow (the update is "
                     "skipped) and doubles after 2000 finite steps.", **fv)
  flags.DEFINE_enum("init", "normal", ["normal", "uniform"],
                    "Initializer of new variables.", **fv)
  flags.DEFINE_float("init_std", 0.02, "Stddev of the normal initializer.",
                     **fv)
  flags.DEFINE_float("init_range", 0.1, "Range of the uniform initializer.",
                     **fv)

  # Checkpoints and data.
  flags.DEFINE_string("init_checkpoint", None,
                      "Pretrained checkpoint to start from (a prefix such "
                      "as xlnet_model.ckpt, a directory or DIR/latest); "
                      "ignored when model_dir already holds a fine-tuning "
                      "checkpoint.", **fv)
  flags.DEFINE_string("model_dir", None,
                      "Fine-tuning checkpoints, summaries and eval results; "
                      "training resumes from its latest checkpoint.", **fv)
  flags.DEFINE_string("spiece_model_file", None,
                      "SentencePiece model of the pretrained checkpoint.",
                      **fv)
  flags.DEFINE_string("output_dir", None,
                      "Directory of the cached feature records.", **fv)
  flags.DEFINE_bool("overwrite_data", False,
                    "Rewrite the feature records even when valid ones "
                    "exist.", **fv)
  flags.DEFINE_bool("uncased", False,
                    "Lower-case the text (for uncased models).", **fv)

  # Optimizer.
  flags.DEFINE_float("learning_rate", 1e-5, "Peak learning rate.", **fv)
  flags.DEFINE_float("lr_layer_decay_rate", 1.0,
                     "Layer l's gradients are scaled by "
                     "rate^(n_layer-1-l) (1.0: no layer-wise decay).", **fv)
  flags.DEFINE_float("min_lr_ratio", 0.0,
                     "Final learning rate as a fraction of the peak.", **fv)
  flags.DEFINE_float("clip", 1.0, "Gradient clipping (global norm).", **fv)
  flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay.", **fv)
  flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon.", **fv)
  flags.DEFINE_enum("decay_method", "poly", ["poly", "cos"],
                    "Learning rate decay after warmup.", **fv)

  # Training.
  flags.DEFINE_bool("do_train", False, "Fine-tune.", **fv)
  flags.DEFINE_integer("train_batch_size", 8,
                       "Training batch size: PER GPU without --use_tpu (the "
                       "released GPU command trains STS-B with 8 on each of "
                       "4 GPUs, i.e. 32 per step); the global batch over "
                       "all cores with --use_tpu.", **fv)
  flags.DEFINE_integer("train_steps", 1000, "Number of training steps.", **fv)
  flags.DEFINE_integer("warmup_steps", 0, "Linear warmup steps.", **fv)
  flags.DEFINE_integer("iterations", 1000,
                       "Steps between log lines / per TPU loop.", **fv)
  flags.DEFINE_integer("save_steps", None,
                       "Steps between checkpoints; None: only at the end.",
                       **fv)
  flags.DEFINE_integer("max_save", 0,
                       "Checkpoints to keep; 0 keeps all (needed by "
                       "--eval_all_ckpt).", **fv)
  flags.DEFINE_integer("seed", train_config.DEFAULT_SEED,
                       "Random seed of the new head's initial weights, the "
                       "training example order and dropout.", **fv)
  flags.DEFINE_integer("shuffle_buffer", 2048,
                       "Training examples in the shuffle buffer.", **fv)
  flags.DEFINE_integer("accum_steps", 1,
                       "Batches accumulated per optimizer step (the "
                       "effective batch is accum_steps times larger).", **fv)
  flags.DEFINE_bool("use_xla", False,
                    "Jit-compile the training step with XLA.", **fv)

  # Devices.
  flags.DEFINE_bool("use_tpu", False, "Run on TPU (TensorFlow 2.15).", **fv)
  flags.DEFINE_integer("num_hosts", 1, "Number of TPU hosts.", **fv)
  flags.DEFINE_integer("num_core_per_host", 1,
                       "GPUs (or TPU cores) per host.", **fv)
  flags.DEFINE_string("tpu_job_name", None, "TPU worker job name.", **fv)
  flags.DEFINE_string("tpu", None, "TPU name or grpc://ip:port.", **fv)
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.", **fv)
  flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.", **fv)
  flags.DEFINE_string("master", None, "TensorFlow master URL.", **fv)


def set_defaults(flag_values, **defaults):
  """Sets a program's defaults (e.g. the paper's settings) on defined
  flags."""
  for name, value in defaults.items():
    flag_values.set_default(name, value)
