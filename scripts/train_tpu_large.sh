#!/usr/bin/env bash
# XLNet-Large pretraining on a TPU v3 pod slice with the paper's settings
# (configs/pretrain_large.flags: lr 4e-4, 40K warmup, 500K steps, Adam eps
# 1e-6, weight decay 0.01, seq 512, reuse 256, mem 384, perm 256, 85 targets).
#   TPU_NAME=my-tpu DATA=gs://bucket/proc_data MODEL_DIR=gs://bucket/xlnet-large \
#     bash scripts/train_tpu_large.sh [extra train_tpu.py flags]
# Env: TPU_NAME, DATA (data_utils.py --save_dir, holding tfrecords/),
#      MODEL_DIR (all required); TPU_ZONE, GCP_PROJECT (optional);
#      NUM_HOSTS (default 64) and NUM_CORE_PER_HOST (default 8): a v3-512
#      slice = 64 hosts x 8 cores; TRAIN_BATCH_SIZE (default 2048, the
#      release; the paper used 8192) must equal NUM_HOSTS x the records'
#      bsz_per_host (default 2048 / 64 = 32 per host, 4 per core);
#      CONFIG (default large; base -> configs/pretrain_base.flags);
#      PYTHON (default: the reference environment, TensorFlow 2.15, which
#      still has TPUEstimator).
# Re-running resumes from the latest checkpoint in MODEL_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need TPU_NAME "the TPU name (or grpc://ip:port)"
need_pretraining_layout
use_python reference
launch "$PYTHON" train_tpu.py "${pretraining[@]}" \
  --use_tpu=True --tpu="$TPU_NAME" \
  ${TPU_ZONE:+--tpu_zone="$TPU_ZONE"} \
  ${GCP_PROJECT:+--gcp_project="$GCP_PROJECT"} \
  --num_hosts="${NUM_HOSTS:-64}" \
  --num_core_per_host="${NUM_CORE_PER_HOST:-8}" \
  --train_batch_size="${TRAIN_BATCH_SIZE:-2048}" \
  --use_bfloat16=True "$@"
