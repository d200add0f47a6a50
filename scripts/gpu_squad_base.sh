#!/usr/bin/env bash
# XLNet-Base on SQuAD 2.0 on the GPUs of one machine: batch 8 on 3 GPUs,
# lr 2e-5, seq 512, 12000 steps, 1000 warmup, Adam epsilon 1e-6.
#   SQUAD_DIR=data/squad INIT_CKPT_DIR=xlnet_cased_L-12_H-768_A-12 \
#   PROC_DATA_DIR=proc_data/squad MODEL_DIR=experiment/squad \
#     bash scripts/gpu_squad_base.sh [extra run_squad.py flags]
# Env (required): SQUAD_DIR (train-v2.0.json, dev-v2.0.json), INIT_CKPT_DIR
#      (xlnet_config.json, xlnet_model.ckpt, spiece.model), PROC_DATA_DIR,
#      MODEL_DIR. Optional: NUM_GPUS (default 3), NUM_PROC (shard count of
#      the records, default 1), PYTHON.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need SQUAD_DIR "the directory holding train-v2.0.json and dev-v2.0.json"
need INIT_CKPT_DIR "the released XLNet-Base directory"
need PROC_DATA_DIR "the records directory"
need MODEL_DIR "the checkpoint directory"
use_python reference
released_model "$INIT_CKPT_DIR"
launch "$PYTHON" run_squad.py "${released[@]}" \
  --use_tpu=False --num_hosts=1 --num_core_per_host="${NUM_GPUS:-3}" \
  --output_dir="$PROC_DATA_DIR" --model_dir="$MODEL_DIR" \
  --train_file="$SQUAD_DIR/train-v2.0.json" \
  --predict_file="$SQUAD_DIR/dev-v2.0.json" --num_proc="${NUM_PROC:-1}" \
  --uncased=False --max_seq_length=512 \
  --do_train=True --train_batch_size=8 --do_predict=True \
  --predict_batch_size=32 --learning_rate=2e-5 \
  --adam_epsilon=1e-6 --iterations=1000 --save_steps=1000 \
  --train_steps=12000 --warmup_steps=1000 \
  "$@"
