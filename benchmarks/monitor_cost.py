"""What monitors cost outside the model.

    python benchmarks/monitor_cost.py [--big-vocab 150000] [--workspace-files 2000]

1. Mask cost per decoding step (``MonitorState.mask()``; ``advance_token`` reported
   apart), walking the expected text of every completion of the sample traces and of
   retype traces of held-out standard-library files, token by token, for the bundled
   vocabulary (a tokenizer trained here at the bundled size when the bundled model is
   absent) and for a large BPE trained here on standard-library text. Reported over all
   steps, over the steps a trigger constrains, and for the first pass (masks built
   cold) and a second pass (cache warm, as in a session).
2. The per-completion setup (``CodeAnalysis.monitor``: scope, scan, resolver).
3. Index time of a generated workspace.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402,F401 - imported once here, not inside the first timed step
from bench_traces import describe, held_out_traces, sample_traces  # noqa: E402

from inkling.analysis import AnalysisOptions, CodeAnalysis, TokenVocabulary  # noqa: E402
from inkling.completion.document import Document  # noqa: E402
from inkling.evaluation.trace_file import (ChangeEvent, CloseEvent, CompleteEvent, FileEvent,  # noqa: E402
                                    OpenEvent)


def pct(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def line(label: str, values_ms: list[float]) -> str:
    if not values_ms:
        return f"  {label:<34} (none)"
    return (f"  {label:<34} p50 {pct(values_ms, 50):7.3f} ms  p95 {pct(values_ms, 95):7.3f} ms"
            f"  mean {statistics.fmean(values_ms):7.3f} ms  n={len(values_ms)}")


@dataclass
class StepCosts:
    mask_ms: list[float] = field(default_factory=list)
    constrained_ms: list[float] = field(default_factory=list)
    advance_ms: list[float] = field(default_factory=list)
    setup_ms: list[float] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)      # expected tokens a mask forbade


# ------------------------------------------------------------------ vocabularies
def bundled_or_tiny_tokenizer():
    from tokenizers import Tokenizer

    from inkling.models import BUNDLED_MODEL_DIR
    path = BUNDLED_MODEL_DIR / "tokenizer.json"
    if path.is_file():
        return "bundled", Tokenizer.from_file(str(path))
    from inkling.models.corpus import load_corpus
    from inkling.training.tokenizer_recipe import VOCAB_SIZE, train_tokenizer
    texts = [f.text for f in load_corpus().train[:400]]
    return f"trained here at the bundled size ({VOCAB_SIZE}; no bundled model)", \
        train_tokenizer(texts, VOCAB_SIZE)


# the pre-tokenizer of large code vocabularies (GPT-4 / Qwen style): a word may carry one
# leading non-letter, so tokens such as ".append" or "(self" exist and mask checks must
# look at them
LARGE_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def _stdlib_texts():
    """Every UTF-8 text file of the standard library (sources first), under 2 MB each."""
    from inkling.models.corpus import stdlib_root
    paths = [p for p in sorted(stdlib_root().rglob("*")) if "site-packages" not in p.parts]
    paths.sort(key=lambda p: p.suffix != ".py")
    for p in paths:
        try:
            if p.is_file() and p.stat().st_size < 2_000_000:
                yield p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def large_tokenizer(size: int, cache: Path | None):
    """A byte-level BPE of ``size`` tokens trained on the standard library's text."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    if cache is not None and cache.is_file():
        return Tokenizer.from_file(str(cache))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LARGE_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=size, min_frequency=1, show_progress=False,
                                  special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_stdlib_texts(), trainer)
    if cache is not None:
        tok.save(str(cache))
    return tok


# --------------------------------------------------------------------- walking
def walk_traces(traces, tokenizer, vocab, analysis_options, costs: StepCosts,
                max_tokens: int) -> None:
    """Replay each trace's documents into a CodeAnalysis; at each completion, decode the
    expected text token by token through a monitor state, timing each step."""
    for trace in traces:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp).resolve()
            analysis = CodeAnalysis(analysis_options)
            analysis.set_workspace_folders([root])
            docs: dict[str, Document] = {}
            for e in trace.events:
                uri = (root / e.path).as_uri() if hasattr(e, "path") else ""
                if isinstance(e, FileEvent):
                    (root / e.path).parent.mkdir(parents=True, exist_ok=True)
                    (root / e.path).write_text(e.text, encoding="utf-8")
                    analysis.index_file(root / e.path)
                elif isinstance(e, OpenEvent):
                    docs[e.path] = Document(uri, e.text, 1, "python")
                    analysis.open(uri, e.text, "python")
                elif isinstance(e, ChangeEvent):
                    docs[e.path].apply(list(e.changes), None)
                    analysis.change(uri, docs[e.path].text)
                elif isinstance(e, CloseEvent):
                    analysis.close(uri)
                    docs.pop(e.path, None)
                elif isinstance(e, CompleteEvent):
                    doc = docs[e.path]
                    _decode_expected(analysis, uri, doc.offset_at(e.position), e.expected,
                                     tokenizer, vocab, costs, max_tokens)


def _decode_expected(analysis, uri, offset, expected, tokenizer, vocab, costs, max_tokens):
    t0 = time.perf_counter()
    state = analysis.monitor(uri, offset, vocab)
    costs.setup_ms.append((time.perf_counter() - t0) * 1000)
    if state is None:
        return
    for tid in tokenizer.encode(expected, add_special_tokens=False).ids[:max_tokens]:
        t0 = time.perf_counter()
        mask = state.mask()
        t1 = time.perf_counter()
        state = state.advance_token(tid)
        t2 = time.perf_counter()
        costs.mask_ms.append((t1 - t0) * 1000)
        costs.advance_ms.append((t2 - t1) * 1000)
        if mask is not None:
            costs.constrained_ms.append((t1 - t0) * 1000)
            if not bool(mask[tid]):
                costs.blocked.append(f"{expected[:60]!r} at {vocab.texts[tid]!r}")


def measure_vocabulary(label, tokenizer, traces, max_tokens: int) -> None:
    t0 = time.perf_counter()
    vocab = TokenVocabulary.from_tokenizer(tokenizer)
    build_s = time.perf_counter() - t0
    print(f"\nvocabulary: {label}: {vocab.size:,} tokens (index built in {build_s:.2f} s, "
          f"{len(vocab.dotted)} '.name' tokens)")
    for name in ("first pass (masks built cold)", "second pass (cache warm)"):
        costs = StepCosts()
        # one CodeAnalysis per trace, but the vocabulary (and its mask cache) is shared
        walk_traces(traces, tokenizer, vocab, options, costs, max_tokens)
        print(f" {name}: {len(costs.mask_ms)} steps, "
              f"{len(costs.constrained_ms) / max(1, len(costs.mask_ms)):.1%} constrained")
        print(line("mask per step, all steps", costs.mask_ms))
        print(line("mask per step, constrained steps", costs.constrained_ms))
        print(line("advance_token per step", costs.advance_ms))
        print(line("monitor setup per completion", costs.setup_ms))
        print(f"  expected tokens a mask forbade: {len(costs.blocked)} of "
              f"{len(costs.constrained_ms)} constrained steps")
        for example in costs.blocked[:5]:
            print(f"    {example}")


# -------------------------------------------------------------------- indexing
def generated_workspace(root: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for i in range(n):
        pkg = root / f"pkg{i % 20}"
        pkg.mkdir(exist_ok=True)
        (pkg / "__init__.py").touch()
        imports = "".join(f"from pkg{rng.randrange(20)}.mod{rng.randrange(n)} import Cls{j}\n"
                          for j in range(3))
        classes = "".join(
            f"\n\nclass Cls{j}(Base{j}):\n    attr{j} = {j}\n\n"
            f"    def __init__(self, a, b=1, *, c=None):\n"
            f"        self.a = a\n        self.b = b\n\n"
            f"    def method{j}(self, x):\n        return self.a + x\n" for j in range(6))
        funcs = "".join(f"\n\ndef func{j}(p, q=2):\n    return p * q\n" for j in range(8))
        (pkg / f"mod{i}.py").write_text(f'"""Module {i}."""\nimport os\n{imports}' +
                                         "".join(f"\nclass Base{j}:\n    pass\n" for j in range(6))
                                         + classes + funcs)


def measure_indexing(n_files: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generated_workspace(root, n_files)
        size = sum(p.stat().st_size for p in root.rglob("*.py"))
        analysis = CodeAnalysis(AnalysisOptions(background=False, watch=False,
                                                max_files=n_files + 100))
        t0 = time.perf_counter()
        analysis.set_workspace_folders([root])
        seconds = time.perf_counter() - t0
        files = len(analysis.index.files())
        print(f"\nindex: generated workspace of {files} files ({size / 1e6:.1f} MB): "
              f"{seconds:.2f} s ({files / seconds:.0f} files/s)")
        path = root / "pkg0" / "mod0.py"
        t0 = time.perf_counter()
        analysis.index_file(path)
        print(f"index: re-indexing one file: {(time.perf_counter() - t0) * 1000:.2f} ms")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--big-vocab", type=int, default=150_000)
    p.add_argument("--bpe-cache", type=Path, default=None,
                   help="tokenizer.json to reuse for the large vocabulary (written if absent)")
    p.add_argument("--max-tokens", type=int, default=48, help="tokens per completion walked")
    p.add_argument("--held-out", type=int, default=0, help="retype traces used (0: all)")
    p.add_argument("--workspace-files", type=int, default=2000)
    p.add_argument("--skip-big", action="store_true")
    args = p.parse_args(argv)

    traces = sample_traces() + held_out_traces(limit=args.held_out)
    print(f"traces: {describe(traces)}")
    label, tok = bundled_or_tiny_tokenizer()
    measure_vocabulary(label, tok, traces, args.max_tokens)
    if not args.skip_big:
        t0 = time.perf_counter()
        big = large_tokenizer(args.big_vocab, args.bpe_cache)
        print(f"\n(large BPE ready in {time.perf_counter() - t0:.0f} s)")
        measure_vocabulary(f"BPE trained on the standard library ({args.big_vocab:,} asked, "
                           f"{big.get_vocab_size():,} made)", big, traces, args.max_tokens)
    measure_indexing(args.workspace_files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
