#!/usr/bin/env bash
# Quick start: from a machine with only Python 3 to a small XLNet that has
# learned from text, in 2 to 4 minutes of a 2-core CPU once set up:
#   bash scripts/demo.sh           (--help: this text; it takes no argument)
# Set-up: creates (or reuses) .venvs/reference (TensorFlow 2.15) and
# .venvs/plot (matplotlib, for the loss-curve picture only). Then
# 1. fetches the demo corpus (Botchan) into data/demo/ and holds out its last
#    10% of documents,
# 2. trains a 2,000-piece SentencePiece model on the training part,
# 3. writes pretraining records of both parts (seq_len 128, reuse_len 64,
#    batch 8, bi_data, 32 targets per sequence),
# 4. pretrains a tiny XLNet on the CPU (configs/demo.flags: 2,000 steps),
#    evaluating on the held-out records every 250 steps,
# 5. prints the unigram baseline of the held-out targets and the model's
#    guesses for words hidden in held-out sentences,
# 6. draws the training and held-out loss curves into a PNG,
# and ends with a summary. Outputs go to demo_out/ (see docs/demo.md).
# Re-running reuses steps 1-3 (redone when their settings change) and
# retrains from scratch.
# Env (for tests): PYTHON_BIN (skip the venv, use this python), DEMO_OUT
# (output dir), DEMO_STEPS (training steps instead of configs/demo.flags').
set -euo pipefail
case "${1-}" in
  -h|--help) sed -n '2,/^set -euo/{/^#/{s/^# \{0,1\}//;p}}' "${BASH_SOURCE[0]}"; exit 0 ;;
esac
[ $# -eq 0 ] || { echo "demo: error: unknown argument '$1': the demo takes none (see --help)" >&2; exit 2; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-3}"
start=$(date +%s)
say() { echo "[demo $(( $(date +%s) - start ))s] $*"; }
fail() { echo "demo: error: $*" >&2; exit 1; }
# absl's "I1122 12:18:19.106015 1402 train_gpu.py:85] " prefix, for display.
strip_prefix() { sed -u -E 's/^[IWEF][0-9]{4} [0-9:.]+ +[0-9]+ [^]]+\] //'; }

py="${PYTHON_BIN:-$(bash scripts/setup_env.sh reference | tail -n 1)}"
command -v "$py" >/dev/null || fail "no python at '$py' (PYTHON_BIN)"
[[ "${DEMO_STEPS:-1}" =~ ^[1-9][0-9]*$ ]] \
  || fail "DEMO_STEPS=$DEMO_STEPS must be a positive number of steps"
out="${DEMO_OUT:-demo_out}"
data="$out/data"
mkdir -p "$out"
plot_py="$(bash scripts/setup_env.sh plot 2>"$out/plot_setup.log" | tail -n 1)" \
  || { plot_py=""; echo "demo: could not set up .venvs/plot (matplotlib); the run goes on without the picture (see $out/plot_setup.log)" >&2; }

# Everything steps 1-3 write depends on these settings only; a stamp file
# written last says they are complete, so a killed set-up is redone.
vocab_size=2000
heldout_fraction=0.1
data_flags=(--bsz_per_host=8 --num_core_per_host=1 --seq_len=128
  --reuse_len=64 --bi_data=True --num_predict=32 --mask_alpha=6
  --mask_beta=1 --uncased=False)
stamp="vocab_size=$vocab_size heldout_fraction=$heldout_fraction ${data_flags[*]}"

# run LOG CMD...: runs a set-up command quietly into LOG; on failure shows
# its last lines and stops.
run() {
  local log="$1"; shift
  "$@" >"$log" 2>&1 || { strip_prefix <"$log" | tail -n 5 >&2; fail "set-up step failed, see $log"; }
}

if [ "$(cat "$data/settings" 2>/dev/null)" = "$stamp" ]; then
  say "1-3/6 corpus split, SentencePiece model and records: reused from $data"
else
  rm -rf "$data"
  mkdir -p "$data"
  say "1/6 demo corpus; its last $(awk -v f="$heldout_fraction" 'BEGIN { print f * 100 }')% of documents held out"
  run "$data/corpus.log" "$py" scripts/get_demo_corpus.py \
    --split_dir="$data/text" --heldout_fraction="$heldout_fraction"
  say "2/6 SentencePiece model (vocab $vocab_size, training text only)"
  run "$data/spm.log" "$py" spm_train.py --input="$data/text/train.txt" \
    --model_prefix="$data/spiece" --vocab_size="$vocab_size"
  say "3/6 pretraining records of the training and the held-out text"
  for split in train valid; do
    run "$data/records-$split.log" "$py" data_utils.py \
      --input_glob="$data/text/$split.txt" --sp_path="$data/spiece.model" \
      --save_dir="$data/$split" --split="$split" "${data_flags[@]}"
    strip_prefix <"$data/records-$split.log" | grep -E "^Wrote" || true
  done
  printf '%s\n' "$stamp" > "$data/settings.tmp"
  mv "$data/settings.tmp" "$data/settings"
fi

say "4/6 pretraining a tiny XLNet on the CPU (configs/demo.flags), held-out evaluation every 250 steps"
rm -rf "$out/model"
set +e
"$py" train_gpu.py --flagfile=configs/demo.flags \
  --record_info_dir="$data/train/tfrecords" \
  --eval_record_info_dir="$data/valid/tfrecords" --model_dir="$out/model" \
  ${DEMO_STEPS:+--train_steps="$DEMO_STEPS"} 2>&1 | tee "$out/train.log" \
  | grep --line-buffered -E "\] \| gnorm|\] eval \||error" | strip_prefix
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || fail "training failed (exit $status), see $out/train.log"

say "5/6 what the model learned, on held-out text"
set +e
"$py" scripts/demo_report.py --model_dir="$out/model" \
  --record_info_dir="$data/valid/tfrecords" \
  --train_text="$data/text/train.txt" --heldout_text="$data/text/valid.txt" \
  2>"$out/report.log" | tee "$out/report.txt"
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || { tail -n 3 "$out/report.log" >&2; fail "the report failed (exit $status), see $out/report.log"; }
unigram="$(grep -oE 'held-out targets: [0-9.]+' "$out/report.txt" | awk '{print $NF}')"

say "6/6 loss curves"
png="$out/loss_curves.png"
rm -f "$png"
if [ -z "$plot_py" ] || ! "$plot_py" scripts/plot_loss_curves.py "$out/train.log" "$png" \
    --unigram="$unigram" >/dev/null; then
  png="(not drawn: see the message above)"
fi

last_train="$(grep -oE '\] \| gnorm .*\| loss [0-9.]+' "$out/train.log" | tail -n 1 | awk '{print $NF}')"
last_step="$(grep -oE '\[[0-9]+\] \| gnorm' "$out/train.log" | tail -n 1 | sed -E 's/^\[([0-9]+)\].*/\1/')"
heldout="$(grep -oE '\] eval \| loss [0-9.]+' "$out/train.log" | tail -n 1 | awk '{print $NF}')"
ckpt="$out/model/$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' "$out/model/checkpoint")"
# What the figures depend on besides the code (docs/demo.md quotes its own).
machine="$("$py" -m xlnet.demo.machine 2>/dev/null || echo "(not known)")"
elapsed=$(( $(date +%s) - start ))
say "done in $(( elapsed / 60 ))m $(( elapsed % 60 ))s"
echo "  training loss  $last_train at step $last_step (mean since the previous log line)"
awk -v h="$heldout" -v u="$unigram" 'BEGIN { printf "  held-out loss  %.2f nats per target vs unigram baseline %.2f (perplexity %.0f vs %.0f)\n", h, u, exp(h), exp(u) }'
echo "  machine        $machine"
echo "  checkpoint     $ckpt"
echo "  loss curves    $png"
echo "  TensorBoard:   $py -m tensorboard.main --logdir $out/model"
[ -f "$png" ] || fail "the loss-curve picture was not drawn (matplotlib in .venvs/plot)"
