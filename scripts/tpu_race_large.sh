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
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
: "${TPU_NAME:?set TPU_NAME}"
: "${RACE_DIR:?set RACE_DIR}"
: "${INIT_CKPT_DIR:?set INIT_CKPT_DIR}"
: "${LOCAL_INIT_CKPT_DIR:?set LOCAL_INIT_CKPT_DIR}"
: "${PROC_DATA_DIR:?set PROC_DATA_DIR}"
: "${MODEL_DIR:?set MODEL_DIR}"
PYTHON="${PYTHON:-$(bash scripts/setup_env.sh reference | tail -n 1)}"
exec "$PYTHON" run_race.py \
  --use_tpu=True \
  --tpu="$TPU_NAME" \
  --num_hosts="$([ "${BATCH:-32}" = 8 ] && echo 1 || echo 4)" \
  --num_core_per_host=8 \
  --model_config_path="$INIT_CKPT_DIR/xlnet_config.json" \
  --spiece_model_file="$LOCAL_INIT_CKPT_DIR/spiece.model" \
  --output_dir="$PROC_DATA_DIR" \
  --init_checkpoint="$INIT_CKPT_DIR/xlnet_model.ckpt" \
  --model_dir="$MODEL_DIR" \
  --data_dir="$RACE_DIR" \
  --max_seq_length=512 \
  --max_qa_length=128 \
  --uncased=False \
  --do_train=True \
  --train_batch_size="${BATCH:-32}" \
  --do_eval=True \
  --eval_batch_size=32 \
  --train_steps=12000 \
  --save_steps=1000 \
  --iterations=1000 \
  --warmup_steps=1000 \
  --learning_rate=2e-5 \
  --weight_decay=0 \
  --adam_epsilon=1e-6 \
  "$@"
