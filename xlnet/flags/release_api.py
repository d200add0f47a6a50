"""The release's functions that read its absl FLAGS object, over the library.

The released `function_builder.py` (the losses and heads) and
`model_utils.py` (the optimizer, warm start, the TPU run config) take the
flags object of the program that calls them. Here each maps it onto the
typed configs the way every program does (`xlnet.create_run_config`,
`configs.optimizer_config`, ...) and calls the library, so a script written
against the release builds the same graph as our programs; the root modules
`function_builder.py` and `model_utils.py` offer them under the release's
names. A flag the release's programs did not define (ours, such as
`--lr_layer_decay_rate` in its train_gpu.py or `--tpu_engine`) reads as our
train_gpu.py's default.
"""
# The release's functions name their flags parameter FLAGS.
# pylint: disable=invalid-name
import os

import tensorflow as tf

import xlnet
from xlnet import model_config
from xlnet import pretraining_loss
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.race import head as race_head
from xlnet.finetuning.race import task as race_task
from xlnet.finetuning.squad import head as squad_head
from xlnet.finetuning.squad import task as squad_task
from xlnet.flags import catalog
from xlnet.flags import configs
from xlnet.training import step_log
from xlnet.training import tpu_estimator
from xlnet.training import warm_start

# The release's host call writes its scalars every this many steps.
_HOST_CALL_EVERY = 100
# The fine-tuning heads' variables, which a pretrained checkpoint lacks.
_HEAD_VARIABLES = (classifier_head.NEW_VARIABLE_PATTERNS +
                   squad_task.NEW_VARIABLE_PATTERNS +
                   race_task.NEW_VARIABLE_PATTERNS)


# ----------------------------------------------------------------------------
# function_builder.py
# ----------------------------------------------------------------------------
def construct_scalar_host_call(monitor_dict, model_dir, prefix="",
                               reduce_fn=None):
  """A TPUEstimator host call writing scalars every 100 steps.

  Args:
    monitor_dict: dict name -> float scalar Tensor (per core).
    model_dir: where the summaries go (files ending in `.host_call`).
    prefix: put before each name.
    reduce_fn: callable reducing the cores' values `[num_cores]` to one;
      None: core 0's.

  Returns:
    (host_call_fn, its arguments: the global step `[1]`, then each scalar
    of monitor_dict `[1]`, in the dict's order).
  """
  names = list(monitor_dict)

  def host_call_fn(global_step, *values):
    step = global_step[0]
    writer = tf.compat.v2.summary.create_file_writer(
        model_dir, filename_suffix=".host_call")
    with writer.as_default(), tf.compat.v2.summary.record_if(
        tf.equal(step % _HOST_CALL_EVERY, 0)):
      for name, value in zip(names, values):
        scalar = value[0] if reduce_fn is None else reduce_fn(value)
        step_log.write_scalar(prefix + name, tf.cast(scalar, tf.float32),
                              step)
      return tf.compat.v1.summary.all_v2_summary_ops()

  global_step = tf.compat.v1.train.get_or_create_global_step()
  return host_call_fn, [tf.reshape(global_step, [1])] + [
      tf.reshape(monitor_dict[name], [1]) for name in names]


def two_stream_loss(FLAGS, features, labels, mems, is_training):
  """The pretraining loss of the model FLAGS sizes, which it writes to
  `FLAGS.model_dir/config.json` (as the release did).

  Args:
    FLAGS: the pretraining flags (the model's sizes, the run's settings).
    features: batch-major dict from the pretraining input function.
    labels: unused.
    mems: dict {"mems": list of n_layer `[mem_len, bsz, d_model]` or None}.
    is_training: bool.

  Returns:
    (total_loss float32 scalar, {"mems": the new memories},
     {"total_loss": total_loss}).
  """
  del labels
  xlnet_config = model_config.XLNetConfig(FLAGS=FLAGS)
  xlnet_config.to_json(os.path.join(FLAGS.model_dir, "config.json"))
  run_config = xlnet.create_run_config(is_training, False, FLAGS)
  total_loss, new_mems, _ = pretraining_loss.two_stream_loss(
      xlnet_config, run_config, features, (mems or {}).get("mems"),
      is_training)
  return total_loss, {"mems": new_mems}, {"total_loss": total_loss}


def get_loss(FLAGS, features, labels, mems, is_training):
  """`two_stream_loss` (with `--use_bfloat16` the model computes in
  bfloat16, the loss in float32)."""
  return two_stream_loss(FLAGS, features, labels, mems, is_training)


def _finetune_configs(FLAGS, is_training):
  """The XLNetConfig of `FLAGS.model_config_path` and the fine-tuning
  RunConfig of FLAGS."""
  return (model_config.XLNetConfig(json_path=FLAGS.model_config_path),
          xlnet.create_run_config(is_training, True, FLAGS))


def get_classification_loss(FLAGS, features, n_class, is_training):
  """The classification head of `--task_name` (or `--cls_scope`).

  Returns:
    (total_loss scalar, per_example_loss [B], logits [B, n_class]).
  """
  xlnet_config, run_config = _finetune_configs(FLAGS, is_training)
  return classifier_head.get_classification_loss(
      xlnet_config, run_config, features, n_class,
      classifier_head.classification_scope(FLAGS.task_name, FLAGS.cls_scope),
      FLAGS.summary_type, FLAGS.use_summ_proj)


def get_regression_loss(FLAGS, features, is_training):
  """The regression head of `--task_name`.

  Returns:
    (total_loss scalar, per_example_loss [B], logits [B]).
  """
  xlnet_config, run_config = _finetune_configs(FLAGS, is_training)
  return classifier_head.get_regression_loss(
      xlnet_config, run_config, features,
      classifier_head.regression_scope(FLAGS.task_name), FLAGS.summary_type,
      FLAGS.use_summ_proj)


def get_qa_outputs(FLAGS, features, is_training):
  """The SQuAD heads: training outputs, or the `--start_n_top` x
  `--end_n_top` beam (`squad.head.qa_heads`' dict)."""
  xlnet_config, run_config = _finetune_configs(FLAGS, is_training)
  return squad_head.get_qa_outputs(xlnet_config, run_config, features,
                                   FLAGS.start_n_top, FLAGS.end_n_top)


def get_race_loss(FLAGS, features, is_training):
  """The RACE head.

  Returns:
    (total_loss scalar, per_example_loss [B], logits [B, 4]).
  """
  xlnet_config, run_config = _finetune_configs(FLAGS, is_training)
  logits = race_head.get_race_logits(xlnet_config, run_config, features,
                                     FLAGS.summary_type, FLAGS.use_summ_proj)
  per_example_loss = race_head.race_per_example_loss(
      logits, tf.reshape(features["label_ids"], [-1]))
  return tf.reduce_mean(per_example_loss), per_example_loss, logits


# ----------------------------------------------------------------------------
# model_utils.py
# ----------------------------------------------------------------------------
class _WithOurDefaults:
  """The release's flags object; a flag it lacks reads as our default."""

  def __init__(self, FLAGS):
    self._flags = FLAGS
    self._ours = catalog.parse_flags(["release_api"])

  def __getattr__(self, name):
    if hasattr(self._flags, name):
      return getattr(self._flags, name)
    return getattr(self._ours, name)


def get_train_op(FLAGS, total_loss, grads_and_vars=None):
  """The training op of the optimizer flags (`tpu_estimator.get_train_op`).

  Returns:
    (train_op, learning_rate, gnorm).
  """
  optimizer = configs.optimizer_config(_WithOurDefaults(FLAGS))
  return tpu_estimator.get_train_op(optimizer, total_loss, grads_and_vars,
                                    use_tpu=FLAGS.use_tpu)


def init_from_checkpoint(FLAGS, global_vars=False):
  """Warm start from `--init_checkpoint` (`warm_start.init_from_checkpoint`):
  the graph's variables by name; only a fine-tuning head's may be missing.

  Returns:
    a TPU scaffold function with `--use_tpu`, else None.

  Raises:
    ValueError: a model variable missing from the checkpoint or of another
      shape there (the release skipped it silently).
  """
  return warm_start.init_from_checkpoint(
      FLAGS.init_checkpoint, use_tpu=FLAGS.use_tpu, global_vars=global_vars,
      allow_missing=_HEAD_VARIABLES)


def configure_tpu(FLAGS):
  """The TPUEstimator run config of the TPU, checkpoint and loop flags
  (`tpu_estimator.configure_tpu`; TensorFlow 2.15).

  Raises:
    ValueError: several GPUs (`--num_core_per_host` > 1 without
      `--use_tpu`): the release ran them with a MirroredStrategy inside
      the Estimator; here train_gpu.py and the fine-tuning programs do.
  """
  if not FLAGS.use_tpu and FLAGS.num_core_per_host > 1:
    raise ValueError(
        f"configure_tpu: --num_core_per_host={FLAGS.num_core_per_host} "
        "without --use_tpu (several GPUs) is not offered under "
        "TPUEstimator; train_gpu.py and run_classifier.py, run_squad.py, "
        "run_race.py run several GPUs (docs/differences.md)")
  flags = _WithOurDefaults(FLAGS)
  return tpu_estimator.configure_tpu(
      configs.device_config(flags), configs.checkpoint_config(flags),
      FLAGS.num_hosts * FLAGS.num_core_per_host, FLAGS.iterations,
      FLAGS.train_steps)
