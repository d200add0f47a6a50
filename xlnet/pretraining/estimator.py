"""XLNet pretraining with TPUEstimator (the release's trainer; TensorFlow
2.15 only), on TPUs or (`use_tpu` False) on one CPU core.

The TPU trainer (`python train_tpu.py`, or `python train.py`) has two paths,
one loss and one optimizer step (`pretraining_loss.get_loss`,
`optimizer.variable_update`):

* TPUEstimator (TensorFlow 2.15, the release's trainer; the default there):
  `iterations_per_loop = --iterations`, `num_shards = num_hosts *
  num_core_per_host`, per-host input (PER_HOST_V2: per-core batches), scalar
  summaries `train/total_loss`, `train/lr`, `train/gnorm` (core means) every
  100 steps through a host call (`tpu_estimator.training_model_fn`).
* The shared tf.distribute engine on a `TPUStrategy` (TensorFlow >= 2.16,
  where TPUEstimator is gone; `--tpu_engine=strategy` on 2.15): the same
  loop as `train_gpu.py` (`trainer.py`), per-replica memories included.

Memories under TPUEstimator. The estimator runs `iterations_per_loop` steps
as one replicated program and, at the end of each loop, writes the updated
variables back from replica 0 only (TensorFlow's distributed TPU rewrite
pass, tensorflow/core/tpu/graph_rewrite/distributed_tpu_rewrite_pass.cc:
"Feed the updated variable values from the first replica to the variable
write nodes"). Inside a loop every core keeps its own copy of the memory
variables `mems/layer_{i}`; across a loop boundary only core 0's survive. So
the memories carry an owner tag, `mems/owner` (the core that wrote them, -1
for none): a core uses the memories only when it owns them, and starts from
zeros otherwise. Core 0 therefore keeps its memories across loops and in
checkpoints; every other core starts each loop (and each resumed run) with
zero memories, as all cores did in the release. No core ever receives another
core's memories. With `--use_tpu=False` there is one core and nothing is
reset. The engine path (TPUStrategy) keeps every core's memories.
"""
import tensorflow as tf

from xlnet.training import tpu_estimator
from xlnet.training import warm_start
from xlnet import errors
from xlnet import modeling
from xlnet import pretraining_loss
from xlnet.data import record_format
from xlnet.pretraining import inputs
from xlnet.pretraining import pretrain as pretrain_lib
from xlnet.training import checkpoint_io
from xlnet.training import checkpoint_resume
from xlnet.training import config as train_config
from xlnet.training import train_state

CORE_ID = "core_id"


def owned_memories(mem_vars, owner, core):
  """The memories a core may use: its own, or zeros when another core (or
  nobody) wrote them.

  Args:
    mem_vars: list of float32 variables `[mem_len, bsz, d_model]`.
    owner: int64 scalar variable, the core that wrote them (-1: none).
    core: int64 scalar tensor, this core.

  Returns:
    list of float32 tensors `[mem_len, bsz, d_model]`.
  """
  mine = tf.equal(owner.read_value(), core)
  return [tf.where(mine, v.read_value(), tf.zeros_like(v)) for v in mem_vars]


def create_memories(xlnet_config, mem_len, bsz):
  """The memories `mems/layer_{i}` `[mem_len, bsz, d_model]` (zeros) and
  their owner tag `mems/owner` (int64, -1): non-trainable, checkpointed."""
  with tf.compat.v1.variable_scope("mems", reuse=tf.compat.v1.AUTO_REUSE):
    mem_vars = [tf.compat.v1.get_variable(
        f"layer_{i}",
        train_config.memory_shape(mem_len, bsz, xlnet_config.d_model),
        dtype=tf.float32,
        initializer=tf.compat.v1.zeros_initializer(), trainable=False)
                for i in range(xlnet_config.n_layer)]
    owner = tf.compat.v1.get_variable(
        "owner", [], dtype=tf.int64, trainable=False,
        initializer=tf.compat.v1.constant_initializer(-1))
  return mem_vars, owner


def get_model_fn(configs):
  """The TPUEstimator model function of XLNet pretraining (`configs`: the
  run's `PretrainConfigs`): the loss with the core's own memories, the
  guarded update, then the memories' assignment (`owned_memories`)."""
  xlnet_config, mem_len = configs.model, configs.run.mem_len

  def step_fn(features, labels):
    """The loss; after the update, the new memories where it applied."""
    features = dict(features)
    core = tf.cast(features.pop(CORE_ID)[0], tf.int64)
    bsz = features["input_k"].shape[0]
    global_step = tf.compat.v1.train.get_or_create_global_step()
    mem_vars, owner = (create_memories(xlnet_config, mem_len, bsz)
                       if mem_len else (None, None))
    mems = owned_memories(mem_vars, owner, core) if mem_vars else None
    seed = tf.constant([configs.train.seed, 0x584C4E], tf.int64)
    for value in (global_step, core):
      seed = tf.random.experimental.stateless_fold_in(seed, value)
    with modeling.stateless_dropout_seed(seed):
      total_loss, new_mems, _ = pretraining_loss.get_loss(
          xlnet_config, configs.run, features, labels, mems, True)

    def after_update(applied):
      updates = [v.assign(tf.where(applied, m, v.read_value()))
                 for v, m in zip(mem_vars or [], new_mems or [])]
      if mem_vars:
        updates.append(owner.assign(core))
      return updates

    return total_loss, after_update

  return tpu_estimator.training_model_fn(
      step_fn, configs.optimizer, configs.device.use_tpu,
      lambda: warm_start.init_from_checkpoint(
          configs.checkpoint.init_checkpoint, configs.device.use_tpu),
      summary_dir=configs.checkpoint.model_dir)


def estimator_input_fn(configs, start_step, base_input_fn):
  """The TPUEstimator input function: per-core batches with their core id
  (of `base_input_fn`, `inputs.training_input_fn`'s), starting after the
  host batches a resumed run already consumed."""
  cores_per_host = configs.batch.num_core_per_host

  def input_fn(params):
    dataset = base_input_fn(dict(params, start_host_batch=start_step))
    host = params["context"].current_host if "context" in params else 0
    batch = params["batch_size"]

    def add_core(index, features):
      features = dict(features)
      features[CORE_ID] = tf.fill(
          [batch], tf.cast(host * cores_per_host + index % cores_per_host,
                           tf.int32))
      return features

    return dataset.enumerate().map(add_core)

  return input_fn


def run_estimator(configs):
  """Pretrains with TPUEstimator until `train_steps` (or a signal); the
  caller holds the run lock of `model_dir`.

  Raises:
    ValueError: on bad settings or data.
    progress.StopTraining: after a signal (saved) or a divergence (not
      saved).
    errors.Stop: a record is bad (corrupted, or a token id beyond the
      vocabulary): one line naming the file.
  """
  ckpt = configs.checkpoint
  resume = checkpoint_resume.find_resume_checkpoint(ckpt.model_dir)
  start_step = checkpoint_io.step_of(resume) if resume else 0
  input_fn, record_info = inputs.training_input_fn(configs)
  pretrain_lib.check_objective(configs, record_info["sampling"],
                               resume is not None)
  train_state.check_frozen_layers(ckpt.model_dir,
                                  configs.optimizer.freeze_layers,
                                  resume is not None)
  pretrain_lib.save_xlnet_config(configs.model, ckpt.model_dir)
  try:
    tpu_estimator.train(
        tpu_estimator.estimator(
            get_model_fn(configs), configs.device, ckpt, configs.batch,
            configs.train.iterations, configs.optimizer.train_steps,
            configs.train.seed,
            train_batch_size=configs.batch.train_batch_size),
        estimator_input_fn(configs, start_step, input_fn), ckpt.model_dir,
        configs.optimizer.train_steps, ckpt.max_save)
  except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
    if not errors.is_bad_data(e):
      raise
    # (The estimator saves no checkpoint after a failed loop: the newest
    # one is the last `save_steps` one.)
    raise errors.Stop(
        "a corrupted input record stopped training: " +
        record_format.data_loss_message(record_info["filenames"],
                                        record_info["vocab_size"], e)
    ) from None
