#!/usr/bin/env bash
# Create .venv and install inkling with its test tools.
# torch is pinned to the local CPU build; GPU users: install your CUDA build of torch into
# .venv first and run with INKLING_KEEP_TORCH=1 so the pin does not replace it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ "${INKLING_KEEP_TORCH:-0}" != "1" ]; then
    .venv/bin/python -m pip install -q torch==2.13.0
fi
.venv/bin/python -m pip install -q -e '.[dev]'
echo "inkling is installed in .venv (run .venv/bin/inkling --help)"
