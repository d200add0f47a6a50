"""SQuAD 2.0 / 1.1: the span head, the piece alignment, the window features
and their records, the answers from the model's beams, the official
evaluation and the task (records, fine-tuning, prediction, evaluation)."""
