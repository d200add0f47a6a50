"""Fine-tuning: classification/regression, SQuAD, RACE, their records,
metrics and the paper's tables (the programs: `xlnet/programs/`)."""
