"""Fine-tuning: one folder per task (`classifier/`, `squad/`, `race/`,
`tagging/`: its head, data, records and metrics) and what they share (the
settings, the engine's fine-tuning loop, record caching, the paper's
tables; the programs: `xlnet/programs/`)."""
