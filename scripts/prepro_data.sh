#!/usr/bin/env bash
# Turn text files into XLNet pretraining TFRecords, one data_utils.py run per
# pass (pass_id 0 .. NUM_PASSES-1), with the released README's settings unless
# overridden by extra flags, then verify every record written (docs/data.md).
#
# Usage: scripts/prepro_data.sh INPUT_GLOB SP_PATH SAVE_DIR [NUM_PASSES=1] [data_utils flags...]
# e.g.   scripts/prepro_data.sh 'data/demo/*.txt' data/demo/spiece.model data/demo/proc 2 \
#          --bsz_per_host=8 --num_core_per_host=1 --seq_len=128 --reuse_len=64 --num_predict=20
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 INPUT_GLOB SP_PATH SAVE_DIR [NUM_PASSES=1] [data_utils flags...]" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
input_glob="$1" sp_path="$2" save_dir="$3"
shift 3
num_passes=1
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then num_passes="$1"; shift; fi
for ((pass_id = 0; pass_id < num_passes; pass_id++)); do
  "${PYTHON:-python}" "$root/data_utils.py" \
    --bsz_per_host=32 --num_core_per_host=16 --seq_len=512 --reuse_len=256 \
    --bi_data=True --mask_alpha=6 --mask_beta=1 --num_predict=85 \
    --input_glob="$input_glob" --sp_path="$sp_path" --save_dir="$save_dir" \
    --num_passes="$num_passes" --pass_id="$pass_id" "$@"
done
"${PYTHON:-python}" "$root/data_utils.py" --verify --save_dir="$save_dir"
