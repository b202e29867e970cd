"""The decode plan: what one completion decodes, decided once.
From the options, the trigger and the cursor: one draft is greedy (beam for an invoked one),
several come from the decoder named. A leaf of the options tree (stdlib and decoding's leaves)."""
from __future__ import annotations

from dataclasses import dataclass

from inkling.completion.decoding.names import Decoder, Trigger
from inkling.completion.decoding.seams import Stop
from inkling.completion.errors import OptionError

MAX_DRAFTS = 16                      # drafts one completion may ask for
UNDRAFTED = (Decoder.SUPERPOSED, Decoder.BEAM)   # decoders whose rows are not drafted


def decoder_for(decoder: str, k: int, trigger: Trigger = Trigger.INVOKED) -> Decoder:
    """The decoder that runs for ``decoder`` named, ``k`` drafts and a ``trigger`` completion."""
    if k > 1 or (decoder == Decoder.BEAM and trigger == Trigger.INVOKED):
        return Decoder(decoder)
    return Decoder.GREEDY


def drafts_asked(c, trigger: Trigger, k: int | None = None) -> int:
    """Drafts a completion asks for: ``k``, else the options' count for ``trigger``.
    Raises OptionError outside 1 to MAX_DRAFTS."""
    k = (c.drafts if trigger == Trigger.INVOKED else c.automatic_drafts) if k is None else k
    if not 1 <= k <= MAX_DRAFTS:
        raise OptionError(f"the number of drafts must be between 1 and {MAX_DRAFTS}, got {k}")
    return k


@dataclass(frozen=True)
class DecodePlan:
    """What one completion decodes (``plan_for``)."""
    decoder: Decoder         # the decoder that runs (decoder_for); greedy: one draft
    k: int                   # drafts asked for
    stop: Stop               # where a draft ends (stop_rules.StopRule: a line, a block)
    budget: int              # new tokens a draft may take at most
    width: int               # the beam's hypotheses a step (at least k)
    rereads: int             # the beam's best distinct drafts reread, at least k (0: none)
    reread_lines: int        # lines after the cursor's that rereading reads
    reread_window: int       # tokens before the cursor's line that rereading reads after
    floor: int               # alternatives' tokens not cut under this
    temperature: float       # alternatives' later tokens sampled at it (0: greedy)
    blank_lines: bool        # a blank line's draft begins with code (blank_line.py)

    @property
    def block(self) -> bool:
        """The cursor opens an empty block: drafts run to its end."""
        return self.stop.block

    @property
    def one(self) -> bool:
        """One draft, decoded greedily (speculatively with a drafter)."""
        return self.decoder == Decoder.GREEDY

    @property
    def drafting(self) -> bool:
        """Whether a drafter may run (beam and superposed rows are not drafted)."""
        return self.decoder not in UNDRAFTED


def plan_for(c, trigger: Trigger, k: int, stop: Stop) -> DecodePlan:
    """The plan of a ``trigger`` completion of ``k`` drafts (options ``c``), ending by ``stop``."""
    decoder, block = decoder_for(c.decoder, k, trigger), stop.block
    width = c.block_beam_width if block else c.beam_width
    rereads = max(k, c.reread_drafts or width) if decoder == Decoder.BEAM and c.reread_lines else 0
    return DecodePlan(decoder, k, stop, c.max_block_tokens if block else c.max_new_tokens,
                      width, rereads, c.reread_lines, c.reread_window,
                      c.alternative_min_tokens, c.alternative_temperature, c.fill_blank_lines)
