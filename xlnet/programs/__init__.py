"""The programs' entry modules, above the library.

Each top-level script (`train_gpu.py`, `run_classifier.py`, ...) calls the
`entry_point` of its module here: it defines the program's flags
(`xlnet/flags/`), parses them under the programs' convention (`xlnet/programs/cli.py`)
and hands the resolved configs to the library's Python API. Nothing in the
library imports this package, the flags or `cli` (docs/layout.md, "Layers").

  train_gpu, train_tpu, eval_pretrain   pretraining (train.py runs train_tpu)
  run_classifier, run_squad, run_race   fine-tuning
  reproduce                             the paper's tables, one program a run
  convert_checkpoint                    HuggingFace and SavedModel conversion
  data_service                          a tf.data service dispatcher or worker
"""
