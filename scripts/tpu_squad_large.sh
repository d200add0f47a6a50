#!/usr/bin/env bash
# XLNet-Large on SQuAD 2.0 on a TPU v3-8 with the paper's settings: lr 3e-5,
# batch 48, seq 512, 8000 steps, 1000 warmup, Adam epsilon 1e-6, layer-wise
# lr decay 0.75; expected dev F1 about 88.6 (best_f1 in eval_results.json).
#   TPU_NAME=my-tpu SQUAD_DIR=data/squad \
#   INIT_CKPT_DIR=gs://bucket/xlnet_cased_L-24_H-1024_A-16 \
#   LOCAL_INIT_CKPT_DIR=xlnet_cased_L-24_H-1024_A-16 \
#   PROC_DATA_DIR=gs://bucket/proc_data/squad MODEL_DIR=gs://bucket/squad \
#     bash scripts/tpu_squad_large.sh [extra run_squad.py flags]
# Env (all required): TPU_NAME; SQUAD_DIR (train-v2.0.json, dev-v2.0.json);
#      INIT_CKPT_DIR (xlnet_config.json, xlnet_model.ckpt, on gs://);
#      LOCAL_INIT_CKPT_DIR (spiece.model on this machine); PROC_DATA_DIR
#      (records from scripts/prepro_squad.sh, gs://); MODEL_DIR (gs://).
#      NUM_PROC: the shard count of the records (default 1); PYTHON.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_tpu_layout
need SQUAD_DIR "the directory holding train-v2.0.json and dev-v2.0.json"
use_python reference
launch "$PYTHON" run_squad.py "${released[@]}" \
  --use_tpu=True --tpu="$TPU_NAME" --num_hosts=1 --num_core_per_host=8 \
  --output_dir="$PROC_DATA_DIR" --model_dir="$MODEL_DIR" \
  --train_file="$SQUAD_DIR/train-v2.0.json" \
  --predict_file="$SQUAD_DIR/dev-v2.0.json" --num_proc="${NUM_PROC:-1}" \
  --uncased=False --max_seq_length=512 \
  --do_train=True --train_batch_size=48 --do_predict=True \
  --predict_batch_size=32 --learning_rate=3e-5 --lr_layer_decay_rate=0.75 \
  --adam_epsilon=1e-6 --iterations=1000 --save_steps=1000 \
  --train_steps=8000 --warmup_steps=1000 \
  "$@"
