"""The backbone every fine-tuning head is built on (classification,
regression, SQuAD, RACE): the XLNet content stream on batch-major inputs,
without memory or permutation."""
import tensorflow as tf

from xlnet import model as model_lib


def finetune_model(xlnet_config, run_config, input_ids, segment_ids,
                   input_mask):
  """The backbone of every fine-tuning head, on batch-major inputs.

  Args:
    xlnet_config: the pretrained model's `XLNetConfig`.
    run_config: a `RunConfig` without memory (`is_training`: dropout on).
    input_ids, segment_ids: int32 `[B, L]`.
    input_mask: float32 `[B, L]`, 1 = padding.

  Returns:
    an `XLNetModel` (content stream only, no memory) built on the
    time-major transposes of the inputs.
  """
  return model_lib.XLNetModel(
      xlnet_config=xlnet_config, run_config=run_config,
      input_ids=tf.transpose(input_ids, [1, 0]),
      seg_ids=tf.transpose(segment_ids, [1, 0]),
      input_mask=tf.transpose(input_mask, [1, 0]))
