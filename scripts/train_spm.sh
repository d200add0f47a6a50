#!/usr/bin/env bash
# Train an XLNet SentencePiece model (unigram, released options).
# Usage: scripts/train_spm.sh INPUT[,INPUT...] MODEL_PREFIX [VOCAB_SIZE] [INPUT_SENTENCE_SIZE]
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 INPUT[,INPUT...] MODEL_PREFIX [VOCAB_SIZE=32000] [INPUT_SENTENCE_SIZE=10000000]" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "${PYTHON:-python}" "$root/spm_train.py" --input="$1" --model_prefix="$2" \
  --vocab_size="${3:-32000}" --input_sentence_size="${4:-10000000}"
