"""Every value the programs refuse is refused by the typed configs too,
with the same one-line message (docs/python_api.md, "Checked when built").

The expected messages are the programs' words, written out here; each is
checked twice: the programs' flag checks print it for every program that
has the flag, and every config with a field of that name raises it when
built (`xlnet/validation.py` holds the rules of both).
"""
import dataclasses
import inspect
import sys

from absl import flags as absl_flags
import pytest

from tests import classifier_fixtures
from tests import in_process
from tests.pretraining import test_flags as program_checks
from xlnet import model as model_lib
from xlnet import model_config
from xlnet import validation
from xlnet.chain import config as chain_config
from xlnet.downloads import http_fetch
from xlnet.downloads import installer
from xlnet.finetuning import api as finetune_api
from xlnet.finetuning import config as finetune_config
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import chain_catalog
from xlnet.flags import finetuning as finetune_flags
from xlnet.flags import pretraining as pretrain_flags
from xlnet.pretraining import config as pretrain_config
from xlnet.programs import reproduce
from xlnet.programs import run_classifier
from xlnet.reproduce import config as reproduce_config
from xlnet.training import config as train_config

# (flag, a value the programs refuse, their message).
REFUSED = [
    ("train_steps", 0, "--train_steps=0 must be >= 1"),
    ("iterations", 0, "--iterations=0 must be >= 1"),
    ("accum_steps", 0, "--accum_steps=0 must be >= 1"),
    ("num_hosts", 0, "--num_hosts=0 must be >= 1"),
    ("num_core_per_host", 0, "--num_core_per_host=0 must be >= 1"),
    ("bsz_per_host", 0, "--bsz_per_host=0 must be >= 1"),
    ("train_batch_size", 0, "--train_batch_size=0 must be >= 1"),
    ("eval_batch_size", 0, "--eval_batch_size=0 must be >= 1"),
    ("predict_batch_size", -2, "--predict_batch_size=-2 must be >= 1"),
    ("shuffle_buffer", 0, "--shuffle_buffer=0 must be >= 1"),
    ("save_steps", 0, "--save_steps=0 must be >= 1 (leave it unset to save "
                      "only at the end)"),
    ("eval_batches", 0, "--eval_batches=0 must be >= 1 (leave it unset to "
                        "evaluate every batch)"),
    ("warmup_steps", -1, "--warmup_steps=-1 must be >= 0"),
    ("max_save", -1, "--max_save=-1 must be >= 0 (0 keeps every "
                     "checkpoint)"),
    ("mem_len", -1, "--mem_len=-1 must be >= 0"),
    ("freeze_layers", -1, "--freeze_layers=-1 must be >= 0 (0 freezes "
                          "nothing)"),
    ("eval_steps", -1, "--eval_steps=-1 must be >= 0 (0: no held-out "
                       "evaluation)"),
    ("learning_rate", -1.0, "--learning_rate=-1.0 must be >= 0.0"),
    ("weight_decay", -0.5, "--weight_decay=-0.5 must be >= 0.0"),
    ("dropout", 1.5, "--dropout=1.5 must be in [0.0, 1)"),
    ("dropout", -0.1, "--dropout=-0.1 must be in [0.0, 1)"),
    ("dropatt", 1.0, "--dropatt=1.0 must be in [0.0, 1)"),
    ("min_lr_ratio", 1.5, "--min_lr_ratio=1.5 must be in [0.0, 1.0]"),
    ("min_lr_ratio", -0.1, "--min_lr_ratio=-0.1 must be in [0.0, 1.0]"),
    ("clip", 0.0, "--clip=0.0 must be > 0"),
    ("adam_epsilon", -1e-06, "--adam_epsilon=-1e-06 must be > 0"),
    ("lr_layer_decay_rate", 0.0, "--lr_layer_decay_rate=0.0 must be > 0"),
    ("cluster_timeout", 0.0, "--cluster_timeout=0.0 must be > 0"),
    ("data_service_timeout", 0.0, "--data_service_timeout=0.0 must be > 0"),
    ("max_seq_length", 0, "--max_seq_length=0 must be >= 1"),
    ("max_query_length", 0, "--max_query_length=0 must be >= 1"),
    ("max_qa_length", 0, "--max_qa_length=0 must be >= 1"),
    ("doc_stride", 0, "--doc_stride=0 must be >= 1"),
    ("max_answer_length", 0, "--max_answer_length=0 must be >= 1"),
    ("start_n_top", 0, "--start_n_top=0 must be >= 1"),
    ("end_n_top", 0, "--end_n_top=0 must be >= 1"),
    ("n_best_size", 0, "--n_best_size=0 must be >= 1"),
    ("num_proc", 0, "--num_proc=0 must be >= 1"),
    ("n_layer", 0, "--n_layer=0 must be >= 1"),
    ("d_model", 0, "--d_model=0 must be >= 1"),
    ("n_head", 0, "--n_head=0 must be >= 1"),
    ("d_head", 0, "--d_head=0 must be >= 1"),
    ("d_inner", 0, "--d_inner=0 must be >= 1"),
    ("seq_len", 0, "--seq_len=0 must be >= 1"),
    ("reuse_len", 0, "--reuse_len=0 must be >= 1"),
    ("num_predict", 0, "--num_predict=0 must be >= 1 (no target, no loss)"),
    ("num_passes", 0, "--num_passes=0 must be >= 1"),
    ("num_seeds", 0, "--num_seeds=0 must be >= 1"),
    ("device_memory_gb", 0.0, "--device_memory_gb=0.0 must be > 0"),
    ("timeout", 0.0, "--timeout=0.0 must be > 0"),
    ("retries", -1, "--retries=-1 must be >= 0"),
    ("heldout_every", 0, "--heldout_every=0 must be >= 1"),
    ("task_text_share", 1.0, "--task_text_share=1.0 must be in [0.0, 1)"),
    ("task_text_share", -0.5, "--task_text_share=-0.5 must be in [0.0, 1)"),
    ("vocab_size", 0, "--vocab_size=0 must be >= 1"),
    ("pretrain_batch_size", 0, "--pretrain_batch_size=0 must be >= 1"),
    ("pretrain_batch_size", 15, "--pretrain_batch_size=15 must be a "
                                "multiple of 2 (bi_data: half forward, "
                                "half backward)"),
    ("pretrain_steps", 0, "--pretrain_steps=0 must be >= 1"),
    ("train_examples", 0, "--train_examples=0 must be >= 1"),
    ("dev_examples", 0, "--dev_examples=0 must be >= 1"),
    ("finetune_batch_size", 0, "--finetune_batch_size=0 must be >= 1"),
    ("finetune_steps", 0, "--finetune_steps=0 must be >= 1"),
    ("eval_every", 0, "--eval_every=0 must be >= 1"),
    # absl's words for an enum flag (the programs print "flag " before).
    ("summary_type", "lst", "--summary_type=lst: value should be one of "
                            "<last|first|mean|attn>"),
    ("init", "unifrom", "--init=unifrom: value should be one of "
                        "<normal|uniform>"),
    ("decay_method", "exp", "--decay_method=exp: value should be one of "
                            "<poly|cos>"),
    ("tpu_engine", "tpu", "--tpu_engine=tpu: value should be one of "
                          "<auto|estimator|strategy>"),
    ("record_kind", "words", "--record_kind=words: value should be one of "
                             "<examples|tokens>"),
    ("sample_strategy", "whole_word", "--sample_strategy=whole_word: value "
                                      "should be one of "
                                      "<word_span|token_span>"),
    ("model_size", "xl", "--model_size=xl: value should be one of "
                         "<large|base>"),
    ("recompute", "yes", "--recompute='yes' must be True or False"),
]
# Flags whose values the programs' parser (absl) refuses before any rule,
# in its own words: (flag, those words).
PARSER_WORDS = {"recompute": "--recompute=yes: ('Non-boolean argument to "
                             "boolean flag', 'yes')"}
# Flags no config holds, each with where its rule is applied instead.
NO_CONFIG = {"bsz_per_host": "data_utils.py's record writer",
             "record_kind": "data_utils.py's record writer",
             "timeout": "download.py's installer.Config, in its options",
             "retries": "download.py's installer.Config, in its options",
             "d_head": "the pretraining programs' model flags (the "
                       "XLNetConfig they build checks its sizes itself)"}
# Configs that ask more of a flag (checked in `_task_cases`).
STRICTER = {("max_seq_length", "ClassifierConfig")}
# The program that shows which values are refused by a task's rules.
TASK_PROGRAM = {"max_seq_length": "run_squad",
                "max_query_length": "run_squad", "doc_stride": "run_squad",
                "max_answer_length": "run_squad", "start_n_top": "run_squad",
                "end_n_top": "run_squad", "n_best_size": "run_squad",
                "num_proc": "run_squad", "max_qa_length": "run_race",
                "model_size": "reproduce", "num_seeds": "reproduce",
                "timeout": "download",
                "retries": "download"}
# The programs that show which values are refused, for the other flags
# (each that has the flag).
PROGRAMS = ("pretraining", "run_classifier", "run_squad", "run_race",
            "chain")

_XLNET = model_lib.XLNetConfig(
    n_layer=1, d_model=8, n_head=1, d_head=8, d_inner=8,
    ff_activation="gelu", untie_r=True, n_token=32)
# A valid instance's arguments of every config that takes settings.
VALID = {
    model_lib.RunConfig: dict(is_training=True, use_tpu=False,
                              use_bfloat16=False, dropout=0.1, dropatt=0.1),
    train_config.OptimizerConfig: dict(learning_rate=1e-4, train_steps=10),
    train_config.BatchLayout: dict(train_batch_size=8),
    train_config.DeviceConfig: {},
    train_config.CheckpointConfig: dict(model_dir="m"),
    train_config.TrainConfig: {},
    pretrain_config.PretrainData: dict(
        record_info_dir="r", seq_len=16, reuse_len=8, perm_size=8,
        bi_data=False, mask_alpha=6, mask_beta=1, num_predict=3),
    pretrain_config.HeldOut: {},
    finetune_config.ModelConfig: dict(xlnet_config=_XLNET),
    finetune_config.ClassifierConfig: dict(
        task_name="sst-2", data_dir="d", output_dir="o",
        spiece_model_file="s"),
    finetune_config.SquadConfig: dict(spiece_model_file="s", output_dir="o"),
    finetune_config.RaceConfig: dict(data_dir="d", spiece_model_file="s",
                                     output_dir="o"),
    reproduce_config.ReproduceConfig: {},
    chain_config.ChainConfig: dict(
        work_dir="w", corpus_glob="c", python="p",
        tasks=chain_config.parse_tasks("a=imdb:d")),
}
# Configs of configs (their parts check themselves; `test_doubles` checks
# what they compare), and what fine-tuning records of a run (its XLNetConfig
# checks itself).
NOT_IN_VALID = {pretrain_config.PretrainConfigs, finetune_config.EngineConfig,
                finetune_config.ModelRecord, chain_config.Task}


def _with(config_class, name, value):
  return config_class(**dict(VALID[config_class], **{name: value}))


def _message(build):
  with pytest.raises(ValueError) as info:
    build()
  return str(info.value)


def _check_reproduce(unused_tmp_path, extra):
  """reproduce.py: its flags resolved into a ReproduceConfig."""
  FL = absl_flags.FlagValues()
  reproduce.define_flags(FL)
  FL(["reproduce.py", "--table=glue"] + extra)
  finetune_flags.resolve_reproduce(FL)


def _check_chain(unused_tmp_path, extra):
  """bench/chain.py: its flags resolved into a ChainConfig."""
  FL = absl_flags.FlagValues()
  chain_catalog.define_chain_flags(FL)
  FL(["chain.py"] + extra)
  chain_catalog.chain_config_from(FL, sys.executable)


def _check_download(tmp_path, extra):
  """download.py, run in-process (--dry_run: it fetches nothing): its
  one-line error, raised."""
  result = in_process.run_program(
      "download.py", f"--data_root={tmp_path}", "--only=rte", "--dry_run",
      *extra, cwd=in_process.REPO)
  errors = [line.removeprefix("download.py: error: ")
            for line in result.stderr.splitlines()
            if line.startswith("download.py: error: ")]
  if errors:
    raise ValueError(errors[-1])
  assert result.returncode == 0, result.stderr[-2000:]


def _cli_message(program, tmp_path, flag, value):
  """What `program`'s flag checks say of --flag=value, or None when the
  program has no such flag."""
  check = {**program_checks.PROGRAMS, "run_classifier": _check_classifier,
           "reproduce": _check_reproduce, "chain": _check_chain,
           "download": _check_download}[program]
  try:
    return _message(lambda: check(tmp_path, [f"--{flag}={value}"]))
  except absl_flags.UnrecognizedFlagError:
    return None
  except absl_flags.IllegalFlagValueError as e:  # an enum flag
    return str(e)


def _check_classifier(tmp_path, extra):
  """run_classifier.py's checks: the task's, then the common flags'."""
  (tmp_path / "data").mkdir(parents=True, exist_ok=True)
  FL = absl_flags.FlagValues()
  run_classifier.define_flags(FL)
  FL(["run_classifier.py", "--do_train", "--task_name=sst-2",
      f"--data_dir={tmp_path / 'data'}", "--output_dir=o",
      f"--model_config_path={classifier_fixtures.write_config(tmp_path)}",
      "--spiece_model_file=sp.model", f"--model_dir={tmp_path / 'm'}"]
     + extra)
  finetune_flags.check_classifier_flags(FL)
  finetune_flags.check_common_flags(FL)


@pytest.mark.quick
def test_every_rule_is_exercised_and_every_config_is_built():
  assert {name for name, _, _ in REFUSED} == set(validation.NAMES)
  configs = {c for module in (model_config, train_config, pretrain_config,
                              finetune_config, reproduce_config,
                              chain_config)
             for _, c in inspect.getmembers(module, dataclasses.is_dataclass)
             if c.__module__ == module.__name__}
  assert configs == set(VALID) | NOT_IN_VALID
  for config_class, values in VALID.items():
    config_class(**values)


@pytest.mark.quick
@pytest.mark.parametrize("flag,value,message", REFUSED,
                         ids=[f"{f}={v}" for f, v, _ in REFUSED])
def test_configs_refuse_what_the_programs_refuse(tmp_path, flag, value,
                                                 message):
  programs = [TASK_PROGRAM[flag]] if flag in TASK_PROGRAM else PROGRAMS
  said = {p: _cli_message(p, tmp_path / p, flag, value) for p in programs}
  said = {p: m for p, m in said.items() if m is not None}
  if flag not in NO_CONFIG or flag in TASK_PROGRAM:
    assert said, f"no program has --{flag}"
  for program, text in said.items():
    assert text.removeprefix("flag ") == PARSER_WORDS.get(flag,
                                                         message), program
  holders = [c for c in VALID
             if flag in {f.name for f in dataclasses.fields(c)}
             and (flag, c.__name__) not in STRICTER]
  assert bool(holders) != (flag in NO_CONFIG), holders
  for config_class in holders:
    got = _message(lambda c=config_class: _with(c, flag, value))
    assert got == message, config_class.__name__


@pytest.mark.quick
def test_the_download_config_refuses_what_download_refuses():
  """download.py's --timeout and --retries are the options
  (`http_fetch.Options`) of its `installer.Config`, which refuses them
  when built, in the program's words."""
  cases = [(f, v, m) for f, v, m in REFUSED if f in ("timeout", "retries")]
  assert len(cases) == 2
  for flag, value, message in cases:
    options = http_fetch.Options(**{flag: value})
    assert _message(lambda o=options: installer.Config(
        "d", options=o)) == message
  installer.Config("d", options=http_fetch.Options(timeout=0.5, retries=0))


def _task_cases():
  """(program, its flags, the config and the values, the message)."""
  squad, race = finetune_config.SquadConfig, finetune_config.RaceConfig
  classifier = finetune_config.ClassifierConfig
  return [
      ("run_classifier", ["--max_seq_length=2"], classifier,
       dict(max_seq_length=2),
       "--max_seq_length=2 must be >= 3 (one piece, <sep> and <cls>)"),
      ("run_classifier", ["--eval_split=valid"], classifier,
       dict(eval_split="valid"),
       "--eval_split=valid: value should be one of <dev|test|train>"),
      ("run_squad", ["--max_seq_length=67"], squad, dict(max_seq_length=67),
       "--max_seq_length=67 leaves no room for the paragraph: it must be at "
       "least --max_query_length + 4 = 68"),
      ("run_squad", ["--end_n_top=513"], squad, dict(end_n_top=513),
       "--end_n_top=513 exceeds --max_seq_length=512"),
      ("run_squad", ["--proc_id=2", "--num_proc=2"], squad,
       dict(proc_id=2, num_proc=2), "--proc_id=2 must be in [0, "
       "--num_proc=2)"),
      ("run_race", ["--max_seq_length=131"], race, dict(max_seq_length=131),
       "--max_seq_length=131 leaves no room for the article: it must be at "
       "least --max_qa_length + 4 = 132"),
      ("run_race", ["--high_only", "--middle_only"], race,
       dict(high_only=True, middle_only=True),
       "--high_only and --middle_only exclude each other"),
      ("run_race", ["--eval_split=train"], race, dict(eval_split="train"),
       "--eval_split=train: value should be one of <dev|test>"),
      ("run_classifier", ["--task_name=glue"], classifier,
       dict(task_name="glue"), "--task_name=glue: unknown task; expected one "
       "of ag_news, amazon2, amazon5, cola, dbpedia, imdb, mnli_matched, "
       "mnli_mismatched, mrpc, qnli, qqp, rte, sst-2, sts-b, wnli, yelp2, "
       "yelp5, tsv, csv"),
      ("run_squad", ["--target_eval_key=f2"], squad,
       dict(target_eval_key="f2"), "--target_eval_key=f2: value should be "
       "one of <best_f1|best_exact|has_ans_f1|has_ans_exact|f1|exact>"),
  ]


@pytest.mark.parametrize("case", range(len(_task_cases())))
def test_task_configs_refuse_what_the_task_programs_refuse(tmp_path, case):
  program, argv, config_class, values, message = _task_cases()[case]
  check = {**program_checks.PROGRAMS, "run_classifier": _check_classifier}[
      program]
  try:
    said = _message(lambda: check(tmp_path, argv))
  except absl_flags.IllegalFlagValueError as e:
    said = str(e).removeprefix("flag ")
  assert said == message
  got = _message(lambda: config_class(**dict(VALID[config_class], **values)))
  assert got == message


PRECISION = ("--use_fp16 is for GPUs and excludes --use_bfloat16 (TPUs "
             "compute in bfloat16)")


def test_precision_is_refused_alike(tmp_path):
  """--use_fp16 with --use_tpu or --use_bfloat16: the programs and every
  config that holds the pair."""
  FL = flag_catalog.parse_flags(
      ["prog", "--use_tpu", "--use_fp16"])
  assert _message(lambda: pretrain_flags.for_train_tpu(FL)) == PRECISION
  assert _message(lambda: _check_classifier(
      tmp_path, ["--use_fp16", "--use_bfloat16"])) == PRECISION
  run = VALID[model_lib.RunConfig]
  for build in [
      lambda: model_lib.RunConfig(**dict(run, use_tpu=True, use_fp16=True)),
      lambda: model_lib.RunConfig(**dict(run, use_bfloat16=True,
                                         use_fp16=True)),
      lambda: reproduce_config.ReproduceConfig(use_bfloat16=True,
                                              use_fp16=True),
      lambda: finetune_config.EngineConfig(
          train_config.CheckpointConfig("m"),
          train=train_config.TrainConfig(use_fp16=True),
          device=train_config.DeviceConfig(use_tpu=True))]:
    assert _message(build) == PRECISION


def _engine(**train):
  return finetune_config.EngineConfig(
      train_config.CheckpointConfig("m"),
      train=train_config.TrainConfig(**train))


def test_doubles_must_agree():
  """A setting two configs hold (one flag of the programs) must agree: the
  fine-tuning API refuses before it reads a file, PretrainConfigs when
  built."""
  model = finetune_config.ModelConfig(_XLNET)
  # One seed: the engine's. A task config has none; run_squad's own `seed`
  # is for preprocessing without an engine only.
  for task_config in (finetune_config.ClassifierConfig,
                      finetune_config.SquadConfig, finetune_config.RaceConfig):
    assert "seed" not in {f.name for f in dataclasses.fields(task_config)}
  squad = VALID[finetune_config.SquadConfig]
  assert _message(lambda: finetune_api.run_squad(
      finetune_config.SquadConfig(**squad), model, _engine(seed=1),
      do_train=True, seed=3)) == (
          "seed=3 is for preprocessing without an engine; this run's seed "
          "is TrainConfig.seed=1")
  assert _message(lambda: finetune_api.run_squad(
      finetune_config.SquadConfig(**squad), model, _engine(use_fp16=True),
      do_train=True)) == ("ModelConfig.run.use_fp16=False differs from "
                          "TrainConfig.use_fp16=True; give both the same "
                          "value")
  race = finetune_config.RaceConfig(**VALID[finetune_config.RaceConfig])
  tpu_model = finetune_config.ModelConfig(_XLNET, model_lib.RunConfig(
      **dict(VALID[model_lib.RunConfig], use_tpu=True)))
  assert _message(lambda: finetune_api.run_race(
      race, tpu_model, _engine(), do_train=True)) == (
          "ModelConfig.run.use_tpu=True differs from DeviceConfig.use_tpu="
          "False; give both the same value")

  run = model_lib.RunConfig(**dict(VALID[model_lib.RunConfig], mem_len=0,
                                   reuse_len=8, use_fp16=True))
  parts = dict(
      model=_XLNET, run=run,
      data=pretrain_config.PretrainData(
          **VALID[pretrain_config.PretrainData]),
      batch=train_config.BatchLayout(8),
      optimizer=train_config.OptimizerConfig(1e-4, 10), checkpoint=None)
  assert _message(lambda: pretrain_config.PretrainConfigs(**parts)) == (
      "RunConfig.use_fp16=True differs from TrainConfig.use_fp16=False; "
      "give both the same value")
  pretrain_config.PretrainConfigs(
      **parts, train=train_config.TrainConfig(use_fp16=True))

  # The rows' shape has one home, the data: a RunConfig without reuse_len
  # and bi_data takes the data's; one that gives them must agree.
  bi = pretrain_config.PretrainData(**dict(
      VALID[pretrain_config.PretrainData], bi_data=True))
  plain_run = model_lib.RunConfig(**dict(VALID[model_lib.RunConfig],
                                         mem_len=0))
  parts.update(run=plain_run, data=bi, train=train_config.TrainConfig())
  configs = pretrain_config.PretrainConfigs(**parts)
  assert (configs.run.reuse_len, configs.run.bi_data) == (8, True)
  assert configs.run == dataclasses.replace(plain_run, reuse_len=8,
                                            bi_data=True)
  parts.update(run=dataclasses.replace(plain_run, reuse_len=4))
  assert _message(lambda: pretrain_config.PretrainConfigs(**parts)) == (
      "RunConfig.reuse_len=4 differs from PretrainData.reuse_len=8; give "
      "both the same value")


@pytest.mark.parametrize("values,message", [
    (dict(num_seeds=0), "--num_seeds=0 must be >= 1"),
    (dict(learning_rate=0.0), "--learning_rate=0.0 must be > 0"),
    (dict(device_memory_gb=0.0), "--device_memory_gb=0.0 must be > 0"),
    (dict(device_memory_gb=16.0, accum_steps=2), "--accum_steps and "
     "--device_memory_gb exclude each other: give the accumulation, or the "
     "memory to plan it from"),
    (dict(use_tpu=True, use_bfloat16=True), "--use_bfloat16 is implied by "
     "--use_tpu (TPUs compute in bfloat16); drop it"),
    # The words of absl's enum flags, which reproduce.py's --table and
    # --model_size are.
    (dict(table="glu"), "--table=glu: value should be one of "
     "<glue|classification|squad|race>"),
    (dict(table="glue", model_size="xl"), "--model_size=xl: value should be "
     "one of <large|base>"),
])
def test_reproduce_config_refuses_what_reproduce_refuses(values, message):
  """reproduce.py's own rules, from Python: the words its one-line errors
  give (tests/finetuning/test_reproduce.py runs the program)."""
  assert _message(lambda: reproduce_config.ReproduceConfig(**values)) == message


def test_model_config_refuses_pretraining_settings():
  """Fine-tuning's backbone reads no memory and no permutation."""
  run = model_lib.RunConfig(**dict(VALID[model_lib.RunConfig], mem_len=16,
                                   bi_data=True))
  assert _message(lambda: finetune_config.ModelConfig(_XLNET, run)) == (
      "ModelConfig.run sets mem_len=16, bi_data=True: pretraining settings; "
      "fine-tuning reads no memory and no permutation (leave them unset)")


# The records of `fake_data_dir` (tests/train_fixtures.py): vocab_size 40,
# bsz_per_host 4, seq_len 8, reuse_len 4, bi_data.
_DATA_CASES = [
    (["--perm_size=3"], dict(data=dict(perm_size=3)),
     "--perm_size=3 must be <= and divide both --reuse_len=4 and --seq_len "
     "- --reuse_len = 4"),
    (["--sample_strategy=whole_word"],
     dict(data=dict(sample_strategy="whole_word")),
     "--sample_strategy=whole_word: value should be one of "
     "<word_span|token_span>"),
    (["--train_batch_size=8"], dict(batch=8),
     "--train_batch_size=8 does not match the data: {where} has "
     "bsz_per_host=4, so with --num_hosts=1 it must be 4"),
    (["--n_token=10"], dict(n_token=10),
     "n_token=10 ({source}) is smaller than the data's vocabulary: {where} "
     "has vocab_size=40"),
]


def _pretrain_configs(record_dir, data=None, batch=4, n_token=40):
  """PretrainConfigs of `fake_data_dir`'s records, as Python builds them
  (`data`: PretrainData fields given besides the corpus info's)."""
  import json, os  # pylint: disable=g-import-not-at-top,multiple-imports
  with open(os.path.join(os.path.dirname(record_dir),
                         "corpus_info.json")) as f:
    info = json.load(f)
  xlnet = model_lib.XLNetConfig(**dict(_XLNET.to_dict(), n_token=n_token))
  return pretrain_config.PretrainConfigs(
      model=xlnet,
      run=model_lib.RunConfig(**dict(VALID[model_lib.RunConfig], mem_len=0,
                                     reuse_len=4, bi_data=True)),
      data=pretrain_config.PretrainData.from_corpus_info(
          info, record_dir, **(data or {})),
      batch=train_config.BatchLayout(batch),
      optimizer=train_config.OptimizerConfig(1e-4, 10), checkpoint=None)


@pytest.mark.quick
@pytest.mark.parametrize("case", range(len(_DATA_CASES)))
def test_pretraining_configs_refuse_what_the_data_refuses(tmp_path, case):
  """The data's rules are the configs' own: PretrainData refuses a bad
  sample_strategy or perm_size when built, PretrainConfigs a batch that is
  not bsz_per_host x hosts and an n_token below the vocabulary, in the
  programs' words (the Python message names where n_token came from and
  the records, the program the corpus_info.json's path)."""
  argv, values, message = _DATA_CASES[case]
  record_dir = program_checks.fx.fake_data_dir(tmp_path)
  _pretrain_configs(record_dir)  # the valid run
  program_dir = program_checks.fx.fake_data_dir(tmp_path / "p")
  try:
    said = _message(lambda: pretrain_flags.resolve(flag_catalog.parse_flags(
        ["train_gpu.py", f"--record_info_dir={program_dir}", "--n_layer=1",
         "--d_model=8"] + argv)))
  except absl_flags.IllegalFlagValueError as e:  # an enum flag
    said = str(e).removeprefix("flag ")
  assert said == message.format(
      where=tmp_path / "p" / "corpus_info.json",
      source="--n_token or --model_config_path")
  assert _message(lambda: _pretrain_configs(record_dir, **values)) == (
      message.format(where=f"the corpus info of {record_dir}",
                     source="XLNetConfig.n_token"))
