"""Next-line exact match on held-out files, none of them trained on
(``evaluation/eval_sets.py``): the standard library's held-out files (``held_out="stdlib"``)
and toolz 1.0.0 (``"package"``) make the tuning set (``"tuning"``: both), which the
defaults were chosen on; the reporting set's pinned packages (``"reporting"``) are what
the headline figures are measured on.

For each sampled non-blank line of a held-out file, the line's text is removed
(its indentation kept, as an editor's auto-indent leaves it), the Engine completes
at the end of the indentation with the rest of the file as suffix, and the first
line of the suggestion is compared with the removed text (trailing whitespace
ignored). This is exactly what a user of `inkling complete` would get: an invoked
completion, decoded by the options' decoder (``beam`` by default; the others decode one
draft greedily). With ``drafts`` K > 1 the completion asks for K drafts: ``exact`` counts
the first draft, ``exact_any`` any of them.

Each held-out file is one job (its lines in order, on one Engine), so the evaluation can
be sharded by file (``inkling evaluate --ray``, evaluation/ray_evaluate.py) and merged
back into the same figures.
"""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field

from tqdm import tqdm

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
    """The files of a held-out set: ``stdlib``, ``package`` (toolz), or an evaluation set's
    (``tuning``: both of those; ``reporting``: its packages' modules)."""
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
    """One held-out file's lines: how many, how many exact, each completion's latency and
    the first line it suggested."""
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
    """Complete each sampled line of held-out file ``f`` (a corpus file: relpath, text),
    asking for ``drafts`` drafts."""
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
                               trigger="invoked")
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
