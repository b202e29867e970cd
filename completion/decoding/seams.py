"""The collaborators a decoder is handed, as Protocols.
A leaf, so the plan, the request and the options name these types without their implementations."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    import torch


class Monitor(Protocol):
    """One decoding path's analysis state (MonitorState, or BlankLine / Healing wrapping it)."""
    def mask(self, device=None) -> torch.Tensor | None: ...     # bool [vocab] or None: any
    def advance_token(self, token_id: int) -> Monitor: ...
    def advance(self, text: str) -> Monitor: ...
    def forced_text(self) -> str: ...


class StepCost(Protocol):
    """What verification steps cost (drafting.verify_cost.VerifyCost)."""
    def record(self, rows: int, ms: float, tokens: int | None = None,
               search_ms: float | None = None) -> None: ...


class Meter(Protocol):
    """What verification kept, by source (drafting.acceptance.AcceptanceMeter)."""
    cost: StepCost

    def record(self, accepted: int, source: str = "") -> None: ...
    def plain_step(self) -> bool: ...


class Rereader(Protocol):
    """Reads drafts in place in the file (rereading.Rereading)."""
    def scores(self, texts: list[str], cancelled: Callable[[], bool]) -> list[float]: ...


class Stop(Protocol):
    """Where a draft ends (stop_rules.StopRule: a line, a block)."""
    @property
    def block(self) -> bool: ...
    def cut(self, text: str, final: bool = False) -> int | None: ...
    def capped(self, lines: int) -> Stop: ...


class Guard(Protocol):
    """The syntax guard at the cursor (analysis.syntax_guard.SyntaxGuard)."""
    def longest_valid_prefix(self, draft: str) -> int: ...
