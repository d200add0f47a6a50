"""Every program's flags, names and defaults, as the released commands and
docs use them: a literal table per program, checked against the flags the
program defines when it starts (program_flags.defined: the program run in
this process with absl's `app.run` replaced, so nothing but its flag
definitions runs), and the help texts pinned by a digest. The catalog test
below checks that every flag is defined in one place, the catalog
(`xlnet/flags/groups.py`, its task groups, `xlnet/flags/task_catalog.py`,
and the tools' groups, `xlnet/flags/tool_catalog.py`)."""
import hashlib
import os

import pytest

from tests.programs import program_flags

REPO = program_flags.REPO

# Flags with the same type and default in pretraining and fine-tuning.
SHARED = {
    "accum_steps": ("int", 1),
    "adam_epsilon": ("float", 1e-06),
    "clamp_len": ("int", -1),
    "clip": ("float", 1.0),
    "decay_method": ("string enum", 'poly'),
    "dropatt": ("float", 0.1),
    "dropout": ("float", 0.1),
    "freeze_layers": ("int", 0),
    "gcp_project": ("string", None),
    "init": ("string enum", 'normal'),
    "init_checkpoint": ("string", None),
    "init_range": ("float", 0.1),
    "init_std": ("float", 0.02),
    "iterations": ("int", 1000),
    "loss_scale": ("float", 32768.0),
    "lr_layer_decay_rate": ("float", 1.0),
    "master": ("string", None),
    "min_lr_ratio": ("float", 0.0),
    "model_config_path": ("string", None),
    "model_dir": ("string", None),
    "num_core_per_host": ("int", 1),
    "num_hosts": ("int", 1),
    "recompute": ("bool", False),
    "save_steps": ("int", None),
    "seed": ("int", 1),
    "summary_type": ("string enum", 'last'),
    "tpu": ("string", None),
    "tpu_job_name": ("string", None),
    "tpu_zone": ("string", None),
    "use_bfloat16": ("bool", False),
    "use_fp16": ("bool", False),
    "use_tpu": ("bool", False),
    "use_xla": ("bool", False),
    "task_index": ("int", 0),
    "cluster_timeout": ("float", 600.0),
    "worker_hosts": ("string", None),
}

# train_gpu.py, eval_pretrain.py: the paper's XLNet-Large recipe; the data
# flags default to None (read from corpus_info.json).
PRETRAINING = dict(SHARED, **{
    "bi_data": ("bool", None),
    "corpus_info_path": ("string", None),
    "data_service": ("string", ""),
    "data_service_timeout": ("float", 600.0),
    "d_embed": ("int", None),
    "d_head": ("int", 64),
    "d_inner": ("int", 4096),
    "d_model": ("int", 1024),
    "eval_batches": ("int", None),
    "eval_ckpt": ("string", None),
    "eval_record_info_dir": ("string", None),
    "eval_split": ("string", 'valid'),
    "eval_steps": ("int", 0),
    "ff_activation": ("string enum", 'gelu'),
    "learning_rate": ("float", 0.0004),
    "mask_alpha": ("int", None),
    "mask_beta": ("int", None),
    "max_save": ("int", 100000),
    "mem_len": ("int", 384),
    "n_head": ("int", 16),
    "n_layer": ("int", 24),
    "n_token": ("int", 0),
    "num_passes": ("int", None),
    "num_predict": ("int", None),
    "perm_size": ("int", None),
    "record_info_dir": ("string", None),
    "reuse_len": ("int", None),
    "same_length": ("bool", False),
    "sample_strategy": ("string enum", 'word_span'),
    "seq_len": ("int", None),
    "tpu_engine": ("string enum", 'auto'),
    "track_mean": ("bool", False),
    "train_batch_size": ("int", None),
    "train_steps": ("int", 500000),
    "uncased": ("bool", None),
    "untie_r": ("bool", True),
    "warmup_steps": ("int", 40000),
    "weight_decay": ("float", 0.01),
})
# train_tpu.py (and the release's train.py): the TPU defaults.
TRAIN_TPU = dict(PRETRAINING, use_tpu=("bool", True),
                 num_core_per_host=("int", 8))

# Every fine-tuning program: the release's defaults (adam_epsilon: those of
# the release's run_squad.py and run_race.py; run_classifier.py's below).
FINETUNING = dict(SHARED, **{
    "device_memory_gb": ("float", None),
    "do_train": ("bool", False),
    "learning_rate": ("float", 1e-05),
    "max_save": ("int", 0),
    "memory_calibration": ("string", None),
    "output_dir": ("string", None),
    "overwrite_data": ("bool", False),
    "records_timeout": ("int", 7200),
    "shuffle_buffer": ("int", 2048),
    "spiece_model_file": ("string", None),
    "train_batch_size": ("int", 8),
    "train_steps": ("int", 1000),
    "uncased": ("bool", False),
    "use_summ_proj": ("bool", True),
    "warmup_steps": ("int", 0),
    "weight_decay": ("float", 0.0),
})

RUN_CLASSIFIER = dict(FINETUNING, **{
    # the release's run_classifier.py: DEFINE_float("adam_epsilon", 1e-8)
    "adam_epsilon": ("float", 1e-08),
    "cls_scope": ("string", None),
    "contains_header": ("bool", None),
    "data_dir": ("string", None),
    "do_eval": ("bool", False),
    "do_predict": ("bool", False),
    "eval_all_ckpt": ("bool", False),
    "eval_batch_size": ("int", 128),
    "eval_split": ("string enum", 'dev'),
    "is_regression": ("bool", None),
    "label_column": ("string", 'label'),
    "label_delimiter": ("string", '|'),
    "label_list": ("comma separated list of strings", None),
    "max_seq_length": ("int", 128),
    "multi_label": ("bool", False),
    "multi_label_threshold": ("number or dev", 0.5),
    "num_passes": ("int", 1),
    "predict_batch_size": ("int", 128),
    "predict_ckpt": ("string", None),
    "predict_dir": ("string", None),
    "predict_threshold": ("float", 0.0),
    "task_name": ("string", None),
    "text_a_column": ("string", 'text_a'),
    "text_b_column": ("string", None),
    # Long documents (docs/long_documents.md).
    "long_documents": ("string enum", 'truncate'),
    "window_pooling": ("string enum", 'mean'),
    "max_windows": ("int", 4),
    "bptt_windows": ("int", 1),
    "mem_len": ("int", None),
})

# run_squad.py: task flags and the paper's XLNet-Large settings.
RUN_SQUAD = dict(FINETUNING, **{
    "answer_on_last_piece": ("bool", False),
    "do_predict": ("bool", False),
    "do_prepro": ("bool", False),
    "doc_stride": ("int", 128),
    "end_n_top": ("int", 5),
    "eval_all_ckpt": ("bool", False),
    "keep_unaligned": ("bool", False),
    "learning_rate": ("float", 3e-05),
    "lr_layer_decay_rate": ("float", 0.75),
    "max_answer_length": ("int", 64),
    "max_query_length": ("int", 64),
    "max_seq_length": ("int", 512),
    "n_best_size": ("int", 5),
    "num_proc": ("int", 1),
    "predict_batch_size": ("int", 32),
    "predict_dir": ("string", None),
    "predict_file": ("string", None),
    "proc_id": ("int", 0),
    "save_steps": ("int", 1000),
    "skip_empty_answers": ("bool", False),
    "start_n_top": ("int", 5),
    "target_eval_key": ("string enum", 'best_f1'),
    "train_batch_size": ("int", 48),
    "train_file": ("string", None),
    "train_steps": ("int", 8000),
    "trim_answer_whitespace": ("bool", False),
    "warmup_steps": ("int", 1000),
})

# run_race.py: task flags and the paper's XLNet-Large settings.
RUN_RACE = dict(FINETUNING, **{
    "data_dir": ("string", None),
    "do_eval": ("bool", False),
    "eval_batch_size": ("int", 32),
    "eval_split": ("string enum", 'dev'),
    "high_only": ("bool", False),
    "learning_rate": ("float", 2e-05),
    "max_qa_length": ("int", 128),
    "max_seq_length": ("int", 512),
    "middle_only": ("bool", False),
    "save_steps": ("int", 1000),
    "train_batch_size": ("int", 32),
    "train_steps": ("int", 12000),
    "warmup_steps": ("int", 1000),
})

# run_ner.py: task flags and its kind's settings (xlnet/task_kinds.py).
RUN_NER = dict(FINETUNING, **{
    "conllu_column": ("string enum", 'upos'),
    "do_eval": ("bool", False),
    "do_predict": ("bool", False),
    "document_context": ("bool", False),
    "eval_all_ckpt": ("bool", False),
    "eval_batch_size": ("int", 32),
    "eval_file": ("string", None),
    "file_layout": ("string enum", None),
    "label_list": ("comma separated list of strings", None),
    "learning_rate": ("float", 3e-05),
    "max_seq_length": ("int", 128),
    "predict_batch_size": ("int", 32),
    "predict_dir": ("string", None),
    "predict_file": ("string", None),
    "save_steps": ("int", 1000),
    "tag_scheme": ("string enum", None),
    "train_batch_size": ("int", 32),
    "train_file": ("string", None),
    "train_steps": ("int", 3000),
    "warmup_steps": ("int", 300),
    "window_stride": ("int", 64),
})

# data_utils.py: the release's record-writing defaults.
DATA_UTILS = {
    "bi_data": ("bool", True),
    "bsz_per_host": ("int", 32),
    "from_raw_text": ("bool", True),
    "input_glob": ("string", 'data/example/*.txt'),
    "mask_alpha": ("int", 6),
    "mask_beta": ("int", 1),
    "num_core_per_host": ("int", 8),
    "num_passes": ("int", 1),
    "num_predict": ("int", 85),
    "num_task": ("int", 1),
    "num_workers": ("int", None),
    "pass_id": ("int", 0),
    "record_kind": ("string enum", 'examples'),
    "reuse_len": ("int", 256),
    "save_dir": ("string", 'proc_data/example'),
    "seq_len": ("int", 512),
    "sp_path": ("string", ''),
    "split": ("string", 'train'),
    "task": ("int", 0),
    "uncased": ("bool", False),
    "use_eod": ("bool", True),
    "use_tpu": ("bool", True),
    "verify": ("bool", False),
}

SPM_TRAIN = {
    "character_coverage": ("float", 0.99995),
    "input": ("string", None),
    "input_sentence_size": ("int", 10000000),
    "model_prefix": ("string", None),
    "num_threads": ("int", None),
    "split_digits": ("bool", False),
    "vocab_size": ("int", 32000),
}

# reproduce.py: None = each task's own setting.
REPRODUCE = {
    "accum_steps": ("int", None),
    "data_root": ("string", None),
    "device_memory_gb": ("float", None),
    "dry_run": ("bool", False),
    "eval_batch_size": ("int", 8),
    "freeze_layers": ("int", 0),
    "gcs_dir": ("string", None),
    "init_checkpoint": ("string", None),
    "iterations": ("int", None),
    "learning_rate": ("float", None),
    "max_qa_length": ("int", None),
    "max_query_length": ("int", None),
    "max_seq_length": ("int", None),
    "memory_calibration": ("string", None),
    "model_config_path": ("string", None),
    "model_size": ("string enum", 'large'),
    "num_core_per_host": ("int", 1),
    "num_hosts": ("int", 1),
    "num_proc": ("int", 8),
    "num_seeds": ("int", None),
    "recompute": ("bool", False),
    "save_steps": ("int", None),
    "seed": ("int", None),
    "spiece_model_file": ("string", None),
    "table": ("string enum", None),
    "tasks": ("comma separated list of strings", None),
    "task_index": ("int", 0),
    "cluster_timeout": ("float", 600.0),
    "tpu": ("string", None),
    "train_batch_size": ("int", None),
    "train_steps": ("int", None),
    "uncased": ("bool", False),
    "use_bfloat16": ("bool", False),
    "use_fp16": ("bool", False),
    "use_tpu": ("bool", False),
    "warmup_steps": ("int", None),
    "work_dir": ("string", None),
    "worker_hosts": ("string", None),
}

DOWNLOAD = {
    "data_root": ("string", None),
    "dry_run": ("bool", False),
    "keep_archives": ("bool", False),
    "mirror": ("string", None),
    "model_root": ("string", None),
    "only": ("comma separated list of strings", None),
    "retries": ("int", 5),
    "timeout": ("float", 60.0),
}

DATA_SERVICE = {
    "dispatcher": ("string", None),
    "dispatcher_timeout": ("float", 600.0),
    "host": ("string", "localhost"),
    "port": ("int", None),
    "work_dir": ("string", None),
    "worker_timeout_ms": ("int", None),
}

MODEL_UTILS = {
    "avg_model_dir": ("string", None),
    "avg_num": ("int", 5),
    "avg_output_model_dir": ("string", None),
    "clean_input_ckpt": ("string", None),
    "clean_output_model_dir": ("string", None),
    "model_dir": ("string", None),
    "step": ("int", None),
}

DEMO_REPORT = {
    "eval_split": ("string", 'valid'),
    "heldout_text": ("string", None),
    "hide_fraction": ("float", 0.15),
    "model_dir": ("string", None),
    "num_sentences": ("int", 4),
    "record_info_dir": ("string", None),
    "seed": ("int", 0),
    "top_k": ("int", 3),
    "train_text": ("string", None),
}

GET_DEMO_CORPUS = {
    "dest_dir": ("string", 'data/demo'),
    "heldout_fraction": ("float", 0.1),
    "split_dir": ("string", None),
}

CONVERT_CHECKPOINT = {
    "checkpoint": ("string", None),
    "is_regression": ("bool", None),
    "model_config_path": ("string", None),
    "output_dir": ("string", None),
    "spiece_model_file": ("string", None),
    "summary_type": ("string enum", None),
    "task_name": ("string", None),
    "to": ("string enum", None),
    "uncased": ("bool", False),
}

# extract_features.py: BERT's names where it has them.
EXTRACT_FEATURES = {
    "batch_size": ("int", 8),
    "contains_header": ("bool", None),
    "init_checkpoint": ("string", None),
    "input_file": ("string", None),
    "input_format": ("string enum", 'lines'),
    "layers": ("comma separated list of strings", ['-1']),
    "long_documents": ("string enum", 'truncate'),
    "max_seq_length": ("int", 128),
    "max_windows": ("int", 4),
    "mem_len": ("int", None),
    "model_config_path": ("string", None),
    "output_file": ("string", None),
    "pooling": ("string enum", 'cls'),
    "spiece_model_file": ("string", None),
    "text_a_column": ("string", '0'),
    "text_b_column": ("string", None),
    "uncased": ("bool", None),
    "window_pooling": ("string enum", 'mean'),
}

PROGRAMS = {
    "train_gpu.py": PRETRAINING,
    "train_tpu.py": TRAIN_TPU,
    "train.py": TRAIN_TPU,
    "eval_pretrain.py": PRETRAINING,
    "run_classifier.py": RUN_CLASSIFIER,
    "run_squad.py": RUN_SQUAD,
    "run_race.py": RUN_RACE,
    "run_ner.py": RUN_NER,
    "data_utils.py": DATA_UTILS,
    "spm_train.py": SPM_TRAIN,
    "reproduce.py": REPRODUCE,
    "download.py": DOWNLOAD,
    "data_service.py": DATA_SERVICE,
    "model_utils.py": MODEL_UTILS,
    "convert_checkpoint.py": CONVERT_CHECKPOINT,
    "extract_features.py": EXTRACT_FEATURES,
    "scripts/demo_report.py": DEMO_REPORT,
    "scripts/get_demo_corpus.py": GET_DEMO_CORPUS,
}

# sha256 of every flag's name, help text and enum values (see _help_digest):
# the help a program prints stays the same.
HELP_DIGESTS = {
    "train_gpu.py": "6cba93dfc550ab2a",
    "train_tpu.py": "6cba93dfc550ab2a",
    "train.py": "6cba93dfc550ab2a",
    "eval_pretrain.py": "6cba93dfc550ab2a",
    "run_classifier.py": "7504f2df4a7f7818",
    "run_squad.py": "443a3ae31e7c3f2b",
    "run_race.py": "28d082d9e2e30131",
    "run_ner.py": "327a33b313cdd7b6",
    "data_utils.py": "03f67a473ade2b6a",
    "spm_train.py": "241e95276b875059",
    "reproduce.py": "226abc298a6d6ff6",
    "download.py": "f54d5bb3e5abfb80",
    "data_service.py": "28cd39006d74fa2f",
    "model_utils.py": "581c583b41329fda",
    "convert_checkpoint.py": "c25d6785ee07cb6a",
    "extract_features.py": "e01d6a4e5c72ba6a",
    "scripts/demo_report.py": "fa3b202534fe40c9",
    "scripts/get_demo_corpus.py": "eb098fd9a4b6bc31",
}


@pytest.fixture(scope="module")
def defined():
  """{program: {flag: [type, default, help, enum values, module]}}."""
  return {program: program_flags.defined(program) for program in PROGRAMS}


def _help_digest(flags_of_program):
  digest = hashlib.sha256()
  for name in sorted(flags_of_program):
    _, _, text, enum_values, _ = flags_of_program[name]
    digest.update(f"{name}\0{text}\0{enum_values}\n".encode())
  return digest.hexdigest()[:16]


@pytest.mark.quick
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_program_defines_these_flags_with_these_defaults(defined, program):
  got = {name: (kind, default)
         for name, (kind, default, *_) in defined[program].items()}
  expected = PROGRAMS[program]
  assert sorted(got) == sorted(expected), program
  for name, (kind, default) in expected.items():
    assert got[name][0] == kind, (program, name)
    assert got[name][1] == default and type(got[name][1]) is type(
        default), (program, name, got[name][1])


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_help_texts_unchanged(defined, program):
  assert _help_digest(defined[program]) == HELP_DIGESTS[program], program


# Flags defined outside the catalog: none.
NOT_IN_CATALOG = {}
# The catalog: the groups every program composes, the task groups of
# the fine-tuning programs and reproduce.py, and the tools' groups.
CATALOG_MODULES = ("xlnet.flags.groups", "xlnet.flags.task_catalog",
                   "xlnet.flags.tool_catalog")
# The files holding those definitions (relative to the repository), and
# xlnet/programs/cli.py, which replaces absl's --help with one listing the program's
# flags.
DEFINING_FILES = {"xlnet/flags/groups.py", "xlnet/flags/task_catalog.py",
                  "xlnet/flags/tool_catalog.py",
                  "xlnet/flags/chain_catalog.py", "xlnet/programs/cli.py"}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_every_flag_is_defined_by_the_catalog(defined, program):
  elsewhere = {name: module
               for name, (*_, module) in defined[program].items()
               if module not in CATALOG_MODULES}
  assert set(elsewhere) == NOT_IN_CATALOG.get(program, set()), elsewhere


def test_only_the_catalog_defines_flags():
  """No other module of the library, script or program calls
  `flags.DEFINE_*`."""
  paths = [name for name in os.listdir(REPO) if name.endswith(".py")]
  for top in ("xlnet", "scripts"):
    for root, _, names in os.walk(os.path.join(REPO, top)):
      paths += [os.path.relpath(os.path.join(root, n), REPO) for n in names
                if n.endswith(".py")]
  defining = set()
  for path in paths:
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
      if "DEFINE_" in f.read():
        defining.add(path)
  assert defining == DEFINING_FILES
