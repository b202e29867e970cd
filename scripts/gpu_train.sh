#!/usr/bin/env bash
# A training run on the GPU machine (no network; inkling not installed there): the
# repository, as it travels, is made importable as the package `inkling`, and
# training/gpu_run.py runs with the machine's own Python. Arguments go to gpu_run
# (--out is required). Usage, from the repository root:
#   scripts/gpu_train.sh --out "$OUT" --minutes 9 --init models/inkling-tiny
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-$(command -v /opt/torch/.venv/bin/python3 || command -v python3)}"
pkg="$(mktemp -d)"
ln -s "$root" "$pkg/inkling"
cd "$root"
PYTHONPATH="$pkg${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 \
  "$python" -m inkling.training.gpu_run --data "$root/packed" "$@"
