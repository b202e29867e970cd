"""Fill-in-the-middle prompts within a token budget: windows around the cursor cut on a line grid,
so that typing leaves the rest of the prompt and its cache alone; ``\\n`` line ends, and a
repository-context block first, after the BOS where the model's tokenizer adds one
(docs/decisions/prompt-order.md)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from inkling.runtime.model_runtime import ModelRuntime

from inkling.completion.edit_extent import EditExtent
from inkling.completion.errors import OptionError
from inkling.completion.options import CompletionOptions
from inkling.completion.prompt.token_ids import TokenIds

CHARS_PER_TOKEN_WINDOW = 6   # generous: more than code's characters per token
TOKENS_PER_LINE = 10         # about what a line of code costs (sizes the windows' line grid)


@dataclass(frozen=True)
class Prompt:
    ids: list[int]
    prefix: str        # text of the window before the cursor (\n line ends)
    suffix: str        # text of the window after the cursor
    prefix_ids: list[int]
    suffix_ids: list[int]
    first_line: int = 0       # the document line where the prefix window starts
    lines_below: int = 0      # document lines after the suffix window's end
    context: int = 0          # ids before the windows: the BOS, the repository-context block
    healed: str = ""          # text taken off the prefix's end; the output must start with it

    def edge_zones(self, runtime: ModelRuntime, order: str
                   ) -> tuple[tuple[int, int], tuple[int, int] | None]:
        """Zones of ``ids`` at the prefix window's start and the suffix window's end: the outer
        lines' tokens, which may differ between windows over the same text."""
        first = self.prefix[:self.prefix.find("\n") + 1] if "\n" in self.prefix else self.prefix
        front_len = len(runtime.encode(first)) + 1
        at = self.context
        if runtime.fim is None:
            return (at, at + front_len), None
        front, end = runtime.fim.edges(order, len(self.prefix_ids), len(self.suffix_ids))
        body = self.suffix[:-1] if self.suffix.endswith("\n") else self.suffix
        last = self.suffix[body.rfind("\n") + 1:]
        return (at + front, at + front + front_len), (at + end - len(runtime.encode(last)) - 1,
                                                      at + end)

    def with_fim(self, runtime: ModelRuntime, order: str, prefix_ids: list[int]) -> "Prompt":
        """This prompt with ``prefix_ids`` before the cursor, the context block kept in front."""
        ids = prefix_ids if runtime.fim is None else \
            runtime.fim.build(order, prefix_ids, self.suffix_ids, TokenIds(runtime))
        return dataclasses.replace(self, ids=self.ids[:self.context] + ids,
                                   prefix_ids=prefix_ids)

    def healed_prompt(self, runtime: ModelRuntime, order: str) -> "Prompt":
        """Token healing: this prompt less its last prefix token, whose text (``healed``) the output
        must start with; the prompt itself where that token is missing or not whole text."""
        if len(self.prefix_ids) < 2:
            return self
        healed = runtime.decode(self.prefix_ids[-1:])
        if not healed or "\ufffd" in healed:
            return self
        return dataclasses.replace(self.with_fim(runtime, order, self.prefix_ids[:-1]),
                                   healed=healed)

    def moved_edges(self, extent: EditExtent, runtime: ModelRuntime, order: str
                    ) -> tuple[tuple[int, int], ...]:
        """Zones of the window edges no edit touched (``extent``): changes there are shifts."""
        front, end = self.edge_zones(runtime, order)
        edges = []
        if extent.front_untouched(self.first_line):
            edges.append(front)
        if end is not None and extent.end_untouched(self.lines_below):
            edges.append(end)
        return tuple(edges)

    @property
    def line_prefix(self) -> str:
        return self.prefix[self.prefix.rfind("\n") + 1:]

    @property
    def line_suffix(self) -> str:
        end = self.suffix.find("\n")
        return self.suffix if end < 0 else self.suffix[:end]

    @property
    def at_blank_line(self) -> bool:
        """Whether the cursor's line holds nothing but whitespace."""
        return not self.line_prefix.strip() and not self.line_suffix.strip()


def normalise_eol(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _head_cut(text: str, budget_chars: int) -> str:
    """The end of ``text``, at most ``budget_chars`` long, starting at a line start."""
    if len(text) <= budget_chars:
        return text
    if budget_chars <= 0:
        return ""
    start = len(text) - budget_chars
    nl = text.find("\n", start)
    return text[nl + 1:] if 0 <= nl < len(text) - 1 else text[start:]


def _tail_cut(text: str, budget_chars: int) -> str:
    """The start of ``text``, at most ``budget_chars`` long, ending at a line end."""
    if len(text) <= budget_chars:
        return text
    nl = text.rfind("\n", 0, budget_chars)
    return text[:nl + 1] if nl >= 0 else text[:budget_chars]


def _fit(runtime: ModelRuntime, text: str, budget: int, cut) -> tuple[str, list[int]]:
    """The longest line-aligned window ``cut(text, chars)`` whose tokens fit ``budget``."""
    chars = budget * CHARS_PER_TOKEN_WINDOW
    best: tuple[str, list[int]] | None = None
    for _ in range(8):
        window = cut(text, max(1, chars))
        ids = runtime.encode(window)
        if len(ids) <= budget:
            if best is None or len(ids) > len(best[1]):
                best = (window, ids)
            if len(ids) >= budget * 0.9 or len(window) >= len(text):
                return best
            chars = int(len(window) * budget / max(1, len(ids)) * 0.97) + 1
        else:
            chars = int(len(window) * budget / len(ids) * 0.95)
    return best or (cut(text, 0), [])


def fit_prefix(runtime: ModelRuntime, text: str, budget: int) -> tuple[str, list[int]]:
    """The longest line-aligned tail of ``text`` whose tokens fit ``budget``."""
    return _fit(runtime, text, budget, _head_cut)


def fit_suffix(runtime: ModelRuntime, text: str, budget: int) -> tuple[str, list[int]]:
    """The longest line-aligned head of ``text`` whose tokens fit ``budget``."""
    return _fit(runtime, text, budget, _tail_cut)


def _snap_front(text: str, window: str, grid: int, lines_before: int) -> str:
    """``window`` (a tail of ``text``) from the next line on the ``grid``, not past the cursor."""
    start = len(text) - len(window)
    line = lines_before + text.count("\n", 0, start)
    last = text.rfind("\n") + 1          # the cursor's line starts here
    for _ in range(-line % grid):
        start = text.find("\n", start) + 1
        if start == 0 or start > last:
            return window
    return text[start:]


def _snap_back(text: str, window: str, grid: int, lines_after: int) -> str:
    """``window`` (a head of ``text``) ending where the lines below are on the ``grid``."""
    end = len(window)
    if end >= len(text) and not lines_after:
        return window
    below = lines_after + text.count("\n", end)
    first_end = text.find("\n") + 1
    for _ in range(-below % grid):
        nl = text.rfind("\n", 0, end - 1)
        if nl + 1 < first_end or nl < 0:
            return window
        end = nl + 1
    return text[:end]


def prompt_room(runtime: ModelRuntime, max_new_tokens: int) -> int:
    """The prompt's tokens at most: what the context leaves after the new tokens."""
    return max(64, runtime.context_limit - max_new_tokens - 4)


def budgets(runtime: ModelRuntime, prefix_tokens: int, suffix_tokens: int,
            max_new_tokens: int, reserved: int = 0) -> tuple[int, int]:
    """(prefix, suffix) budgets; zeros: 3/4 and 1/4 of the context left after ``reserved``."""
    room = max(64, runtime.context_limit - max_new_tokens - 4 - reserved)
    if not prefix_tokens and not suffix_tokens:
        return room * 3 // 4, room // 4
    prefix_tokens = prefix_tokens or max(16, room - suffix_tokens)
    suffix_tokens = suffix_tokens or max(0, room - prefix_tokens)
    return prefix_tokens, suffix_tokens


def grid_lines(budget: int, step: float) -> int:
    """The line grid of a window of ``budget`` tokens moving in steps of ``step`` of its budget."""
    return max(1, round(budget * step / TOKENS_PER_LINE))


def fim_order(c: CompletionOptions, runtime: ModelRuntime) -> str:
    """The fill-in-the-middle order ``c.fim_order`` names (auto: the model family's); an
    OptionError naming the family's orders where it has no such order."""
    if c.fim_order == "auto":
        return runtime.fim_order
    if runtime.fim is None:
        raise OptionError(f"completion.fim_order {c.fim_order}: model {runtime.path} has no "
                          "fill-in-the-middle tokens: it completes from the prefix alone "
                          "(use auto)")
    if c.fim_order not in runtime.fim.orders:
        raise OptionError(f"completion.fim_order {c.fim_order}: {runtime.fim.known_orders()} "
                          f"(model {runtime.path})")
    return c.fim_order


def head_ids(runtime: ModelRuntime, context_ids) -> list[int]:
    """What comes before the windows: the BOS where the tokenizer adds one (once), then
    ``context_ids``."""
    bos = runtime.bos_id
    lead = [] if bos is None or list(context_ids[:1]) == [bos] else [bos]
    return lead + list(context_ids)


def prompt_at(runtime: ModelRuntime, text: str, offset: int, c: CompletionOptions,
              context_ids: tuple[int, ...] = ()) -> Prompt:
    """The prompt at ``offset`` of ``text`` as ``c`` shapes it (budgets, order, grid, healing)."""
    order = fim_order(c, runtime)
    sizes = budgets(runtime, c.prefix_tokens, c.suffix_tokens, c.max_block_tokens,
                    -(-len(context_ids) // 32) * 32)
    prompt = build_prompt(runtime, text[:offset], text[offset:], sizes, order, c.window_step,
                          context_ids)
    return prompt.healed_prompt(runtime, order) if c.token_healing else prompt


def build_prompt(runtime: ModelRuntime, before: str, after: str, sizes: tuple[int, int],
                 order: str, step: float = 0.0, context_ids: tuple[int, ...] = ()) -> Prompt:
    """``before``/``after``: the text either side of the cursor; ``sizes``: the windows' budgets;
    ``step``: their grid, a share of the budget (0: line by line); ``context_ids`` go first."""
    prefix_budget, suffix_budget = sizes
    grid = grid_lines(prefix_budget, step)
    cut = max(0, len(before) - prefix_budget * 24)
    head = normalise_eol(before[cut:])
    lines_cut = normalise_eol(before[:cut]).count("\n") if cut else 0
    prefix, prefix_ids = fit_prefix(runtime, head, prefix_budget)
    if grid > 1 and len(prefix) < len(head):
        snapped = _snap_front(head, prefix, grid, lines_cut)
        if snapped != prefix:
            prefix, prefix_ids = snapped, runtime.encode(snapped)
    first_line = lines_cut + head.count("\n", 0, len(head) - len(prefix))
    block = head_ids(runtime, context_ids)
    if runtime.fim is None:
        return Prompt(block + prefix_ids, prefix, "", prefix_ids, [], first_line,
                      context=len(block))
    keep = suffix_budget * 24
    grid = grid_lines(suffix_budget, step)
    tail = normalise_eol(after[:keep])
    lines_kept_out = normalise_eol(after[keep:]).count("\n") if len(after) > keep else 0
    suffix, suffix_ids = fit_suffix(runtime, tail, suffix_budget)
    if grid > 1 and (len(suffix) < len(tail) or len(after) > keep):
        snapped = _snap_back(tail, suffix, grid, lines_kept_out)
        if snapped != suffix:
            suffix, suffix_ids = snapped, runtime.encode(snapped)
    lines_below = lines_kept_out + tail.count("\n", len(suffix))
    ids = block + runtime.fim.build(order, prefix_ids, suffix_ids, TokenIds(runtime))
    return Prompt(ids, prefix, suffix, prefix_ids, suffix_ids, first_line, lines_below,
                  len(block))
