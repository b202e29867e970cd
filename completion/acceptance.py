"""How many drafted tokens the model has been keeping per verification lately, per
drafting source, and the draft size that pays at that rate.

Verifying a tree of n tokens costs about one forward pass plus n tokens' worth of
compute; on a CPU the per-token part is large enough that a big tree the model mostly
rejects costs more than it saves. So the suffix drafter's path length and tree size
follow the measured acceptance (an exponential average of accepted tokens per
verification): short drafts while the model disagrees with the retrieved text, long
ones while it copies. Sources are measured apart: the model keeps most of what it
suggested a keystroke ago and little of what the workspace holds.

A draft is verified only where it pays: when the tokens it is expected to yield per
forward (1 + the source's acceptance) reach what the larger forward costs against a
one-row step (``VerifyCost``, measured). A source below that still drafts one
opportunity in ``explore_every``, so its acceptance keeps being measured. A source
that cannot pay even with a one-token draft is not searched at all between its turns
(``admitted``): on a CPU that leaves the large indexes (workspace, datastore) alone
most of the time, and their lookups are most of a draft's cost.

Which source's tree is verified is chosen by what the model has kept, too: each tree's
expected yield is the measured acceptance of its source at its match length (``value``),
not its own count score. When a completion is done its whole greedy output is known,
so every candidate of any of its steps is scored against it (``learn``): what the
verified tree kept and what each passed-over candidate would have kept alike, with
no forward spent. On the drafting benchmark's first six traces, choosing
this way kept 1.45 tokens per 8-node tree where the count score kept 1.04 (the best
source in hindsight: 1.78).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .suffix_drafter import DraftLimits
from .verify_cost import VerifyCost


@dataclass
class AcceptanceMeter:
    prior: float = 1.0           # accepted draft tokens per verification before any is seen
    weight: float = 0.1          # weight of the newest verification in the average
    rates: dict[str, float] = field(default_factory=dict)   # source -> average
    explore_every: int = 8
    cost: VerifyCost = field(default_factory=VerifyCost)
    # (source, match-length bucket) -> accepted tokens of its trees, averaged
    by_match: dict[tuple[str, int], float] = field(default_factory=dict)
    _chances: dict[str, int] = field(default_factory=dict)

    def accepted(self, source: str = "") -> float:
        return self.rates.get(source, self.prior)

    def record(self, accepted: int, source: str = "") -> None:
        a = self.accepted(source)
        self.rates[source] = a + self.weight * (accepted - a)

    def value(self, tree) -> float:
        """The tokens a verification of ``tree`` (a DraftTree or a drafting Candidate)
        is expected to keep: its source's measured acceptance after matches as long as
        its own (the source's overall rate until that is measured)."""
        return self.by_match.get((tree.source, match_bucket(tree.match)),
                                 self.accepted(tree.source))

    def learn(self, tree, accepted: int) -> None:
        """``tree`` (a DraftTree or a Candidate) would have kept ``accepted`` tokens
        (scored against the output)."""
        key = (tree.source, match_bucket(tree.match))
        v = self.by_match.get(key)
        self.by_match[key] = accepted if v is None else v + self.weight * (accepted - v)

    def limits(self, base: DraftLimits, source: str = "") -> DraftLimits:
        """``base`` with its path length and tree size scaled to ``source``'s acceptance."""
        a = self.accepted(source)
        span = max(2, min(base.max_spec, round(2 + 3 * a)))
        nodes = max(4, min(base.max_nodes, round(4 + 8 * a)))
        return replace(base, max_spec=span, max_nodes=nodes)

    def admitted(self, sources) -> tuple[set[str], set[str]]:
        """Of ``sources`` (names), those worth searching this step, and those among them
        searched only because it is their turn to be measured (their draft is verified
        whatever its size): a source is worth it when 1 + its acceptance reaches the
        cost of a two-row forward (a one-token draft)."""
        keep, measured = set(), set()
        for source in sources:
            if self.fits(source, 1):
                keep.add(source)
            elif self._turn(source):
                keep.add(source)
                measured.add(source)
        return keep, measured

    def _turn(self, source: str) -> bool:
        n = self._chances[source] = self._chances.get(source, 0) + 1
        return n % self.explore_every == 0

    def pays(self, tree) -> bool:
        """Whether verifying ``tree`` is expected to beat a one-row step, by what trees
        of its source and match length have kept (``value``)."""
        return 1 + self.value(tree) >= self.cost.ratio(len(tree) + 1)

    def fits(self, source: str, tree_size: int) -> bool:
        """Whether verifying a tree of ``tree_size`` tokens from ``source`` is expected
        to beat a one-row step."""
        return 1 + self.accepted(source) >= self.cost.ratio(tree_size + 1)


def match_bucket(length: int) -> int:
    """Match lengths as the meter tells them apart: 1 to 8 each, then 12 (9 to 15) and
    16 (16 and more)."""
    return length if length <= 8 else 12 if length < 16 else 16
