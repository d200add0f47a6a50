"""The backbone every fine-tuning head is built on (classification,
regression, SQuAD, RACE): the XLNet content stream on batch-major inputs,
without memory or permutation."""
import tensorflow as tf

from xlnet.flags import configs as config_flags
from xlnet import model as model_lib


def finetune_model(FLAGS, input_ids, segment_ids, input_mask, is_training):
  """The backbone of every fine-tuning head, on batch-major inputs.

  Args:
    FLAGS: flags with `model_config_path` and the run flags read by
      `create_run_config` (dropout, dropatt, clamp_len, init, init_std,
      init_range, use_tpu, use_bfloat16).
    input_ids, segment_ids: int32 `[B, L]`.
    input_mask: float32 `[B, L]`, 1 = padding.
    is_training: bool (dropout on).

  Returns:
    an `XLNetModel` (content stream only, no memory) built on the
    time-major transposes of the inputs.
  """
  xlnet_config = model_lib.XLNetConfig(json_path=FLAGS.model_config_path)
  run_config = config_flags.run_config(is_training, True, FLAGS)
  return model_lib.XLNetModel(
      xlnet_config=xlnet_config, run_config=run_config,
      input_ids=tf.transpose(input_ids, [1, 0]),
      seg_ids=tf.transpose(segment_ids, [1, 0]),
      input_mask=tf.transpose(input_mask, [1, 0]))
