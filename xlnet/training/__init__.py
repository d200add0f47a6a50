"""The training engine: strategies, the train step, optimizer, checkpoints."""
