#!/usr/bin/env bash
# The install a user gets: build the sdist and the wheel, install the wheel (not editable)
# into a new virtual environment, and run inkling through that install from a folder
# outside the source tree: --version, complete, replay of one bundled trace, and serve
# answering initialize and an inlineCompletion over stdio.
#   scripts/check_install.sh [WORK_DIR]     (default: a new temporary folder)
# torch is pinned to the local CPU build (INKLING_TORCH overrides the requirement).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-$(mktemp -d)}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$WORK"
step() { echo "check_install: $*" >&2; }
quiet_pip() {   # pip, its own notes on local package folders left out
    PYTHONWARNINGS=ignore "$@" 2>&1 | { grep -v "^WARNING: Location 'file://" || true; }
}

step "building the sdist and the wheel into $WORK/dist"
"$PYTHON" -m venv "$WORK/build-env"
quiet_pip "$WORK/build-env/bin/python" -m pip install -q build
"$WORK/build-env/bin/python" -m build --sdist --wheel --outdir "$WORK/dist" "$REPO" > "$WORK/build.log" 2>&1 \
    || { tail -20 "$WORK/build.log" >&2; exit 1; }
WHEEL="$(ls "$WORK"/dist/inkling-*.whl)"
SDIST="$(ls "$WORK"/dist/inkling-*.tar.gz)"

step "installing $(basename "$WHEEL") into a new virtual environment"
"$PYTHON" -m venv "$WORK/venv"
quiet_pip "$WORK/venv/bin/python" -m pip install -q "${INKLING_TORCH:-torch==2.13.0}"
quiet_pip "$WORK/venv/bin/python" -m pip install -q "$WHEEL"

# from here on nothing of the source tree: a folder of its own, the repo off every path
RUN="$WORK/run"; mkdir -p "$RUN"; cd "$RUN"
export PYTHONPATH="" PYTHONNOUSERSITE=1
INKLING="$WORK/venv/bin/inkling"
"$WORK/venv/bin/python" - "$WHEEL" "$SDIST" "$REPO" <<'PY'
"""Every module of the source tree is in the wheel and in the sdist, and the inkling
that imports is the installed one."""
import pathlib, sys, tarfile, zipfile
wheel, sdist, repo = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
import ast
tops = next(ast.literal_eval(n.value) for n in ast.parse((repo / "setup.py").read_text()).body
            if isinstance(n, ast.Assign) and n.targets[0].id == "TOP")     # setup.py's list
source = {p.relative_to(repo).as_posix() for top in tops for p in (repo / top).rglob("*.py")}
in_wheel = {n.removeprefix("inkling/") for n in zipfile.ZipFile(wheel).namelist()}
in_sdist = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
for name, held in (("wheel", in_wheel), ("sdist", in_sdist)):
    missing = sorted(source - held)
    if missing:
        sys.exit(f"check_install: the {name} lacks {len(missing)} of the source tree's "
                 f"{len(source)} modules, e.g. {', '.join(missing[:4])}")
import inkling.lsp
if repo in pathlib.Path(inkling.lsp.__file__).resolve().parents:
    sys.exit(f"check_install: inkling was imported from the source tree ({inkling.lsp.__file__})")
print(f"check_install: the wheel and the sdist hold all {len(source)} modules", file=sys.stderr)
PY

step "inkling --version"
"$INKLING" --version

step "inkling complete on the README's demo file"
printf 'class Item:\n    def __init__(self, name, price):\n        self.name = name\n        self.' > demo.py
"$INKLING" complete demo.py --line 4 --col 14 --json > complete.json
"$WORK/venv/bin/python" - <<'PY'
import json, sys
drafts = [d["text"] for d in json.load(open("complete.json"))["drafts"]]
if not drafts or drafts[0] != "price = price":   # what the README says it prints
    sys.exit(f"check_install: the README's demo gave {drafts}, not 'price = price' first")
print(f"check_install: complete gave {drafts}", file=sys.stderr)
PY

step "inkling replay of one bundled trace"
"$INKLING" replay "$REPO/benchmarks/traces/retype-copyreg.jsonl" --json replay.json > /dev/null
"$WORK/venv/bin/python" -c "import json,sys; d=json.load(open('replay.json')); print('check_install: replay metrics', sorted(d)[:6], file=sys.stderr)"

step "inkling serve: initialize and an inlineCompletion over stdio"
"$WORK/venv/bin/python" "$REPO/scripts/lsp_smoke.py" "$INKLING" demo.py 3 13
step "all checks passed"
