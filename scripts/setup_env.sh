#!/usr/bin/env bash
# Create (or reuse) a virtual environment under .venvs/NAME from
# requirements/NAME.txt and print its python path on the last line.
#   NAME = reference  -> Python 3.11 + TensorFlow 2.15 (TPUEstimator available)
#   NAME = latest     -> the newest TensorFlow 2.x
#   NAME = plot       -> matplotlib only (the demo's loss-curve picture)
#   NAME = interop    -> latest's + PyTorch (CPU) + transformers (the converter checks)
# Re-running is cheap: the environment is rebuilt only when its requirements
# file changed (a stamp file records the file's checksum).
# An environment whose requirements include another's (a line "-r BASE.txt":
# interop includes latest) is built on BASE's: BASE is built first if
# needed, its packages are on this one's path (a .pth file), and pip adds
# only what BASE lacks (for interop: PyTorch and transformers, not a second
# TensorFlow). A rebuilt BASE rebuilds it (its stamp holds BASE's).
# Two runs building one environment take turns (a lock file per name).
set -euo pipefail
name="${1:-reference}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$root/requirements/$name.txt"
venv="$root/.venvs/$name"
[ -f "$req" ] || { echo "setup_env.sh: no requirements file $req (expected 'reference', 'latest', 'interop' or 'plot')" >&2; exit 2; }
mkdir -p "$root/.venvs"
exec 9>"$root/.venvs/.$name.lock"
flock 9
base="$(sed -n 's/^-r[[:space:]]*\([A-Za-z0-9_.-]*\)\.txt[[:space:]]*$/\1/p' "$req" | head -n 1)"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ -n "$base" ]; then
  # The base's interpreter makes this venv: the same Python, as the shared
  # packages need.
  py="$(bash "${BASH_SOURCE[0]}" "$base" | tail -n 1)"
  want="$want $(cat "$root/.venvs/$base/.stamp")"
else
  # TensorFlow 2.15 has wheels for Python 3.9-3.11: prefer python3.11 when present.
  py="${PYTHON:-$(command -v python3.11 || command -v python3)}"
fi
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.stamp" 2>/dev/null)" = "$want" ]; then
  echo "$venv/bin/python"; exit 0
fi
rm -rf "$venv"
# What each environment takes on disk once installed, plus room for pip to
# unpack wheels (GB): checked first, so a full disk is one line, not pip's.
case "$name" in plot) need=1 ;; *) need=3 ;; esac
free="$(df -Pk "$root/.venvs" | awk 'NR == 2 {print int($4 / 1048576)}')"
if [ "$free" -lt "$need" ]; then
  echo "setup_env.sh: ${free} GB free on the disk of $root/.venvs; the '$name' environment needs about ${need} GB: free some space and run again" >&2
  exit 1
fi
echo "[setup] creating $venv from requirements/$name.txt (first time only; TensorFlow is a large download)" >&2
# A failed install leaves no half-built environment behind.
trap 'rm -rf "$venv"' ERR
pip_install=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir)
if [ -n "$base" ]; then
  # Its pip is the base's, found on the path like the rest.
  "$py" -m venv --without-pip "$venv"
  "$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
    >"$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_$base.pth"
else
  "$py" -m venv "$venv"
  "${pip_install[@]}" --upgrade pip >&2 2>/dev/null || true
fi
"${pip_install[@]}" -r "$req" >&2
trap - ERR
echo "$want" > "$venv/.stamp"
echo "$venv/bin/python"
