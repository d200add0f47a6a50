"""The flags of the programs that neither train nor fine-tune, in groups
(their shared groups and flags are in `groups.py`):

  define_record_flags   data_utils.py
  define_spm_flags      spm_train.py
  define_download_flags download.py
  define_data_service_server_flags  data_service.py
  define_convert_flags  convert_checkpoint.py
  define_extract_features_flags  extract_features.py
  define_model_utils_flags  model_utils.py
  define_demo_report_flags, define_demo_corpus_flags   the demo's scripts
  define_chain_data_flags   scripts/get_chain_data.py (bench/chain.py's:
                        chain_catalog.py)
"""
from absl import flags

from xlnet import validation
from xlnet.finetuning.vectors import config as vectors_config
from xlnet.flags import groups
from xlnet.flags import task_catalog


def define_record_flags(flag_values=flags.FLAGS):
  """Defines the flags of data_utils.py (names and defaults as in the
  release)."""
  groups.define_core_flags(
      flag_values, use_tpu=True,
      use_tpu_help="Accepted for compatibility; the core layout follows "
      "--num_core_per_host in every case.",
      num_core_per_host=8, num_core_per_host_help="Cores (or GPUs) per host.")
  groups.define_record_layout_flags(flag_values, writing=True)
  define_record_writing_flags(flag_values)


@groups.group("SentencePiece training")
def define_spm_flags(flag_values=flags.FLAGS):
  """Defines the flags of spm_train.py."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("input", None, "Comma-separated training text files.",
                      **fv)
  flags.DEFINE_string("model_prefix", None, "Output prefix (.model/.vocab).",
                      **fv)
  flags.DEFINE_integer("vocab_size", 32000, "Vocabulary size.", **fv)
  flags.DEFINE_integer("input_sentence_size", 10000000,
                       "Sentences sampled (shuffled) for training.", **fv)
  flags.DEFINE_float("character_coverage", 0.99995, "Character coverage.",
                     **fv)
  flags.DEFINE_integer("num_threads", None, "Trainer threads.", **fv)
  flags.DEFINE_bool("split_digits", False,
                    "Every digit a piece of its own (not the release's "
                    "option): no piece then ends in a digit and ',', which "
                    "the release's encoder splits and HF's tokenizer keeps "
                    "whole.", **fv)


@groups.group("tf.data service servers")
def define_data_service_server_flags(flag_values=flags.FLAGS):
  """Defines the flags of data_service.py."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_integer("port", None, "The port this server listens on.",
                       **fv)
  flags.DEFINE_string("dispatcher", None,
                      "HOST:PORT of the dispatcher: start a worker serving "
                      "it. Unset: start the dispatcher.", **fv)
  flags.DEFINE_string("host", "localhost",
                      "A worker's host name as the trainers reach it (on a "
                      "cluster: this machine's name or address).", **fv)
  flags.DEFINE_string("work_dir", None,
                      "The dispatcher's journal directory: a restarted "
                      "dispatcher resumes its jobs. Unset: no journal.",
                      **fv)
  flags.DEFINE_integer("worker_timeout_ms", None,
                       "The dispatcher drops a worker silent this long "
                       "(default: TensorFlow's).", **fv)
  flags.DEFINE_float("dispatcher_timeout", 600.0,
                     "Seconds a worker waits for its dispatcher to answer "
                     "before it stops with one line.", **fv)


@groups.group("Downloads")
def define_download_flags(flag_values=flags.FLAGS):
  """Defines the flags of download.py."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("data_root", None,
                      "Where the data sets land, in the layout reproduce.py "
                      "reads (pass the same --data_root to it).", **fv)
  flags.DEFINE_string("model_root", None,
                      "Where the released checkpoints' directories land "
                      "(default: --data_root).", **fv)
  flags.DEFINE_list("only", None,
                    "Download only these (any case): models, glue, "
                    "classification, squad, race, or single names "
                    "(xlnet-large, xlnet-base, mnli, sts-b, imdb, yelp5, "
                    "squad2.0, ...); default: everything.", **fv)
  flags.DEFINE_string("mirror", None,
                      "Fetch every URL from this base instead: "
                      "https://host/path becomes MIRROR/host/path (a copy "
                      "of the same files, or a test server).", **fv)
  flags.DEFINE_float("timeout", 60.0,
                     "Seconds to wait for a connection and for each read "
                     "before the try counts as failed.", **fv)
  flags.DEFINE_integer("retries", 5,
                       "Retries of a transient failure (timeout, broken "
                       "connection, HTTP 5xx) per file, waiting 2, 4, 8 ... "
                       "seconds.", **fv)
  flags.DEFINE_bool("keep_archives", False,
                    "Keep the downloaded archives in ROOT/downloads/ after "
                    "unpacking them.", **fv)
  flags.DEFINE_bool("dry_run", False,
                    "List what would be fetched and where it would land; "
                    "fetch nothing.", **fv)


@groups.group("Conversion")
def define_convert_flags(flag_values=flags.FLAGS):
  """Defines the flags of convert_checkpoint.py."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_enum("to", None, ["hf", "tf", "saved_model"],
                    "hf: a checkpoint -> a HuggingFace transformers "
                    "directory; tf: a HuggingFace directory -> a checkpoint; "
                    "saved_model: a checkpoint -> a SavedModel for serving.",
                    **fv)
  flags.DEFINE_string("checkpoint", None,
                      "The input: a checkpoint (prefix, directory or "
                      "DIR/latest) for --to=hf and saved_model; a "
                      "HuggingFace directory for --to=tf.", **fv)
  groups.define_model_config_path_flag(
      flag_values, "--to=hf, saved_model: the checkpoint's config (default: "
      "config.json, else xlnet_config.json, in the checkpoint's directory).")
  groups.define_spiece_model_file_flag(flag_values)
  groups.define_uncased_flag(flag_values, False,
                      "The model lower-cases its text (the HF tokenizer's "
                      "do_lower_case).")
  flags.DEFINE_string("output_dir", None,
                      "A new (or empty) directory for the result; written "
                      "whole or not at all.", **fv)
  flags.DEFINE_string("task_name", None,
                      "The head to convert: a classification or regression "
                      "task (its head classification_TASK or "
                      "regression_TASK), squad or race; by default the only "
                      "head of the checkpoint, or none (the backbone and "
                      "its LM). --to=tf: the scope of a sequence "
                      "classification head (default: the HF config's "
                      "finetuning_task).", **fv)
  flags.DEFINE_bool("is_regression", None,
                    "With --task_name: take the regression (true) or the "
                    "classification (false) head.", **fv)
  flags.DEFINE_enum("summary_type", None, validation.CHOICES["summary_type"],
                    "--to=hf, saved_model: how the classification, "
                    "regression or RACE head pools the sequence, as "
                    "fine-tuned (default: what the checkpoint's directory "
                    "records in head.json, else 'last'; HF has no 'attn').",
                    **fv)


@groups.group("Checkpoint tools")
def define_model_utils_flags(flag_values=flags.FLAGS):
  """Defines the flags of model_utils.py (each names its command)."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("clean_input_ckpt", None,
                      "clean_ckpt: input checkpoint (prefix, directory or "
                      "DIR/latest).", **fv)
  flags.DEFINE_string("clean_output_model_dir", None,
                      "clean_ckpt: output directory for the cleaned "
                      "checkpoint.", **fv)
  flags.DEFINE_string("avg_model_dir", None,
                      "avg_checkpoints: directory holding the checkpoints.",
                      **fv)
  flags.DEFINE_string("avg_output_model_dir", None,
                      "avg_checkpoints: output directory for the average.",
                      **fv)
  flags.DEFINE_integer("avg_num", 5,
                       "avg_checkpoints: how many latest checkpoints to "
                       "average.", **fv)
  groups.define_model_dir_flag(flag_values,
                        "rollback_ckpt: the training directory.")
  flags.DEFINE_integer("step", None,
                       "rollback_ckpt: resume from model.ckpt-STEP instead "
                       "of the newest intact checkpoint.", **fv)


@groups.group("Demo report")
def define_demo_report_flags(flag_values=flags.FLAGS):
  """Defines the flags of scripts/demo_report.py."""
  fv = dict(flag_values=flag_values)
  groups.define_model_dir_flag(
      flag_values, "Checkpoint prefix, or the model directory (its latest "
      "checkpoint); config.json is read from the checkpoint's directory.")
  groups.define_record_info_dir_flag(
      flag_values, "The held-out records ({save_dir}/tfrecords, with "
      "corpus_info.json beside them); their SentencePiece model and text "
      "settings are used throughout.")
  groups.define_eval_split_flag(flag_values,
                                "Split name of the held-out records.")
  flags.DEFINE_string("train_text", None, "The training text (piece "
                      "frequencies of the unigram baseline).", **fv)
  flags.DEFINE_string("heldout_text", None, "The held-out text (sentences "
                      "to hide words in).", **fv)
  flags.DEFINE_integer("num_sentences", 4, "Held-out sentences shown.", **fv)
  flags.DEFINE_float("hide_fraction", 0.15, "Words hidden per word of a "
                     "sentence (at least one; only one-piece words are "
                     "hidden).", **fv)
  flags.DEFINE_integer("top_k", 3, "Predictions shown per hidden piece.",
                       **fv)
  groups.define_seed_flag(flag_values, 0,
                          "Seed of the choice of hidden words.")


@groups.group("Demo corpus")
def define_demo_corpus_flags(flag_values=flags.FLAGS, *, dest_dir):
  """Defines the flags of scripts/get_demo_corpus.py.

  Args:
    flag_values: an `absl.flags.FlagValues`.
    dest_dir: the default --dest_dir (demo_corpus.DEFAULT_DEST).
  """
  fv = dict(flag_values=flag_values)
  flags.DEFINE_string("dest_dir", dest_dir,
                      "Where botchan.txt is kept (downloaded once).", **fv)
  flags.DEFINE_string("split_dir", None,
                      "If set, write train.txt and valid.txt here.", **fv)
  flags.DEFINE_float("heldout_fraction", 0.1,
                     "Fraction of the documents (the last ones) held out.",
                     **fv)


@groups.group("Chain data")
def define_chain_data_flags(flag_values=flags.FLAGS, *, dest_dir):
  """Defines the flags of scripts/get_chain_data.py."""
  flags.DEFINE_string("dest_dir", dest_dir, "Where the parts are written.",
                      flag_values=flag_values)


@groups.group("Text in, records out")
def define_record_writing_flags(flag_values):
  """data_utils.py: the text read, the records written, the workers."""
  fv = dict(flag_values=flag_values)
  flags.DEFINE_integer("bsz_per_host", 32, "Batch size (rows) per host.",
                       **fv)
  flags.DEFINE_bool("use_eod", True, "Add <eod> at document ends.", **fv)
  flags.DEFINE_bool("from_raw_text", True, "Input is raw text (else lines "
                    "of space-separated ids).", **fv)
  flags.DEFINE_string("input_glob", "data/example/*.txt",
                      "Comma-separated globs of input files.", **fv)
  flags.DEFINE_string("sp_path", "", "SentencePiece model.", **fv)
  flags.DEFINE_string("save_dir", "proc_data/example", "Output directory.",
                      **fv)
  flags.DEFINE_string("split", "train", "Split name in file names.", **fv)
  flags.DEFINE_integer("pass_id", 0, "Pass written by this run; run once "
                       "per pass_id in [0, num_passes).", **fv)
  flags.DEFINE_integer("num_task", 1, "Number of parallel tasks.", **fv)
  flags.DEFINE_integer("task", 0, "Task id in [0, num_task).", **fv)
  flags.DEFINE_integer("num_workers", None, "Processes that encode the text "
                       "and serialize the examples; default: one per CPU. "
                       "The output does not depend on it.", **fv)
  flags.DEFINE_enum("record_kind", validation.first_choice("record_kind"),
                    validation.CHOICES["record_kind"],
                    "examples: the release's records, each example with its "
                    "A/B split and span masks fixed (one pass per "
                    "--pass_id). tokens: the rows of tokens and sentence "
                    "ids (a row in records of up to 2**24), written once; "
                    "the trainers then draw the A/B split and span masks "
                    "online, anew every epoch (docs/data.md).", **fv)
  flags.DEFINE_bool("verify", False, "Write nothing; instead check every "
                    "record file listed by the record infos under "
                    "--save_dir (comma-separated dirs; a save_dir or its "
                    "tfrecords/): each record's checksum, the file sizes and "
                    "record counts. Prints each bad file; fails if any.",
                    **fv)


@groups.group("Texts to vectors")
def define_extract_features_flags(flag_values=flags.FLAGS):
  """Defines the flags of extract_features.py (BERT's names where it has
  them: --input_file, --output_file, --init_checkpoint, --layers,
  --max_seq_length, --batch_size)."""
  fv = dict(flag_values=flag_values)
  default = task_catalog.config_defaults(vectors_config.VectorsConfig)
  flags.DEFINE_string("input_file", None,
                      "The texts: one a line ('a ||| b': a pair), or a TSV "
                      "table (--input_format=tsv).", **fv)
  flags.DEFINE_string("output_file", None,
                      "JSON lines (BERT's layout, docs/features.md), or a "
                      ".npy file of the pooled vectors [texts, layers, "
                      "d_model].", **fv)
  flags.DEFINE_string("init_checkpoint", None,
                      "A checkpoint (prefix or directory): a released "
                      "model's xlnet_model.ckpt, a pretraining run's or a "
                      "fine-tuned model_dir.", **fv)
  groups.define_model_config_path_flag(
      flag_values, "The checkpoint's config (default: config.json, else "
      "xlnet_config.json, beside it).")
  flags.DEFINE_string("spiece_model_file", None,
                      "The model's SentencePiece model (default: "
                      "spiece.model beside the checkpoint).", **fv)
  groups.define_uncased_flag(flag_values, None,
                             "Lower-case the text (default: a fine-tuned "
                             "model_dir's task.json, else cased).")
  flags.DEFINE_enum("input_format", default["input_format"],
                    validation.CHOICES["input_format"],
                    "lines: one text a line; tsv: --text_a_column (and "
                    "--text_b_column) of a tab-separated table.", **fv)
  task_catalog.define_text_column_flags(flag_values, "--input_format=tsv",
                                        default["text_a_column"])
  flags.DEFINE_list("layers", [str(i) for i in default["layers"]],
                    "The hidden states, comma-separated: 0 the embeddings, "
                    "i the output of layer i, -1 the last layer's (HF's "
                    "hidden_states).", **fv)
  flags.DEFINE_enum("pooling", default["pooling"],
                    validation.CHOICES["pooling"],
                    "cls: the <cls> state; mean: the mean over the text's "
                    "pieces; none: one vector per piece, with its string "
                    "and character span.", **fv)
  task_catalog.define_task_flags(flag_values, max_seq_length=(
      default["max_seq_length"], "Pieces per sequence (per window of a "
      "long text)."))
  flags.DEFINE_integer("batch_size", default["batch_size"],
                       "Texts per step (the vectors do not depend on it).",
                       **fv)
  groups.define_long_documents_flags(flag_values, what="texts",
                                     training=False)
