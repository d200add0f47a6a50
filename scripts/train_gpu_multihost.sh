#!/usr/bin/env bash
# XLNet pretraining on several GPU hosts (MultiWorkerMirroredStrategy) with
# the paper's settings. Run the same command on every host, with its own
# TASK_INDEX (0 = the chief: checkpoints, logs, summaries):
#
#   # host 10.0.0.1                         # host 10.0.0.2
#   WORKER_HOSTS=10.0.0.1:2222,10.0.0.2:2222 TASK_INDEX=0 \
#     DATA=gs://b/proc MODEL_DIR=gs://b/xlnet NUM_GPUS=8 \
#     bash scripts/train_gpu_multihost.sh
#                                           # same, with TASK_INDEX=1
#
# Env: WORKER_HOSTS (host:port of every worker, same order on every host),
#      TASK_INDEX, DATA (data_utils.py --save_dir, records written with
#      --bsz_per_host = the rows one host reads per step), MODEL_DIR (shared
#      by all hosts: a bucket or a network file system), all required;
#      NUM_GPUS (per host, default: all visible), CONFIG (large|base),
#      PYTHON. The global --train_batch_size is bsz_per_host x hosts.
# Instead of WORKER_HOSTS/TASK_INDEX you may export TF_CONFIG yourself.
# After a failure, restart every host with the same command: the run
# resumes from the latest checkpoint, each replica with its own memories.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need WORKER_HOSTS "host:port,host:port,... (all workers)"
need TASK_INDEX "the position of this host in WORKER_HOSTS"
export NUM_GPUS="${NUM_GPUS:-}"
exec bash scripts/train_gpu.sh --worker_hosts="$WORKER_HOSTS" \
  --task_index="$TASK_INDEX" "$@"
