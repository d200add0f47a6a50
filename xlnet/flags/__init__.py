"""The flag catalog: every program's flags, their checks, and their
resolution into the typed configs the library takes (the library itself
never reads flags).

  groups        the flag definitions: one function per group (each flag
                defined once), the group's title in --help
  catalog       the pretraining and fine-tuning programs' flags, composed
                of the groups; the command line parsed
  task_catalog  the fine-tuning programs' and reproduce.py's task groups
  tool_catalog  the groups of the programs that neither train nor
                fine-tune (data_utils.py, download.py, ...)
  configs       flags -> OptimizerConfig, TrainConfig, CheckpointConfig,
                DeviceConfig, RunConfig; `check_rules`: the flags checked
                by the rules of the configs (`xlnet/validation.py`: one
                rule and one message per name)
  pretraining   pretraining flags resolved against the data into
                PretrainConfigs
  finetuning    fine-tuning flags checked and resolved into the task,
                model and engine configs
"""
