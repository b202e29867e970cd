#!/usr/bin/env bash
# Run the benchmark suite (benchmarks/suite.py: --quick, --only a,b, --list): each run is
# appended to benchmarks/store/<name>.jsonl and docs/benchmarks.md's tables regenerated.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python benchmarks/suite.py "$@"
