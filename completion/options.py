"""The one options tree: the same object comes from the CLI, the replay's flags and LSP
``initializationOptions`` / ``workspace/didChangeConfiguration``."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from inkling.cache.modes import CacheMode
from inkling.runtime.forwards import FORWARDS as RUNTIME_FORWARDS
from inkling.runtime.model_size import WEIGHT_FORMATS

from inkling.completion.decoding.names import Decoder, DraftMode
from inkling.completion.decoding.plan import MAX_DRAFTS, decoder_for
from inkling.completion.drafting.datastore_specs import (validate_datastore_spec,
                                                         validate_model_datastore_spec)
from inkling.completion.errors import OptionError

DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "float16", "bfloat16")
# not "captured": auto runs it where it pays (a GPU); named alone it serves tests and benchmarks
FORWARDS = tuple(f for f in RUNTIME_FORWARDS if f != "captured")
FIM_ORDERS = ("auto", "psm", "spm")
DECODERS = tuple(d.value for d in Decoder)
CACHE_MODES = tuple(m.value for m in CacheMode)
DRAFT_MODES = tuple(m.value for m in DraftMode)
MONITOR_MODES = ("off", "on")
CONTEXT_MODES = ("off", "imports", "similar", "both")


# the groups of docs/configuration.md and the editors' settings, in order
GROUPS = {"model": "Model", "completion": "Completion", "decoding": "Decoding",
          "drafting": "Drafting and monitor", "cache": "Cache", "server": "Server"}


def _option(default, group: str, text: str, **about) -> Any:
    """A field with its documentation: ``text`` one line of help, ``group`` a key of GROUPS;
    ``about``: ``advanced``, ``values`` {value: line}, ``other`` (an open set's rest) and the
    bounds the validation enforces, by their JSON schema names (``minimum``, ``maximum``)."""
    return field(default=default, metadata={"group": group, "help": text, **about})


@dataclass
class ModelOptions:
    path: str = _option("", "model", "A local model folder in Hugging Face layout, or a GGUF "
                        "file (F32, F16, BF16 or Q8_0); empty: the bundled model (it knows "
                        "Python).")
    device: str = _option("auto", "model", "Where the model runs.", other="`cuda:N` (GPU N)",
                          values={"auto": "a CUDA GPU when there is one, else the CPU",
                                  "cpu": "the CPU", "cuda": "the first CUDA GPU"})
    dtype: str = _option("auto", "model", "The number format of the model's weights.", values={
        "auto": "bfloat16 on a GPU that has it (else float16), float32 on the CPU",
        "float32": "32-bit floats", "float16": "16-bit floats",
        "bfloat16": "bfloat16, for GPUs that compute in it"})
    # auto: native (runtime/native_llama.py, compiled once per machine), else compact for the
    # Llama family, else reference; native or compact named: that one or an error at load.
    # See docs/decisions/forward-choice.md.
    forward: str = _option("auto", "model", "Which implementation of the model's forward pass "
                           "runs (the server's stats say which did and why).", advanced=True,
                           values={"auto": "the fastest that runs here",
                                   "native": "inkling's layers in C++, built once per machine",
                                   "compact": "inkling's PyTorch forward for the Llama family",
                                   "reference": "the transformers library's own: the same "
                                                "suggestions, slower"})
    # auto: int8 panels for a model of 100 M parameters or more that the native forward runs
    # on the CPU (runtime/int8_panels.py, docs/decisions/lean-weights.md)
    weights: str = _option("auto", "model", "How the weights are held in memory.", values={
        "auto": "int8 for a model of 100 M parameters or more that the native forward runs "
                "on the CPU, else float",
        "float": "as model.dtype says",
        "int8": "int8 with a scale per output channel, quantized as read (a quarter of "
                "float32's bytes); the native forward only"})
    # 0: a small model's native forward measures its thread count as it runs, a large model
    # takes every core (docs/decisions/thread-choice.md)
    threads: int = _option(0, "model", "CPU threads of the model's forward pass (0: chosen by "
                           "the model's size, and measured as it runs).", advanced=True,
                           minimum=0, maximum=1024)


@dataclass
class CompletionOptions:
    drafts: int = _option(3, "completion", "Drafts an invoked completion asks for: what cycling "
                          "through suggestions shows.", minimum=1, maximum=MAX_DRAFTS)
    automatic_drafts: int = _option(1, "completion", "Drafts an automatic (as-you-type) "
                                    "completion asks for.", minimum=1, maximum=MAX_DRAFTS)
    max_new_tokens: int = _option(48, "completion", "Token budget of a line completion.",
                                  minimum=1)
    max_block_tokens: int = _option(160, "completion", "Token budget of a block completion "
                                    "(where the cursor opens an empty block).", minimum=1)
    prefix_tokens: int = _option(0, "completion", "Prompt budget before the cursor, in tokens "
                                 "(0: from the model's context length).", advanced=True,
                                 minimum=0)
    suffix_tokens: int = _option(0, "completion", "Prompt budget after the cursor, in tokens "
                                 "(0: from the model's context length).", advanced=True,
                                 minimum=0)
    fim_order: str = _option("auto", "completion", "The order of the fill-in-the-middle "
                             "prompt's parts.", advanced=True, values={
                                 "auto": "the model family's own order",
                                 "psm": "prefix, suffix, then the middle",
                                 "spm": "suffix, prefix, then the middle"})
    window_step: float = _option(0.2, "completion", "Prompt windows move in steps of about this "
                                 "share of their budget, so typing keeps the cached prompt "
                                 "(0: line by line).", advanced=True, minimum=0, maximum=0.5)
    token_healing: bool = _option(True, "completion", "Decode the last token before the cursor "
                                  "again, so a suggestion can finish a half-typed word.",
                                  advanced=True)
    # completion/decoding/blank_line.py; docs/decisions/blank-lines.md
    fill_blank_lines: bool = _option(True, "completion", "On a line of nothing but indentation, "
                                     "a suggestion begins with code at that indentation.",
                                     advanced=True)
    # Invoked completions come from a beam whose best drafts are reread; automatic ones are
    # decoded greedily, whatever the decoder (docs/decisions/invoked-decoder.md). Drafting:
    # docs/decisions/drafting-by-device.md; the monitor: docs/decisions/monitor-default.md.
    decoder: str = _option("beam", "decoding", "How invoked completions find their drafts "
                           "(an automatic completion of one draft is decoded greedily).", values={
                               "greedy": "one draft: the likeliest token at each step",
                               "branches": "drafts that branch where the model is first unsure",
                               "superposed": "drafts decoded together in one sequence",
                               "sequential": "the branches decoder's drafts one after another "
                                             "(a baseline for measurement)",
                               "beam": "beam search for the likeliest whole lines, the best "
                                       "reread in place"})
    beam_width: int = _option(8, "decoding", "Hypotheses the beam decoder keeps a step (at least "
                              "the drafts asked): wider finds likelier lines at more cost.",
                              advanced=True, minimum=1, maximum=16)
    # narrower: a block is searched to its end (docs/decisions/invoked-decoder.md)
    block_beam_width: int = _option(4, "decoding", "The beam decoder's width where the cursor "
                                    "opens an empty block (searched to its end, so width costs "
                                    "more there).", advanced=True, minimum=1, maximum=16)
    # ranked by how the file reads with the draft in place (completion/decoding/rereading.py)
    reread_lines: int = _option(2, "decoding", "The beam's best drafts are reread in place with "
                                "this many lines after the cursor's, and ranked by how the file "
                                "then reads (0: not reread).", advanced=True, minimum=0,
                                maximum=16)
    reread_window: int = _option(768, "decoding", "Tokens before the cursor's line that "
                                 "rereading reads each draft after.", advanced=True,
                                 minimum=16, maximum=4096)
    reread_drafts: int = _option(0, "decoding", "How many of the beam's best distinct drafts are "
                                 "reread, at least the drafts asked (0: as many as the beam "
                                 "keeps a step).", advanced=True, minimum=0, maximum=16)
    draft: str = _option("auto", "drafting", "Speculative drafting: guesses the model checks, "
                         "so suggestions come sooner and are the same.", values={
                             "auto": "suffix where a forward of a draft tree measured at load "
                                     "costs less than what it yields (a GPU), else none",
                             "none": "no guesses: the model decodes token by token",
                             "prompt-lookup": "guesses copied from the prompt",
                             "suffix": "guesses from indexes of the document, the workspace, "
                                       "accepted suggestions and the datastores"})
    datastore: str = _option("corpus", "drafting", "Fixed code the suffix drafter also "
                             "searches.", other="a folder of code", values={
                                 "none": "none", "corpus": "the bundled model's training files"})
    model_datastore: str = _option("auto", "drafting", "The model's own continuations the "
                                   "suffix drafter also searches.", advanced=True,
                                   other="a file made by `inkling datastore model`", values={
                                       "auto": "the model folder's, when it has one",
                                       "none": "none"})
    monitor: str = _option("on", "drafting", "Static analysis at the cursor keeps out member, "
                           "import and keyword-argument names that cannot be right.", values={
                               "off": "the model's tokens unchecked",
                               "on": "names checked against what the code defines"})
    # alternatives of k > 1 drafts; sampling and pruning off (docs/decisions/branches-decoding.md)
    alternative_min_tokens: int = _option(16, "decoding", "Alternative drafts end within the "
                                          "lead draft's length, but not under this many tokens "
                                          "(0: the lead's length alone).", advanced=True,
                                          minimum=0)
    alternative_temperature: float = _option(0.0, "decoding", "Above 0, an alternative draft's "
                                             "later tokens are sampled at this temperature "
                                             "(branches and superposed; 0: greedy).",
                                             advanced=True, minimum=0, maximum=2)
    alternative_prune: float = _option(0.0, "decoding", "An alternative draft whose "
                                       "log-probability per token is this many nats below "
                                       "the lead's is not shown (0: none left out).",
                                       advanced=True,
                                       minimum=0)
    # off: the bundled model does not gain from it (docs/decisions/repo-context.md)
    context: str = _option("off", "completion", "Repository context put before the prompt, for "
                           "a model trained with it.", values={
                               "off": "none (the bundled model does not gain from it)",
                               "imports": "the workspace definitions the file imports",
                               "similar": "chunks of recent files like the text at the cursor",
                               "both": "imports and similar chunks"})
    context_share: float = _option(0.3, "completion", "Share of the prompt window the "
                                   "repository context may take.", advanced=True,
                                   minimum=0.05, maximum=0.75)


@dataclass
class CacheOptions:
    mode: str = _option("pie", "cache", "How a document's KV cache is reused across edits.",
                        advanced=True, values={
                            "full": "keep the text before the first change, recompute the rest",
                            "pie": "keep every unchanged run, re-rotate shifted tokens",
                            "naive": "pie without the re-rotation (a baseline for measurement)"})
    stale_threshold: float = _option(0.95, "cache", "Recompute when stale cached tokens would "
                                     "pass this share of the prompt.", advanced=True,
                                     minimum=0, maximum=1)
    budget_mb: int = _option(512, "cache", "Memory for the KV caches of all open documents "
                             "together, in MB.", minimum=1)
    idle_refresh_ms: int = _option(1500, "cache", "After this much quiet, in ms, stale cached "
                                   "tokens are recomputed (0: never).", advanced=True, minimum=0)


@dataclass
class ServerOptions:
    debounce_min_ms: int = _option(30, "server", "Automatic requests wait at least this long, "
                                   "in ms.", advanced=True, minimum=0)
    debounce_max_ms: int = _option(250, "server", "Automatic requests wait at most this long, "
                                   "in ms.", advanced=True, minimum=0)
    debounce_factor: float = _option(1.5, "server", "Between those, automatic requests wait "
                                     "this many typing intervals (the median of the last few).",
                                     advanced=True, exclusiveMinimum=0)


@dataclass
class InklingOptions:
    model: ModelOptions = field(default_factory=ModelOptions)
    completion: CompletionOptions = field(default_factory=CompletionOptions)
    cache: CacheOptions = field(default_factory=CacheOptions)
    server: ServerOptions = field(default_factory=ServerOptions)

    def validate(self) -> None:
        """An OptionError naming the first option (in this order) with a bad value."""
        _check_model(self.model)
        _check_completion(self.completion)
        _check_cache(self.cache)
        _check_maxima(self.completion)
        _check_server(self.server)
        for name, value, choices in (("completion.decoder", self.completion.decoder, DECODERS),
                                     ("completion.draft", self.completion.draft, DRAFT_MODES),
                                     ("completion.monitor", self.completion.monitor,
                                      MONITOR_MODES),
                                     ("cache.mode", self.cache.mode, CACHE_MODES)):
            _choice(name, value, choices)

    def mechanisms(self) -> dict[str, Any]:
        """Which of inkling's mechanisms these options run (`inkling/stats`, the status line)."""
        c = self.completion
        return {"cache": self.cache.mode, "draft": c.draft, "monitor": c.monitor,
                "decoder": decoder_for(c.decoder, c.drafts),
                "drafts": c.drafts, "automaticDrafts": c.automatic_drafts,
                "tokenHealing": c.token_healing}

    def mechanisms_text(self) -> str:
        """The mechanisms briefly, e.g. ``pie cache, auto drafts, monitor, healing, 3 beam``."""
        m, parts = self.mechanisms(), []
        parts.append(f"{m['cache']} cache")
        if m["draft"] != DraftMode.NONE:
            parts.append(f"{m['draft']} drafts")
        if m["monitor"] == "on":
            parts.append("monitor")
        if m["tokenHealing"]:
            parts.append("healing")
        several = m["drafts"] > 1 or m["decoder"] != Decoder.GREEDY
        parts.append(f"{m['drafts']} {m['decoder']}" if several else "1 draft")
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


def _check_model(m: ModelOptions) -> None:
    check_device("model.device", m.device)
    _choice("model.dtype", m.dtype, DTYPES)
    _choice("model.forward", m.forward, FORWARDS)
    _choice("model.weights", m.weights, WEIGHT_FORMATS)
    if not 0 <= m.threads <= 1024:
        raise OptionError(f"model.threads must be 0 (automatic) or a number of threads, "
                          f"got {m.threads}")


def _check_completion(c: CompletionOptions) -> None:
    _choice("completion.fim_order", c.fim_order, FIM_ORDERS)
    _at_least(c, ("drafts", "automatic_drafts", "max_new_tokens", "max_block_tokens",
                  "prefix_tokens", "suffix_tokens", "alternative_min_tokens", "beam_width",
                  "block_beam_width", "reread_lines", "reread_window", "reread_drafts"))
    validate_datastore_spec(c.datastore)
    validate_model_datastore_spec(c.model_datastore)
    _choice("completion.context", c.context, CONTEXT_MODES)
    _between("completion", c, "context_share")
    _between("completion", c, "alternative_temperature")
    if c.alternative_temperature > 0 and c.decoder == Decoder.SEQUENTIAL:
        raise OptionError("completion.alternative_temperature needs completion.decoder "
                          "'branches' or 'superposed' (sequential decodes greedily)")
    if c.alternative_prune < 0:
        raise OptionError(f"completion.alternative_prune must be at least 0 (nats; 0: off), "
                          f"got {c.alternative_prune}")
    _between("completion", c, "window_step")


def _check_cache(cache: CacheOptions) -> None:
    _between("cache", cache, "stale_threshold")
    if cache.budget_mb < 1 or cache.idle_refresh_ms < 0:
        raise OptionError("cache.budget_mb must be at least 1 and cache.idle_refresh_ms "
                          "at least 0")


def _check_maxima(c: CompletionOptions) -> None:
    _at_most(c, ("drafts", "automatic_drafts", "beam_width", "block_beam_width",
                 "reread_lines", "reread_drafts"))
    if c.reread_window > _bound(c, "reread_window", "maximum"):
        raise OptionError(f"completion.reread_window must be at most "
                          f"{_bound(c, 'reread_window', 'maximum')} tokens, got {c.reread_window}")


def _check_server(d: ServerOptions) -> None:
    if not 0 <= d.debounce_min_ms <= d.debounce_max_ms:
        raise OptionError(f"server.debounce_min_ms ({d.debounce_min_ms}) must be between 0 "
                          f"and server.debounce_max_ms ({d.debounce_max_ms})")
    if d.debounce_factor <= 0:
        raise OptionError(f"server.debounce_factor must be positive, got {d.debounce_factor}")


def _bound(tree, name: str, which: str):
    """The ``minimum`` or ``maximum`` of a field of ``tree``: defined once, beside it."""
    return next(f for f in dataclasses.fields(tree) if f.name == name).metadata[which]


def _at_least(c: CompletionOptions, names: tuple[str, ...]) -> None:
    for name in names:
        low, value = _bound(c, name, "minimum"), getattr(c, name)
        if value < low:
            raise OptionError(f"completion.{name} must be at least {low}, got {value}")


def _at_most(c: CompletionOptions, names: tuple[str, ...]) -> None:
    for name in names:
        high, value = _bound(c, name, "maximum"), getattr(c, name)
        if value > high:
            raise OptionError(f"completion.{name} must be at most {high}, got {value}")


def _between(group: str, tree, name: str) -> None:
    low, high, value = _bound(tree, name, "minimum"), _bound(tree, name, "maximum"), \
        getattr(tree, name)
    if not low <= value <= high:
        raise OptionError(f"{group}.{name} must be between {low} and {high}, got {value}")


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
