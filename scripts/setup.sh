#!/usr/bin/env bash
# Create .venv and install inkling into it (editable, from this clone).
#   ./scripts/setup.sh          the server, the command line and the replay's report plots
#   ./scripts/setup.sh --dev    everything a developer runs: the tests, Ray, training
# torch is pinned to the local CPU build; GPU users: install your CUDA build of torch into
# .venv first and run with INKLING_KEEP_TORCH=1 so the pin does not replace it.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
    "") extras="report" ;;
    --dev) extras="dev" ;;
    *) echo "usage: $0 [--dev]" >&2; exit 2 ;;
esac
python3 -m venv .venv
# pip, quiet: no Python warnings from the build backend (setuptools' notes on editable
# installs), and a machine whose pip configuration names local package folders that do
# not exist makes pip warn about each one on every install: those lines are not shown
pip_install() {
    PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q "$@" 2>&1 \
        | { grep -v "^WARNING: Location 'file://" || true; }
}
pip_install --upgrade pip
if [ "${INKLING_KEEP_TORCH:-0}" != "1" ]; then
    pip_install torch==2.13.0
fi
pip_install -e ".[$extras]"
# the native CPU forward, compiled once per machine (about half a minute); without a
# compiler inkling serves with the compact forward, so a failed build does not stop here
.venv/bin/inkling build-native \
    || echo "the native forward did not build; inkling runs the compact forward (docs/troubleshooting.md)"
echo "inkling is installed in .venv (run .venv/bin/inkling --help)"
