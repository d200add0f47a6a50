"""One home for the defaults a run inherits (xlnet/program_defaults.py): a
program and its typed configs built from Python with `for_program` run alike
with the same explicit values and the same defaults."""
import dataclasses
import os

from absl import flags as absl_flags
import pytest

from xlnet import program_defaults
from xlnet import task_kinds
from xlnet.finetuning import config as finetune_config
from xlnet.flags import catalog as flag_catalog
from xlnet.flags import configs as config_flags
from xlnet.flags import task_catalog
from xlnet.programs import run_classifier
from xlnet.programs import run_ner
from xlnet.programs import run_race
from xlnet.programs import run_squad
from xlnet.training import config as train_config

# Each program's flags: program -> a function defining them.
DEFINE = {
    "train_gpu": flag_catalog.define_flags,
    "train_tpu": lambda fv: flag_catalog.define_flags(fv, tpu_defaults=True),
    "eval_pretrain": flag_catalog.define_flags,
    "run_classifier": run_classifier.define_flags,
    "run_squad": run_squad.define_flags,
    "run_race": run_race.define_flags,
    "run_ner": run_ner.define_flags,
}
# The programs' --adam_epsilon, written out: the release's run_classifier.py
# 1e-8, its run_squad.py and run_race.py 1e-6; our pretraining programs the
# paper's recipe, 1e-6 (the release's train_gpu.py had 1e-8); run_ner.py
# (no release) run_squad.py's.
ADAM_EPSILON = {"train_gpu": 1e-6, "train_tpu": 1e-6, "eval_pretrain": 1e-6,
                "run_classifier": 1e-8, "run_squad": 1e-6, "run_race": 1e-6,
                "run_ner": 1e-6}


def _flags(program, *argv):
  fv = absl_flags.FlagValues()
  DEFINE[program](fv)
  fv([f"{program}.py", *argv])
  return fv


@pytest.mark.quick
def test_every_program_has_its_defaults():
  assert set(DEFINE) == set(program_defaults.PROGRAMS)


@pytest.mark.quick
@pytest.mark.parametrize("program", sorted(DEFINE))
def test_for_program_gives_the_programs_configs(program):
  """`X.for_program(program, ...)` is what `program` resolves its flags
  into, by default and with a value given."""
  FL = _flags(program, "--model_dir=m")
  assert FL.adam_epsilon == ADAM_EPSILON[program]
  assert train_config.OptimizerConfig.for_program(program) == (
      config_flags.optimizer_config(FL))
  assert train_config.TrainConfig.for_program(program) == (
      config_flags.train_config(FL))
  assert train_config.CheckpointConfig.for_program(program, model_dir="m") == (
      config_flags.checkpoint_config(FL))
  given = _flags(program, "--learning_rate=0.5", "--seed=7")
  assert train_config.OptimizerConfig.for_program(
      program, learning_rate=0.5) == config_flags.optimizer_config(given)
  assert train_config.TrainConfig.for_program(program, seed=7) == (
      config_flags.train_config(given))


@pytest.mark.quick
def test_the_configs_own_defaults_are_run_classifiers():
  FL = _flags("run_classifier", "--model_dir=m")
  assert finetune_config.DEFAULT_RUN == config_flags.run_config(True, True,
                                                                FL)
  assert train_config.OptimizerConfig(
      FL.learning_rate, FL.train_steps) == config_flags.optimizer_config(FL)
  assert train_config.TrainConfig() == config_flags.train_config(FL)
  assert train_config.CheckpointConfig("m") == (
      config_flags.checkpoint_config(FL))


@pytest.mark.quick
def test_each_kind_of_task_names_its_program():
  """A kind of task (xlnet/task_kinds.py) names its program: the script
  and its entry module (the defaults its flags take are written out in
  test_flag_catalog.py)."""
  repo = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  assert [k.script for k in task_kinds.KINDS] == [
      "run_classifier.py", "run_squad.py", "run_race.py", "run_ner.py"]
  for kind in task_kinds.KINDS:
    assert os.path.isfile(os.path.join(repo, kind.script)), kind.name
    assert os.path.isfile(os.path.join(repo, "xlnet", "programs",
                                       kind.script)), kind.name
    assert kind.program in DEFINE, kind.name


@pytest.mark.quick
def test_a_kind_is_found_by_name_and_its_one_head_is_named_as_it():
  assert task_kinds.get("race").sequences_per_example == 4
  with pytest.raises(ValueError, match=r"^task_kind must be one of "
                     r"classifier, squad, race, tagging, got 'glue'$"):
    task_kinds.get("glue")
  # A head not scoped by the task is found and picked by the kind's name.
  with pytest.raises(ValueError, match=r"^task kind race: a head not scoped "
                     r"by the task is named as its kind, got heads "
                     r"\('multiple_choice',\)$"):
    dataclasses.replace(task_kinds.RACE, heads=("multiple_choice",))


def test_an_unknown_program_is_named():
  with pytest.raises(ValueError, match="program='run_glue': the programs "
                     "with defaults are train_gpu, "):
    train_config.OptimizerConfig.for_program("run_glue")


@pytest.mark.quick
@pytest.mark.parametrize("program,config_class", [
    ("run_classifier", finetune_config.ClassifierConfig),
    ("run_squad", finetune_config.SquadConfig),
    ("run_race", finetune_config.RaceConfig)])
def test_task_configs_default_as_their_programs(program, config_class):
  """Every defaulted field of a task config has its flag's default (the
  batch sizes: the same number, per GPU in the flag, over all replicas in
  the config)."""
  FL = _flags(program)
  defaults = task_catalog.config_defaults(config_class)
  assert defaults
  for name, value in defaults.items():
    assert FL[name].default == value, name
