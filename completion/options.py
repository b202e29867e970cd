"""The one options tree: the same object comes from the CLI, the replay's flags and
LSP ``initializationOptions`` / ``workspace/didChangeConfiguration``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .errors import OptionError

DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "float16", "bfloat16")
FORWARDS = ("auto", "native", "compact", "reference")
FIM_ORDERS = ("auto", "psm", "spm")
DECODERS = ("greedy", "branches", "superposed", "sequential", "beam")
CACHE_MODES = ("full", "pie", "naive")
DRAFT_MODES = ("none", "prompt-lookup", "suffix")
MONITOR_MODES = ("off", "on")
CONTEXT_MODES = ("off", "imports", "similar", "both")


@dataclass
class ModelOptions:
    path: str = ""              # empty: the bundled model
    device: str = "auto"        # auto | cpu | cuda | cuda:N
    dtype: str = "auto"         # auto | float32 | float16 | bfloat16
    # auto: the fastest that runs here: native, the compact forward's layers in C++ for
    # forwards of up to 8 rows (cache/native_llama.py; float32 on the CPU; compiled once per
    # machine at the first load, about 30 s), else the compact forward
    # (cache/compact_llama.py) for the Llama family, else transformers' own; inkling/stats
    # says which runs and why not native. native or compact: that one, or an error at load
    # naming why not. reference: transformers' always (what the others are tested against)
    forward: str = "auto"       # auto | native | compact | reference
    # CPU threads of the forward (0: by the rules in cache/model_loader.py: for a model
    # under 100 M parameters, one, and for its native forward one or every core, whichever
    # measures faster as it runs (a second thread halves the weights each core reads, and
    # stalls when another process holds that core: cache/thread_choice.py); all cores
    # for a larger model)
    threads: int = 0


@dataclass
class CompletionOptions:
    drafts: int = 3             # drafts for invoked completions
    automatic_drafts: int = 1   # drafts for automatic (as-you-type) completions
    max_new_tokens: int = 48    # a line completion
    max_block_tokens: int = 160  # a block completion
    prefix_tokens: int = 0      # prompt budget before the cursor (0: from the model's context)
    suffix_tokens: int = 0      # prompt budget after the cursor (0: from the model's context)
    fim_order: str = "auto"     # auto | psm | spm
    window_step: float = 0.2    # prompt windows move in steps of about this share of their budget (0: line by line)
    token_healing: bool = True  # re-decode the last token before the cursor
    # at a line of nothing but indentation, a suggestion begins with text at that indentation:
    # it may not end the line or the text first (an empty suggestion shows nothing), nor add
    # whitespace where the line holds some (completion/decoding/blank_line.py)
    fill_blank_lines: bool = True
    # The defaults compose the mission (issue 23; figures in benchmarks/README.md, "Defaults"):
    # suffix drafting is lossless and cuts latency on the CPU too, the monitor halves
    # undefined names for a few percent of latency, and invoked completions come from beam
    # search of width 8 (4 for a block), its best drafts reread (issue 28, "Rereading" in
    # benchmarks/README.md): the first draft is the removed line at 15.4% of the card's
    # held-out standard-library lines and 9.0% of toolz's against greedy's 10.2% and 5.6%,
    # at about 3 times greedy's p50 (about 0.13 s here). One draft while typing
    # (automatic_drafts) is decoded greedily, drafted by the suffix drafter, whatever decoder.
    # greedy | branches | superposed | sequential (several drafts; an invoked completion's one
    # draft is greedy's) | beam (beam search, for one invoked draft too)
    decoder: str = "beam"
    beam_width: int = 8         # the beam decoder's hypotheses a step (at least the drafts asked)
    # ...where the cursor opens an empty block: a block is searched to its end, and width 8
    # took the traces' p95 from 0.34 s (width 4) to 0.98 s (benchmarks/README.md, "Rereading")
    block_beam_width: int = 4
    # the beam's best drafts are reread left to right, each with the cursor line and this
    # many lines after it, given reread_window tokens before the line; rank + that
    # log-probability (completion/decoding/rereading.py; 0: not reread)
    reread_lines: int = 2
    reread_window: int = 768
    draft: str = "suffix"       # none | prompt-lookup | suffix
    datastore: str = "corpus"   # none | corpus | a folder: fixed code the suffix drafter also searches
    model_datastore: str = "auto"  # auto | none | a file: the model's own continuations, also searched
    monitor: str = "on"         # off | on
    # the alternatives of k > 1 drafts (issue 28; benchmarks/alternatives.py measured each):
    # they end within the lead draft's lines and tokens, but not under this many tokens (a
    # length floor; 0: the lead's length alone). 16 measured best: fragments 4.9% of the
    # alternatives shown against 10.8%, the right line among the drafts 10.4% against 10.0,
    # the first draft unchanged, invoked completions' p50 1.12 times; sampling and pruning
    # measured worse, so they stay off
    alternative_min_tokens: int = 16
    # 0: each alternative continues greedily after its own first token; above 0: its later
    # tokens are sampled at this temperature, seeded by the prompt (branches, superposed)
    alternative_temperature: float = 0.0
    # nats: an alternative whose log-probability per token is this far below the lead's is
    # not shown (0: none is left out for it)
    alternative_prune: float = 0.0
    # repository context before the prompt (issue 26): what the file imports from the
    # workspace and/or chunks of recent files like the cursor's text, within a share of the
    # window; off by default: the bundled model does no better with it (benchmarks/README.md)
    context: str = "off"        # off | imports | similar | both
    context_share: float = 0.3  # share of the prompt window the context block may take


@dataclass
class CacheOptions:
    mode: str = "pie"             # full | pie | naive
    stale_threshold: float = 0.95  # refresh when stale tokens would pass this share of the prompt
    budget_mb: int = 512          # KV caches of all documents together
    idle_refresh_ms: int = 1500   # the server refreshes stale tokens after this much quiet


@dataclass
class ServerOptions:
    debounce_min_ms: int = 30     # automatic triggers wait at least this long...
    debounce_max_ms: int = 250    # ...and at most this long,
    debounce_factor: float = 1.5  # else this many typing intervals (median of the last few)


@dataclass
class InklingOptions:
    model: ModelOptions = field(default_factory=ModelOptions)
    completion: CompletionOptions = field(default_factory=CompletionOptions)
    cache: CacheOptions = field(default_factory=CacheOptions)
    server: ServerOptions = field(default_factory=ServerOptions)

    def validate(self) -> None:
        check_device("model.device", self.model.device)
        _choice("model.dtype", self.model.dtype, DTYPES)
        _choice("model.forward", self.model.forward, FORWARDS)
        if not 0 <= self.model.threads <= 1024:
            raise OptionError(f"model.threads must be 0 (automatic) or a number of threads, "
                              f"got {self.model.threads}")
        c = self.completion
        _choice("completion.fim_order", c.fim_order, FIM_ORDERS)
        for name, value, low in (("completion.drafts", c.drafts, 1),
                                 ("completion.automatic_drafts", c.automatic_drafts, 1),
                                 ("completion.max_new_tokens", c.max_new_tokens, 1),
                                 ("completion.max_block_tokens", c.max_block_tokens, 1),
                                 ("completion.prefix_tokens", c.prefix_tokens, 0),
                                 ("completion.suffix_tokens", c.suffix_tokens, 0),
                                 ("completion.alternative_min_tokens",
                                  c.alternative_min_tokens, 0),
                                 ("completion.beam_width", c.beam_width, 1),
                                 ("completion.block_beam_width", c.block_beam_width, 1),
                                 ("completion.reread_lines", c.reread_lines, 0),
                                 ("completion.reread_window", c.reread_window, 16)):
            if value < low:
                raise OptionError(f"{name} must be at least {low}, got {value}")
        from .drafting.datastore import validate_spec
        validate_spec(c.datastore)
        from .drafting.model_datastore import validate_spec as validate_model_spec
        validate_model_spec(c.model_datastore)
        _choice("completion.context", c.context, CONTEXT_MODES)
        if not 0.05 <= c.context_share <= 0.75:
            raise OptionError(f"completion.context_share must be between 0.05 and 0.75, "
                              f"got {c.context_share}")
        if not 0.0 <= c.alternative_temperature <= 2.0:
            raise OptionError(f"completion.alternative_temperature must be between 0 and 2, "
                              f"got {c.alternative_temperature}")
        if c.alternative_temperature > 0 and c.decoder == "sequential":
            raise OptionError("completion.alternative_temperature needs completion.decoder "
                              "'branches' or 'superposed' (sequential decodes greedily)")
        if c.alternative_prune < 0:
            raise OptionError(f"completion.alternative_prune must be at least 0 (nats; 0: off), "
                              f"got {c.alternative_prune}")
        if not 0.0 <= c.window_step <= 0.5:
            raise OptionError(f"completion.window_step must be between 0 and 0.5, got {c.window_step}")
        if not 0.0 <= self.cache.stale_threshold <= 1.0:
            raise OptionError(f"cache.stale_threshold must be between 0 and 1, "
                              f"got {self.cache.stale_threshold}")
        if self.cache.budget_mb < 1 or self.cache.idle_refresh_ms < 0:
            raise OptionError("cache.budget_mb must be at least 1 and cache.idle_refresh_ms "
                              "at least 0")
        for name, value in (("completion.drafts", c.drafts),
                            ("completion.automatic_drafts", c.automatic_drafts),
                            ("completion.beam_width", c.beam_width),
                            ("completion.block_beam_width", c.block_beam_width),
                            ("completion.reread_lines", c.reread_lines)):
            if value > 16:
                raise OptionError(f"{name} must be at most 16, got {value}")
        if c.reread_window > 4096:
            raise OptionError(f"completion.reread_window must be at most 4096 tokens, "
                              f"got {c.reread_window}")
        d = self.server
        if not 0 <= d.debounce_min_ms <= d.debounce_max_ms:
            raise OptionError(f"server.debounce_min_ms ({d.debounce_min_ms}) must be between 0 "
                              f"and server.debounce_max_ms ({d.debounce_max_ms})")
        if d.debounce_factor <= 0:
            raise OptionError(f"server.debounce_factor must be positive, got {d.debounce_factor}")
        for name, value, choices in (("completion.decoder", c.decoder, DECODERS),
                                     ("completion.draft", c.draft, DRAFT_MODES),
                                     ("completion.monitor", c.monitor, MONITOR_MODES),
                                     ("cache.mode", self.cache.mode, CACHE_MODES)):
            _choice(name, value, choices)

    def mechanisms(self) -> dict[str, Any]:
        """Which of inkling's mechanisms these options run (`inkling/stats`, the status line)."""
        c = self.completion
        return {"cache": self.cache.mode, "draft": c.draft, "monitor": c.monitor,
                "decoder": c.decoder if c.drafts > 1 or c.decoder == "beam" else "greedy",
                "drafts": c.drafts, "automaticDrafts": c.automatic_drafts,
                "tokenHealing": c.token_healing}

    def mechanisms_text(self) -> str:
        """The mechanisms in a few words, e.g. ``pie cache, suffix drafts, monitor, healing,
        3 superposed``."""
        m, parts = self.mechanisms(), []
        parts.append(f"{m['cache']} cache")
        if m["draft"] != "none":
            parts.append(f"{m['draft']} drafts")
        if m["monitor"] == "on":
            parts.append("monitor")
        if m["tokenHealing"]:
            parts.append("healing")
        parts.append(f"{m['drafts']} {m['decoder']}" if m["drafts"] > 1 or m["decoder"] == "beam"
                     else "1 draft")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """The options tree with snake_case keys (what `inkling/stats` reports)."""
        return dataclasses.asdict(self)

    def merged(self, changes: dict[str, Any]) -> "InklingOptions":
        """A validated copy with ``changes`` (a nested dict, camelCase or snake_case keys)."""
        new = _merge(self, changes, "")
        new.validate()
        return new


def check_device(name: str, value: str) -> None:
    """auto, cpu, cuda or cuda:N (N a device index): the one rule for a device's name."""
    kind, colon, index = value.partition(":")
    if kind not in DEVICES or (colon and not (kind == "cuda" and index.isdigit())):
        raise OptionError(f"{name} must be auto, cpu, cuda or cuda:N (N a GPU's index); "
                          f"got {value!r}")


def _choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise OptionError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def _merge(obj, changes: dict[str, Any], where: str):
    if not isinstance(changes, dict):
        raise OptionError(f"{where or 'options'} must be an object, got {changes!r}")
    fields = {f.name: f for f in dataclasses.fields(obj)}
    updates = {}
    for raw_key, value in changes.items():
        key = _snake(raw_key)
        name = f"{where}.{key}" if where else key
        if key not in fields:
            raise OptionError(f"unknown option {name!r}")
        current = getattr(obj, key)
        if dataclasses.is_dataclass(current):
            updates[key] = _merge(current, value, name)
        elif type(current) is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise OptionError(f"{name} must be an integer, got {value!r}")
        elif type(current) is str and not isinstance(value, str):
            raise OptionError(f"{name} must be a string, got {value!r}")
        elif type(current) is bool and not isinstance(value, bool):
            raise OptionError(f"{name} must be true or false, got {value!r}")
        elif type(current) is float and (isinstance(value, bool)
                                         or not isinstance(value, (int, float))):
            raise OptionError(f"{name} must be a number, got {value!r}")
        else:
            updates[key] = value
    return dataclasses.replace(obj, **updates)
