#!/usr/bin/env bash
# SQuAD 2.0 training records for run_squad.py, written once by NUM_PROC
# processes in parallel (shard i = the questions of every NUM_PROC-th
# paragraph), as the released prepro_squad.sh.
#   SQUAD_DIR=data/squad INIT_CKPT_DIR=xlnet_cased_L-24_H-1024_A-16 \
#   PROC_DATA_DIR=proc_data/squad bash scripts/prepro_squad.sh [extra flags]
# Env: SQUAD_DIR (holding train-v2.0.json), INIT_CKPT_DIR (holding
#      spiece.model), PROC_DATA_DIR (the records; may be gs://) all required;
#      NUM_PROC (default: the number of CPUs); PYTHON (default: the reference
#      environment's python). Train with the same NUM_PROC (--num_proc).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need SQUAD_DIR "the directory holding train-v2.0.json"
need INIT_CKPT_DIR "the directory holding spiece.model"
need PROC_DATA_DIR "the records directory"
NUM_PROC="${NUM_PROC:-$(nproc)}"
use_python reference
pids=()
for ((i = 0; i < NUM_PROC; i++)); do
  run "$PYTHON" run_squad.py \
    --use_tpu=False \
    --do_prepro=True \
    --spiece_model_file="$INIT_CKPT_DIR/spiece.model" \
    --train_file="$SQUAD_DIR/train-v2.0.json" \
    --output_dir="$PROC_DATA_DIR" \
    --uncased=False \
    --max_seq_length=512 \
    --num_proc="$NUM_PROC" \
    --proc_id="$i" \
    "$@" &
  pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit "$status"
