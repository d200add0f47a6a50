#!/usr/bin/env bash
# IMDB sentiment classification with XLNet-Large on a TPU v3-8: the original
# README's command, its flags and values (expected dev accuracy 0.962+).
#   TPU_NAME=my-tpu IMDB_DIR=/path/to/aclImdb GS_ROOT=gs://my-bucket \
#     LARGE_DIR=xlnet_cased_L-24_H-1024_A-16 bash scripts/finetune_imdb_tpu.sh
# Env: TPU_NAME; IMDB_DIR (the aclImdb directory: {train,test}/{neg,pos});
#      GS_ROOT (a gs:// bucket: records, checkpoints, and the released model
#      copied to ${GS_ROOT}/${LARGE_DIR}); LARGE_DIR (the released
#      XLNet-Large directory, relative, present locally for spiece.model and
#      under ${GS_ROOT} for the config and checkpoint) (all required);
#      PYTHON (default: the reference environment, TensorFlow 2.15, which
#      has TPUEstimator); DRY_RUN=1 prints the command instead of running it.
# Paper settings: lr 2e-5, batch 32 (global; 4 per core), seq 512, 4000
# steps, 500 warmup steps; every checkpoint (each 500 steps) is evaluated
# on the test reviews afterwards.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need TPU_NAME "the TPU name (or grpc://ip:port)"
need IMDB_DIR "the aclImdb directory"
need GS_ROOT "a gs:// bucket path"
need LARGE_DIR "the released XLNet-Large directory name"
use_python reference
released_model "$GS_ROOT/$LARGE_DIR" "$LARGE_DIR"

run "$PYTHON" run_classifier.py "${released[@]}" \
  --use_tpu=True --tpu="$TPU_NAME" --num_hosts=1 --num_core_per_host=8 \
  --do_train=True --do_eval=True --eval_all_ckpt=True \
  --task_name=imdb --data_dir="$IMDB_DIR" --uncased=False \
  --output_dir="$GS_ROOT/proc_data/imdb" --model_dir="$GS_ROOT/exp/imdb" \
  --max_seq_length=512 --train_batch_size=32 --eval_batch_size=8 \
  --learning_rate=2e-5 --train_steps=4000 --warmup_steps=500 \
  --save_steps=500 --iterations=500
