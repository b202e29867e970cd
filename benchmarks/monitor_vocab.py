"""The monitor's cost per decoding step at a model's vocabulary: every completion of a set's
traces decoded along its expected text (teacher-forced: the expected tokens taken whatever the
logits say, no forward run), the monitor's parts timed at each step.

    python benchmarks/monitor_vocab.py [--model FOLDER] [--zoo qwen2.5-coder-0.5b] [--set reporting]

Per step: ``mask`` (``MonitorState.mask``: the analysis's mask made or found), ``bias`` (its
bias made or found), ``add`` (the bias added to the logits), ``advance`` (the state after the
token); the masks built by kind (``names`` at a trigger site: members after ``.``
(attribute), import paths, keyword arguments; ``read``: a free name read; ``dotted``: after a
receiver) and what they cost when built. The expected text tokenized by the model's own
tokenizer, so the steps visit the sites a perfect model's would. ``--zoo`` replays a zoo
model's tiny folder beside ``--model`` (default the bundled model), trace by trace: its real
vocabulary (Qwen2.5's: 151,936 tokens) against the bundled model's 8,192.
"""
from __future__ import annotations

import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parser, quick_traces, set_traces, write_json  # noqa: E402

from inkling.analysis import token_masks  # noqa: E402
from inkling.completion.decoding import dispatch, mask_bias  # noqa: E402
from inkling.completion.decoding.steps import BIASES, Decoded  # noqa: E402
from inkling.completion.engine import Engine  # noqa: E402
from inkling.completion.options import InklingOptions  # noqa: E402
from inkling.evaluation import replay as replay_module  # noqa: E402
from inkling.evaluation.replay import Replayer  # noqa: E402
from inkling.evaluation.syntax_check import SyntaxChecker  # noqa: E402

PARTS = ("mask", "bias", "add", "advance")


class Probe:
    """Timings of one run: per step the parts, per completion their sums, per built mask its
    kind and cost."""

    def __init__(self):
        self.steps: dict[str, list[float]] = defaultdict(list)      # part -> us a step
        self.completions: list[float] = []                          # us a completion
        self.built: dict[str, list[float]] = defaultdict(list)      # kind -> us a build
        self.kinds: Counter = Counter()                             # steps by mask kind
        self.by_kind: dict[tuple, list[float]] = defaultdict(list)  # (kind, part) -> us
        self.expected = ""
        self.biases_made = 0                                        # biases not found kept


def forced_decode(probe: Probe):
    """A greedy decoder that takes the expected tokens, timing the monitor's parts."""
    def decode(r):
        monitor, logits = r.monitor, r.logits
        ids = r.cache.runtime.encode(probe.expected)[:r.budget]
        total = 0.0
        for tok in ids:
            t0 = time.perf_counter()
            allowed = None if monitor is None else monitor.mask(logits.device)
            t1 = time.perf_counter()
            bias = None if allowed is None else BIASES.bias(allowed, logits)
            t2 = time.perf_counter()
            if bias is not None:
                _ = logits + bias
            t3 = time.perf_counter()
            kind = _kind(monitor, allowed)
            t3b = time.perf_counter()
            monitor = None if monitor is None else monitor.advance_token(tok)
            t4 = time.perf_counter()
            for part, dt in zip(PARTS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3b)):
                probe.steps[part].append(dt * 1e6)
                probe.by_kind[kind, part].append(dt * 1e6)
            total += (t4 - t3b + t3 - t0) * 1e6
            probe.kinds[kind] += 1
        probe.completions.append(total)
        return Decoded(r.decode(ids), ids, 0.0, len(ids), "end-of-text")
    return decode


def _kind(monitor, allowed) -> str:
    """The step's mask by what made it: a site's kind, a free read, a receiver's members."""
    if allowed is None:
        return "unmasked"
    while hasattr(monitor, "inner"):          # the prompt's rules (healing, a blank line)
        if getattr(monitor, "remaining", ""):
            return "healing"
        monitor = monitor.inner
    if monitor is None:
        return "blank line"
    if monitor.allowed is not None:
        return {"from_module": "import", "from_import": "import"}.get(
            monitor.site.kind, monitor.site.kind)
    reading = monitor.reading
    if reading is not None and reading.read is not None:
        return "read"
    return "dotted/target"


def timed_cached(probe: Probe, original):
    def cached(self, key, device, make_recipe):
        found = (key, "cpu" if device is None else str(device)) in self._dense
        t0 = time.perf_counter()
        out = original(self, key, device, make_recipe)
        if not found:
            probe.built[key[0]].append((time.perf_counter() - t0) * 1e6)
        return out
    return cached


def timed_complete(probe: Probe, original):
    def complete(self, e):
        probe.expected = e.expected
        return original(self, e)
    return complete


def p(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


class Current:
    probe: Probe | None = None          # the run being replayed


def install() -> None:
    """The teacher-forced decoder and the timers, reading ``Current.probe``."""
    dispatch.greedy_decode = lambda r: forced_decode(Current.probe)(r)
    cached, complete = token_masks.MaskCache._cached, replay_module._Session._complete
    made = mask_bias.biased

    def biased(mask, like):
        Current.probe.biases_made += 1
        return made(mask, like)
    mask_bias.biased = biased
    token_masks.MaskCache._cached = lambda self, key, device, make: timed_cached(
        Current.probe, cached)(self, key, device, make)
    replay_module._Session._complete = lambda self, e: timed_complete(
        Current.probe, complete)(self, e)


def run(models: dict[str, str], traces) -> dict[str, tuple[Probe, int]]:
    """{name: (its probe, its vocabulary size)}: each trace replayed under every model in
    turn, so that a busy machine slows each alike."""
    install()
    replayers, out = {}, {}
    for name, model in models.items():
        opts = InklingOptions().merged({"model": {"path": model}, "completion": {
            "draft": "none", "drafts": 1, "monitor": "on"}})
        runtime = Engine(opts).load_model()
        replayers[name] = Replayer(opts, runtime, SyntaxChecker())
        out[name] = (Probe(), runtime.vocab_size)
    for i, trace in enumerate(traces):
        for name, replayer in replayers.items():
            Current.probe = out[name][0]
            replayer.replay(trace)
        print(f"  [{i + 1}/{len(traces)}] {trace.name}", file=sys.stderr)
    return out


def zoo_folder(name: str) -> str:
    """The tiny zoo folder of ``name`` (scripts/model_zoo.py; made on first use)."""
    import model_zoo            # scripts/ is on the path (common)
    try:
        return str(model_zoo.model_dir(name, "tiny"))
    except model_zoo.ZooError as exc:
        raise SystemExit(f"monitor_vocab: the model zoo cannot be made here: {exc}") from exc


def report(probe: Probe, vocab: int) -> dict:
    steps = probe.steps
    out = {"vocab": vocab, "steps": len(steps["mask"]), "completions": len(probe.completions),
           "masked_steps": len(steps["mask"]) - probe.kinds["unmasked"],
           "biases_made": probe.biases_made}
    for part in PARTS:
        out[part] = {"mean_us": round(statistics.fmean(steps[part]), 1) if steps[part] else 0,
                     "p50_us": p(steps[part], 0.5), "p95_us": p(steps[part], 0.95)}
    step = [sum(v) for v in zip(*(steps[part] for part in PARTS))]
    out["step"] = {"mean_us": round(statistics.fmean(step), 1), "p50_us": p(step, 0.5)}
    out["completion"] = {"mean_us": round(statistics.fmean(probe.completions), 1),
                         "p50_us": p(probe.completions, 0.5),
                         "p95_us": p(probe.completions, 0.95)}
    out["kinds"] = {kind: {"steps": n, **{f"{part}_mean_us": round(statistics.fmean(
        probe.by_kind[kind, part]), 1) for part in PARTS}} for kind, n in probe.kinds.items()}
    out["built"] = {kind: {"n": len(v), "p50_us": p(v, 0.5), "mean_us": round(
        statistics.fmean(v), 1), "sum_ms": round(sum(v) / 1000, 1)}
        for kind, v in sorted(probe.built.items())}
    return out


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--set", choices=("tuning", "reporting"), default="reporting")
    ap.add_argument("--zoo", default="", help="a zoo model (its tiny folder) replayed beside "
                    "--model, e.g. qwen2.5-coder-0.5b")
    args = ap.parse_args()
    traces = quick_traces() if args.quick else set_traces(args.set)
    models = {"model": args.model}
    if args.zoo:
        models["zoo"] = zoo_folder(args.zoo)
    figures = {}
    for name, (probe, vocab) in run(models, traces).items():
        figures[name] = report(probe, vocab)
        print(f"== {name} ({models[name] or 'the bundled model'})")
        for key, value in figures[name].items():
            print(f"{key:12} {value}")
    if "zoo" in figures:
        base, zoo = figures["model"], figures["zoo"]
        figures["zoo_over_model"] = {k: round(zoo[k]["p50_us"] / max(base[k]["p50_us"], 0.1), 2)
                                     for k in ("step", "completion")}
        print(f"zoo / model  {figures['zoo_over_model']}")
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
