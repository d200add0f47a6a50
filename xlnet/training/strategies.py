"""The `tf.distribute` strategy of a run and where this process stands in it.

One training loop runs on every device layout: one device (CPU or GPU), the
GPUs of one host (or logical CPU devices), several hosts
(`MultiWorkerMirroredStrategy`, configured by `TF_CONFIG`), or TPU cores
(`TPUStrategy`). Processes are numbered chief first, then the workers
(`process_index`): the number names a worker's checkpoint shard and records.
"""
import json
import os
import zlib

from absl import logging
import tensorflow as tf

from xlnet.training import cluster_wait
from xlnet.training import config as train_config


def tpu_cluster_resolver(tpu, zone=None, project=None):
  """The TPUClusterResolver of `--tpu` (a name, or grpc://ip:port).

  Raises:
    ValueError: one line saying how to name the TPU, or how to run on the
      CPU instead, when no TPU can be found.
  """
  try:
    return tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu, zone=zone, project=project)
  except ValueError as e:
    raise ValueError(f"--use_tpu=True (the TPU trainer's default, as in the "
                     f"release) but no TPU was found ({e}); give --tpu=NAME "
                     "or grpc://ip:port, or --use_tpu=False to run on the "
                     "CPU") from None


def worker_tf_config(worker_hosts, task_index):
  """The TF_CONFIG of worker `task_index` of `worker_hosts` ("h1:p,h2:p")."""
  hosts = [h for h in worker_hosts.split(",") if h]
  if not 0 <= task_index < len(hosts):
    raise ValueError(f"--task_index={task_index} must be in [0, "
                     f"{len(hosts)}) for --worker_hosts={worker_hosts}")
  return json.dumps({"cluster": {"worker": hosts},
                     "task": {"type": "worker", "index": task_index}})


def _tf_config():
  """The TF_CONFIG of the environment as a dict ({} when unset)."""
  config = os.environ.get("TF_CONFIG")
  if not config:
    return {}
  try:
    return json.loads(config)
  except json.JSONDecodeError as e:
    raise ValueError(f"TF_CONFIG is not valid JSON: {e}") from None


def cluster_task(worker_hosts=None, task_index=0):
  """This process's place in its cluster, read from `worker_hosts`
  ("h1:p,h2:p") and `task_index` when given, else from TF_CONFIG, without
  starting TensorFlow.

  Returns:
    (process index, number of processes): `process_index` numbering, the
    chief first; (0, 1) on one host.
  """
  config = (json.loads(worker_tf_config(worker_hosts, task_index or 0))
            if worker_hosts else _tf_config())
  cluster = config.get("cluster", {})
  count = len(cluster.get("worker", [])) + len(cluster.get("chief", []))
  if count < 2:
    return 0, 1
  task = config.get("task", {})
  return process_index(task.get("type"), task.get("index"), cluster), count


def cluster_workers(worker_hosts=None):
  """Number of workers: those of `worker_hosts` ("h1:p,h2:p") when given,
  else those named by TF_CONFIG (1 when it is unset)."""
  if worker_hosts:
    return len([h for h in worker_hosts.split(",") if h])
  cluster = _tf_config().get("cluster", {})
  return max(1, len(cluster.get("worker", [])) + len(cluster.get("chief",
                                                                 [])))


def num_hosts(settings, on_tpu):
  """The hosts that read data: `settings.num_hosts` on a TPU; else the
  workers that `settings.worker_hosts` or TF_CONFIG name, which --num_hosts
  must leave at 1 or repeat.

  Args:
    settings: has `num_hosts` and `worker_hosts` (parsed flags or a config
      whose fields are named after them).

  Raises:
    ValueError: one line when --num_hosts contradicts the cluster.
  """
  if on_tpu:
    return settings.num_hosts
  workers = cluster_workers(settings.worker_hosts)
  if settings.num_hosts not in (1, workers):
    raise ValueError(f"--num_hosts={settings.num_hosts} but the cluster has "
                     f"{workers} worker(s) (--worker_hosts or TF_CONFIG)")
  return workers


def create_strategy(num_core_per_host=1, worker_hosts=None, task_index=None,
                    use_tpu=False, tpu=None, tpu_zone=None, gcp_project=None,
                    cluster_timeout=train_config.CLUSTER_TIMEOUT):
  """Chooses and creates the tf.distribute strategy.

  Call it before any other TensorFlow op (logical CPU devices and the
  multi-worker runtime must be configured first).

  Args:
    num_core_per_host: replicas on this host: GPUs, or logical CPU devices
      when no GPU is visible (1: the default strategy on one device).
    worker_hosts, task_index: several hosts: comma-separated host:port of
      every worker and this worker's index (they build TF_CONFIG); a
      TF_CONFIG naming several workers works as well.
    use_tpu, tpu, tpu_zone, gcp_project: a TPUStrategy on the named TPU.
    cluster_timeout: seconds the workers wait for each other at the start
      (`cluster_wait.start`).

  Returns:
    a `tf.distribute.Strategy`.
  """
  if worker_hosts:
    os.environ["TF_CONFIG"] = worker_tf_config(worker_hosts, task_index or 0)
  if use_tpu:
    resolver = tpu_cluster_resolver(tpu, tpu_zone, gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  if cluster_workers() > 1:
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) not in (0, num_core_per_host):
      logging.warning("%d GPUs visible on this worker; all are used "
                      "(--num_core_per_host=%d)", len(gpus),
                      num_core_per_host)
    return cluster_wait.start(tf.distribute.MultiWorkerMirroredStrategy,
                              _tf_config(), cluster_timeout)
  return one_host_strategy(num_core_per_host)


def one_host_strategy(num_core_per_host=1):
  """The strategy of this host's devices alone, whatever TF_CONFIG says:
  the default strategy on one device, else `MirroredStrategy` over
  `num_core_per_host` GPUs (logical CPU devices when no GPU is visible).
  The chief of a multi-worker fine-tuning run evaluates on it."""
  gpus = tf.config.list_physical_devices("GPU")
  if gpus and len(gpus) < num_core_per_host:
    raise ValueError(f"--num_core_per_host={num_core_per_host} but only "
                     f"{len(gpus)} GPU(s) are visible")
  if num_core_per_host == 1:
    return tf.distribute.get_strategy()
  if gpus:
    return tf.distribute.MirroredStrategy(
        [f"/gpu:{i}" for i in range(num_core_per_host)])
  logging.warning("No GPU visible: the %d replicas run on logical CPU "
                  "devices.", num_core_per_host)
  ensure_cpu_devices(num_core_per_host)
  return tf.distribute.MirroredStrategy(
      [f"/cpu:{i}" for i in range(num_core_per_host)])


# The strategies this process created, each once (a process connects to its
# TPU and starts its multi-worker runtime once): key -> strategy.
_CREATED = {}
_CLUSTER = "cluster"


def _created_once(key, create):
  if key not in _CREATED:
    _CREATED[key] = create()
  return _CREATED[key]


def for_inference(device, num_core_per_host=1):
  """The strategy evaluation and prediction run on: the TPU, else this
  host's devices alone (also on the chief of a multi-worker run, which
  evaluates by itself after training).

  Args:
    device: a `DeviceConfig`.
    num_core_per_host: GPU/CPU replicas (ignored on a TPU).
  """
  if device.use_tpu:
    return _created_once(("tpu", device.tpu), lambda: create_strategy(
        use_tpu=True, tpu=device.tpu, tpu_zone=device.tpu_zone,
        gcp_project=device.gcp_project))
  return _created_once(("host", num_core_per_host),
                       lambda: one_host_strategy(num_core_per_host))


def for_training(device, layout):
  """The strategy a run trains on, pretraining and fine-tuning alike:
  `for_inference`'s, or every worker of the cluster
  (`MultiWorkerMirroredStrategy`) when `device.worker_hosts` or TF_CONFIG
  name several; checked against the `BatchLayout` `layout`.

  Raises:
    ValueError: the devices found do not match `layout`.
  """
  if device.use_tpu or cluster_workers(device.worker_hosts) == 1:
    strategy = for_inference(device, layout.num_core_per_host)
  else:
    strategy = _created_once(_CLUSTER, lambda: create_strategy(
        layout.num_core_per_host, device.worker_hosts, device.task_index,
        cluster_timeout=device.cluster_timeout))
  check_layout(strategy, layout, device.use_tpu)
  return strategy


def cluster_strategy():
  """The multi-worker strategy this process trained on, or None."""
  return _CREATED.get(_CLUSTER)


def check_layout(strategy, layout, use_tpu=False):
  """Raises a one-line ValueError unless the strategy has
  `layout.num_core_per_host` replicas on each of `layout.num_hosts` hosts
  (a `BatchLayout`)."""
  local_cores = strategy.num_replicas_in_sync // layout.num_hosts
  if local_cores != layout.num_core_per_host:
    raise ValueError(f"--num_core_per_host={layout.num_core_per_host} but "
                     f"each {'TPU host' if use_tpu else 'worker'} has "
                     f"{local_cores} device(s)")


def ensure_cpu_devices(n):
  """Splits the CPU into at least `n` logical devices (before TF starts)."""
  cpu = tf.config.list_physical_devices("CPU")[0]
  if len(tf.config.get_logical_device_configuration(cpu) or [None]) >= n:
    return
  try:
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * n)
  except RuntimeError:
    raise ValueError(f"{n} logical CPU devices are needed but TensorFlow "
                     "was started with fewer; create the strategy before "
                     "running any TensorFlow op") from None


def device_name():
  """This machine's device as bench/finetune_memory.py names the one it
  measures: its first GPU ("GPU:0 NVIDIA A100-SXM4-40GB"), else "CPU:0"."""
  gpus = tf.config.list_physical_devices("GPU")
  if not gpus:
    return "CPU:0"
  details = tf.config.experimental.get_device_details(gpus[0])
  return f"GPU:0 {details.get('device_name', '')}".strip()


def runs_on_cpu(strategy):
  """Whether the strategy's replicas compute on the CPU: not a TPU strategy
  and no GPU visible to this process."""
  on_tpu = (isinstance(strategy, tf.distribute.TPUStrategy) or
            "TPU" in type(strategy).__name__)
  return not on_tpu and not tf.config.list_physical_devices("GPU")


def is_chief(strategy):
  """Whether this process writes checkpoints, logs and summaries."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type:
    return True
  return (resolver.task_type == "chief" or
          (resolver.task_type == "worker" and resolver.task_id == 0 and
           "chief" not in resolver.cluster_spec().as_dict()))


def process_index(task_type, task_id, cluster):
  """A process's index among the cluster's processes: the chief first (0),
  then the workers in order, as MultiWorkerMirroredStrategy numbers its
  input pipelines and replicas.

  Args:
    task_type: "chief" or "worker" (None: a single process).
    task_id: int, the index within its task type.
    cluster: dict task type -> list of addresses (the TF_CONFIG cluster).

  Returns:
    int in [0, number of chief and worker tasks).
  """
  if not task_type or task_type == "chief":
    return 0
  if task_type != "worker":
    raise ValueError(f"TF_CONFIG task type {task_type!r}: only 'chief' and "
                     "'worker' tasks train (see docs/distributed.md)")
  return len(cluster.get("chief", [])) + int(task_id or 0)


def worker_index(strategy):
  """This process's index among the workers (0 on one host): names its
  checkpoint shard and its record files."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not resolver.task_type:
    return 0
  return process_index(resolver.task_type, resolver.task_id,
                       resolver.cluster_spec().as_dict())


def num_workers(strategy):
  """Number of processes that take part in a multi-worker strategy (1 for
  every other strategy)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if (resolver is None or not isinstance(
      strategy, tf.distribute.MultiWorkerMirroredStrategy)):
    return 1
  spec = resolver.cluster_spec().as_dict()
  return len(spec.get("worker", [])) + len(spec.get("chief", []))


def distribute_batches(strategy, dataset_fn, accum_steps=1):
  """Distributes a per-worker dataset of per-replica batches.

  Args:
    strategy: the run's strategy.
    dataset_fn: `dataset_fn(input_context)` -> dataset whose consecutive
      elements go to this worker's replicas in turn (replica 0, 1, ...,
      then replica 0 again), each one replica's batch.
    accum_steps: micro-batches per optimizer step.

  Returns:
    a distributed dataset; with accum_steps > 1 each replica receives
    `accum_steps` of its consecutive batches stacked on a new axis 0.
  """
  k = accum_steps

  def grouped(input_context):
    dataset = dataset_fn(input_context)
    if k == 1:
      return dataset
    n = max(1, strategy.num_replicas_in_sync //
            input_context.num_input_pipelines)
    # [s0r0, s0r1, s1r0, s1r1, ...] -> replica r gets [s0rr, s1rr, ...].
    def regroup(batch):
      return {key: tf.reshape(
          tf.transpose(tf.reshape(v, [k, n] + v.shape[1:].as_list()),
                       [1, 0] + list(range(2, v.shape.ndims + 1))),
          [n * k] + v.shape[1:].as_list())
              for key, v in batch.items()}
    return (dataset.batch(n * k, drop_remainder=True)
            .map(regroup).unbatch().batch(k, drop_remainder=True))

  return strategy.distribute_datasets_from_function(grouped)


@tf.function
def _sum_over_replicas(value):
  """In a replica context: `value` summed over every replica (a copy on
  the replica's device: a tensor made outside names none)."""
  return tf.distribute.get_replica_context().all_reduce(
      tf.distribute.ReduceOp.SUM, tf.identity(value))


def barrier(strategy):
  """Returns once every worker of a multi-worker `strategy` has called it
  (a tiny all-reduce); at once for every other strategy."""
  if num_workers(strategy) > 1:
    strategy.run(_sum_over_replicas, args=(tf.constant(1.0),))


def check_same_run(strategy, settings):
  """Raises unless every worker of a multi-worker `strategy` passed the
  same `settings`: workers of different runs that meet on one cluster (a
  straggler of an earlier task, a host given other flags) would otherwise
  average the gradients of different models or data.

  Args:
    strategy: the run's strategy.
    settings: dict flag name -> JSON-able value, what must be equal.

  Raises:
    ValueError: one line, on every worker.
  """
  if num_workers(strategy) == 1:
    return
  digest = zlib.crc32(json.dumps(settings, sort_keys=True).encode())
  bits = tf.constant([float(b) for b in f"{digest:032b}"])
  total = strategy.experimental_local_results(strategy.run(
      _sum_over_replicas, args=(bits,)))[0].numpy()
  if any(t not in (0, strategy.num_replicas_in_sync) for t in total):
    raise ValueError(
        "the workers of this cluster run different commands (they differ "
        f"in {', '.join('--' + name for name in sorted(settings))}): start "
        "every host with the same command, the shared directories at the "
        "same paths, each with its own --task_index")


def worker_share(dataset, input_context, local_replicas):
  """This worker's batches of a stream of per-replica batches that every
  worker reads whole, so that the replicas of several workers train on the
  batches the same replicas of one process would.

  One process hands the stream's batches to its replicas in turn (replica
  r of step s: batch s*n + r of n replicas); a worker's replicas are the
  global replicas [w*k, (w+1)*k) of its `input_pipeline_id` w (the chief
  first), k = `local_replicas`. So worker w keeps every
  `num_input_pipelines`-th group of k consecutive batches, starting at
  group w.

  Args:
    dataset: per-replica batches, the same stream on every worker.
    input_context: the worker's `tf.distribute.InputContext`.
    local_replicas: replicas of this worker.

  Returns:
    the dataset of this worker's batches, in the order its replicas take
    them.
  """
  workers = input_context.num_input_pipelines
  if workers == 1:
    return dataset
  return (dataset.batch(local_replicas, drop_remainder=True)
          .shard(workers, input_context.input_pipeline_id).unbatch())


def local_replica_ids(strategy):
  """Global replica ids of this worker's replicas, in local order."""
  ids = strategy.run(tf.function(
      lambda: tf.distribute.get_replica_context().replica_id_in_sync_group))
  return [int(t) for t in strategy.experimental_local_results(ids)]
