"""The tf.data service servers `data_service.py` runs: a dispatcher, which
hands out the chunks of the trainers' streams (`data_service.py` of this
package), and workers, which make them."""
import tensorflow as tf


def start_dispatcher(port, work_dir=None, worker_timeout_ms=None):
  """Starts a tf.data service dispatcher on `port` (all interfaces).

  Args:
    port: the port it listens on.
    work_dir: where it journals its state, so that a restarted dispatcher
      resumes its jobs (None: no journal; a restart loses the jobs).
    worker_timeout_ms: a worker silent this long is dropped and its chunks
      are no longer waited for (None: TensorFlow's default).

  Returns:
    the running `tf.data.experimental.service.DispatchServer`.
  """
  config = tf.data.experimental.service.DispatcherConfig(
      port=port, work_dir=work_dir, fault_tolerant_mode=bool(work_dir),
      worker_timeout_ms=worker_timeout_ms)
  return tf.data.experimental.service.DispatchServer(config)


def start_worker(port, dispatcher, host):
  """Starts a tf.data service worker on `port` serving the dispatcher at
  `dispatcher` (HOST:PORT); trainers reach it at `host`:`port`.

  Returns:
    the running `tf.data.experimental.service.WorkerServer`.
  """
  config = tf.data.experimental.service.WorkerConfig(
      dispatcher_address=dispatcher, worker_address=f"{host}:{port}",
      port=port)
  return tf.data.experimental.service.WorkerServer(config)
