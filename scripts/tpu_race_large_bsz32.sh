#!/usr/bin/env bash
# XLNet-Large on RACE on a TPU v3-32: batch 32 (expected accuracy about
# 81.75 on middle+high); the release's script name. Same environment
# variables as scripts/tpu_race_large.sh.
exec env BATCH=32 bash "$(dirname "${BASH_SOURCE[0]}")/tpu_race_large.sh" "$@"
