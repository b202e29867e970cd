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
step (1 + its expected acceptance) reach what the larger step costs against a one-row
step (``VerifyCost``: the forward, the monitor's masks and the walk, measured). Trees are
cut to that, too: a source's tree holds at most the rows whose step its acceptance pays
for (``limits``). And drafting as a whole is measured against decoding without it: the
ms a token of steps after a search (the search, the masks, the larger forward and the
walk) against those of plain steps (``VerifyCost.drafting_pays``). While drafting costs
more a token, it idles: sources are searched only on their turn to be measured again,
one step in ``explore_idle`` or fewer, so that the turns of all sources together cost at
most ``explore_share`` of a token's time; while it pays, one step in ``explore_idle`` is a
plain one, so that both stay measured. And while it idles, a completion drafts at all only
one time in ``explore_completions`` (``drafts_completion``): the others decode greedily
with no drafter, so they pay neither the drafter's calls, the speculative loop's
bookkeeping a step nor a draft in the prompt's forward, and they suggest the same (drafting
is lossless). The drafting completions keep both arms measured, so drafting comes back
where it pays again (text that repeats what the sources hold).

With the native forward's float16 panels a one-row step of the bundled model costs about
0.4 to 0.8 ms on this CPU and a tree's forward of 8 rows about four of them, so drafting
mostly idles; with each source's own 2% its turns cost 14% of a token's time (the peer
benchmark's median completion: 19.3 ms with drafting, 15.7 without), shared 2% (16.6
against 14.7 in a later run: the rest is the speculative loop's bookkeeping and the
searches of the sources worth theirs), hence the completions without a drafter.

A source is searched only where it pays, too (``admitted``): a search costs time
(0.01 to 0.05 ms for the request's own text, 0.2 to 0.5 ms for the model datastore, the
corpus and the recent suggestions, more for the document, whose index is then built), and
most sources seldom have the best candidate. So each source's *margin* is measured:
how many more tokens its best candidate keeps than the best of the other sources'
(none when it keeps no more), scored against the whole output once a completion is
done (``learn_step``). A source is searched while its margin, at what a token costs
without drafting (a one-row step), is worth more than its own measured search time; on
its turn it is searched anyway, so its margin keeps being measured: one step in
``explore_every``, or fewer where its search is dear (its turns cost at most
``explore_share`` of a token's cost, on average). On the drafting benchmark's first six
traces the model datastore's margin ended each trace between 0.7 and 1.8 tokens a step,
the request's and the recent suggestions' between 0 and 1, the corpus datastore's and
the document's at most 0.1, the workspace's and the accepted completions' at 0: those
last four are mostly searched only on their turn. With the compact forward, on the
held-out retype traces (toolz, monitor on), searching each source one step in 8, 4, 2
or every step made 2.44, 2.55, 2.61 and 2.66 tokens a forward at the same latency p50;
with the native forward a one-row step costs half as much and the searches do not,
so the turn is one step in 4 now (``benchmarks/README.md``, "The native forward to 64
rows").

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
    # (source, match-length bucket) -> accepted tokens of its trees, averaged
    by_match: dict[tuple[str, int], float] = field(default_factory=dict)
    # source -> tokens its best candidate keeps beyond the other sources' best, averaged
    margins: dict[str, float] = field(default_factory=dict)
    search_ms: dict[str, float] = field(default_factory=dict)   # source -> ms a search
    _chances: dict[str, int] = field(default_factory=dict)
    _steps: int = 0               # drafting steps asked for (a plain one in explore_idle)
    _idle_completions: int = 0    # completions asked for while drafting idled
    _branch_steps: int = 0        # steps of decoders that ask one drafter a branch
    _limits: dict = field(default_factory=dict, repr=False)    # (base, span, nodes) -> limits

    def accepted(self, source: str = "") -> float:
        return self.rates.get(source, self.prior)

    def record(self, accepted: int, source: str = "") -> None:
        """A tree of ``source`` kept ``accepted`` tokens (verified, or passed over and
        scored against the output: what it would have kept)."""
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
        rows = self.cost.rows_that_pay(1 + a)          # root and nodes whose step pays
        nodes = max(1, min(base.max_nodes, round(4 + 8 * a), rows - 1))
        span = max(1, min(base.max_spec, round(2 + 3 * a), nodes))
        key = (base, span, nodes)
        found = self._limits.get(key)
        if found is None:               # a handful of sizes: made once each
            found = self._limits[key] = replace(base, max_spec=span, max_nodes=nodes)
        return found

    def admitted(self, sources) -> set[str]:
        """Of ``sources`` (names), those worth searching this step: not yet measured, or
        their margin worth their search time (``worth``), or their turn to be measured.
        While drafting idles (``idle``), only those whose turn it is; while it does not,
        none one step in ``explore_idle`` (a plain step, to keep measuring those)."""
        idle = self.idle()
        self._steps += 1
        if not idle and self._steps % self.explore_idle == 0:
            return set()
        sources = list(sources)
        return {s for s in sources
                if (not idle and self.worth(s)) or self._turn(s, idle, len(sources))}

    def drafts_completion(self) -> bool:
        """Whether the next completion drafts at all: every one while drafting pays (or is
        not measured yet); while it idles, one in ``explore_completions``, to keep
        measuring it. The others run without a drafter (greedy's own loop)."""
        if not self.idle():
            return True
        self._idle_completions += 1
        return self._idle_completions % self.explore_completions == 0

    def plain_step(self) -> bool:
        """Whether a decoder that asks a drafter per branch at each step (``branches``)
        takes this step plain, asking none: one step in ``explore_idle`` while drafting
        pays, so that its plain steps stay measured against its drafted ones (a decoder of
        one branch gets its plain steps from ``admitted``, which k calls a step would
        never leave all empty)."""
        self._branch_steps += 1
        return not self.idle() and self._branch_steps % self.explore_idle == 0

    def idle(self) -> bool:
        """Whether drafting costs more a token than plain steps, as measured."""
        return not self.cost.drafting_pays()

    def worth(self, source: str) -> bool:
        """Whether searching ``source`` is expected to save more decoding time than the
        search costs; True until both are measured."""
        margin, ms, token = self.margins.get(source), self.search_ms.get(source), self.token_ms()
        if margin is None or ms is None or token is None:
            return True
        return margin * token >= ms

    def token_ms(self) -> float | None:
        """What a decoded token costs without drafting: a one-row step (None before one
        is measured). A source's margin saves about that much a token it adds."""
        return self.cost.plain_ms()

    def searched(self, spent_ms: dict[str, float]) -> None:
        """Record each searched source's search time (ms) at one step."""
        for source, ms in spent_ms.items():
            old = self.search_ms.get(source)
            self.search_ms[source] = ms if old is None else old + self.weight * (ms - old)

    def learn_step(self, candidates, searched, output: list[int]) -> dict[str, int]:
        """Score one drafting step's ``candidates`` (drafting Candidates, of the sources
        ``searched``) against the ``output`` that followed: each candidate's source and
        match length learns what it would have kept (``learn``), and each searched
        source its margin: how many more tokens its best candidate keeps than the best
        of the other sources' (0 when it keeps no more). Returns the most each source's
        candidates would have kept."""
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
        """Whether ``source`` is searched this step to measure it: one step in
        ``explore_every`` (``explore_idle`` while idle), or fewer, so that its searches
        cost at most ``explore_share`` of a token's cost a step; while drafting idles,
        the ``sources`` share that much between them (the turns of all cost at most
        ``explore_share`` then, where each source's alone did)."""
        n = self._chances[source] = self._chances.get(source, 0) + 1
        period = self.explore_idle if idle else self.explore_every
        ms, token = self.search_ms.get(source), self.token_ms()
        if ms is not None and token:
            share = self.explore_share / (sources if idle else 1)
            period = max(period, round(ms / (share * token)))
        return n % period == 0

    def pays(self, tree) -> bool:
        """Whether verifying ``tree`` is expected to beat a one-row step, by what trees
        of its source and match length have kept (``value``)."""
        return 1 + self.value(tree) >= self.cost.ratio(len(tree) + 1)


def match_bucket(length: int) -> int:
    """Match lengths as the meter tells them apart: 1 to 8 each, then 12 (9 to 15) and
    16 (16 and more)."""
    return length if length <= 8 else 12 if length < 16 else 16
