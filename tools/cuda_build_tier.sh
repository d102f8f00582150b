#!/usr/bin/env bash
# make test-cuda-build: the CUDA build path on a GPU-less machine, with a CUDA build of torch.
#
# A venv with torch 2.14.1 (CUDA 13) and the pip CUDA toolkit is kept under
# ${XCOMPAT_CACHE:-$HOME/.cache/xcompat-ci}/cuda-build/venv-<key> (key: the requirements and
# the Python version; older ones are removed), with pip's download cache beside it. Then
# tests/cuda_build builds the kernels and the sample's CUDA part through xcompat's own code
# and checks that they link, load, register their kernels and carry the matrix's archs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${XCOMPAT_CACHE:-$HOME/.cache/xcompat-ci}"
PYTHON="${CUDA_BUILD_PYTHON:-python3}"
REQ="$ROOT/tests/cuda_build/requirements.txt"
KEY="$( { cat "$REQ"; "$PYTHON" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)"
VENV="$CACHE/cuda-build/venv-$KEY"
start=$(date +%s)

mkdir -p "$CACHE/cuda-build"
if [ ! -f "$VENV/.complete" ]; then
  echo "test-cuda-build: creating $VENV (torch 2.14.1 CUDA 13 + pip CUDA toolkit, about 5.6 GB)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  log="$CACHE/cuda-build/pip-install.log"
  if ! PIP_CACHE_DIR="$CACHE/cuda-build/pip-cache" "$VENV/bin/python" -m pip install --quiet \
      --disable-pip-version-check -r "$REQ" >"$log" 2>&1; then
    grep -v "^WARNING: Location" "$log" | tail -40
    echo "test-cuda-build: installing the venv failed (full log: $log)"
    exit 4
  fi
  touch "$VENV/.complete"
fi
for old in "$CACHE"/cuda-build/venv-*; do
  if [ "$old" != "$VENV" ] && [ -f "$old/.complete" ]; then rm -rf "$old"; fi
done
echo "test-cuda-build: venv ready after $(( $(date +%s) - start )) s"

cd "$ROOT"
status=0
XCOMPAT_CUDA_BUILD_TIER=1 PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}" XCOMPAT_CACHE="$CACHE" \
  MAX_JOBS="${MAX_JOBS:-2}" \
  nice -n 10 "$VENV/bin/python" -m pytest tests/cuda_build -q -p no:cacheprovider -rs "$@" || status=$?
echo "test-cuda-build: done after $(( $(date +%s) - start )) s (exit $status)"
exit $status
