"""xlnet-tf: XLNet pretraining and fine-tuning in TensorFlow.

Public API (names follow the original release):
    from xlnet import XLNetConfig, RunConfig, XLNetModel, create_run_config
    from xlnet import modeling
The packages, by role: `xlnet.data` (text -> records -> input function),
`xlnet.training` (the engine), `xlnet.pretraining` (`api.pretrain`,
`api.evaluate` on typed configs), `xlnet.finetuning`, `xlnet.interop`,
`xlnet.demo`; above them `xlnet.flags` (every program's flags, resolved
into typed configs) and `xlnet.programs` (the programs' entry modules);
the pretraining loss is `xlnet.pretraining_loss`; see docs/python_api.md
and docs/layout.md ("Layers").
"""
import importlib as _importlib
import os as _os

from xlnet import model_config as _model_config


def _use_bfc_cpu_allocator():
  """Makes TensorFlow keep freed CPU tensor memory for reuse.

  TensorFlow's default CPU allocator returns every large tensor to the OS
  when it is freed (glibc unmaps allocations above 32 MB), so each step
  maps the attention-sized tensors again and pays their page faults: a
  quarter of the base-width step on a 2-core VM. Its BFC allocator keeps
  the memory. TensorFlow reads these variables when it creates its first
  CPU allocator (the first op), so this also works after `import
  tensorflow`; values the user set win. The BFC pool's limit (TensorFlow's
  default 64 GB) is raised to the physical memory where that is larger.
  """
  _os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")
  try:
    physical_mb = (_os.sysconf("SC_PAGE_SIZE") * _os.sysconf("SC_PHYS_PAGES")
                   >> 20)
  except (ValueError, OSError, AttributeError):  # no sysconf (Windows)
    physical_mb = 0
  _os.environ.setdefault("TF_CPU_BFC_MEM_LIMIT_IN_MB",
                         str(max(1 << 16, physical_mb)))


_use_bfc_cpu_allocator()

# The public names. The configs need no TensorFlow and are bound here; the
# model and `xlnet.modeling` build graphs with it and are imported when first
# named (PEP 562), so that importing a subpackage (the programs' `--help`,
# `xlnet.data.spm_train`) imports no TensorFlow.
XLNetConfig = _model_config.XLNetConfig
RunConfig = _model_config.RunConfig


def __getattr__(name):
  """`xlnet.modeling` and `XLNetModel`, imported when first named."""
  if name == "modeling":
    return _importlib.import_module("xlnet.modeling")
  if name == "XLNetModel":
    return _importlib.import_module("xlnet.model").XLNetModel
  raise AttributeError(f"module 'xlnet' has no attribute '{name}'")


def create_run_config(is_training, is_finetune, FLAGS, **resolved):  # pylint: disable=invalid-name
  """The run's `RunConfig` from a flags object: the release's
  `xlnet.create_run_config`, and every program's (`xlnet/flags/configs.py`).

  Args:
    is_training: the run trains (dropout on).
    is_finetune: fine-tuning leaves mem_len/reuse_len None and
      bi_data/same_length False; pretraining reads them from FLAGS.
    FLAGS: an object with the model-run flags as attributes (absl's FLAGS
      of our programs or of the release's); without `use_fp16` or
      `recompute` (the release's) they are False.
    **resolved: values that win over FLAGS (pretraining's data flags,
      resolved against the corpus info).

  Returns:
    a `RunConfig` (checked as built).
  """
  kwargs = dict(
      is_training=is_training, use_tpu=FLAGS.use_tpu,
      use_bfloat16=FLAGS.use_bfloat16,
      use_fp16=getattr(FLAGS, "use_fp16", False),
      recompute=getattr(FLAGS, "recompute", False), dropout=FLAGS.dropout,
      dropatt=FLAGS.dropatt, init=FLAGS.init, init_range=FLAGS.init_range,
      init_std=FLAGS.init_std, clamp_len=FLAGS.clamp_len)
  if not is_finetune:
    kwargs.update(mem_len=FLAGS.mem_len, reuse_len=FLAGS.reuse_len,
                  bi_data=FLAGS.bi_data, same_length=FLAGS.same_length)
  kwargs.update(resolved)
  return RunConfig(**kwargs)
