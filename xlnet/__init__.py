"""xlnet-tf: XLNet pretraining and fine-tuning in TensorFlow.

Public API (names follow the original release):
    from xlnet import XLNetConfig, RunConfig, XLNetModel
    from xlnet import modeling
The packages, by role: `xlnet.data` (text -> records -> input function),
`xlnet.training` (the engine), `xlnet.pretraining` (`api.pretrain`,
`api.evaluate` on typed configs), `xlnet.finetuning`, `xlnet.flags` (every
program's flags, resolved into typed configs), `xlnet.demo`; the
pretraining loss is `xlnet.pretraining_loss`; see docs/python_api.md.
"""
from xlnet import modeling  # noqa: F401
from xlnet.model import (  # noqa: F401
    RunConfig,
    XLNetConfig,
    XLNetModel,
)
