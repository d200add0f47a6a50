#!/usr/bin/env bash
# IMDB sentiment classification with XLNet-Large on a TPU v3-8: the original
# README's command, verbatim (expected dev accuracy 0.962+).
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
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
: "${TPU_NAME:?set TPU_NAME to the TPU name (or grpc://ip:port)}"
: "${IMDB_DIR:?set IMDB_DIR to the aclImdb directory}"
: "${GS_ROOT:?set GS_ROOT to a gs:// bucket path}"
: "${LARGE_DIR:?set LARGE_DIR to the released XLNet-Large directory name}"
if [ -z "${DRY_RUN:-}" ]; then
  PYTHON="${PYTHON:-$(bash scripts/setup_env.sh reference | tail -n 1)}"
fi
run() { if [ -n "${DRY_RUN:-}" ]; then printf '%q ' "$@"; echo; else "$@"; fi; }

run "${PYTHON:-python}" run_classifier.py \
  --use_tpu=True \
  --tpu=${TPU_NAME} \
  --do_train=True \
  --do_eval=True \
  --eval_all_ckpt=True \
  --task_name=imdb \
  --data_dir=${IMDB_DIR} \
  --output_dir=${GS_ROOT}/proc_data/imdb \
  --model_dir=${GS_ROOT}/exp/imdb \
  --uncased=False \
  --spiece_model_file=${LARGE_DIR}/spiece.model \
  --model_config_path=${GS_ROOT}/${LARGE_DIR}/xlnet_config.json \
  --init_checkpoint=${GS_ROOT}/${LARGE_DIR}/xlnet_model.ckpt \
  --max_seq_length=512 \
  --train_batch_size=32 \
  --eval_batch_size=8 \
  --num_hosts=1 \
  --num_core_per_host=8 \
  --learning_rate=2e-5 \
  --train_steps=4000 \
  --warmup_steps=500 \
  --save_steps=500 \
  --iterations=500
