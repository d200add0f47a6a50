"""Each fine-tuning program's and extract_features.py's `main` resolves
the parsed flags before it does anything: with nothing asked, it stops
with the resolver's one line (on both TensorFlow versions)."""
from absl import flags as absl_flags
import pytest

from xlnet.flags import tool_catalog
from xlnet.programs import extract_features
from xlnet.programs import run_ner
from xlnet.programs import run_race
from xlnet.programs import run_squad


@pytest.mark.tf_version
@pytest.mark.parametrize("program,define,message", [
    (run_race, run_race.define_flags,
     "nothing to do: set --do_train and/or --do_eval"),
    (run_squad, run_squad.define_flags,
     "nothing to do: set --do_prepro, --do_train and/or --do_predict"),
    (run_ner, run_ner.define_flags, "nothing to do"),
    (extract_features, tool_catalog.define_extract_features_flags,
     "--input_file is required"),
])
def test_main_resolves_the_flags_first(monkeypatch, program, define,
                                       message):
  flag_values = absl_flags.FlagValues()
  define(flag_values)
  flag_values(["prog"])
  monkeypatch.setattr(absl_flags, "FLAGS", flag_values)
  with pytest.raises(ValueError) as info:
    program.main(["prog"])
  assert str(info.value).startswith(message)
