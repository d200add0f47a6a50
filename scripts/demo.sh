#!/usr/bin/env bash
# Quick start: from a fresh machine with only Python 3 to a trained toy XLNet.
#   bash scripts/demo.sh
# 1. creates (or reuses) .venvs/reference (TensorFlow 2.15),
# 2. fetches the demo corpus (Botchan) into data/demo/,
# 3. trains a 2000-piece SentencePiece model,
# 4. writes pretraining records (seq_len 128, reuse_len 64, batch 8, bi_data),
# 5. pretrains a tiny XLNet (configs/demo.flags) on the CPU for 300 steps,
# and prints the first and last loss and the checkpoint. Outputs: demo_out/.
# Re-running reuses steps 1-4 and retrains from scratch.
# Env (for tests): PYTHON_BIN (skip the venv, use this python), DEMO_OUT
# (output dir), DEMO_STEPS (training steps instead of configs/demo.flags').
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-3}"
start=$(date +%s)
say() { echo "[demo $(( $(date +%s) - start ))s] $*"; }

py="${PYTHON_BIN:-$(bash scripts/setup_env.sh reference | tail -n 1)}"
out="${DEMO_OUT:-demo_out}"
mkdir -p "$out"

say "1/4 demo corpus"
corpus="$("$py" scripts/get_demo_corpus.py | tail -n 1)"

say "2/4 SentencePiece model (vocab 2000)"
if [ ! -f "$out/spiece.model" ]; then
  "$py" -m xlnet.spm_train --input="$corpus" --model_prefix="$out/spiece" \
    --vocab_size=2000
fi

say "3/4 pretraining records"
data="$out/data"
if ! ls "$data"/tfrecords/record_info-train-0-0.*.json >/dev/null 2>&1; then
  "$py" data_utils.py --input_glob="$corpus" --sp_path="$out/spiece.model" \
    --save_dir="$data" --bsz_per_host=8 --num_core_per_host=1 --seq_len=128 \
    --reuse_len=64 --bi_data=True --num_predict=20 --mask_alpha=6 \
    --mask_beta=1 --uncased=False
fi

say "4/4 pretraining a tiny XLNet on the CPU (configs/demo.flags)"
rm -rf "$out/model"
"$py" train_gpu.py --flagfile=configs/demo.flags \
  --record_info_dir="$data/tfrecords" --model_dir="$out/model" \
  ${DEMO_STEPS:+--train_steps="$DEMO_STEPS"} 2>&1 | tee "$out/train.log" | grep --line-buffered -E "\] \| gnorm|error"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || { echo "demo: training failed, see $out/train.log" >&2; exit "$status"; }

first="$(grep -m1 -oE '\| loss [0-9.]+' "$out/train.log" | awk '{print $3}')"
last="$(grep -oE '\| loss [0-9.]+' "$out/train.log" | tail -n 1 | awk '{print $3}')"
ckpt="$("$py" -c "import tensorflow as tf; print(tf.train.latest_checkpoint('$out/model'))" 2>/dev/null)"
say "done: loss ${first} (step 1) -> ${last} (mean of the last log interval); checkpoint ${ckpt}"
say "TensorBoard: $py -m tensorboard.main --logdir $out/model"
