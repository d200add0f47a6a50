"""xlnet-tf: XLNet pretraining in TensorFlow.

Public API (names follow the original release):
    from xlnet import XLNetConfig, RunConfig, XLNetModel, create_run_config
    from xlnet import modeling
"""
from xlnet import modeling  # noqa: F401
from xlnet.model import (  # noqa: F401
    RunConfig,
    XLNetConfig,
    XLNetModel,
    create_run_config,
)
