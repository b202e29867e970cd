"""From decoded drafts to the suggestions shown: a draft that makes the cursor's line the
line above over again dropped, text that merely repeats what follows the cursor trimmed,
cut where the syntax guard finds a new error, and only alternatives worth showing (no
blank, repeated, whitespace-only, prefix or sub-word ones, nor, when asked, far less likely
ones)."""
from __future__ import annotations

from .decoding.steps import Decoded
from .decoding.ranking import Dropped, normalised_logprob, worth_showing
from .decoding.stop_rules import repeats_line_above, trim_repeated_suffix
from .prompt.builder import Prompt


def shown_drafts(outs: list[Decoded], prompt: Prompt, guard, eol: str, prune: float = 0.0
                 ) -> tuple[list[tuple[str, Decoded]], list[Dropped]]:
    """(text in the document's line ends, decoded draft) of each draft shown, best first,
    and each one left out with its reason. ``guard``: the analysis' syntax guard at the
    cursor, or None; ``prune``: alternatives this many nats a token below the lead are
    left out (0: none for that)."""
    texts = [shown_text(out.text, prompt, guard) for out in outs]
    shown, dropped = worth_showing(texts, [normalised_logprob(o) for o in outs], prune)
    return [(texts[i] if eol == "\n" else texts[i].replace("\n", eol), outs[i])
            for i in shown], dropped


def shown_text(text: str, prompt: Prompt, guard) -> str:
    """A draft's text as shown: nothing where it makes the cursor's line the line above
    again, else without what merely repeats the text after the cursor, and cut where the
    syntax guard (None: none) finds a new error."""
    if repeats_line_above(text, prompt.line_prefix, prompt.line_suffix, prompt.prefix):
        return ""
    text = trim_repeated_suffix(text, prompt.line_suffix, prompt.suffix)
    if guard is not None:                 # no new ERROR or MISSING node in its statement
        text = text[:guard.longest_valid_prefix(text)]
    return text
