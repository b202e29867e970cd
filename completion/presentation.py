"""From decoded drafts to the suggestions shown: a draft that makes the cursor's line the
line above over again dropped, text that merely repeats what follows the cursor trimmed,
cut where the syntax guard finds a new error (never to nothing), and only alternatives
worth showing (no blank, repeated, whitespace-only, prefix or sub-word ones, nor, when
asked, far less likely ones)."""
from __future__ import annotations

from dataclasses import dataclass

from inkling.completion.decoding.steps import Decoded
from inkling.completion.decoding.ranking import Dropped, normalised_logprob, worth_showing
from inkling.completion.decoding.seams import Guard
from inkling.completion.decoding.stop_rules import repeats_line_above, trim_repeated_suffix
from inkling.completion.prompt.builder import Prompt
from inkling.completion.result import GuardCut


@dataclass(frozen=True)
class Presentation:
    """How one completion's drafts are shown: trimmed against its ``prompt``, cut by the
    syntax ``guard`` (None: none), in the document's ``eol``; alternatives ``prune`` nats
    a token below the lead left out (0: none for that). The decode request carries it,
    so a decoder can ask how a draft would be shown (``shown_text``)."""
    prompt: Prompt
    guard: Guard | None
    eol: str = "\n"
    prune: float = 0.0

    def shown_text(self, text: str) -> str:
        return shown_text(text, self.prompt, self.guard)

    def shown_drafts(self, outs: list[Decoded]
                     ) -> tuple[list[tuple[str, Decoded]], list[Dropped], GuardCut]:
        return shown_drafts(outs, self.prompt, self.guard, self.eol, self.prune)


def shown_drafts(outs: list[Decoded], prompt: Prompt, guard, eol: str, prune: float = 0.0
                 ) -> tuple[list[tuple[str, Decoded]], list[Dropped], GuardCut]:
    """(text in the document's line ends, decoded draft) of each draft shown, best first,
    each one left out with its reason, and what the guard cut from the first decoded draft.
    ``guard``: the analysis' syntax guard at the cursor, or None; ``prune``: alternatives
    this many nats a token below the lead are left out (0: none for that)."""
    trimmed = [trimmed_text(out.text, prompt) for out in outs]
    texts = [guarded(text, guard) for text in trimmed]
    shown, dropped = worth_showing(texts, [normalised_logprob(o) for o in outs], prune)
    cut = GuardCut.of(trimmed[0], texts[0]) if outs else GuardCut()
    return [(texts[i] if eol == "\n" else texts[i].replace("\n", eol), outs[i])
            for i in shown], dropped, cut


def shown_text(text: str, prompt: Prompt, guard) -> str:
    """A draft's text as shown: trimmed (``trimmed_text``), then cut where the syntax
    guard (None: none) finds a new error."""
    return guarded(trimmed_text(text, prompt), guard)


def trimmed_text(text: str, prompt: Prompt) -> str:
    """Nothing where the draft makes the cursor's line the line above again, else the
    draft without what merely repeats the text after the cursor."""
    if repeats_line_above(text, prompt.line_prefix, prompt.line_suffix, prompt.prefix):
        return ""
    return trim_repeated_suffix(text, prompt.line_suffix, prompt.suffix)


def guarded(text: str, guard) -> str:
    """``text`` cut where the syntax guard (None: none) finds a new ERROR or MISSING node
    in its statement; whole where no prefix that shows something passes (the guard
    shortens, it never empties: on the tuning set's traces the drafts it emptied were
    more often closer to the line typed than nothing, benchmarks/monitor_pays.py)."""
    if guard is None:
        return text
    kept = text[:guard.longest_valid_prefix(text)]
    return kept if kept.strip() else text
