"""Sequence classification and regression: the head, the datasets'
processors, the features and their records, the metrics and the task
(records, fine-tuning, evaluation, prediction)."""
