"""The model zoo's full-size models as a person who brings one meets them: each run by
`inkling complete` and `inkling serve` in fresh processes, beside llama-server holding the same
model as llama.cpp's own Q8_0 conversion. It backs the table in docs/model-zoo.md.

    python benchmarks/zoo_table.py [--zoo NAMES] [--rounds 2] [--quick] [--json OUT]

Per model, with the default settings:
- what the load chose (`inkling complete --json`): forward, weights as held, FIM format;
- `inkling complete` wall seconds and peak memory from a cold start (the model's kept panels
  and config record removed: its first start on this machine) and warm (the median of
  ``--rounds``), on the document and on the README's four-line check;
- `inkling serve` over stdio: seconds from spawning the server to its ready status and to
  the first inline completion's answer (the request sent once ready), its resident memory
  then, and once idle (``cache.idle_refresh_ms`` and a second later: its idle work gives the
  heap back);
- llama-server (`-c 4096`, built by benchmarks/peer_llamacpp.py) on the Q8_0 file: its
  resident memory after one completion of the same prompt.
Each model's cases run in turn on the quiet machine; the zoo makes what is missing
(scripts/model_zoo.py). The bundled model runs first (its peer figures are benchmarks/peer_llamacpp.py's).
``--quick``: the few-layer Qwen2.5, one round."""
from __future__ import annotations

import asyncio
import json
import os
import tempfile
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from common import native_layers_built, parser, write_json  # noqa: E402
from peer_llamacpp import DEFAULT_CACHE, LlamaServer, PeerError, built_server  # noqa: E402

import model_zoo  # noqa: E402
from lsprotocol import types as lsp  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.models import BUNDLED_MODEL_DIR  # noqa: E402
from inkling.runtime import model_config, panel_cache  # noqa: E402

INKLING = Path(sys.executable).with_name("inkling")
SOURCE = Path(__file__).resolve().parents[1] / "runtime" / "kv_buffers.py"   # the document


def parse_args():
    ap = parser(__doc__, model=False)
    ap.add_argument("--zoo", default="bundled,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b,"
                                     "deepseek-coder-1.3b-base,llama-3.2-1b,starcoder2-3b",
                    help="zoo models, comma-separated (bundled: the bundled model)")
    ap.add_argument("--variant", default="full")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    if a.quick:
        a.zoo, a.variant, a.rounds = "qwen2.5-coder-0.5b", "tiny", 1
    return a


def document(tmp: Path) -> tuple[Path, int, int]:
    """A Python file of about 600 tokens, the cursor after an open line's first word."""
    lines = SOURCE.read_text().splitlines()[:80]
    at = max(i for i, line in enumerate(lines) if line.strip().startswith("return "))
    word = len(lines[at]) - len(lines[at].lstrip()) + len("return ")
    text = "\n".join(lines[:at] + [lines[at][:word]] + lines[at + 1:]) + "\n"
    path = tmp / "document.py"
    path.write_text(text)
    return path, at + 1, word + 1                           # 1-based, as the CLI takes them


def readme_demo(tmp: Path) -> tuple[Path, int, int]:
    """The README's check: a four-line class, the cursor after ``self.``."""
    path = tmp / "demo.py"
    path.write_text("class Item:\n    def __init__(self, name, price):\n"
                    "        self.name = name\n        self.")
    return path, 4, 14


def forget(folder: Path) -> None:
    """Remove what a start keeps for this model: its panels and its config record."""
    panel_cache.cache_file(folder).unlink(missing_ok=True)
    model_config.record_file(folder).unlink(missing_ok=True)


def complete(folder: Path, doc: tuple[Path, int, int]) -> dict:
    """`inkling complete --json` in a fresh process: wall seconds, peak MB, what it chose."""
    path, line, col = doc
    cmd = [str(INKLING), "complete", str(path), "--line", str(line), "--col", str(col),
           "--model", str(folder), "--json"]
    out, err = path.with_suffix(".out"), path.with_suffix(".err")
    with out.open("w") as stdout, err.open("w") as stderr:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr)
        _, code, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(code)
    if proc.returncode:
        raise SystemExit(f"zoo_table: {' '.join(cmd)} failed:\n{err.read_text()[-2000:]}")
    return {"wall_s": wall, "peak_mb": usage.ru_maxrss / 1e3,
            "model": json.loads(out.read_text())["model"]}


def memory_mb(pid: int) -> tuple[float, float]:
    """(resident, peak resident) MB of process ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text()
    field = lambda name: int(status.split(f"{name}:")[1].split()[0]) / 1e3   # noqa: E731
    return field("VmRSS"), field("VmHWM")


async def serve_first(folder: Path, doc: tuple[Path, int, int]) -> dict:
    """Seconds from spawning `inkling serve` to ready and to the first inline completion's
    answer, the server's resident memory then and once idle, and its peak."""
    path, line, col = doc
    client, status = LanguageClient("zoo-table", "1"), {}

    @client.feature("inkling/status")
    def on_status(params):
        status.update(params._asdict() if hasattr(params, "_asdict") else dict(params))

    @client.feature(lsp.WINDOW_LOG_MESSAGE)
    def on_log(params):                  # the server's log lines: not this table's business
        pass

    options = InklingOptions().merged({"model": {"path": str(folder)}})
    t0 = time.perf_counter()
    await client.start_io(str(INKLING), "serve")
    pid = client._server.pid
    await client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(), root_uri=path.parent.as_uri(),
        initialization_options=asdict(options)))
    client.initialized(lsp.InitializedParams())
    uri = path.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=path.read_text())))
    while status.get("state") not in ("ready", "error"):
        await asyncio.sleep(0.02)
    if status["state"] == "error":
        raise SystemExit(f"zoo_table: inkling serve: {status.get('message')}")
    ready = time.perf_counter() - t0
    items = await client.text_document_inline_completion_async(lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=lsp.Position(line=line - 1, character=col - 1),
        context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Invoked)))
    first = time.perf_counter() - t0
    answered, _ = memory_mb(pid)
    await asyncio.sleep(options.cache.idle_refresh_ms / 1000 + 1.0)
    resident, peak = memory_mb(pid)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    drafts = len(items.items if isinstance(items, lsp.InlineCompletionList) else items or [])
    return {"ready_s": ready, "first_s": first, "answered_mb": answered, "resident_mb": resident,
            "peak_mb": peak, "drafts": drafts}


def llama_resident(name: str, variant: str, doc: tuple[Path, int, int]
                   ) -> tuple[float | None, str]:
    """(llama-server's resident MB on the model's Q8_0 file after one completion of the
    document's prefix, "") or (None, why not: no llama-server built, or it refused the file)."""
    binary = built_server(DEFAULT_CACHE)
    if binary is None:
        return None, "no llama-server built"
    if name == "bundled":
        return None, "(benchmarks/peer_llamacpp.py)"
    gguf = model_zoo.gguf_file(name, variant, "q8_0")
    log = Path(f"/tmp/zoo_table_{name}.log")
    try:
        server = LlamaServer(binary, gguf, 2, ("-c", "4096"), log).start(600)
    except PeerError:
        failed = [x for x in log.read_text().splitlines() if "failed" in x or "error" in x]
        return None, "llama-server refused the file: " + (failed[-1].split(": ", 1)[-1]
                                                           if failed else f"see {log}")
    try:
        path, line, _ = doc
        prefix = "\n".join(path.read_text().splitlines()[:line])
        server.post("/completion", {"prompt": prefix, "n_predict": 16, "temperature": 0,
                                    "cache_prompt": False})
        return memory_mb(server.proc.pid)[0], ""
    finally:
        server.stop()


def one_model(name: str, a, doc, demo) -> tuple[dict, str]:
    folder = BUNDLED_MODEL_DIR if name == "bundled" else model_zoo.model_dir(name, a.variant)
    forget(folder)
    cold = complete(folder, doc)
    warm, short = [], []
    for _ in range(a.rounds):
        warm.append(complete(folder, doc))
        short.append(complete(folder, demo))
    served = asyncio.run(serve_first(folder, doc))
    llama_mb, why = llama_resident(name, a.variant, doc)
    m = warm[-1]["model"]          # what a start after the first runs (the cold one may
    #                                 run the compact forward while the native one builds)
    figures = {"cold_s": cold["wall_s"], "warm_s": statistics.median(w["wall_s"] for w in warm),
               "demo_warm_s": statistics.median(w["wall_s"] for w in short),
               "complete_peak_mb": max(w["peak_mb"] for w in [cold, *warm]),
               "serve_ready_s": served["ready_s"], "serve_first_s": served["first_s"],
               "serve_resident_mb": served["resident_mb"], "serve_peak_mb": served["peak_mb"],
               "serve_answered_mb": served["answered_mb"],
               "parameters_m": m["parameters"] / 1e6}
    peer = why
    if llama_mb is not None:
        figures["llama_cpp_resident_mb"] = llama_mb
        figures["resident_ratio"] = served["resident_mb"] / llama_mb
        peer = f"{llama_mb:.0f} MB ({figures['resident_ratio']:.2f}x)"
    row = (f"| {name} | {m['parameters'] / 1e6:.0f} M | {m['family']} | {m['forward']} | "
           f"{m['held_as']} | {served['resident_mb']:.0f} / {served['answered_mb']:.0f} / "
           f"{served['peak_mb']:.0f} MB | "
           f"{peer} | {m['fim']} {m['fim_order']} | {cold['wall_s']:.1f} s | "
           f"{figures['warm_s']:.1f} s | {figures['demo_warm_s']:.1f} s | "
           f"{served['ready_s']:.1f} / {served['first_s']:.1f} s |")
    return figures, row


def main() -> int:
    a = parse_args()
    why = native_layers_built()        # "cold" is a model's first start, not the machine's
    if why:
        print(f"zoo_table: without the native layers: {why}")
    loads = [os.getloadavg()[0]]
    figures: dict = {}
    lines = ["| model | parameters | family | forward | weights held as | serve resident: idle / "
             "answered / peak "
             "| llama.cpp Q8_0 resident | FIM | complete cold | complete warm | complete warm, "
             "README demo | serve: ready / first completion |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="zoo-table-") as tmp:
        doc, demo = document(Path(tmp)), readme_demo(Path(tmp))
        for name in a.zoo.split(","):
            figures[name], row = one_model(name, a, doc, demo)
            lines.append(row)
            print(row, flush=True)
            loads.append(os.getloadavg()[0])
    lines.append(f"load average (1 min) {min(loads):.2f} to {max(loads):.2f}; "
                 f"{a.rounds} warm rounds")
    figures["load_average_max"] = max(loads)
    print("\n".join(lines))
    write_json(a.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
