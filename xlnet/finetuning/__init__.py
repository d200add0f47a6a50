"""Fine-tuning: classification/regression, SQuAD, RACE, their records, metrics and programs."""
