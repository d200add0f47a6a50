#!/usr/bin/env bash
# XLNet pretraining on the GPUs of one machine with the paper's settings.
#   DATA=/path/to/save_dir MODEL_DIR=/path/to/model NUM_GPUS=8 \
#     bash scripts/train_gpu.sh [extra train_gpu.py flags]
# Env: DATA (data_utils.py --save_dir; required), MODEL_DIR (required),
#      NUM_GPUS (towers, default: all visible GPUs, at least 1),
#      CONFIG (large|base, default large -> configs/pretrain_$CONFIG.flags),
#      PYTHON (default: the reference environment's python).
# The records fix train_batch_size (= their bsz_per_host); a batch of 2048
# sequences of 512 does not fit a single machine's GPUs: write records with
# a smaller --bsz_per_host and pass --train_batch_size to match.
# Re-running resumes from the latest checkpoint in MODEL_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_pretraining_layout
if [ -z "${NUM_GPUS:-}" ]; then
  NUM_GPUS="$(nvidia-smi -L 2>/dev/null | wc -l || true)"
  [ "${NUM_GPUS:-0}" -ge 1 ] || NUM_GPUS=1
fi
use_python reference
launch "$PYTHON" train_gpu.py "${pretraining[@]}" \
  --num_core_per_host="$NUM_GPUS" "$@"
