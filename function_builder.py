"""The release's `function_builder.py`, for scripts written against it:
the pretraining loss and the fine-tuning heads built from the program's
absl FLAGS object, with the release's arguments (`get_loss(FLAGS,
features, labels, mems, is_training)`, `get_classification_loss(FLAGS,
features, n_class, is_training)`, ...). They map FLAGS onto the typed
configs as our programs do and call the library
(`xlnet/flags/release_api.py`); our programs and the Python API call the
library directly (docs/python_api.md).
"""
from xlnet.flags.release_api import construct_scalar_host_call  # noqa: F401
from xlnet.flags.release_api import get_classification_loss  # noqa: F401
from xlnet.flags.release_api import get_loss  # noqa: F401
from xlnet.flags.release_api import get_qa_outputs  # noqa: F401
from xlnet.flags.release_api import get_race_loss  # noqa: F401
from xlnet.flags.release_api import get_regression_loss  # noqa: F401
from xlnet.flags.release_api import two_stream_loss  # noqa: F401
