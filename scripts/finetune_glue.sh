#!/usr/bin/env bash
# GLUE fine-tuning (train, evaluate every checkpoint on dev, label test) with
# a released XLNet-Large or XLNet-Base model, on the GPUs of one machine or a
# TPU v3-8.
#   GLUE_DIR=/path/to/glue_data XLNET_DIR=/path/to/xlnet_cased_L-24_H-1024_A-16 \
#     NUM_GPUS=4 bash scripts/finetune_glue.sh [task ...]
# Tasks (default: all): cola sst-2 mrpc sts-b qqp mnli qnli rte wnli; "mnli"
# trains mnli_matched and evaluates both mnli_matched and mnli_mismatched
# (the latter with the matched head, --cls_scope=mnli_matched).
# Env: GLUE_DIR (download_glue_data.py layout: CoLA/, SST-2/, MRPC/, STS-B/,
#      QQP/, MNLI/, QNLI/, RTE/, WNLI/) and XLNET_DIR (spiece.model,
#      xlnet_config.json, xlnet_model.ckpt.*) (both required);
#      OUT (default exp/glue-$(basename XLNET_DIR)): records, checkpoints
#      OUT/TASK, dev results OUT/TASK/eval_results.txt, test predictions
#      OUT/predict/TASK.tsv (GLUE submission format);
#      NUM_GPUS (default 1): the global batch is split over them; or
#      TPU_NAME: run on a TPU v3-8 (8 cores, global batch, bfloat16);
#      PYTHON (default: the reference environment); DRY_RUN=1 prints the
#      commands instead of running them. Extra run_classifier.py flags go
#      in EXTRA_FLAGS.
# Settings: those the first author posted for the GLUE figures
# (zihangdai/xlnet#96: batch, lr, steps, warmup, every checkpoint evaluated)
# with the release's run_classifier.py defaults (seq 128 as its README's
# STS-B command, Adam epsilon 1e-8, no weight decay, no layer-wise decay,
# linear decay after warmup), as reproduce.py runs them
# (docs/reproducing.md). QNLI is not in #96: SST-2's setting; WNLI neither:
# ours (about 3 epochs). The checkpoint interval ("save") is ours. #96
# reports the median of 5 runs: reproduce.py --table=glue does that.
# Batches above 32 per step need large GPUs, --accum_steps in EXTRA_FLAGS
# or the TPU (XLNet-Large fits about 8 sequences of 128 on a 16 GB GPU).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
need GLUE_DIR "the GLUE data directory"
need XLNET_DIR "the released XLNet model directory"
OUT="${OUT:-exp/glue-$(basename "$XLNET_DIR")}"
use_python reference

#         task        GLUE dir  batch  lr    steps  warmup  save
settings() {
  case "$1" in
    cola)  echo "cola         CoLA    128    3e-5  3000   500     500" ;;
    sst-2) echo "sst-2        SST-2   32     2e-5  10000  1000    2000" ;;
    mrpc)  echo "mrpc         MRPC    32     5e-5  800    200     400" ;;
    sts-b) echo "sts-b        STS-B   32     5e-5  1200   120     600" ;;
    qqp)   echo "qqp          QQP     128    3e-5  14000  1000    2000" ;;
    mnli)  echo "mnli_matched MNLI    128    3e-5  10000  1000    2000" ;;
    qnli)  echo "qnli         QNLI    32     2e-5  10000  1000    2000" ;;
    rte)   echo "rte          RTE     32     3e-5  800    200     400" ;;
    wnli)  echo "wnli         WNLI    32     2e-5  200    20      100" ;;
    *) echo "finetune_glue.sh: unknown task '$1' (cola sst-2 mrpc sts-b qqp mnli qnli rte wnli)" >&2; return 2 ;;
  esac
}

if [ -n "${TPU_NAME:-}" ]; then
  cores=8
  device=(--use_tpu=True --tpu="$TPU_NAME" --num_hosts=1
          --num_core_per_host=8 --use_bfloat16=True --iterations=100)
else
  cores="${NUM_GPUS:-1}"
  device=(--num_hosts=1 --num_core_per_host="$cores")
fi

model=(--spiece_model_file="$XLNET_DIR/spiece.model"
       --model_config_path="$XLNET_DIR/xlnet_config.json"
       --uncased=False --max_seq_length=128)
# predict TASK MODEL_SUBDIR [FLAG ...]: labels the (unlabelled) test split
# with the latest checkpoint of OUT/MODEL_SUBDIR into OUT/predict/TASK.tsv.
predict() {
  local task="$1" model_dir="$2"
  shift 2
  run "$PYTHON" run_classifier.py \
    --do_predict=True --eval_split=test \
    --task_name="$task" --data_dir="$GLUE_DIR/$dir" \
    --output_dir="$OUT/proc_data" --model_dir="$OUT/$model_dir" \
    --predict_dir="$OUT/predict" "${model[@]}" --predict_batch_size=8 \
    "${device[@]}" "$@" ${EXTRA_FLAGS:-}
}

tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(cola sst-2 mrpc sts-b qqp mnli qnli rte wnli)
for t in "${tasks[@]}"; do
  read -r task dir batch lr steps warmup save <<< "$(settings "$t")"
  # Without a TPU, --train_batch_size is per GPU.
  per_step="$batch"
  if [ -z "${TPU_NAME:-}" ]; then
    if [ $((batch % cores)) -ne 0 ]; then
      echo "finetune_glue.sh: batch $batch of $t is not divisible by NUM_GPUS=$cores" >&2
      exit 2
    fi
    per_step=$((batch / cores))
  fi
  extra=()
  [ "$task" = sts-b ] && extra=(--is_regression=True)
  run "$PYTHON" run_classifier.py \
    --do_train=True --do_eval=True --eval_all_ckpt=True \
    --task_name="$task" --data_dir="$GLUE_DIR/$dir" \
    --output_dir="$OUT/proc_data" --model_dir="$OUT/$task" \
    --init_checkpoint="$XLNET_DIR/xlnet_model.ckpt" "${model[@]}" \
    --train_batch_size="$per_step" --eval_batch_size=8 \
    --learning_rate="$lr" --train_steps="$steps" --warmup_steps="$warmup" \
    --save_steps="$save" --adam_epsilon=1e-8 --weight_decay=0.0 \
    --lr_layer_decay_rate=1.0 --dropout=0.1 --dropatt=0.1 \
    "${device[@]}" "${extra[@]}" ${EXTRA_FLAGS:-}
  predict "$task" "$task" "${extra[@]}"
  if [ "$task" = mnli_matched ]; then
    run "$PYTHON" run_classifier.py \
      --do_eval=True --eval_all_ckpt=True \
      --task_name=mnli_mismatched --cls_scope=mnli_matched \
      --data_dir="$GLUE_DIR/$dir" --output_dir="$OUT/proc_data" \
      --model_dir="$OUT/$task" "${model[@]}" --eval_batch_size=8 \
      "${device[@]}" ${EXTRA_FLAGS:-}
    predict mnli_mismatched "$task" --cls_scope=mnli_matched
  fi
done
