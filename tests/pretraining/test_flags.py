"""Flag resolution of the pretraining programs (xlnet/flags/pretraining.py):
data flags filled from and checked against corpus_info.json, the model
config read once, the batch layout, and the release's README command; no
flag is written."""
import json
from unittest import mock

from absl import flags as absl_flags
import pytest
import tensorflow as tf

from xlnet.flags import catalog as flag_catalog
from xlnet.flags import finetuning as finetune_flags
from xlnet.flags import pretraining as pretrain_flags
from tests import classifier_fixtures
from tests import data_helpers
from tests import train_fixtures as fx
from xlnet.data import record_writer
from xlnet.pretraining import api
from xlnet import validation
from xlnet.programs import run_classifier
from xlnet.programs import run_race
from xlnet.programs import run_squad


@pytest.mark.parametrize("argv,message", [
    ([], "--record_info_dir is required"),
    (["--seq_len=16"], "--seq_len=16 does not match the data"),
    (["--bi_data=False"], "--bi_data=False does not match the data"),
    (["--num_predict=5"], "num_predict=3"),
    (["--train_batch_size=8"], "--train_batch_size=8 does not match"),
    (["--num_core_per_host=3"], "--train_batch_size=4 is not divisible"),
    (["--d_embed=32"], "--d_embed=32 must equal d_model=16"),
    (["--n_token=10"], "smaller than the data's vocabulary"),
    (["--iterations=0"], "--iterations=0 must be >= 1"),
    (["--n_layer=0"], r"^--n_layer=0 must be >= 1$"),
])
def test_flags_checked_against_corpus_info(tmp_path, argv, message):
  FL = flag_catalog.parse_flags(
      ["prog", "--n_layer=1", "--d_model=16", f"--model_dir={tmp_path}/m"] +
      ([f"--record_info_dir={fx.fake_data_dir(tmp_path)}"]
       if argv else []) + argv)
  with pytest.raises(ValueError, match=message.replace("'", ".")):
    api.pretrain(pretrain_flags.for_train_gpu(FL))


README_CORPUS_INFO = dict(
    vocab_size=32000, bsz_per_host=2048, num_core_per_host=1, seq_len=512,
    reuse_len=256, uncased=False, bi_data=True, mask_alpha=6, mask_beta=1,
    num_predict=85, use_eod=True)


def _readme_argv(record_dir, info_path):
  return ["prog"] + [a.replace("$DATA/tfrecords", record_dir).replace(
      "$DATA/corpus_info.json", info_path) for a in fx.README_COMMAND]


def test_original_readme_command_is_accepted_with_corpus_info_path(tmp_path):
  """--corpus_info_path (in the README's command) is accepted and read; here
  it is the only corpus_info.json (none next to the records)."""
  record_dir = tmp_path / "data" / "tfrecords"
  record_dir.mkdir(parents=True)
  info_path = tmp_path / "elsewhere" / "info.json"
  info_path.parent.mkdir()
  info_path.write_text(json.dumps(README_CORPUS_INFO))
  FL = flag_catalog.parse_flags(_readme_argv(str(record_dir), str(info_path)))
  configs = pretrain_flags.resolve(FL)
  data = configs.data
  assert (data.seq_len, data.reuse_len, data.perm_size, data.bi_data,
          data.num_predict, configs.batch.train_batch_size,
          configs.model.n_token, configs.model.n_layer,
          configs.model.d_model) == (
              512, 256, 256, True, 85, 2048, 32000, 24, 1024)
  # The original TPU trainer's --track_mean is accepted too.
  flag_catalog.parse_flags(["prog", "--track_mean=False"])

  # A --corpus_info_path that disagrees with the flags is named in the error;
  # one that does not exist is reported as such.
  info_path.write_text(json.dumps(dict(README_CORPUS_INFO, seq_len=128)))
  FL = flag_catalog.parse_flags(_readme_argv(str(record_dir), str(info_path)))
  with pytest.raises(ValueError, match="--seq_len=512 does not match the "
                     "data: .*info.json has seq_len=128"):
    pretrain_flags.resolve_flags(FL, pretrain_flags.load_corpus_info(FL))
  FL = flag_catalog.parse_flags(_readme_argv(str(record_dir),
                                          str(tmp_path / "none.json")))
  with pytest.raises(ValueError, match="--corpus_info_path=.*none.json does "
                     "not exist"):
    pretrain_flags.load_corpus_info(FL)


def test_resolve_fills_data_flags_from_corpus_info(tmp_path):
  FL = flag_catalog.parse_flags(["prog", "--record_info_dir=" +
                              fx.fake_data_dir(tmp_path)])
  configs = pretrain_flags.resolve(FL)
  assert (configs.data.seq_len, configs.data.reuse_len, configs.data.bi_data,
          configs.data.num_predict, configs.batch.train_batch_size,
          configs.model.n_token) == (8, 4, True, 3, 4, 40)
  assert (configs.run.reuse_len, configs.run.bi_data) == (4, True)
  assert (FL.seq_len, FL.reuse_len, FL.train_batch_size, FL.n_token) == (
      None, None, None, 0)  # no flag written


def test_token_records_take_the_sampling_flags_as_given(tmp_path):
  """Token records draw their span masks at run time: --mask_alpha,
  --mask_beta and --num_predict may differ from the writer's; the layout
  flags may not. Example records fix all of them."""
  argv = ["--num_predict=2", "--mask_alpha=3", "--mask_beta=2"]
  FL = flag_catalog.parse_flags(
      ["prog", "--record_info_dir=" + fx.fake_data_dir(
          tmp_path / "t", record_kind="tokens")] + argv)
  configs = pretrain_flags.resolve(FL)
  assert (configs.data.num_predict, configs.data.mask_alpha,
          configs.data.mask_beta, configs.model.n_token) == (2, 3, 2, 40)
  FL = flag_catalog.parse_flags(
      ["prog", "--record_info_dir=" + fx.fake_data_dir(
          tmp_path / "t2", record_kind="tokens"), "--seq_len=16"])
  with pytest.raises(ValueError, match="--seq_len=16 does not match"):
    pretrain_flags.resolve(FL)
  FL = flag_catalog.parse_flags(
      ["prog", "--record_info_dir=" + fx.fake_data_dir(tmp_path / "e")]
      + argv)
  with pytest.raises(ValueError, match="--mask_alpha=3 does not match the "
                     "data: .* has mask_alpha=6"):
    pretrain_flags.resolve(FL)


def test_corpus_info_is_read_through_tf_gfile():
  """Record dirs on gs:// must work: here TensorFlow's in-memory ram://
  filesystem stands in for a remote one (os.path cannot see either)."""
  info = dict(vocab_size=40, bsz_per_host=4, num_core_per_host=1, seq_len=8,
              reuse_len=4, uncased=False, bi_data=True, mask_alpha=6,
              mask_beta=1, num_predict=3, use_eod=True)
  tf.io.gfile.makedirs("ram://xlnet_test_data/tfrecords")
  with tf.io.gfile.GFile("ram://xlnet_test_data/corpus_info.json", "w") as f:
    f.write(json.dumps(info))
  FL = flag_catalog.parse_flags(
      ["prog", "--record_info_dir=ram://xlnet_test_data/tfrecords"])
  assert pretrain_flags.load_corpus_info(FL) == info
  FL = flag_catalog.parse_flags(
      ["prog", "--record_info_dir=ram://xlnet_test_data/missing"])
  with pytest.raises(ValueError, match="directory ram://xlnet_test_data/"
                     "missing does not exist"):
    pretrain_flags.load_corpus_info(FL)


def test_resolve_all_reads_the_model_config_once(tmp_path):
  """--model_config_path overrides the model flags; the returned
  XLNetConfig is the one object passed down; n_token comes from the data
  when the config does not give it."""
  config = tmp_path / "config.json"
  config.write_text(json.dumps(dict(
      n_layer=3, d_model=32, n_head=2, d_head=16, d_inner=64,
      ff_activation="relu", untie_r=False, n_token=100)))
  FL = flag_catalog.parse_flags(["prog",
                              f"--record_info_dir={fx.fake_data_dir(tmp_path)}",
                              f"--model_config_path={config}", "--n_layer=9"])
  configs = pretrain_flags.resolve(FL)
  assert configs.model.to_dict() == json.loads(config.read_text())
  assert (configs.model.n_layer, configs.model.d_model,
          configs.model.ff_activation, configs.optimizer.n_layer) == (
              3, 32, "relu", 3)
  assert FL.n_layer == 9  # no flag written
  assert (configs.data.corpus_info["vocab_size"] == 40 and
          configs.data.seq_len == 8)
  FL = flag_catalog.parse_flags(["prog", "--record_info_dir=" +
                              fx.fake_data_dir(tmp_path / "b"),
                              "--n_layer=2", "--d_model=16", "--n_head=2",
                              "--d_head=8", "--d_inner=32"])
  assert pretrain_flags.resolve(FL).model.n_token == 40


def test_recompute_and_freeze_layers_reach_the_configs(tmp_path):
  """--recompute and --freeze_layers: the RunConfig and OptimizerConfig of
  pretraining and of each fine-tuning program (off by default); more
  frozen layers than the model has are refused by pretraining's
  resolution (the fine-tuning programs': `finetune_config.check_together`,
  tests/training/test_freeze.py)."""
  record_dir = fx.fake_data_dir(tmp_path)
  resolve = lambda *extra: pretrain_flags.resolve(flag_catalog.parse_flags(
      ["prog", f"--record_info_dir={record_dir}", "--n_layer=3", *extra]))
  configs = resolve("--recompute", "--freeze_layers=2")
  assert configs.run.recompute and configs.optimizer.freeze_layers == 2
  configs = resolve()
  assert not configs.run.recompute and configs.optimizer.freeze_layers == 0
  with pytest.raises(ValueError, match=r"^--freeze_layers=4 must be <= "
                     r"n_layer=3 \(the model's layers\)$"):
    resolve("--freeze_layers=4")
  xlnet_config = fx.xlnet_config_of(fx.tiny_flags())
  for program in (run_classifier, run_squad, run_race):
    for extra, want in (([], (False, 0)),
                        (["--recompute", "--freeze_layers=1"], (True, 1))):
      FL = absl_flags.FlagValues()
      program.define_flags(FL)
      FL(["prog", f"--model_dir={tmp_path / 'm'}", *extra])
      assert (finetune_flags.model_config(FL, xlnet_config).run.recompute,
              finetune_flags.engine_config(FL).optimizer.freeze_layers
              ) == want, program.__name__


def test_batch_layout_has_one_name(tmp_path):
  """The per-host and per-core batches and the memory shapes of training
  and of held-out evaluation come from the one BatchLayout, the memories'
  length from the one RunConfig."""
  record_dir = fx.fake_data_dir(tmp_path, bsz_per_host=16)
  FL = flag_catalog.parse_flags([
      "prog", f"--record_info_dir={record_dir}", "--train_batch_size=32",
      "--num_hosts=2", "--num_core_per_host=4", "--mem_len=5",
      "--d_model=16"])
  configs = pretrain_flags.resolve(FL)
  batch, mem_len = configs.batch, configs.run.mem_len
  assert batch.bsz_per_host == 16 and batch.bsz_per_core == 4
  assert mem_len == 5 and not hasattr(batch, "mem_len")
  assert batch.memory_shape(mem_len, 16) == [5, 4, 16]
  assert batch.on_one_device().memory_shape(mem_len, 16) == [5, 16, 16]


# --------------------------------------------------------------------------
# One rule per flag name, in every program (xlnet/validation.py).
# --------------------------------------------------------------------------
def _check_pretraining(tmp_path, extra):
  """train_gpu.py / train_tpu.py / eval_pretrain.py: resolve_flags."""
  FL = flag_catalog.parse_flags(
      ["prog", f"--record_info_dir={fx.fake_data_dir(tmp_path)}"] + extra)
  pretrain_flags.resolve_flags(FL, pretrain_flags.load_corpus_info(FL))


def _check_classifier(tmp_path, extra):
  """run_classifier.py: finetune_flags.check_common_flags."""
  FL = absl_flags.FlagValues()
  run_classifier.define_flags(FL)
  FL(["run_classifier.py", "--do_train",
      f"--model_config_path={classifier_fixtures.write_config(tmp_path)}",
      "--spiece_model_file=sp.model", f"--model_dir={tmp_path / 'm'}"]
     + extra)
  finetune_flags.check_common_flags(FL)


def _check_squad(tmp_path, extra):
  finetune_flags.check_squad_flags(run_squad.parse_flags(
      ["run_squad.py", "--do_train", "--spiece_model_file=sp.model",
       "--output_dir=o", "--train_file=t.json", "--model_config_path=c.json",
       f"--model_dir={tmp_path / 'm'}"] + extra))


def _check_race(tmp_path, extra):
  finetune_flags.check_race_flags(run_race.parse_flags(
      ["run_race.py", "--do_train", "--data_dir=d", "--output_dir=o",
       "--spiece_model_file=sp.model", "--model_config_path=c.json",
       f"--model_dir={tmp_path / 'm'}"] + extra))


PROGRAMS = {"pretraining": _check_pretraining,
            "run_classifier": _check_classifier, "run_squad": _check_squad,
            "run_race": _check_race}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_shared_flags_have_one_rule_and_one_message(tmp_path, program):
  """The same value is refused with the same words by every program (the
  pretraining trainer used to take --save_steps=0 or -1 as "at the end",
  run_squad.py and run_race.py did not check --save_steps or --max_save)."""
  check = PROGRAMS[program]
  for flag, message in [
      ("--save_steps=0", "--save_steps=0 must be >= 1 (leave it unset to save "
                         "only at the end)"),
      ("--save_steps=-1", "--save_steps=-1 must be >= 1 (leave it unset to "
                          "save only at the end)"),
      ("--train_steps=0", "--train_steps=0 must be >= 1"),
      ("--iterations=0", "--iterations=0 must be >= 1"),
      ("--train_batch_size=0", "--train_batch_size=0 must be >= 1"),
      ("--warmup_steps=-1", "--warmup_steps=-1 must be >= 0"),
      ("--max_save=-1", "--max_save=-1 must be >= 0 (0 keeps every "
                        "checkpoint)"),
  ]:
    with pytest.raises(ValueError) as info:
      check(tmp_path / flag.strip("-"), [flag])
    assert str(info.value) == message, flag
  # Accepted everywhere: the lowest values, and a run that ends in warm-up.
  check(tmp_path / "ok", ["--save_steps=1", "--max_save=0", "--iterations=1"])
  with mock.patch.object(validation.logging, "warning") as warning:
    check(tmp_path / "warm", ["--train_steps=10", "--warmup_steps=20"])
  # 10 of 20 warm-up steps: the last step runs at half the peak rate.
  assert warning.call_args[0] == (
      "--warmup_steps=20 > --train_steps=10: the run ends during warm-up; "
      "the learning rate stays below 0.5 times --learning_rate",)


def test_data_writer_batch_flags_follow_the_same_rule(tmp_path, tiny_spm):
  for name in ("bsz_per_host", "num_core_per_host"):
    cfg = dict(data_helpers.TINY_CONFIG, **{name: 0})
    with pytest.raises(ValueError, match=rf"^--{name}=0 must be >= 1$"):
      record_writer.create_data("none.txt", tiny_spm, str(tmp_path), **cfg)


@pytest.mark.quick
def test_flag_parsing_errors_are_one_line_with_exit_code_2(tmp_path):
  """A misspelled flag, on the command line or in a --flagfile, ends like
  every other usage error (absl printed "FATAL Flags parsing error" and
  exited with 1). In-process: absl's parser and cli.run's handling are the
  same in a process of its own."""
  flagfile = tmp_path / "train.flags"
  flagfile.write_text("--train_steps=10\n--bogus_flag=5\n")
  for argv, line in [
      (["--bogus_flag=5"], "train_gpu.py: error: Unknown command line flag "
                           "'bogus_flag' (see --help)"),
      ([f"--flagfile={flagfile}"],
       f"train_gpu.py: error: Unknown command line flag 'bogus_flag' (in "
       f"--flagfile={flagfile}) (see --help)")]:
    res = fx.run_program("train_gpu.py", *argv)
    assert (res.returncode, res.stderr.strip().splitlines()[-1]) == (2, line)
    assert "FATAL" not in res.stderr and "Traceback" not in res.stderr
