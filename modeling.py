"""The release's `modeling.py`, for scripts written against it: the model's
layers under their released names and arguments, from `xlnet/modeling.py`
(the attention scores' layout differs: docs/differences.md).
"""
from xlnet.modeling import classification_loss  # noqa: F401
from xlnet.modeling import embedding_lookup  # noqa: F401
from xlnet.modeling import gelu  # noqa: F401
from xlnet.modeling import head_projection  # noqa: F401
from xlnet.modeling import lm_loss  # noqa: F401
from xlnet.modeling import multihead_attn  # noqa: F401
from xlnet.modeling import positional_embedding  # noqa: F401
from xlnet.modeling import positionwise_ffn  # noqa: F401
from xlnet.modeling import post_attention  # noqa: F401
from xlnet.modeling import regression_loss  # noqa: F401
from xlnet.modeling import rel_attn_core  # noqa: F401
from xlnet.modeling import rel_multihead_attn  # noqa: F401
from xlnet.modeling import rel_shift  # noqa: F401
from xlnet.modeling import relative_positional_encoding  # noqa: F401
from xlnet.modeling import summarize_sequence  # noqa: F401
from xlnet.modeling import transformer_xl  # noqa: F401
from xlnet.modeling import two_stream_rel_attn  # noqa: F401
from xlnet.programs import release_names

__getattr__, __dir__ = release_names.module_attributes(
    __name__, globals(), {}, {"abs_attn_core": (
        "modeling.multihead_attn(q, k, v, attn_mask, ...), which holds it")})
