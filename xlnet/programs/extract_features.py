"""`python extract_features.py --input_file=... --output_file=...
--init_checkpoint=...`: texts -> vectors from a released, pretrained or
fine-tuned checkpoint (docs/features.md): the flags resolved once into a
`VectorsConfig`, then `api.extract_features`."""
import dataclasses

from absl import flags

from xlnet.finetuning.vectors import config as vectors_config
from xlnet.flags import tool_catalog
from xlnet.programs import cli


def _layers(values):
  """--layers as ints; one line naming the flag when one is not."""
  try:
    return tuple(int(v) for v in values)
  except ValueError:
    raise ValueError(f"--layers={','.join(values)}: expected integers such "
                     "as -1,-2 (0: the embeddings)") from None


def resolve(flag_values):
  """The flags, checked, as a `VectorsConfig`."""
  for name in ("input_file", "output_file", "init_checkpoint"):
    if not flag_values[name].value:
      raise ValueError(f"--{name} is required")
  fields = {field.name: flag_values[field.name].value
            for field in dataclasses.fields(vectors_config.VectorsConfig)}
  fields["layers"] = _layers(flag_values.layers)
  return vectors_config.VectorsConfig(**fields)


def main(unused_argv):
  """absl main: resolves the flags, then extracts."""
  config = resolve(flags.FLAGS)
  # pylint: disable=g-import-not-at-top
  # (the library, imported here: --help needs no TensorFlow)
  from xlnet.finetuning import api
  api.extract_features(config)


def entry_point():
  """`python extract_features.py ...`: defines the flags and runs `main`."""
  cli.run(main, tool_catalog.define_extract_features_flags)
