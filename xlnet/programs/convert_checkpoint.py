"""`python convert_checkpoint.py --to=hf|tf|saved_model ...`: the flags
checked, then `hf_export.export_hf`, `hf_import.import_hf` or
`saved_model.export_saved_model` (docs/interop.md)."""
from absl import flags
from absl import logging

from xlnet.programs import cli
from xlnet.flags import tool_catalog


def _require(flag_values, *names):
  """Raises ValueError naming the unset flags among `names`."""
  unset = [n for n in names if flag_values[n].value is None]
  if unset:
    raise ValueError(f"--to={flag_values.to} needs "
                     + ", ".join(f"--{n}" for n in unset))


def main(unused_argv):
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.interop import hf_export
  from xlnet.interop import hf_import
  from xlnet.interop import saved_model
  f = flags.FLAGS
  _require(f, "to", "checkpoint", "output_dir")
  if f.to == "tf":
    prefix = hf_import.import_hf(f.checkpoint, f.output_dir, f.task_name)
    logging.info("wrote %s (with xlnet_config.json and spiece.model)", prefix)
    return
  # --model_config_path and --spiece_model_file default to what the
  # checkpoint's directory holds (hf_export.model_config, spiece_of).
  if f.to == "hf":
    arch = hf_export.export_hf(
        f.checkpoint, f.model_config_path, f.spiece_model_file,
        f.output_dir, f.task_name, f.is_regression, f.uncased,
        f.summary_type)
    logging.info("wrote %s as %s", f.output_dir, arch)
  else:
    kind = saved_model.export_saved_model(
        f.checkpoint, f.model_config_path, f.output_dir, f.task_name,
        f.is_regression, f.summary_type)
    logging.info("wrote the %s SavedModel %s", kind, f.output_dir)


def entry_point():
  """`python convert_checkpoint.py ...`."""
  cli.run(main, tool_catalog.define_convert_flags)
