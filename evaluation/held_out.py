"""Next-line exact match on held-out files (``eval_sets.py``), none of them trained on.

Each sampled line's text is removed, its indentation kept as auto-indent leaves it; an invoked
completion there is compared by its first line (``exact``: the first draft, ``exact_any``: any).
Each file is one job, so the evaluation shards by file and merges back."""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field

from tqdm import tqdm

from inkling.completion.decoding.names import Trigger
from inkling.completion.document import Position
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.models.corpus import load_corpus

from inkling.evaluation.eval_sets import SETS, eval_set
from inkling.evaluation.packages import load_held_out_package, load_pinned


@dataclass
class NextLineResult:
    order: str
    held_out: str = "stdlib"
    lines: int = 0
    exact: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    per_file: dict[str, tuple[int, int]] = field(default_factory=dict)
    suggestions: list[str] = field(default_factory=list)      # each line's, in file order
    right: list[bool] = field(default_factory=list)           # each line's: the first draft's
    drafts: int = 1                                           # drafts asked a completion
    exact_any: int = 0                                        # lines one of them had right

    @property
    def exact_match(self) -> float:
        return self.exact / max(1, self.lines)

    def summary(self) -> dict:
        lat = sorted(self.latencies_ms)
        return {"fim_order": self.order, "held_out": self.held_out, "lines": self.lines, "exact": self.exact,
                "exact_match": round(self.exact_match, 4), "drafts": self.drafts,
                "exact_any": self.exact_any,
                "exact_any_match": round(self.exact_any / max(1, self.lines), 4),
                "latency_ms_p50": round(statistics.median(lat), 1) if lat else None,
                "per_file": {k: {"lines": n, "exact": e} for k, (n, e) in self.per_file.items()}}


def sample_lines(text: str, per_file: int, seed: int) -> list[int]:
    lines = text.split("\n")
    candidates = [i for i, ln in enumerate(lines) if ln.strip() and i > 0]
    rng = random.Random(seed)
    return sorted(rng.sample(candidates, min(per_file, len(candidates))))


HELD_OUT = ("stdlib", "package", *SETS)    # the names ``held_out_files`` takes


def held_out_files(held_out: str = "stdlib"):
    """The files of a held-out set: ``stdlib``, ``package``, or an evaluation set's name."""
    if held_out == "stdlib":
        return load_corpus().held_out
    if held_out == "package":
        return load_held_out_package()
    if held_out not in SETS:
        raise ValueError(f"held_out: {', '.join(HELD_OUT)}, not {held_out!r}")
    s = eval_set(held_out)
    return ((load_corpus().held_out if s.stdlib else [])
            + [f for p in s.packages
               for f in load_pinned(p, modules=None if p.evaluate_all else p.modules)])


@dataclass(frozen=True)
class FileScore:
    """One held-out file's line counts, latencies and suggested first lines."""
    relpath: str
    lines: int
    exact: int
    latencies_ms: tuple[float, ...]
    suggestions: tuple[str, ...] = ()
    exact_any: int = 0          # lines that one of the drafts had right (``exact`` with one)
    right: tuple[bool, ...] = ()   # each line's: the first draft had it right


def evaluation_options(model: str, fim_order: str, base: InklingOptions | None = None
                       ) -> InklingOptions:
    return (base or InklingOptions()).merged({"model": {"path": model},
                                              "completion": {"fim_order": fim_order}})


def evaluate_file(engine: Engine, f, lines_per_file: int, seed: int,
                  drafts: int = 1) -> FileScore:
    """Complete each sampled line of corpus file ``f``, asking for ``drafts`` drafts."""
    exact, exact_any, latencies, suggestions, right = 0, 0, [], [], []
    lines_sampled = sample_lines(f.text, lines_per_file, seed)
    for line_no in lines_sampled:
        lines = f.text.split("\n")
        target = lines[line_no]
        indent = target[:len(target) - len(target.lstrip())]
        lines[line_no] = indent
        uri = f"file:///held-out/{f.relpath}"
        engine.open(uri, "\n".join(lines))
        done = engine.complete(uri, Position(line_no, len(indent)), k=drafts,
                               trigger=Trigger.INVOKED)
        engine.close(uri)
        firsts = [d.text.split("\n")[0].rstrip() for d in done.drafts]
        got = firsts[0] if firsts else ""
        exact += got == target.strip()
        right.append(got == target.strip())
        exact_any += target.strip() in firsts
        latencies.append(done.latency_ms)
        suggestions.append(got)
    return FileScore(f.relpath, len(lines_sampled), exact, tuple(latencies), tuple(suggestions),
                     exact_any, tuple(right))


def merge_scores(order: str, held_out: str, scores: list[FileScore],
                 drafts: int = 1) -> NextLineResult:
    """The result of an evaluation from its files' scores (in file order)."""
    result = NextLineResult(order, held_out, drafts=drafts)
    for s in scores:
        n, e = result.per_file.get(s.relpath, (0, 0))
        result.per_file[s.relpath] = (n + s.lines, e + s.exact)
        result.lines += s.lines
        result.exact += s.exact
        result.exact_any += s.exact_any
        result.latencies_ms.extend(s.latencies_ms)
        result.suggestions.extend(s.suggestions)
        result.right.extend(s.right)
    return result


def evaluate_next_line(model: str = "", fim_order: str = "auto", lines_per_file: int = 40,
                       seed: int = 0, engine: Engine | None = None,
                       held_out: str = "stdlib", drafts: int = 1) -> NextLineResult:
    if engine is None:
        engine = Engine(evaluation_options(model, fim_order))
    else:                                  # keeps its device and dtype; its model stays loaded
        engine.configure(evaluation_options(model, fim_order, engine.options).as_dict())
    runtime = engine.load_model()
    order = fim_order if fim_order != "auto" else runtime.fim_order
    files = held_out_files(held_out)
    scores = [evaluate_file(engine, f, lines_per_file, seed, drafts)
              for f in tqdm(files, desc=f"next-line exact match ({held_out}, {order})",
                            unit="file", mininterval=10)]
    return merge_scores(order, held_out, scores, drafts)
