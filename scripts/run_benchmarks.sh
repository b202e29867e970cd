#!/usr/bin/env bash
# Run every benchmark on the bundled model (or MODEL=path) and append what each printed
# to benchmarks/results/NAME.txt (its standard error to NAME.stderr): every run is kept,
# under a header naming its date, commit, weights and the machine's load, so a figure
# quoted anywhere can name the run it comes from. With names (scripts/run_benchmarks.sh
# monitor cache_modes), only those run. OTHER_WORK="..." says what else ran meanwhile.
set -uo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results
mkdir -p "$out"
py=.venv/bin/python
model=(${MODEL:+--model "$MODEL"})
only=" $* "
# what each output's first line names: the commit and the weights it measured
weights=$("$py" - "${MODEL:-models/inkling-tiny}" <<'PY' 2>/dev/null
import json, pathlib, sys
d = pathlib.Path(sys.argv[1]); s = json.loads((d / "train_summary.json").read_text())
print(f"{d.name} step {s.get('steps_done', '?')} of run {len(s.get('runs') or []) or '?'}")
PY
) || weights=${MODEL:-models/inkling-tiny}
commit=$(git rev-parse --short HEAD 2>/dev/null || echo 'no commit')
git diff --quiet HEAD -- . ':!benchmarks/results' 2>/dev/null || commit="$commit with changes"
stamp="at $commit, $weights"
load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?'; }
run() {
    local name=$1; shift
    if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then return; fi
    echo "== $name: $*"
    local header="## run $(date -u +%Y-%m-%dT%H:%MZ) $stamp; load $(load) on $(nproc) cores at the start"
    echo "$header" >> "$out/$name.stderr"
    { echo; echo "$header; other work: ${OTHER_WORK:-none said}"; echo "\$ $*"
      "$@"; echo "# load $(load) at the end"; } 2>>"$out/$name.stderr" | tee -a "$out/$name.txt"
}
run evaluate      .venv/bin/inkling evaluate --write-card
run cpu_layout    $py benchmarks/cpu_layout.py "${model[@]}"
run cache_modes   $py benchmarks/cache_modes.py "${model[@]}"
run cache_modes_psm $py benchmarks/cache_modes.py --fim-order psm "${model[@]}"
run cache_kl      $py benchmarks/cache_kl.py "${model[@]}"
run drafting      $py benchmarks/drafting.py "${model[@]}"
run decoders      $py benchmarks/decoders.py "${model[@]}"
run decoders_suffix $py benchmarks/decoders.py --draft suffix "${model[@]}"
run decoders_no_datastore $py benchmarks/decoders.py --datastore none --decoders superposed "${model[@]}"
run lsp_overhead  $py benchmarks/lsp_overhead.py "${model[@]}"
run thread_choice $py benchmarks/thread_choice.py "${model[@]}"
run defaults      $py benchmarks/defaults.py --runs 3
