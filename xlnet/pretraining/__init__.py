"""Pretraining: the engine and TPUEstimator trainers, held-out evaluation,
their typed configs and the Python API (`api.pretrain`, `api.evaluate`)."""
