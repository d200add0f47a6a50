# Sourced by the run scripts under scripts/: strict mode, the repository
# root as the working directory, and the steps they share. With DRY_RUN=1
# set, each of them prints its commands instead of running them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# need VAR WHAT: stops the script in one line, naming VAR and what it must
# hold, when VAR is unset or empty.
need() {
  [ -n "${!1:-}" ] || { echo "$(basename "$0"): set $1 to $2" >&2; exit 2; }
}

# use_python ENV: PYTHON, unless set, becomes the interpreter of the named
# environment (scripts/setup_env.sh builds it on first use); under DRY_RUN,
# which only prints the commands, "python".
use_python() {
  if [ -n "${DRY_RUN:-}" ]; then PYTHON="${PYTHON:-python}"; return; fi
  PYTHON="${PYTHON:-$(bash scripts/setup_env.sh "$1" | tail -n 1)}"
}

# run COMMAND...: runs it, or under DRY_RUN prints it, shell-quoted.
run() { if [ -n "${DRY_RUN:-}" ]; then printf '%q ' "$@"; echo; else "$@"; fi; }

# launch COMMAND...: the script's last command: becomes it (signals reach
# the program itself), or under DRY_RUN prints it.
launch() { if [ -n "${DRY_RUN:-}" ]; then run "$@"; else exec "$@"; fi; }

# released_model DIR [SPIECE_DIR]: the array `released` holds the flags
# naming a released model's config and checkpoint in DIR and its
# SentencePiece model in SPIECE_DIR (default DIR; on a TPU the checkpoint
# sits in gs:// while the tokenizer is read on this machine).
released_model() {
  released=(--model_config_path="$1/xlnet_config.json"
            --init_checkpoint="$1/xlnet_model.ckpt"
            --spiece_model_file="${2:-$1}/spiece.model")
}

# need_tpu_layout: checks the environment of the release's TPU fine-tuning
# scripts (TPU_NAME; the released model's config and checkpoint in
# INIT_CKPT_DIR on gs://, its spiece.model in LOCAL_INIT_CKPT_DIR on this
# machine; PROC_DATA_DIR and MODEL_DIR on gs://) and sets `released`.
need_tpu_layout() {
  need TPU_NAME "the TPU name (or grpc://ip:port)"
  need INIT_CKPT_DIR "the released XLNet-Large directory on gs://"
  need LOCAL_INIT_CKPT_DIR "the released XLNet-Large directory on this machine"
  need PROC_DATA_DIR "the records directory (gs://)"
  need MODEL_DIR "the checkpoint directory (gs://)"
  released_model "$INIT_CKPT_DIR" "$LOCAL_INIT_CKPT_DIR"
}

# need_pretraining_layout: checks DATA (a data_utils.py --save_dir, holding
# tfrecords/) and MODEL_DIR and sets `pretraining`: the paper's settings of
# configs/pretrain_$CONFIG.flags (CONFIG large or base, default large), the
# records and the checkpoint directory.
need_pretraining_layout() {
  need DATA "the data_utils.py --save_dir (holding tfrecords/)"
  need MODEL_DIR "the checkpoint directory"
  pretraining=(--flagfile="configs/pretrain_${CONFIG:-large}.flags"
               --record_info_dir="$DATA/tfrecords" --model_dir="$MODEL_DIR")
}
