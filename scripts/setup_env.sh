#!/usr/bin/env bash
# Create (or reuse) a virtual environment under .venvs/NAME from
# requirements/NAME.txt and print its python path on the last line.
#   NAME = reference  -> Python 3.11 + TensorFlow 2.15 (TPUEstimator available)
#   NAME = latest     -> the newest TensorFlow 2.x
#   NAME = plot       -> matplotlib only (the demo's loss-curve picture)
#   NAME = interop    -> the newest TensorFlow + PyTorch (CPU) + transformers (the converter checks)
# Re-running is cheap: the environment is rebuilt only when its requirements
# file changed (a stamp file records the file's checksum).
set -euo pipefail
name="${1:-reference}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$root/requirements/$name.txt"
venv="$root/.venvs/$name"
[ -f "$req" ] || { echo "setup_env.sh: no requirements file $req (expected 'reference', 'latest', 'interop' or 'plot')" >&2; exit 2; }
# TensorFlow 2.15 has wheels for Python 3.9-3.11: prefer python3.11 when present.
py="${PYTHON:-$(command -v python3.11 || command -v python3)}"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.stamp" 2>/dev/null)" = "$want" ]; then
  echo "$venv/bin/python"; exit 0
fi
echo "[setup] creating $venv from requirements/$name.txt (first time only; TensorFlow is a large download)" >&2
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2 2>/dev/null || true
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
echo "$want" > "$venv/.stamp"
echo "$venv/bin/python"
