#!/usr/bin/env bash
# STS-B regression with XLNet-Large on 4 GPUs: the original README's two
# commands, their flags and values (expected dev Pearson 0.916+).
#   GLUE_DIR=/path/to/glue_data LARGE_DIR=/path/to/xlnet_cased_L-24_H-1024_A-16 \
#     bash scripts/finetune_stsb_gpu.sh
# Env: GLUE_DIR (holding STS-B/{train,dev,test}.tsv), LARGE_DIR (the released
#      spiece.model, xlnet_config.json, xlnet_model.ckpt.*) (both required);
#      PYTHON (default: the reference environment); DRY_RUN=1 prints the
#      commands instead of running them.
# Paper settings: lr 5e-5, batch 8 per GPU x 4 GPUs = 32, 1200 steps, 120
# warmup steps, seq 128. Step 1 fine-tunes (checkpoints at 600 and 1200 in
# exp/sts-b, feature records in proc_data/sts-b); step 2 evaluates every
# checkpoint on one GPU (model_dir/eval_results.txt).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need GLUE_DIR "the GLUE data directory (holding STS-B/)"
need LARGE_DIR "the released XLNet-Large directory"
use_python reference
# What the two commands share.
sts_b=(--task_name=sts-b --data_dir="$GLUE_DIR/STS-B"
       --output_dir=proc_data/sts-b --model_dir=exp/sts-b --uncased=False
       --spiece_model_file="$LARGE_DIR/spiece.model"
       --model_config_path="$LARGE_DIR/xlnet_config.json"
       --max_seq_length=128 --num_hosts=1 --is_regression=True)

CUDA_VISIBLE_DEVICES=0,1,2,3 run "$PYTHON" run_classifier.py \
  --do_train=True --do_eval=False "${sts_b[@]}" \
  --init_checkpoint="$LARGE_DIR/xlnet_model.ckpt" \
  --train_batch_size=8 --num_core_per_host=4 --learning_rate=5e-5 \
  --train_steps=1200 --warmup_steps=120 --save_steps=600

CUDA_VISIBLE_DEVICES=0 run "$PYTHON" run_classifier.py \
  --do_train=False --do_eval=True "${sts_b[@]}" \
  --eval_batch_size=8 --num_core_per_host=1 --eval_all_ckpt=True
