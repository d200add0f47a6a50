"""Pretraining: the two-stream loss, the GPU/TPU trainers, held-out evaluation."""
