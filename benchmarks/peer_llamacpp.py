"""inkling against llama.cpp on the same model, side by side in one run (issue 24).

    .venv/bin/python benchmarks/peer_llamacpp.py [--limit N] [--threads 2[,1]]
        [--inkling-threads 1,2] [--inkling-forward compact] [--traces FILE_OR_DIR ...]
        [--cache-dir DIR] [--gguf-type f32|f16|q8_0] [--checks-only]
        [--zoo qwen2.5-coder-0.5b [--variant full]]

What it does:

1. gets llama.cpp's source from the pinned PyPI sdist ``llama-cpp-python==0.3.36`` (it
   vendors llama.cpp under vendor/llama.cpp) with ``pip download``, and builds
   ``llama-server`` (CPU, Release, ``-DLLAMA_CURL=OFF``, the server target only, under
   ``nice``) into the cache folder (default ``~/.cache/inkling/llamacpp-0.3.36``). The
   build takes 20 to 30 minutes on 2 cores, once; later runs reuse it. Its log is
   ``build.log`` there.
2. converts the bundled model to GGUF f32 (``--gguf-type f16``: f16) with llama.cpp's own
   ``convert_hf_to_gguf.py``
   and its vendored ``gguf-py`` (run in a subprocess of this venv's Python; what the
   converter needs is pip-installed, pinned, only when missing). The bundled tokenizer is
   a byte-level BPE with GPT-2's pre-tokenizer, whose hash the converter does not know:
   the converter is imported as a module and its ``get_vocab_base_pre`` maps it to
   ``gpt-2`` (after checking that tokenizer.json's pre-tokenizer is GPT-2's); the FIM
   token ids (prefix, suffix, middle, and ``<|file_sep|>`` as the file separator) and
   ``add_bos_token = false`` are written into the GGUF. No file of llama.cpp is edited.
   The GGUF is cached, keyed by a hash of the weights, config and tokenizer.
3. checks that both sides agree: the tokenizers on a few texts (llama-server
   ``/tokenize``; a difference exits with status 2), and 32 greedy tokens of 12 prompts
   (plain and FIM, code from the traces): transformers' forward (inkling's reference
   path) against llama-server ``/completion`` given the same token ids.
4. replays edit traces through inkling and, at each completion event of the same
   replay, through llama-server: the systems are asked in a shuffled order at every
   completion (interleaved, so machine noise hits all alike):

   * ``inkling serve``: inkling with its defaults as an editor runs it, a server
     subprocess driven over stdio by an LSP client (``inkling replay --via-lsp``'s), timed
     by the client from the request to the answer, as llama-server is timed by its HTTP
     client: the headline column, each side over its own wire; beside it the server
     Engine's own latency of the same requests (the in-process figure);
   * in process (an Engine per trace, driven exactly as ``inkling replay`` drives it):
     inkling with its defaults, and inkling with ``completion.draft=none`` (one token per
     forward); by default the native forward's thread count is the runtime's choice, one
     thread or every core, whichever measures faster as it runs (runtime/thread_choice.py);
     with ``--inkling-threads 1,2``, inkling with its defaults again, its forward pinned
     on 1 and on 2 threads; with ``--inkling-forward compact``, inkling with its defaults and
     ``model.forward compact`` (a column 'inkling forward=compact', on the runtime's
     threads: the defaults run the native forward where it builds);
   * llama-server ``/completion`` given the token ids of inkling's own prompt for that
     completion, ``cache_prompt`` on, greedy, one slot, ``n_predict`` = inkling's token
     budget, streamed: the client ends the completion where inkling's stop rule ends it
     (a line's end, a block's dedent, after token healing's text; llama-server's stop
     strings cannot say "the newline after the healed token's"), and the latency is
     measured there;
   * llama-server ``/infill`` as llama.vim sends it (256 lines before the cursor line and
     64 after, the cursor line's prefix as ``prompt``, ``n_indent``, ``n_predict`` 128,
     ``t_max_predict_ms`` 250, the ``top_k``/``top_p``/``infill`` samplers, but ``top_k`` 1
     so that it is deterministic; ``input_extra`` empty: a replay has no ring buffer of
     yanked chunks, and there are no speculative follow-up requests), the server started
     with ``--cache-reuse 256`` and a batch size that keeps the prompt within the model's
     trained context (1024: ``-b 864``), as llama.vim advises.

   It prints one table (a column per system) and the issue's ratios.

``--zoo NAME``: a model of the zoo (scripts/model_zoo.py: a public config at full size,
its real tokenizer, random weights) in place of the bundled model, inkling on its folder with
its defaults and llama-server on the zoo's own Q8_0 conversion of it (``--gguf-type``); the
tokenizers are checked, the greedy tokens not (benchmarks/gguf_agreement.py compares a
GGUF file with its folder), and the suggestions of random weights mean nothing: the
latencies are the figures.

Traces: ``benchmarks/traces/*.jsonl``, the held-out toolz retype traces (written as
``benchmarks/defaults.py`` writes them; ``pip download toolz==1.0.0``) and
``../shared/traces/*.jsonl`` when that folder exists; ``--traces`` replaces them.

Needs: cmake, a C++ compiler, ninja or make, and PyPI (the sdist, once; toolz). Not in
CI. The replay of the default traces takes about 10 to 15 minutes on 2 cores.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.client
import json
import math
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import native_layers_built, parser, toolz_builders, write_json  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import model_zoo  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LCP_VERSION = "0.3.36"
SDIST = f"llama-cpp-python=={LCP_VERSION}"
DEFAULT_CACHE = Path.home() / ".cache" / "inkling" / f"llamacpp-{LCP_VERSION}"
GREEDY_TOKENS = 32
SERVER_ARGS = ("-c", "2048", "-ub", "512", "-np", "1", "--no-webui")


def cpu_args() -> tuple[str, ...]:
    """``--no-repack`` on a CPU with AMX: llama.cpp's AMX matrix products (weights repacked
    for them at load) segfault on this machine's Xeon (ggml_backend_amx_mul_mat, 0.3.36's
    llama.cpp), so its AVX-512 products over the GGUF's own blocks run instead."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ()
    return ("--no-repack",) if "amx_int8" in flags else ()
# llama.vim's request (autoload/llama.vim, llama#fim): its defaults
VIM_N_PREFIX, VIM_N_SUFFIX, VIM_N_PREDICT, VIM_T_MAX_PREDICT_MS = 256, 64, 128, 250
# what convert_hf_to_gguf.py imports besides torch (module -> the pinned package)
CONVERTER_NEEDS = {"numpy": "numpy==2.2.6", "yaml": "pyyaml==6.0.2",
                   "requests": "requests==2.32.3", "tqdm": "tqdm==4.67.1",
                   "transformers": "transformers==4.57.6", "safetensors": "safetensors==0.5.3"}


SERVED = "inkling serve"      # the system timed through `inkling serve` over stdio


class PeerError(Exception):
    """A step that cannot go on; the message says what to do."""


# ------------------------------------------------------------------------- build
def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _run_logged(cmd: list[str], log: Path, what: str, cwd: Path | None = None) -> None:
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd).returncode
    if rc != 0:
        raise PeerError(f"{what} failed (exit {rc}); the log's tail:\n{_tail(log)}\n"
                        f"full log: {log}")


def fetch_sdist(cache: Path) -> Path:
    """The llama-cpp-python sdist in the cache, downloaded once with pip."""
    folder = cache / "sdist"
    found = sorted(folder.glob(f"llama_cpp_python-{LCP_VERSION}.tar.gz"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    print(f"downloading {SDIST} (sdist) into {folder}", file=sys.stderr)
    _run_logged([sys.executable, "-m", "pip", "download", SDIST, "--no-binary", ":all:",
                 "--no-deps", "-d", str(folder)], cache / "download.log", "pip download")
    found = sorted(folder.glob(f"llama_cpp_python-{LCP_VERSION}.tar.gz"))
    if not found:
        raise PeerError(f"pip download {SDIST} gave no sdist in {folder}")
    return found[0]


def llama_source(cache: Path) -> Path:
    """vendor/llama.cpp of the sdist, unpacked once into the cache."""
    src = cache / "src" / f"llama_cpp_python-{LCP_VERSION}" / "vendor" / "llama.cpp"
    if (src / "CMakeLists.txt").is_file():
        return src
    sdist = fetch_sdist(cache)
    with tarfile.open(sdist) as tar:
        tar.extractall(cache / "src", filter="data")
    if not (src / "CMakeLists.txt").is_file():
        raise PeerError(f"{sdist.name} has no vendor/llama.cpp (looked for {src})")
    return src


def cmake_args(src: Path, build: Path) -> list[str]:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    return ["cmake", "-S", str(src), "-B", str(build), *generator,
            "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
            "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_UI=OFF",
            "-DLLAMA_USE_PREBUILT_UI=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_CUDA=OFF",
            "-DGGML_METAL=OFF"]


def _server_works(binary: Path) -> bool:
    try:
        return subprocess.run([str(binary), "--version"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def built_server(cache: Path) -> Path | None:
    """llama-server where ``build_server`` left it and it runs, else None."""
    binary = cache / "build" / "bin" / "llama-server"
    return binary if binary.is_file() and _server_works(binary) else None


def skip_quick(args, cache: Path) -> bool:
    """Under ``--quick`` with no llama-server built (a build takes half an hour): say so and
    write ``{"skipped": 1}``; a full run builds it."""
    if not args.quick or built_server(cache):
        return False
    print(f"skipped: no llama-server built in {cache} (a full run builds it)")
    write_json(args.json, {"skipped": 1})
    return True


def build_server(cache: Path) -> Path:
    """llama-server, built once into ``cache/build`` (20 to 30 minutes on 2 cores)."""
    binary = cache / "build" / "bin" / "llama-server"
    if built_server(cache):
        return binary
    if shutil.which("cmake") is None:
        raise PeerError("cmake is not installed (apt-get install cmake, or pip install cmake); "
                        "it builds llama-server")
    if shutil.which("c++") is None and shutil.which("g++") is None:
        raise PeerError("no C++ compiler (apt-get install g++): it builds llama-server")
    src = llama_source(cache)
    log = cache / "build.log"
    print(f"building llama-server from {src} (20 to 30 minutes on 2 cores, once); "
          f"log: {log}", file=sys.stderr)
    nice = ["nice", "-n", "10"]
    _run_logged(nice + cmake_args(src, cache / "build"), log, "cmake configure")
    _run_logged(nice + ["cmake", "--build", str(cache / "build"), "--config", "Release",
                        "--target", "llama-server", "-j", str(os.cpu_count() or 2)],
                log, "the llama-server build")
    if not _server_works(binary):
        raise PeerError(f"the build finished but {binary} does not run; log: {log}")
    return binary


# ----------------------------------------------------------------------- convert
# Run with this venv's Python: argv = llama.cpp source, model folder, output, FIM ids (JSON)
CONVERT_DRIVER = r'''
import json, logging, sys
src, model_dir, out, ids = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
outtype = sys.argv[5]
sys.path[:0] = [src, src + "/gguf-py"]
import gguf
from conversion.base import TextModel, logger
from conversion.llama import LlamaModel

known_pre = TextModel.get_vocab_base_pre

def gpt2_pre_tokenizer(model_dir):
    with open(model_dir + "/tokenizer.json", encoding="utf-8") as f:
        pre = json.load(f).get("pre_tokenizer") or {}
    return (pre.get("type") == "ByteLevel" and pre.get("use_regex", True)
            and not pre.get("add_prefix_space", False))

def get_vocab_base_pre(self, tokenizer):
    """The converter's hash table first; an unknown hash of GPT-2's own byte-level
    pre-tokenizer (regex on, no prefix space) is GPT-2's: 'gpt-2'."""
    level = logger.level
    logger.setLevel(logging.ERROR)          # the table's 'not recognized' banner
    try:
        return known_pre(self, tokenizer)
    except NotImplementedError:
        pass
    finally:
        logger.setLevel(level)
    if not gpt2_pre_tokenizer(str(self.dir_model)):
        raise ValueError(f"{self.dir_model}/tokenizer.json: its pre-tokenizer is neither in "
                         "llama.cpp's converter table nor GPT-2's byte-level one; this "
                         "benchmark cannot map it")
    logger.info("pre-tokenizer hash not in the converter's table; tokenizer.json's "
                "pre-tokenizer is GPT-2's byte-level one: gpt-2")
    return "gpt-2"

def set_vocab(self):
    """GPT-2 BPE vocab (no sentencepiece), then the FIM ids and no BOS."""
    self._set_vocab_gpt2()
    w = self.gguf_writer
    keys = gguf.Keys.Tokenizer
    for key, name in ((keys.FIM_PRE_ID, "prefix"), (keys.FIM_SUF_ID, "suffix"),
                      (keys.FIM_MID_ID, "middle"), (keys.FIM_SEP_ID, "file_sep")):
        if ids.get(name) is not None:
            w.add_uint32(key, ids[name])
    if not any(keys.ADD_BOS in kv for kv in w.kv_data):
        w.add_add_bos_token(False)

TextModel.get_vocab_base_pre = get_vocab_base_pre
LlamaModel.set_vocab = set_vocab
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py", model_dir, "--outtype", outtype, "--outfile", out]
convert_hf_to_gguf.main()
'''


def model_key(model_dir: Path) -> str:
    """A hash of the model's weights, config and tokenizer (the GGUF's cache key)."""
    h = hashlib.sha256()
    files = sorted(model_dir.glob("*.safetensors")) + [
        model_dir / n for n in ("config.json", "tokenizer.json", "tokenizer_config.json")]
    for f in files:
        if f.is_file():
            h.update(f.name.encode())
            with f.open("rb") as data:
                for block in iter(lambda: data.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:16]


def ensure_converter_needs(cache: Path) -> None:
    """pip-install (pinned) what the converter imports and this venv lacks."""
    missing = []
    for module, package in CONVERTER_NEEDS.items():
        probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
        if probe.returncode != 0:
            missing.append(package)
    if missing:
        print(f"installing the converter's needs: {' '.join(missing)}", file=sys.stderr)
        _run_logged([sys.executable, "-m", "pip", "install", *missing],
                    cache / "pip.log", "pip install")


def fim_ids(runtime) -> dict:
    f = runtime.fim
    if f is None:
        raise PeerError(f"{runtime.path} has no fill-in-the-middle tokens")
    out = {"prefix": runtime.token_id(f.prefix), "suffix": runtime.token_id(f.suffix),
           "middle": runtime.token_id(f.middle)}
    if f.file_sep:
        out["file_sep"] = runtime.token_id(f.file_sep)
    return out


def convert_model(cache: Path, model_dir: Path, ids: dict, outtype: str = "f32") -> Path:
    """The bundled model as GGUF ``outtype`` (f32 or f16), converted once per model key."""
    src = llama_source(cache)
    key = model_key(model_dir)
    out = cache / "gguf" / f"{model_dir.name}-{key}-{outtype}.gguf"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    ensure_converter_needs(cache)
    log = cache / "gguf" / f"convert-{key}-{outtype}.log"
    log.write_text("")
    print(f"converting {model_dir} to {out.name}; log: {log}", file=sys.stderr)
    tmp = out.with_suffix(".part")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with log.open("a") as f:
        rc = subprocess.run([sys.executable, "-c", CONVERT_DRIVER, str(src), str(model_dir),
                             str(tmp), json.dumps(ids), outtype], stdout=f,
                            stderr=subprocess.STDOUT, cwd=src, env=env).returncode
    if rc != 0 or not tmp.is_file():
        raise PeerError(f"the GGUF conversion failed (exit {rc}); the log's tail:\n"
                        f"{_tail(log)}\nfull log: {log}")
    tmp.rename(out)
    return out


# ------------------------------------------------------------------------ server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One llama-server subprocess on a free local port, and a keep-alive client."""

    def __init__(self, binary: Path, gguf: Path, threads: int, extra: tuple[str, ...],
                 log: Path):
        self.port, self.threads, self.log = free_port(), threads, log
        self.cmd = [str(binary), "-m", str(gguf), "--host", "127.0.0.1", "--port",
                    str(self.port), "-t", str(threads), *SERVER_ARGS, *cpu_args(), *extra]
        self.proc: subprocess.Popen | None = None
        self.conn: http.client.HTTPConnection | None = None

    def start(self, timeout: float = 120.0) -> "LlamaServer":
        out = self.log.open("w")
        out.write("$ " + " ".join(self.cmd) + "\n")
        out.flush()
        self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PeerError(f"llama-server exited ({self.proc.returncode}) at start:\n"
                                f"{_tail(self.log)}\nlog: {self.log}")
            with contextlib.suppress(OSError, http.client.HTTPException, ValueError, PeerError):
                status, _ = self._request("GET", "/health", None)
                if status == 200:
                    return self
            self._reset()
            time.sleep(0.2)
        raise PeerError(f"llama-server did not answer /health in {timeout:.0f} s; "
                        f"log: {self.log}")

    def _reset(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def _send(self, method: str, path: str, body: dict | None
              ) -> tuple[http.client.HTTPResponse, float]:
        """(the response, its start on perf_counter); a dropped keep-alive connection is
        opened again once."""
        data = None if body is None else json.dumps(body)
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
            t0 = time.perf_counter()
            try:
                self.conn.request(method, path, body=data,
                                  headers={"Content-Type": "application/json"})
                return self.conn.getresponse(), t0
            except (OSError, http.client.HTTPException) as exc:
                self._reset()
                if attempt == 2:
                    raise PeerError(f"llama-server {path}: {exc}") from None
        raise AssertionError

    def _done(self, resp: http.client.HTTPResponse) -> None:
        if resp.will_close:
            self._reset()

    def _request(self, method: str, path: str, body: dict | None) -> tuple[int, dict]:
        resp, _ = self._send(method, path, body)
        answer = json.loads(resp.read() or b"{}")
        self._done(resp)
        return resp.status, answer

    def post(self, path: str, body: dict) -> tuple[dict, float]:
        """(the answer, wall milliseconds of the request through local HTTP)."""
        resp, t0 = self._send("POST", path, body)
        answer = json.loads(resp.read() or b"{}")
        ms = (time.perf_counter() - t0) * 1000
        self._done(resp)
        if resp.status != 200:
            raise PeerError(f"llama-server {path} answered {resp.status}: {str(answer)[:300]}")
        return answer, ms

    def stream(self, path: str, body: dict, done) -> "Streamed":
        """``body`` streamed (``timings`` in every event); ``done(text, final)`` says when
        the client has its answer: the wall time then is the latency. The rest of the
        stream is read to its end (not timed), so the connection stays usable."""
        resp, t0 = self._send("POST", path, {**body, "stream": True, "timings_per_token": True})
        if resp.status != 200:
            raise PeerError(f"llama-server {path} answered {resp.status}: {resp.read()[:300]}")
        out = Streamed()
        for line in iter(resp.readline, b""):
            if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
                continue
            event, now = json.loads(line[6:]), (time.perf_counter() - t0) * 1000
            out.first_ms = now if out.first_ms is None else out.first_ms
            if out.done_ms is None:
                out.text += event.get("content", "")
                out.timings = event.get("timings", out.timings)
                if done(out.text, bool(event.get("stop"))) or event.get("stop"):
                    out.done_ms = now
            if event.get("stop"):
                break
        resp.read()
        self._done(resp)
        if out.done_ms is None:
            raise PeerError(f"llama-server {path}: the stream ended without a last event")
        return out

    def stop(self) -> None:
        self._reset()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Streamed:
    text: str = ""                 # the streamed text up to where the client was done
    first_ms: float | None = None  # wall time to the first event (the first token)
    done_ms: float | None = None   # wall time to the event that completed the answer
    timings: dict = field(default_factory=dict)     # that event's timings


def timing(answer: dict, key: str) -> float:
    """``timings.<key>`` of an answer, nested or flattened by ``response_fields``."""
    if "timings" in answer:
        return float(answer["timings"].get(key, 0.0))
    return float(answer.get(f"timings/{key}", 0.0))


# ------------------------------------------------------------------------ checks
TOKENIZER_TEXTS = (
    "def f(x, y=3.14):\n    return {'a': [x ** 2, y // 7]}  # comment\n",
    "class Foo(Bar):\n\tdef __init__(self):\n\t\tself._x = 0x1F + 12345678\n\n\n",
    "I've been told he's there, 'RE you sure? We'Ve a'lL 'M 'D",
    "naïve café — 😀 日本語 ünïcode\u00a0nbsp  trailing   \n\n  \t \n",
    "    if not text.strip():\n        return None\n    x = a!=b<=c>>=d\n",
)


def check_tokenizers(runtime, server: LlamaServer, texts: list[str]) -> list[str]:
    """The texts whose llama-server tokens differ from the bundled tokenizer's."""
    bad = []
    for text in texts:
        ours = runtime.tokenizer.encode(text, add_special_tokens=False).ids
        if runtime.encode(text) != ours:
            bad.append(f"inkling's chunked encoder differs from its tokenizer on {text[:40]!r}")
        theirs = server.post("/tokenize", {"content": text, "add_special": False})[0]["tokens"]
        if theirs != ours:
            at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                      min(len(ours), len(theirs)))
            bad.append(f"{text[:40]!r}: first difference at token {at} "
                       f"(inkling {ours[at:at + 4]}, llama {theirs[at:at + 4]})")
    return bad


def code_texts(traces) -> list[str]:
    """Real code: the workspace files of the traces (their ``file`` events)."""
    from inkling.evaluation.trace_file import FileEvent
    seen: dict[str, str] = {}
    for t in traces:
        for e in t.events:
            if isinstance(e, FileEvent) and e.path.endswith(".py") and e.text.count("\n") > 60:
                seen.setdefault(e.path, e.text)
    return [seen[k] for k in sorted(seen)][:4]


def greedy_prompts(runtime, texts: list[str]) -> list[tuple[str, list[int]]]:
    """Per text: a plain prompt, a FIM prompt in the model's order and one in the other."""
    from inkling.completion.prompt.builder import TokenIds
    out = []
    orders = [runtime.fim_order] + [o for o in runtime.fim.orders if o != runtime.fim_order]
    for n, text in enumerate(texts):
        lines = text.split("\n")
        for k, kind in enumerate(("plain", *orders)):
            cut = len(lines) * (k + 2) // 6
            half = len(lines[cut]) // 2             # the cursor: mid-line
            before = "\n".join(lines[max(0, cut - 40):cut]) + "\n" + lines[cut][:half]
            after = lines[cut][half:] + "\n" + "\n".join(lines[cut + 1:cut + 15])
            prefix = runtime.encode(before)
            bos = [] if runtime.bos_id is None else [runtime.bos_id]   # as the engine's prompts
            if kind == "plain":
                ids = bos + prefix
            else:
                ids = bos + runtime.fim.build(kind, prefix, runtime.encode(after),
                                              TokenIds(runtime))
            out.append((f"file {n + 1} {kind} ({len(ids)} tokens)", ids))
    return out


def reference_greedy(runtime, ids: list[int], n: int) -> list[int]:
    """``n`` greedy tokens of transformers' forward (the whole sequence each step), ending
    early at a stop token as llama-server does at an end-of-generation token."""
    import torch
    x, out = torch.tensor([ids], device=runtime.device), []
    with torch.inference_mode():
        for _ in range(n):
            logits = runtime.model(input_ids=x, use_cache=False).logits[0, -1]
            tok = int(logits.float().argmax())
            out.append(tok)
            if tok in runtime.stop_ids:
                break
            x = torch.cat([x, torch.tensor([[tok]], device=runtime.device)], dim=1)
    return out


def llama_greedy(server: LlamaServer, ids: list[int], n: int) -> list[int]:
    answer, _ = server.post("/completion", {
        "prompt": ids, "n_predict": n, "temperature": 0, "top_k": 1, "stop": [],
        "cache_prompt": False, "return_tokens": True, "n_probs": 0})
    return [int(t) for t in answer["tokens"]]


def _until_stop(tokens: list[int], stop_ids) -> list[int]:
    """``tokens`` up to their first stop token (kept)."""
    at = next((i for i, t in enumerate(tokens) if t in stop_ids), len(tokens) - 1)
    return tokens[:at + 1]


def _gap(runtime, ids: list[int], ours: list[int], theirs: list[int], at: int) -> str:
    """The reference's logits of both tokens where they part (a near tie, or not)."""
    import torch
    if at >= len(ours) or at >= len(theirs):
        return "one side stopped earlier"
    with torch.inference_mode():
        logits = runtime.model(input_ids=torch.tensor([ids], device=runtime.device),
                               use_cache=False).logits[0, -1].float()
    a, b = float(logits[ours[at]]), float(logits[theirs[at]])
    return f"reference logits there {a:.5f} vs {b:.5f} (gap {a - b:.2g})"


def check_greedy(runtime, server: LlamaServer, prompts) -> tuple[int, list[str]]:
    """(prompts whose greedy tokens agree, a line per prompt that does not)."""
    same, lines = 0, []
    for name, ids in prompts:
        ours, theirs = reference_greedy(runtime, ids, GREEDY_TOKENS), \
            llama_greedy(server, ids, GREEDY_TOKENS)
        ours, theirs = _until_stop(ours, runtime.stop_ids), _until_stop(theirs, runtime.stop_ids)
        if ours == theirs:
            same += 1
            continue
        at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                  min(len(ours), len(theirs)))
        lines.append(f"  {name}: first difference at token {at}: inkling "
                     f"{runtime.decode(ours[at:at + 6])!r} ({ours[at:at + 6]}), llama "
                     f"{runtime.decode(theirs[at:at + 6])!r} ({theirs[at:at + 6]}); "
                     f"{_gap(runtime, ids + ours[:at], ours, theirs, at)}")
    return same, lines


# ------------------------------------------------------------------------ traces
@dataclass
class TraceSet:
    group: str
    paths: list[Path]


def trace_sets(args, tmp: Path) -> list[TraceSet]:
    if args.traces:
        paths = []
        for p in map(Path, args.traces):
            paths += sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
        return [TraceSet("given", paths)]
    sets = [TraceSet("sample retype (benchmarks/traces)",
                     sorted((REPO / "benchmarks" / "traces").glob("*.jsonl")))]
    builders, why = toolz_builders(tmp)
    if builders:       # as defaults.py's _write_traces writes them
        sets.append(TraceSet("held-out retype (toolz 1.0.0)", [
            b.write(tmp / f"retype-{Path(path).stem}.jsonl") for path, b in builders]))
    else:
        print(f"(no held-out toolz traces: {why})", file=sys.stderr)
    shared = REPO.parent / "shared" / "traces"
    if shared.is_dir():
        sets.append(TraceSet("shared (../shared/traces)", sorted(shared.glob("*.jsonl"))))
    return [s for s in sets if s.paths]


# ------------------------------------------------------------------------ replay
class SyncProbe:
    """While on, records the ids each ``PromptCache.sync`` was given (the prompt inkling's
    model reads) and the model time spent in it; the method's behaviour is unchanged."""

    def __init__(self):
        self.ids: list[int] | None = None
        self.model_s = 0.0
        self._orig = None

    def reset(self) -> None:
        self.ids, self.model_s = None, 0.0

    def __enter__(self) -> "SyncProbe":
        from inkling.cache.prompt_cache import PromptCache
        self._orig = orig = PromptCache.sync
        probe = self

        def sync(cache, prompt_ids, *args, **kwargs):
            s0 = cache.runtime.stats.seconds
            try:
                return orig(cache, prompt_ids, *args, **kwargs)
            finally:
                probe.ids = list(prompt_ids)
                probe.model_s += cache.runtime.stats.seconds - s0

        PromptCache.sync = sync
        return self

    def __exit__(self, *exc) -> None:
        from inkling.cache.prompt_cache import PromptCache
        PromptCache.sync = self._orig


@dataclass
class Sample:
    """One system's answer at one completion."""
    latency_ms: float
    first_token_ms: float
    prompt_tokens: int
    tokens: int
    decode_ms_per_token: float | None      # None: fewer than 2 tokens decoded
    text: str
    model_decode_ms_per_token: float | None = None
    forwards: int = 0
    engine_ms: float | None = None         # inkling serve: its Engine's own latency


@dataclass
class System:
    name: str
    samples: list[Sample] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    same_text: list[bool] = field(default_factory=list)


@dataclass
class Point:
    """What every system needs at a completion event."""
    text: str              # the document (\n line ends)
    offset: int
    prompt: object         # inkling's Prompt there (builder.Prompt)
    rule: object           # its StopRule
    budget: int            # inkling's token budget


def _session(trace, root: Path, options, runtime, checker, datastore):
    """An Engine and replay session for ``trace``, set up as Replayer.replay does."""
    from inkling.completion.engine import Engine
    from inkling.evaluation.replay import _Session
    from inkling.evaluation.replay_result import TraceResult
    engine = Engine(options, runtime, datastore)
    engine.sources.datastore = datastore if engine.uses_datastore else None
    engine.workspace_folders = [root.as_uri()]
    prepared = engine.prepare()
    if prepared.failed:
        raise prepared.failed[0][1]
    return _Session(trace, root, engine, checker, TraceResult(trace.source, trace.name))


def _served_session(trace, served, checker):
    """A replay session for ``trace`` through ``served`` (an LspReplayer: one `inkling
    serve`, a folder of its workspace per trace), set up as LspReplayer.replay does."""
    from inkling.evaluation.replay import _Session
    from inkling.evaluation.replay_result import TraceResult
    return _Session(trace, served.trace_folder(), served.engine, checker,
                    TraceResult(trace.source, trace.name))


def inkling_sample(session, event, probe: SyncProbe) -> tuple[Sample, list[int] | None]:
    probe.reset()
    session.apply(event)                      # engine.complete, recorded as the replay does
    return record_sample(session.result.completions[-1], probe.model_s), probe.ids


def record_sample(r, sync_model_s: float) -> Sample:
    """One inkling completion record as a Sample: in process, ``latency_ms`` is the
    Engine's; through `inkling serve` (``r.engine_ms`` set) it is the client's round trip
    over stdio, the server Engine's own beside it (``engine_ms``); the model's decoding
    time a token is known in process only (``sync_model_s``: the prompt's sync's share of
    ``r.model_ms``, measured by SyncProbe, which cannot see another process)."""
    served = r.engine_ms is not None
    n, decode_ms = r.tokens, r.latency_ms - r.first_token_ms
    model_decode = None if served or n < 2 else (r.model_ms - sync_model_s * 1000) / n
    return Sample(r.latency_ms, r.first_token_ms, r.prefill_tokens, n,
                  decode_ms / n if n >= 2 else None, r.first, model_decode, r.forwards,
                  engine_ms=r.engine_ms)


def suggestion_cut(text: str, point: Point, final: bool) -> tuple[str, int | None]:
    """(the suggestion part of llama's ``text``, where inkling's stop rule ends it or None):
    token healing's text comes first and is not part of the suggestion, as in inkling."""
    healed = point.prompt.healed
    if healed and text.startswith(healed):
        text = text[len(healed):]
    elif healed and healed.startswith(text) and not final:
        return "", None                       # healing's text not complete yet
    return text, point.rule.cut(text, final)


def llama_text(content: str, point: Point) -> str:
    """llama's text as inkling would show it: token healing's text taken off its start,
    cut by inkling's stop rule, what repeats the text after the cursor trimmed."""
    from inkling.completion.decoding.stop_rules import trim_repeated_suffix
    p = point.prompt
    if p.healed and not content.startswith(p.healed):
        return "\x00" + content                 # not inkling's (healing would not allow it)
    body, cut = suggestion_cut(content, point, final=True)
    return trim_repeated_suffix(body[:cut] if cut is not None else body, p.line_suffix,
                                p.suffix)


def llama_sample(answer: dict, wall_ms: float, text: str) -> Sample:
    """A non-streamed answer's sample: first token = wall time less the decoding time."""
    n = int(timing(answer, "predicted_n"))
    predicted_ms = timing(answer, "predicted_ms")
    return Sample(wall_ms, wall_ms - predicted_ms, int(timing(answer, "prompt_n")), n,
                  timing(answer, "predicted_per_token_ms") if n >= 2 else None, text)


def streamed_sample(got: "Streamed", point: Point) -> Sample:
    """A streamed answer's sample, measured where inkling's stop rule ended it."""
    t = got.timings
    n = int(t.get("predicted_n", 0))
    return Sample(got.done_ms, got.first_ms, int(t.get("prompt_n", 0)), n,
                  t.get("predicted_per_token_ms") if n >= 2 else None,
                  llama_text(got.text, point))


def same_ids_request(point: Point) -> dict:
    """/completion on inkling's prompt ids: greedy, its token budget, no stop strings
    (the client applies inkling's stop rule to the streamed text), one slot."""
    return {"prompt": point.prompt.ids, "n_predict": point.budget, "temperature": 0,
            "top_k": 1, "stop": [], "cache_prompt": True, "id_slot": 0}


def vim_context(text: str, offset: int) -> dict:
    """llama.vim's local context at ``offset`` (s:fim_ctx_local, no previous completion)."""
    lines = text.split("\n")
    y = text.count("\n", 0, offset)
    x = offset - (text.rfind("\n", 0, offset) + 1)
    cur = lines[y]
    if not cur.strip(" \t"):                  # a line of whitespace: from its start
        indent, cur_prefix, cur_suffix = 0, "", ""
    else:
        indent = len(cur) - len(cur.lstrip(" \t"))
        cur_prefix, cur_suffix = cur[:x], cur[x:]
    return {"prefix": "\n".join(lines[max(0, y - VIM_N_PREFIX):y]) + "\n",
            "middle": cur_prefix,
            "suffix": cur_suffix + "\n" + "\n".join(lines[y + 1:y + 1 + VIM_N_SUFFIX]) + "\n",
            "indent": indent, "line": cur}


def vim_batch(runtime) -> int:
    """The /infill server's batch size, which sizes the prompt llama-server builds (3/4 of
    it before the cursor, 1/4 after): llama.vim's advice is to fit it to the model's
    context, here inkling's (the trained context) less llama.vim's n_predict."""
    return (runtime.context_limit - VIM_N_PREDICT - 32) // 32 * 32


def infill_request(ctx: dict) -> dict:
    """llama.vim's /infill request (llama#fim), greedy (top_k 1 in place of 40)."""
    return {"input_prefix": ctx["prefix"], "input_suffix": ctx["suffix"], "input_extra": [],
            "prompt": ctx["middle"], "n_predict": VIM_N_PREDICT, "stop": [],
            "n_indent": ctx["indent"], "top_k": 1, "top_p": 0.90, "stream": False,
            "samplers": ["top_k", "top_p", "infill"], "cache_prompt": True,
            "t_max_prompt_ms": 500, "t_max_predict_ms": VIM_T_MAX_PREDICT_MS,
            "response_fields": ["content", "timings/prompt_n", "timings/prompt_ms",
                                "timings/prompt_per_token_ms", "timings/prompt_per_second",
                                "timings/predicted_n", "timings/predicted_ms",
                                "timings/predicted_per_token_ms",
                                "timings/predicted_per_second", "truncated", "tokens_cached"]}


def vim_shown(content: str, ctx: dict) -> str:
    """The suggestion llama.vim renders from ``content`` on a line of whitespace: the
    leading whitespace the line already has taken off (s:fim_render)."""
    if ctx["line"].strip(" \t"):
        return content
    first = content.split("\n", 1)[0]
    lead = min(len(first) - len(first.lstrip(" \t")), len(ctx["line"]))
    return content[lead:]


class Replay:
    """The interleaved replay: two inkling sessions per trace and the llama servers."""

    def __init__(self, runtime, servers: dict[int, tuple[LlamaServer, LlamaServer]],
                 datastore, bar, base, inkling_threads: tuple[int, ...] = (),
                 inkling_forwards: tuple[str, ...] = ()):
        from inkling.evaluation.replay import LspReplayer
        from inkling.evaluation.syntax_check import SyntaxChecker
        self.runtime, self.servers, self.datastore, self.bar = runtime, servers, datastore, bar
        self.checker = SyntaxChecker()
        # inkling's defaults as an editor runs them: `inkling serve` over stdio
        self.served = LspReplayer(base, self.checker)
        self.options = {"inkling": base,
                        "inkling draft=none": base.merged(
                            {"completion": {"draft": "none"}})}
        # inkling's forward on a fixed thread count (None: the runtime's own choice, which
        # measures one thread against two as it runs: runtime/thread_choice.py), pinned for
        # that system's completions only
        self.threads: dict[str, int | None] = {"inkling": None, "inkling draft=none": None}
        for t in inkling_threads:
            self.options[f"inkling -t{t}"] = base
            self.threads[f"inkling -t{t}"] = t
        for f in inkling_forwards:
            self.options[f"inkling forward={f}"] = base.merged(
                {"model": {"forward": f}})
            self.threads[f"inkling forward={f}"] = None
        # each inkling system has its own view of the runtime, as a server of its own would:
        # the same model, forward and thread choice, its own chunked encoder (which
        # remembers the ids of unchanged lines: shared, whoever tokenized first after an
        # edit paid for all)
        self.runtimes = {name: dataclasses.replace(runtime, encoder=None)
                         for name in self.options}
        # the prompt is computed again on a twin runtime (its own chunked encoder, the same
        # model, never run) so that a llama system asked before inkling has inkling's ids
        # without warming inkling's encoder
        self.twin = dataclasses.replace(runtime, encoder=None, attached={})
        self.systems = {n: System(n) for n in (SERVED, *self.options)}
        for t, _ in servers.items():
            self.systems[f"llama ids -t{t}"] = System(f"llama ids -t{t}")
            self.systems[f"llama /infill -t{t}"] = System(f"llama /infill -t{t}")
        # asked in a new order at each completion (seeded): with one order rotated, each
        # system always came right after the same one, and the one after llama /infill
        # found llama-server's threads still holding the cores (2.5 to 5 ms more to its
        # first token than its twins, whichever inkling system it was)
        self.order = list(self.systems)
        self.shuffle = random.Random(0).shuffle
        self.ids_agree = [0, 0]
        self.failures: list[str] = []

    def trace(self, trace, group: str, cap: int, probe: SyncProbe) -> None:
        from inkling.completion.errors import DocumentError
        from inkling.evaluation.trace_file import CompleteEvent, TraceError
        with contextlib.ExitStack() as stack:
            sessions = {}
            for name, options in self.options.items():
                root = Path(stack.enter_context(tempfile.TemporaryDirectory(
                    prefix="inkling-peer-"))).resolve()
                sessions[name] = _session(trace, root, options, self.runtimes[name],
                                          self.checker, self.datastore)
                stack.callback(sessions[name].engine.shutdown)
            sessions[SERVED] = served = _served_session(trace, self.served, self.checker)
            stack.callback(lambda: [self.served.engine.close(served.uri(path))
                                    for path in list(served.versions)])
            done = 0
            for event in trace.events:
                if isinstance(event, CompleteEvent) and done >= cap:
                    break
                try:
                    for s in sessions.values():
                        s.result.idle_tokens += s.engine.idle(s.clock.quiet_before(event))
                    if isinstance(event, CompleteEvent):
                        self.complete(sessions, event, group, probe)
                        done += 1
                        self.bar.update(1)
                    else:
                        for s in sessions.values():
                            s.apply(event)
                except (DocumentError, TraceError, OSError) as exc:
                    self.failures.append(f"{trace.source}:{event.line}: {exc}")
                    break
            self.bar.update(max(0, cap - done))

    def point(self, session, event) -> Point:
        from inkling.completion.decoding.stop_rules import stop_rule_for
        from inkling.completion.prompt.builder import prompt_at
        doc = session.engine.document(session.uri(event.path))
        text, offset = doc.text, doc.offset_at(event.position)
        c = self.options["inkling"].completion
        prompt = prompt_at(self.twin, text, offset, c)
        rule = stop_rule_for(prompt.line_prefix, prompt.prefix, prompt.line_suffix, prompt.suffix)
        return Point(text.replace("\r\n", "\n"), offset - text.count("\r\n", 0, offset),
                     prompt, rule, c.max_block_tokens if rule.block else c.max_new_tokens)

    def complete(self, sessions, event, group: str, probe: SyncProbe) -> None:
        import torch
        point = self.point(sessions["inkling"], event)
        order = list(self.order)
        self.shuffle(order)
        got: dict[str, Sample] = {}
        for name in order:
            if name in sessions:
                t = self.threads.get(name)
                with (self.runtime.threads.pinned(t) if t is not None
                      else contextlib.nullcontext()):
                    got[name], seen = inkling_sample(sessions[name], event, probe)
                if name == "inkling":
                    self.ids_agree[0] += seen == point.prompt.ids
                    self.ids_agree[1] += 1
            else:
                got[name] = self.ask_llama(name, point)
        for name, sample in got.items():
            s = self.systems[name]
            s.samples.append(sample)
            s.groups.append(group)
            s.same_text.append(sample.text == got["inkling"].text)

    def close(self) -> None:
        """Stop the `inkling serve` subprocess."""
        self.served.close()

    def ask_llama(self, name: str, point: Point) -> Sample:
        threads = int(name.rsplit("-t", 1)[1])
        ids_server, infill_server = self.servers[threads]
        if name.startswith("llama ids"):
            got = ids_server.stream("/completion", same_ids_request(point), lambda text, final:
                                    suggestion_cut(text, point, final)[1] is not None)
            return streamed_sample(got, point)
        ctx = vim_context(point.text, point.offset)
        answer, ms = infill_server.post("/infill", infill_request(ctx))
        shown = vim_shown(answer.get("content", ""), ctx)
        return llama_sample(answer, ms, llama_text(shown, dataclasses.replace(
            point, prompt=dataclasses.replace(point.prompt, healed=""))))


# ------------------------------------------------------------------------ report
def _pct(values: list[float], q: float) -> float | None:
    from inkling.evaluation.metrics import percentile
    return percentile(values, q) if values else None


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _mean(values) -> float | None:
    return sum(values) / len(values) if values else None


def summary(samples: list[Sample], same: list[bool]) -> dict:
    lat = [s.latency_ms for s in samples]
    tokens = sum(s.tokens for s in samples)
    forwards = sum(s.forwards for s in samples)
    return {
        "n": len(samples),
        "p50": _pct(lat, 50), "p95": _pct(lat, 95),
        "first": _pct([s.first_token_ms for s in samples], 50),
        "engine": _pct([s.engine_ms for s in samples if s.engine_ms is not None], 50),
        "prompt": _mean([s.prompt_tokens for s in samples]),
        "tokens": _mean([s.tokens for s in samples]),
        "decode": _median([s.decode_ms_per_token for s in samples]),
        "model_decode": _median([s.model_decode_ms_per_token for s in samples]),
        "per_forward": tokens / forwards if forwards else None,
        "same": _mean([float(x) for x in same]),
    }


def _fmt(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


ROWS = (
    ("completions", "n", "d"),
    ("completion latency p50 (ms, wall)", "p50", ".1f"),
    ("completion latency p95 (ms, wall)", "p95", ".1f"),
    ("  inkling serve: its Engine's own p50 (ms)", "engine", ".1f"),
    ("first token p50 (ms)", "first", ".1f"),
    ("prompt tokens evaluated / completion", "prompt", ".1f"),
    ("tokens decoded / completion", "tokens", ".1f"),
    ("decoding ms / token (median)", "decode", ".2f"),
    ("  inkling: model forwards ms / token", "model_decode", ".2f"),
    ("  inkling: tokens per forward", "per_forward", ".2f"),
    ("suggestion identical to inkling's", "same", ".3f"),
)


def print_table(systems: list[System], group: str | None = None) -> dict[str, dict]:
    out = {}
    for s in systems:
        keep = [i for i, g in enumerate(s.groups) if group is None or g == group]
        out[s.name] = summary([s.samples[i] for i in keep], [s.same_text[i] for i in keep])
    width = max(22, *(len(s.name) + 2 for s in systems))
    print(f"{'':38}" + "".join(f"{s.name:>{width}}" for s in systems))
    for label, key, spec in ROWS:
        print(f"{label:38}" + "".join(f"{_fmt(out[s.name][key], spec):>{width}}"
                                      for s in systems))
    return out


def ratio_lines(table: dict[str, dict], threads: list[int]) -> list[tuple[str, bool]]:
    """The issue's checks for inkling against each llama-server thread count: first
    ``inkling serve`` (each side timed by a client over its wire), then inkling in process;
    for an ``inkling -tN`` column (``--inkling-threads``), against llama.cpp on the same N."""
    out = _ratios(table[SERVED], SERVED, table, threads) if SERVED in table else []
    out += _ratios(table["inkling"], "inkling (in process)", table, threads)
    for t in threads:
        if f"inkling -t{t}" in table:
            out += _ratios(table[f"inkling -t{t}"], f"inkling -t{t}", table, [t])
    for name in table:
        if name.startswith("inkling forward="):
            out += _ratios(table[name], name, table, threads)
    return out


def _ratios(ink: dict, who: str, table: dict[str, dict], threads: list[int]
            ) -> list[tuple[str, bool]]:
    out = []
    for t in threads:
        ids, infill = table[f"llama ids -t{t}"], table[f"llama /infill -t{t}"]
        checks = (
            (f"decoding ms/token: {who} {_fmt(ink['decode'], '.2f')} vs llama.cpp -t{t} "
             f"{_fmt(ids['decode'], '.2f')}", ink["decode"], ids["decode"], 1.0),
            (f"latency p50: {who} / llama-server same ids -t{t}", ink["p50"], ids["p50"], 0.75),
            (f"latency p50: {who} / llama.vim /infill -t{t}", ink["p50"], infill["p50"], 0.5),
        )
        for text, a, b, target in checks:
            if a is None or not b:
                out.append((f"{text}: not measured", False))
                continue
            r = a / b
            out.append((f"{text}: ratio {r:.2f} (target <= {target:g})", r <= target))
    return out


NOTES = """\
latency: inkling serve: wall time of the LSP request textDocument/inlineCompletion, from the
  client's send to its answer over stdio (JSON-RPC both ways), with the server Engine's own
  latency of the same request beside it; the other inkling columns: the completion
  record's (Engine.complete, in process); llama: wall time of the HTTP request on a
  kept-alive local connection (JSON both ways); for 'llama ids', until the streamed event
  where inkling's stop rule ends the suggestion.
first token: inkling: the record's first_token_ms (prompt synced, the first token's logits
  ready); llama ids: wall time to the first streamed event; llama /infill (not streamed, as
  llama.vim asks): wall time less timings.predicted_ms.
prompt tokens evaluated: inkling: the record's prefill_tokens; llama: timings.prompt_n.
decoding ms/token: median over completions of 2 tokens or more; llama:
  timings.predicted_per_token_ms (for 'llama ids' at the stop); inkling: (latency - first
  token) / tokens, the decode phase's wall time (drafting, monitor, stop rule included);
  'model forwards ms / token': inkling's forward time outside the prompt's sync, per token.
  Default inkling drafts where drafting pays on the device (completion.draft auto: on a
  CPU it does not, one token per forward); draft=none: one token per forward.
suggestion identical: llama's text (token healing's text taken off) cut by inkling's stop
  rule and repeated-suffix trim, against the first draft inkling showed (inkling's monitor
  may cut or steer it; llama's first token is not held to token healing's text).
llama ids: /completion streamed on the exact ids of inkling's prompt, cache_prompt, greedy
  (temperature 0, top_k 1), one slot, n_predict = inkling's budget (48 a line, 160 a block),
  no stop strings: the client stops at inkling's stop rule (a line's end, a block's dedent).
llama /infill: llama.vim's request (module docstring), --cache-reuse 256, -b sized to the
  model's trained context (llama.vim's advice; it sizes the prompt llama-server builds)."""


# -------------------------------------------------------------------------- main
def parse_args():
    ap = parser(__doc__, model=False)
    ap.add_argument("--traces", nargs="+", metavar="PATH",
                    help="trace files or folders (default: the sample, held-out and shared sets)")
    ap.add_argument("--limit", type=int, default=0, metavar="N",
                    help="at most N completions in all, spread evenly over the traces")
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE,
                    help=f"llama.cpp's source, build and GGUF (default {DEFAULT_CACHE})")
    ap.add_argument("--threads", default="2",
                    help="llama-server threads, comma-separated for several servers (default 2)")
    ap.add_argument("--inkling-threads", default="", metavar="N[,N]",
                    help="inkling with its defaults again, its forward pinned on N threads, "
                         "for each N (a column 'inkling -tN'; the defaults measure 1 against "
                         "every core as they run)")
    ap.add_argument("--inkling-forward", default="", metavar="F[,F]",
                    help="inkling with its defaults again and model.forward F, for each F "
                         "(a column 'inkling forward=F'; e.g. compact)")
    ap.add_argument("--gguf-type", default="",
                    choices=("", "f32", "f16", "q8_0"),
                    help="llama.cpp's weights: f32 (the bundled model's default: the arithmetic "
                         "inkling's float32 forward does) or f16 (the bundled model's shards "
                         "are float16: half the bytes a token reads, as inkling's float16 "
                         "panels; llama.cpp then rounds the activations to float16 too, so "
                         "its tokens may differ); q8_0 (a zoo model's default: what inkling's "
                         "int8 panels are to it)")
    ap.add_argument("--zoo", default="", metavar="NAME",
                    help="a zoo model (scripts/model_zoo.py) in place of the bundled model, "
                         "inkling on its folder with the defaults (int8 at load above the "
                         "size the docs state), llama-server on its GGUF (e.g. "
                         "qwen2.5-coder-0.5b)")
    ap.add_argument("--variant", default="full", help="the zoo model's variant (default full)")
    ap.add_argument("--checks-only", action="store_true",
                    help="build, convert and check the tokens; no replay")
    args = ap.parse_args()
    args.gguf_type = args.gguf_type or ("q8_0" if args.zoo else "f32")
    if args.gguf_type == "q8_0" and not args.zoo:
        ap.error("--gguf-type q8_0 is for a zoo model (--zoo): the bundled model is compared "
                 "at f32 or f16")
    return args


def base_options(model: Path | None):
    """inkling's defaults, on ``model`` (a folder) or the bundled model."""
    from inkling.completion.options import InklingOptions
    return InklingOptions().merged({"model": {"path": str(model)}}) if model else InklingOptions()


def load_inkling(base):
    from inkling.completion.engine import Engine
    engine = Engine(base)
    runtime = engine.load_model()
    datastore = engine.build_datastore() if engine.uses_datastore else None
    return runtime, datastore


def run_checks(runtime, server: LlamaServer, traces, greedy: bool = True) -> bool:
    texts = code_texts(traces)
    bad = check_tokenizers(runtime, server, list(TOKENIZER_TEXTS) + texts[:2])
    n_texts = len(TOKENIZER_TEXTS) + len(texts[:2])
    print(f"tokenizers: {n_texts - len(bad)} of {n_texts} texts tokenized identically "
          f"(llama-server /tokenize vs inkling's tokenizer)")
    for line in bad:
        print("  " + line)
    if not greedy:
        print("greedy tokens: not compared (a zoo model's random weights, Q8_0 against int8 "
              "panels: benchmarks/gguf_agreement.py compares those)")
        return not bad
    prompts = greedy_prompts(runtime, texts)
    same, lines = check_greedy(runtime, server, prompts)
    print(f"greedy tokens: {same} of {len(prompts)} prompts identical ({GREEDY_TOKENS} tokens "
          "each; transformers' forward vs llama-server /completion on the same ids, "
          "plain and FIM)")
    for line in lines:
        print(line)
    return not bad


def replay(args, base, runtime, datastore, servers, sets) -> tuple[Replay, dict]:
    from tqdm import tqdm
    from inkling.evaluation.trace_file import CompleteEvent, read_trace
    loaded = [(s.group, read_trace(str(p))) for s in sets for p in s.paths]
    counts = [sum(isinstance(e, CompleteEvent) for e in t.events) for _, t in loaded]
    cap = math.ceil(args.limit / len(loaded)) if args.limit else max(counts, default=0)
    total = sum(min(cap, c) for c in counts)
    with tqdm(total=total, desc="replaying", unit="completion", file=sys.stderr) as bar, \
            SyncProbe() as probe:
        run = Replay(runtime, servers, datastore, bar, base, tuple(
            int(t) for t in args.inkling_threads.split(",") if t.strip()), tuple(
            f for f in args.inkling_forward.split(",") if f.strip()))
        try:
            for (group, trace), n in zip(loaded, counts):
                bar.set_postfix_str(trace.name[:30])
                run.trace(trace, group, min(cap, n), probe)
        finally:
            run.close()
    per_group = {}
    for group in dict.fromkeys(g for g, _ in loaded):
        per_group[group] = sum(1 for g, _ in loaded if g == group)
    return run, per_group


def report(run: Replay, per_group: dict, threads: list[int], seconds: float) -> list:
    import torch
    systems = list(run.systems.values())
    n = len(systems[0].samples)
    print(f"\n{n} completions from {sum(per_group.values())} traces "
          f"({', '.join(f'{g}: {k}' for g, k in per_group.items())}), systems asked in a "
          f"shuffled order at each completion; {seconds / 60:.1f} min")
    auto = run.runtime.forward_kind("auto")
    note = run.runtime.auto_note() if auto != "native" else ""
    print(f"inkling's defaults run the {auto} forward (model.forward auto"
          + (f": {note})" if note else ")"))
    choice = run.runtime.threads.report()
    counts = " or ".join(map(str, choice["counts"]))
    ms = " vs ".join(f"{t}: {v} ms" for t, v in choice["one_row_ms"].items())
    print(f"inkling's forward runs on {counts} thread(s)"
          + (f", measured as it runs; at the end {choice['threads']} (a one-row forward "
             f"{ms})" if choice["adaptive"] else "")
          + f"; llama-server with -t {', '.join(map(str, threads))}; {os.cpu_count()} cores")
    print(f"prompt ids recomputed for llama = the ids inkling's model was given: "
          f"{run.ids_agree[0]} of {run.ids_agree[1]}\n")
    table = print_table(systems)
    for s in systems:
        if s.name.startswith("llama ids"):
            differ = sum(not x for x in s.same_text)
            unhealed = sum(x.text.startswith("\x00") for x in s.samples)
            print(f"{s.name}: {differ} suggestions differ from inkling's; in {unhealed} of "
                  "them llama's first token does not start with token healing's text")
    print("\n" + NOTES + "\n")
    results = ratio_lines(table, threads)
    for text, ok in results:
        print(("pass  " if ok else "FAIL  ") + text)
    if len(per_group) > 1:
        for group in per_group:
            print(f"\n{group}:")
            sub = print_table(systems, group)
            for text, ok in ratio_lines(sub, threads):
                print(("pass  " if ok else "FAIL  ") + text)
    for f in run.failures:
        print(f"replay error: {f}")
    return results


def start_servers(stack: contextlib.ExitStack, binary: Path, gguf: Path, threads: list[int],
                  runtime, cache: Path) -> dict[int, tuple[LlamaServer, LlamaServer]]:
    """Per thread count: the server for inkling's ids and llama.vim's /infill server, each
    stopped when ``stack`` closes (on an error and Ctrl-C too); their context inkling's
    (the bundled model's 2048, a zoo model's up to 8192), so that inkling's prompts fit."""
    servers, context = {}, ("-c", str(max(2048, runtime.context_limit)))
    for t in threads:
        pair = []
        for kind, extra in (("ids", ("-b", "1024", *context)),
                            ("infill", ("-b", str(vim_batch(runtime)), "--cache-reuse", "256",
                                        *context))):
            server = LlamaServer(binary, gguf, t, extra, cache / f"server-{kind}-t{t}.log")
            stack.callback(server.stop)
            pair.append(server.start())
        servers[t] = tuple(pair)
    return servers


def main() -> int:
    args = parse_args()
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    cache = args.cache_dir.expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    if skip_quick(args, cache):
        return 0
    if args.quick:
        args.limit, threads = 2, threads[:1]
    from inkling.evaluation.trace_file import read_trace
    from inkling.models import BUNDLED_MODEL_DIR
    folder = model_zoo.model_dir(args.zoo, args.variant) if args.zoo else None
    base = base_options(folder)
    why = native_layers_built()
    if why:
        print(f"peer_llamacpp: inkling without its native layers ({why})", file=sys.stderr)
    try:
        binary = build_server(cache)
        runtime, datastore = load_inkling(base)
        gguf = (model_zoo.gguf_file(args.zoo, args.variant, args.gguf_type) if folder else
                convert_model(cache, BUNDLED_MODEL_DIR, fim_ids(runtime), args.gguf_type))
    except (PeerError, model_zoo.ZooError) as exc:
        print(f"peer_llamacpp: {exc}", file=sys.stderr)
        return 1
    print(f"model {folder or BUNDLED_MODEL_DIR}")
    print(f"llama.cpp from {SDIST} (vendored), llama-server {binary}\nGGUF {gguf}")
    with tempfile.TemporaryDirectory(prefix="inkling-peer-traces-") as tmp, \
            contextlib.ExitStack() as stack:
        try:
            sets = trace_sets(args, Path(tmp))
            servers = start_servers(stack, binary, gguf, threads, runtime, cache)
            checks_traces = [read_trace(str(p)) for s in sets for p in s.paths]
            if not run_checks(runtime, servers[threads[0]][0], checks_traces,
                              greedy=folder is None):
                print("peer_llamacpp: the tokenizers differ; the comparison would not be "
                      "of the same prompts", file=sys.stderr)
                return 2
            if args.checks_only:
                return 0
            t0 = time.perf_counter()
            run, per_group = replay(args, base, runtime, datastore, servers, sets)
            results = report(run, per_group, threads, time.perf_counter() - t0)
            write_json(args.json, {"ratio_checks": len(results),
                                   "ratio_checks_passed": sum(ok for _, ok in results)})
        except PeerError as exc:
            print(f"peer_llamacpp: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("peer_llamacpp: interrupted; servers stopped", file=sys.stderr)
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
