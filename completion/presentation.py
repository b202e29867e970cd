"""From decoded drafts to the suggestions shown: a draft that repeats the line above dropped,
text that repeats what follows the cursor trimmed, a cut at a new syntax error, and only the
alternatives worth showing."""
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
    """How one completion's drafts are shown (``guard`` None: none; alternatives ``prune`` nats a
    token below the lead left out, 0: none); the decode request carries it, so a decoder can ask
    how a draft would be shown (``shown_text``)."""
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
    """Return (text in the document's line ends, draft) shown, best first; those left out with
    why; and what the guard cut from the first decoded draft."""
    trimmed = [trimmed_text(out.text, prompt) for out in outs]
    texts = [guarded(text, guard) for text in trimmed]
    shown, dropped = worth_showing(texts, [normalised_logprob(o) for o in outs], prune)
    cut = GuardCut.of(trimmed[0], texts[0]) if outs else GuardCut()
    return [(texts[i] if eol == "\n" else texts[i].replace("\n", eol), outs[i])
            for i in shown], dropped, cut


def shown_text(text: str, prompt: Prompt, guard) -> str:
    """A draft's text as shown: trimmed, then cut where the syntax guard finds a new error."""
    return guarded(trimmed_text(text, prompt), guard)


def trimmed_text(text: str, prompt: Prompt) -> str:
    """Nothing if the draft repeats the line above, else the draft less what repeats the suffix."""
    if repeats_line_above(text, prompt.line_prefix, prompt.line_suffix, prompt.prefix):
        return ""
    return trim_repeated_suffix(text, prompt.line_suffix, prompt.suffix)


def guarded(text: str, guard) -> str:
    """``text`` cut where the guard finds a new ERROR or MISSING node; whole where no non-empty
    prefix passes, as the guard never empties (docs/decisions/syntax-guard.md)."""
    if guard is None:
        return text
    kept = text[:guard.longest_valid_prefix(text)]
    return kept if kept.strip() else text
