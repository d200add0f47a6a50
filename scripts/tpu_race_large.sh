#!/usr/bin/env bash
# XLNet-Large on RACE on a TPU with the paper's settings: batch 32 on a
# v3-32 (4 hosts; expected accuracy about 81.75 on middle+high) or batch 8
# on a v3-8 (1 host; about 80.3: scripts/tpu_race_large_bsz8.sh),
# lr 2e-5, seq 512, max_qa_length 128, 12000 steps, 1000 warmup, weight
# decay 0, Adam epsilon 1e-6.
#   TPU_NAME=my-tpu RACE_DIR=data/RACE \
#   INIT_CKPT_DIR=gs://bucket/xlnet_cased_L-24_H-1024_A-16 \
#   LOCAL_INIT_CKPT_DIR=xlnet_cased_L-24_H-1024_A-16 \
#   PROC_DATA_DIR=gs://bucket/proc_data/race MODEL_DIR=gs://bucket/race \
#     bash scripts/tpu_race_large.sh [extra run_race.py flags]
# Env (all required): TPU_NAME; RACE_DIR ({train,dev,test}/{middle,high});
#      INIT_CKPT_DIR (xlnet_config.json, xlnet_model.ckpt, on gs://);
#      LOCAL_INIT_CKPT_DIR (spiece.model on this machine); PROC_DATA_DIR
#      (records, gs://); MODEL_DIR (gs://). Optional: BATCH (32 or 8,
#      default 32; 8 runs on one host), PYTHON.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_tpu_layout
need RACE_DIR "the RACE directory ({train,dev,test}/{middle,high})"
use_python reference
hosts=4
[ "${BATCH:-32}" = 8 ] && hosts=1
launch "$PYTHON" run_race.py "${released[@]}" \
  --use_tpu=True --tpu="$TPU_NAME" \
  --num_hosts="$hosts" --num_core_per_host=8 \
  --output_dir="$PROC_DATA_DIR" --model_dir="$MODEL_DIR" \
  --data_dir="$RACE_DIR" --uncased=False \
  --max_seq_length=512 --max_qa_length=128 \
  --do_train=True --train_batch_size="${BATCH:-32}" \
  --do_eval=True --eval_batch_size=32 \
  --train_steps=12000 --warmup_steps=1000 \
  --save_steps=1000 --iterations=1000 \
  --learning_rate=2e-5 --weight_decay=0 --adam_epsilon=1e-6 \
  "$@"
