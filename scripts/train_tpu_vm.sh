#!/usr/bin/env bash
# XLNet pretraining on a Cloud TPU VM with current TensorFlow (>= 2.16, no
# TPUEstimator): the shared engine on a TPUStrategy, every core keeping its
# own memories. Run on the TPU VM (for a pod slice, on every host, as
# Cloud TPU documents for multi-host TPUStrategy programs):
#
#   DATA=gs://b/proc MODEL_DIR=gs://b/xlnet-large bash scripts/train_tpu_vm.sh
#
# Env: DATA (data_utils.py --save_dir), MODEL_DIR (gs://...), required;
#      TPU_NAME (default "local": the TPU of this VM), NUM_HOSTS (default 1),
#      NUM_CORE_PER_HOST (default 8), TRAIN_BATCH_SIZE (default: from the
#      records), CONFIG (large|base), PYTHON (default: the 'latest'
#      environment).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need_pretraining_layout
use_python latest
launch "$PYTHON" train_tpu.py "${pretraining[@]}" \
  --use_tpu=True --tpu_engine=strategy --tpu="${TPU_NAME:-local}" \
  --num_hosts="${NUM_HOSTS:-1}" \
  --num_core_per_host="${NUM_CORE_PER_HOST:-8}" \
  ${TRAIN_BATCH_SIZE:+--train_batch_size="$TRAIN_BATCH_SIZE"} \
  --use_bfloat16=True "$@"
