"""XLNet on RACE: fine-tuning and accuracy on middle, high and all
(`python run_race.py --help`).

Steps, each enabled by its flag:
  --do_train  fine-tunes on {data_dir}/train (records made once, cached in
              --output_dir).
  --do_eval   scores {data_dir}/{eval_split} and writes
              eval_results_{eval_split}.json to --model_dir.
--high_only / --middle_only restrict both to one level.

The flags are resolved once (`xlnet/flags/finetuning.py`) into typed
settings for `xlnet.finetuning.api.run_race`.
"""
from xlnet.programs import cli
from xlnet.flags import task_catalog


define_flags, parse_flags, main, entry_point = cli.finetuning_program(
    "race", "max_qa_length", task_catalog.define_race_flags)
