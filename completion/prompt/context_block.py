"""The repository-context block: snippets chosen by rank within a token budget, written in a stable
order ending with the cursor file's path, so that the block changes only with the choice."""
from __future__ import annotations

from dataclasses import dataclass

from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.prompt.repo_format import RepoFormat

KINDS = ("similar", "imports")        # sections of the block in this order
MIN_SNIPPET_TOKENS = 24               # a snippet cut shorter than this is left out


@dataclass(frozen=True)
class Snippet:
    path: str                # workspace-relative, POSIX separators
    text: str                # whole lines, each ending in \n
    kind: str                # "imports" | "similar"
    rank: float              # lower is chosen first when the budget is short
    order: tuple             # where it goes in its kind's part of the block (stable)


@dataclass(frozen=True)
class ContextBlock:
    ids: tuple[int, ...] = ()
    text: str = ""           # as the model reads it (special tokens written out)
    files: tuple[str, ...] = ()       # each section's path, in block order
    snippets: tuple[Snippet, ...] = ()

    def __len__(self) -> int:
        return len(self.ids)


EMPTY = ContextBlock()


def _sections(chosen: list[Snippet]) -> list[tuple[str, str]]:
    """(path, text) per file section in block order."""
    ordered = sorted(chosen, key=lambda s: (KINDS.index(s.kind), s.order))
    sections: list[tuple[str, str, str]] = []
    for s in ordered:
        if sections and sections[-1][:2] == (s.kind, s.path):
            sections[-1] = (s.kind, s.path, sections[-1][2] + s.text)
        else:
            sections.append((s.kind, s.path, s.text))
    return [(path, text) for _, path, text in sections]


def render(chosen: list[Snippet], fmt: RepoFormat, target: str, repo: str,
           runtime: ModelRuntime) -> ContextBlock:
    """The block of ``chosen`` snippets for the cursor's file at path ``target``."""
    if not chosen:
        return EMPTY
    sections = _sections(chosen)
    ids = list(fmt.head_ids(repo, runtime))
    for path, text in sections:
        ids += fmt.file_ids(path, text, runtime)
    ids += fmt.file_ids(target, "", runtime)
    order = sorted(chosen, key=lambda s: (KINDS.index(s.kind), s.order))
    return ContextBlock(tuple(ids), runtime.decode(ids), tuple(p for p, _ in sections),
                        tuple(order))


def _cut(text: str, tokens: int, runtime: ModelRuntime) -> str:
    """The longest head of whole lines of ``text`` within ``tokens``."""
    lines = text.splitlines(keepends=True)
    while lines and len(runtime.encode("".join(lines))) > tokens:
        lines = lines[:max(1, len(lines) * 3 // 4)] if len(lines) > 4 else lines[:-1]
    return "".join(lines)


def assemble(snippets: list[Snippet], fmt: RepoFormat, target: str, repo: str,
             runtime: ModelRuntime, budget: int) -> ContextBlock:
    """The block of the best-ranked ``snippets`` within ``budget``, long ones cut to whole lines."""
    fixed = len(fmt.head_ids(repo, runtime)) + len(fmt.file_ids(target, "", runtime))
    left = budget - fixed
    chosen: list[Snippet] = []
    files: set[tuple[str, str]] = set()
    for s in sorted(snippets, key=lambda s: (s.rank, KINDS.index(s.kind), s.order)):
        header = 0 if (s.kind, s.path) in files else len(fmt.file_ids(s.path, "", runtime))
        cost = header + len(runtime.encode(s.text))
        if cost > left:
            room = left - header
            if room < MIN_SNIPPET_TOKENS:
                continue
            s = Snippet(s.path, _cut(s.text, room, runtime), s.kind, s.rank, s.order)
            if not s.text:
                continue
            cost = header + len(runtime.encode(s.text))
        chosen.append(s)
        files.add((s.kind, s.path))
        left -= cost
    block = render(chosen, fmt, target, repo, runtime)
    while len(block) > budget and chosen:      # sections tokenized whole differ slightly
        chosen.pop()
        block = render(chosen, fmt, target, repo, runtime)
    return block
