"""Pretraining and its held-out evaluation from Python, without flags.

    from xlnet.pretraining import api
    history = api.pretrain(configs)    # configs: a PretrainConfigs
    results = api.evaluate(configs)    # configs.held_out.eval_ckpt

`train_gpu.py`, `train_tpu.py` and `eval_pretrain.py` resolve their flags
into the same `PretrainConfigs` (`xlnet/flags/pretraining.py`) and call these
functions: a program and the Python API run the same code. See
docs/python_api.md.
"""
from xlnet.training import progress
from xlnet.training import strategies
from xlnet.pretraining import estimator
from xlnet.pretraining import held_out as held_out_lib
from xlnet.pretraining import inputs
from xlnet.pretraining import trainer as trainer_lib
from xlnet.training import run_lock


def pretrain(configs):
  """Trains (or resumes) `configs.model` on `configs.data` to
  `configs.optimizer.train_steps`, holding the run lock of the model_dir
  (`xlnet/training/run_lock.py`) on the chief.

  `configs.device.tpu_engine == "estimator"` runs TPUEstimator (TensorFlow
  2.15); otherwise the shared engine runs on the device's strategy (a
  TPUStrategy with `use_tpu`, else the GPUs/CPUs of `num_core_per_host` and
  `worker_hosts`). With `held_out.eval_steps` the held-out records are
  evaluated every eval_steps steps and at the end.

  Args:
    configs: a `PretrainConfigs` (xlnet/pretraining/config.py).

  Returns:
    the engine: list of (step, mean loss) of every step of this run;
    TPUEstimator: None (its losses are in the TensorBoard summaries).

  Raises:
    ValueError: bad settings or data (one line).
    run_lock.Locked: another trainer uses the model_dir.
    progress.StopTraining: stopped early after saving (signal, divergence,
      corrupted input).
  """
  if configs.checkpoint is None:
    raise ValueError("pretrain needs configs.checkpoint, a CheckpointConfig "
                     "naming the model_dir")
  model_dir = configs.checkpoint.model_dir
  if configs.device.tpu_engine == "estimator":
    with run_lock.hold(model_dir):
      return estimator.run_estimator(configs)
  trainer_lib.check_model_dir(model_dir)
  held_out = (inputs.HeldOutInput(configs) if configs.held_out.eval_steps
              else None)
  strategy = trainer_lib.create_strategy(configs.batch, configs.device)
  with run_lock.hold(model_dir, strategies.is_chief(strategy)):
    return trainer_lib.train(configs, strategy, held_out)


def evaluate(configs):
  """Evaluates the checkpoint `configs.held_out.eval_ckpt` on the held-out
  records (one device, memories carried, dropout off) and writes
  `eval_results_pretrain.json` next to it.

  Returns:
    dict: `loss` (per target token), `pplx`, `accuracy`, `num_targets`,
    `num_batches`, `checkpoint` (the prefix read), `split`.
  """
  return held_out_lib.evaluate_checkpoint(configs)
