"""RACE: the multiple-choice head, the four options' features and their
records, and the task (records, fine-tuning, accuracy by level)."""
