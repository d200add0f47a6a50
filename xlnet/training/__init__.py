"""Training shared by pretraining and fine-tuning, one concern per module.

  config            typed settings of a run (OptimizerConfig, BatchLayout, ...)
  strategies        the tf.distribute strategy; chief, workers, replicas
  trainer           Trainer: variables -> step -> loop
  optimizer         schedule, clipping, Adam/AdamW; AdamState (slots, loss
                    scale) of the trainer
  template          the model as a make_template; released variable names
  train_state       the trainer's checkpoints (one shard per worker) and
                    the batch layout a resumed run keeps
  predictor         inference on every replica
  progress          the stop exceptions, the progress line, signals
  checkpoint_io     checkpoint names, listing, atomic writes, verification,
                    resume discovery, rollback
  warm_start        --init_checkpoint: variables loaded by name
  checkpoint_tools  clean_ckpt, avg_checkpoints, rollback_ckpt
  tpu_estimator     TPUEstimator (TensorFlow <= 2.15): get_train_op, RunConfig
  run_lock          one trainer per model_dir
"""
