"""Accepted draft tokens per verification, by drafting source, as exponential averages that size
the trees, choose the one verified, admit sources, and idle drafting where it costs more a token
than plain steps (the rules and their measurements: docs/decisions/suffix-drafting.md)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from inkling.completion.drafting.suffix_drafter import DraftLimits
from inkling.completion.drafting.verify_cost import VerifyCost


@dataclass
class AcceptanceMeter:
    prior: float = 1.0           # accepted draft tokens per verification before any is seen
    weight: float = 0.1          # weight of the newest verification in the average
    rates: dict[str, float] = field(default_factory=dict)   # source -> average
    explore_every: int = 4       # a source not worth its search is searched one step in this
    explore_idle: int = 8        # ... one in this while drafting idles; a plain step while not
    explore_share: float = 0.02  # what a source's turns may cost, a share of a token's cost
    explore_completions: int = 8  # while drafting idles, one completion in this drafts
    cost: VerifyCost = field(default_factory=VerifyCost)
    by_match: dict[tuple[str, int], float] = field(default_factory=dict)  # see learn
    margins: dict[str, float] = field(default_factory=dict)   # source -> margin (learn_step)
    search_ms: dict[str, float] = field(default_factory=dict)   # source -> ms a search
    _chances: dict[str, int] = field(default_factory=dict)
    _steps: int = 0               # drafting steps asked for (a plain one in explore_idle)
    _idle_completions: int = 0    # completions asked for while drafting idled
    _branch_steps: int = 0        # steps of decoders that ask one drafter a branch
    _limits: dict = field(default_factory=dict, repr=False)    # (base, span, nodes) -> limits

    def accepted(self, source: str = "") -> float:
        return self.rates.get(source, self.prior)

    def record(self, accepted: int, source: str = "") -> None:
        """A tree of ``source`` kept ``accepted`` tokens (or would have, passed over)."""
        a = self.accepted(source)
        self.rates[source] = a + self.weight * (accepted - a)

    def value(self, tree) -> float:
        """Tokens ``tree`` (DraftTree or Candidate) is expected to keep, by source and match."""
        return self.by_match.get((tree.source, match_bucket(tree.match)),
                                 self.accepted(tree.source))

    def learn(self, tree, accepted: int) -> None:
        """``tree`` (DraftTree or Candidate) would have kept ``accepted`` tokens of the output."""
        key = (tree.source, match_bucket(tree.match))
        v = self.by_match.get(key)
        self.by_match[key] = accepted if v is None else v + self.weight * (accepted - v)

    def limits(self, base: DraftLimits, source: str = "") -> DraftLimits:
        """``base`` with its path length and tree size scaled to ``source``'s acceptance."""
        a = self.accepted(source)
        rows = self.cost.rows_that_pay(1 + a)          # root and nodes whose step pays
        nodes = max(1, min(base.max_nodes, round(4 + 8 * a), rows - 1))
        span = max(1, min(base.max_spec, round(2 + 3 * a), nodes))
        key = (base, span, nodes)
        found = self._limits.get(key)
        if found is None:               # a handful of sizes: made once each
            found = self._limits[key] = replace(base, max_spec=span, max_nodes=nodes)
        return found

    def admitted(self, sources) -> set[str]:
        """Of ``sources`` (names), those to search this step: unmeasured, ``worth`` it, or on their
        turn (only the latter while idle); none one step in ``explore_idle`` while drafting pays."""
        idle = self.idle()
        self._steps += 1
        if not idle and self._steps % self.explore_idle == 0:
            return set()
        sources = list(sources)
        return {s for s in sources
                if (not idle and self.worth(s)) or self._turn(s, idle, len(sources))}

    def drafts_completion(self) -> bool:
        """Whether the next completion drafts: each while drafting pays, else one in
        ``explore_completions`` so that drafting stays measured."""
        if not self.idle():
            return True
        self._idle_completions += 1
        return self._idle_completions % self.explore_completions == 0

    def plain_step(self) -> bool:
        """Whether a decoder drafting per branch takes this step plain: one in ``explore_idle``
        while drafting pays, so that plain steps stay measured."""
        self._branch_steps += 1
        return not self.idle() and self._branch_steps % self.explore_idle == 0

    def idle(self) -> bool:
        """Whether drafting costs more a token than plain steps, as measured."""
        return not self.cost.drafting_pays()

    def worth(self, source: str) -> bool:
        """Whether searching ``source`` saves more time than it costs (True until measured)."""
        margin, ms, token = self.margins.get(source), self.search_ms.get(source), self.token_ms()
        if margin is None or ms is None or token is None:
            return True
        return margin * token >= ms

    def token_ms(self) -> float | None:
        """ms of a token without drafting, a one-row step (None until measured)."""
        return self.cost.plain_ms()

    def searched(self, spent_ms: dict[str, float]) -> None:
        """Record each searched source's search time (ms) at one step."""
        for source, ms in spent_ms.items():
            old = self.search_ms.get(source)
            self.search_ms[source] = ms if old is None else old + self.weight * (ms - old)

    def learn_step(self, candidates, searched, output: list[int]) -> dict[str, int]:
        """Score a step's ``candidates`` against the ``output`` after it, and each ``searched``
        source's margin (its best's tokens beyond the others' best); returns source -> most kept."""
        kept = [c.kept(output) for c in candidates]
        best: dict[str, int] = {}
        for c, n in zip(candidates, kept):
            best[c.source] = max(n, best.get(c.source, 0))
        for source in searched:
            others = max((n for s, n in best.items() if s != source), default=0)
            m = max(0, best.get(source, 0) - others)
            old = self.margins.get(source)
            self.margins[source] = m if old is None else old + self.weight * (m - old)
        for c, n in zip(candidates, kept):
            self.learn(c, n)
        return best

    def _turn(self, source: str, idle: bool = False, sources: int = 1) -> bool:
        """Whether ``source`` is searched this step to measure it: one in ``explore_every`` or
        fewer, so that its searches cost at most ``explore_share`` of a token (idle: shared)."""
        n = self._chances[source] = self._chances.get(source, 0) + 1
        period = self.explore_idle if idle else self.explore_every
        ms, token = self.search_ms.get(source), self.token_ms()
        if ms is not None and token:
            share = self.explore_share / (sources if idle else 1)
            period = max(period, round(ms / (share * token)))
        return n % period == 0

    def pays(self, tree) -> bool:
        """Whether verifying ``tree`` is expected to yield what its step costs in one-row steps."""
        return 1 + self.value(tree) >= self.cost.ratio(len(tree) + 1)


def match_bucket(length: int) -> int:
    """Match lengths as the meter tells them apart: 1 to 8, then 12 (9 to 15), 16 (16 on)."""
    return length if length <= 8 else 12 if length < 16 else 16
