"""Reproducing the paper's tables (`reproduce.py`): `api.run_table` and
its dry run `api.plan_table`, above fine-tuning (each run is one of the
fine-tuning programs, run as a subprocess).

  api             run_table, plan_table: the table's runs, its lock, progress
  config          ReproduceConfig: reproduce.py's settings, one field a flag
  plan            settings, batch plans, directories and commands of the runs
  runner          a run's programs (`xlnet/runs/`), its number, result.json
  results         finished runs read back; the earlier work dir layout moved
  report          results.md, results.json, results.png (`png_chart`)
  paper_settings  the paper's settings and figures, table by table
  memory_plan     a fine-tuning step's peak memory, the accumulation that fits
"""
