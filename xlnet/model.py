"""XLNet model API: the `XLNetModel` wrapper, built from the configs of
`xlnet/model_config.py` (`XLNetConfig`, `RunConfig`, also importable from
here: the release's names).

`XLNetModel` builds the backbone under variable scope `model` so that the
released checkpoints load by name.
"""
import tensorflow as tf

from xlnet import modeling
from xlnet import model_config

# The release's names: `from xlnet.model import XLNetConfig` keeps working.
XLNetConfig = model_config.XLNetConfig
RunConfig = model_config.RunConfig


def _get_initializer(run_config):
  """The run's initializer: normal(init_std) or uniform(+-init_range)
  (`RunConfig` allows no other `init`)."""
  if run_config.init == "uniform":
    return tf.compat.v1.initializers.random_uniform(
        minval=-run_config.init_range, maxval=run_config.init_range)
  return tf.compat.v1.initializers.random_normal(stddev=run_config.init_std)


class XLNetModel:
  """XLNet backbone (always attn_type "bi") under variable scope `model`.

  All inputs are time-major:
    input_ids: int32 `[len, bsz]`.
    seg_ids: int32 `[len, bsz]` or None.
    input_mask: float32 `[len, bsz]`, 1 = padding, or None.
    mems: list of n_layer float `[mlen, bsz, d_model]` or None.
    perm_mask: float32 `[len, len, bsz]` (1 = i may not see j) or None.
    target_mapping: float32 `[num_predict, len, bsz]` or None.
    inp_q: float32 `[len, bsz]`, 1 = query-stream position, or None.
  """

  def __init__(self, xlnet_config, run_config, input_ids, seg_ids, input_mask,
               mems=None, perm_mask=None, target_mapping=None, inp_q=None,
               **kwargs):
    initializer = _get_initializer(run_config)
    with tf.compat.v1.variable_scope("model",
                                     reuse=tf.compat.v1.AUTO_REUSE):
      self.output, self.new_mems, self.lookup_table = modeling.transformer_xl(
          inp_k=input_ids, seg_id=seg_ids, input_mask=input_mask, mems=mems,
          perm_mask=perm_mask, target_mapping=target_mapping, inp_q=inp_q,
          n_token=xlnet_config.n_token, n_layer=xlnet_config.n_layer,
          d_model=xlnet_config.d_model, n_head=xlnet_config.n_head,
          d_head=xlnet_config.d_head, d_inner=xlnet_config.d_inner,
          ff_activation=xlnet_config.ff_activation,
          untie_r=xlnet_config.untie_r, attn_type="bi",
          initializer=initializer, is_training=run_config.is_training,
          use_bfloat16=run_config.use_bfloat16,
          use_fp16=run_config.use_fp16,
          use_tpu=run_config.use_tpu,
          dropout=run_config.dropout, dropatt=run_config.dropatt,
          mem_len=run_config.mem_len, reuse_len=run_config.reuse_len,
          bi_data=run_config.bi_data, clamp_len=run_config.clamp_len,
          same_length=run_config.same_length,
          recompute=run_config.recompute, **kwargs)
    self.xlnet_config = xlnet_config
    self.run_config = run_config
    self.initializer = initializer
    self.input_mask = input_mask

  def get_pooled_out(self, summary_type, use_summ_proj=True):
    """Sequence summary `[bsz, d_model]` (scope `model/sequnece_summary`).

    Args:
      summary_type: "last", "first", "mean" or "attn".
      use_summ_proj: add the dense tanh projection `summary`.
    """
    xlnet_config = self.xlnet_config
    run_config = self.run_config
    with tf.compat.v1.variable_scope("model",
                                     reuse=tf.compat.v1.AUTO_REUSE):
      return modeling.summarize_sequence(
          summary_type=summary_type, hidden=self.output,
          d_model=xlnet_config.d_model, n_head=xlnet_config.n_head,
          d_head=xlnet_config.d_head, dropout=run_config.dropout,
          dropatt=run_config.dropatt, input_mask=self.input_mask,
          is_training=run_config.is_training, initializer=self.initializer,
          use_proj=use_summ_proj)

  def get_lm_logits(self):
    """float32 `[len, bsz, n_token]` logits of the tied LM softmax over the
    sequence output (variables `model/lm_loss/bias`, weights tied to the
    embedding), for prediction without targets."""
    with tf.compat.v1.variable_scope("model",
                                     reuse=tf.compat.v1.AUTO_REUSE):
      # lm_loss owns the softmax variables; its loss against a dummy target
      # is unused.
      _, logits = modeling.lm_loss(
          self.output, tf.zeros(tf.shape(self.output)[:2], tf.int32),
          self.xlnet_config.n_token, self.xlnet_config.d_model,
          self.initializer, lookup_table=self.lookup_table, tie_weight=True,
          return_logits=True)
    return logits

  def get_sequence_output(self):
    """float32 `[len, bsz, d_model]` (query stream if inp_q was given)."""
    return self.output

  def get_new_memory(self):
    """List of n_layer float32 `[mem_len, bsz, d_model]`, or None when the
    run config has no mem_len."""
    return self.new_mems

  def get_embedding_table(self):
    """The float32 `[n_token, d_model]` word-embedding variable."""
    return self.lookup_table

  def get_initializer(self):
    """The initializer used for kernels and embeddings."""
    return self.initializer
