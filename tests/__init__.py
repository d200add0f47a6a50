"""xlnet-tf tests: one folder per package of xlnet/ (core: the model and
heads at the package root; data, training, pretraining, finetuning, demo; programs:
what crosses programs). Shared fixtures and NumPy references stay here."""
