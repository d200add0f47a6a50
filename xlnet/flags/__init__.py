"""The flag catalog: every program's flags, their rules, and their
resolution into the typed configs the library takes (the library itself
never reads flags).

  catalog      the flag definitions: one function per group (each flag
               defined once), composed per program
  rules        one rule and one message per flag name
  configs      flags -> OptimizerConfig, TrainConfig, RunConfig
  pretraining  pretraining flags resolved against the data
  finetuning   fine-tuning flags checked
"""
