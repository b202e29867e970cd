"""Lossless drafting, whole traces and random edits: ``none``, ``prompt-lookup`` and
``suffix`` give the same completions token for token; near-ties are re-decided in
greedy's own forward shape; the monitor's forced names are taken alike by every decoder;
branch i is the sequential decoder's draft i, tokens and log-probability included."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inkling.runtime.model_loader import load_runtime
from inkling.runtime.llama_modules import transformers_model
from inkling.cache import splice as cache_splice
from inkling.cache.prompt_cache import PromptCache
from inkling.completion import engine as engine_module
from inkling.completion.decoding import speculative
from inkling.completion.decoding.branches import branch_decode, sequential_decode
from inkling.completion.decoding.greedy import greedy_decode
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.document import Position, Range, TextChange
from inkling.completion.drafting.acceptance import AcceptanceMeter
from inkling.completion.drafting.draft_tree import linear
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.completion.drafting.prompt_lookup import prompt_lookup
from inkling.completion.decoding.speculative import near_tie, speculative_decode
from inkling.completion.decoding.stop_rules import StopRule
from inkling.evaluation.replay import Replayer
from inkling.evaluation.retype_trace import RetypeOptions, retype_trace
from inkling.evaluation.syntax_check import SyntaxChecker
from inkling.evaluation.trace_file import read_trace
from inkling.models.corpus import load_corpus, stdlib_root

from conftest import SHARED, make_tiny_model

MODES = ("none", "prompt-lookup", "suffix")


# ------------------------------------------------------------------ whole traces
class SyncKinds:
    """Counts the cache paths a replay took (monkeypatched onto PromptCache) and the
    moves of the prompt's window."""

    def __init__(self, monkeypatch):
        from inkling.completion.prompt import builder as prompt
        self.counts = {"draft in the prompt's forward": 0, "splice (edit above the cursor)": 0,
                       "window moved": 0, "refresh": 0}
        sync, splice, full = PromptCache.sync, cache_splice.splice, PromptCache._sync_full
        build, counts, last = prompt.build_prompt, self.counts, {}

        def synced(cache, ids, edges=(), draft=None):
            out = sync(cache, ids, edges, draft)
            counts["draft in the prompt's forward"] += out.draft_logits is not None
            return out

        def spliced(cache, prompt_ids, segs, edges):
            counts["splice (edit above the cursor)"] += not (len(segs) == 2 and segs[0].kept
                                                             and segs[0].start == 0)
            return splice(cache, prompt_ids, segs, edges)

        def full_sync(cache, prompt_ids, refreshed, draft=None):
            counts["refresh"] += refreshed
            return full(cache, prompt_ids, refreshed, draft)

        def built(runtime, before, after, *args):
            p = build(runtime, before, after, *args)
            key = after[-200:]                            # the same document, roughly
            counts["window moved"] += key in last and last[key] != p.first_line > 0
            last[key] = p.first_line
            return p
        monkeypatch.setattr(PromptCache, "sync", synced)
        monkeypatch.setattr(cache_splice, "splice", spliced)
        monkeypatch.setattr(PromptCache, "_sync_full", full_sync)
        monkeypatch.setattr(prompt, "build_prompt", built)


def _recording(tokens: list):
    """The engine's ``decode_drafts``, appending each completion's drafts' token ids to
    ``tokens`` (set it where the engine looks it up: ``engine.decode_drafts``)."""
    decode = engine_module.decode_drafts

    def decoded(request, decoder):
        outs, forwards = decode(request, decoder)
        tokens.append([list(o.token_ids) for o in outs])
        return outs, forwards
    return decoded


@contextlib.contextmanager
def _recorded(tokens: list):
    """While it lasts, each completion's drafts' token ids are appended to ``tokens``."""
    decode = engine_module.decode_drafts
    engine_module.decode_drafts = _recording(tokens)
    try:
        yield
    finally:
        engine_module.decode_drafts = decode


def _replay_modes(runtime, traces, monkeypatch, overrides: dict):
    """Each trace replayed in every mode; per mode, every completion's (line, drafts,
    token ids of each draft)."""
    tokens: list = []
    monkeypatch.setattr(engine_module, "decode_drafts", _recording(tokens))
    # every completion drafts, where drafting idles too (the meter skips all but one in
    # explore_completions then): the identity covers each of them
    monkeypatch.setattr(engine_module, "AcceptanceMeter",
                        functools.partial(AcceptanceMeter, explore_completions=1))
    base = InklingOptions().merged(overrides)
    checker, datastore, got = SyntaxChecker(), None, {m: [] for m in MODES}
    for trace in traces:
        for mode in MODES:
            tokens.clear()
            replayer = Replayer(base.merged({"completion": {"draft": mode}}), runtime, checker,
                                datastore)
            result = replayer.replay(trace)
            datastore = replayer.datastore
            assert result.sync_ok, result.failures
            got[mode] += [(trace.name, c.line, c.drafts, t)
                          for c, t in zip(result.completions, tokens)]
    return got


def _assert_identical(got):
    assert got["none"], "no completions"
    for mode in MODES[1:]:
        assert len(got[mode]) == len(got["none"])
        for a, b in zip(got["none"], got[mode]):
            assert a == b, f"{mode} differs from none at {a[0]} line {a[1]}: {a[2]} / {b[2]}"


@pytest.fixture(scope="module")
def bundled_runtime(bundled_model_dir):
    return load_runtime(bundled_model_dir, device="cpu", dtype="float32")


# small windows and a low stale threshold: the windows move and stale caches are
# refreshed within a short trace, as they do in a long session
MOVING = {"completion": {"prefix_tokens": 160, "suffix_tokens": 48, "window_step": 0.2},
          "cache": {"stale_threshold": 0.2}}


@pytest.mark.slow
def test_sample_and_held_out_traces_replay_identically(bundled_runtime, monkeypatch):
    """A sample trace with the default options, and a retype trace of a held-out
    standard-library file with small windows and a low stale threshold, so that within
    it the windows move and stale caches are refreshed as in a long session."""
    kinds = SyncKinds(monkeypatch)
    if (SHARED / "traces" / "inventory-store.jsonl").is_file():
        sample = read_trace(SHARED / "traces" / "inventory-store.jsonl")
        _assert_identical(_replay_modes(bundled_runtime, [sample], monkeypatch, {}))
    held = next(f for f in load_corpus().held_out if f.relpath.endswith("sched.py"))
    trace = retype_trace(held.relpath, held.text, {}, RetypeOptions(max_functions=3)).trace(
        f"retype:{held.relpath}")
    _assert_identical(_replay_modes(bundled_runtime, [trace], monkeypatch, MOVING))
    assert all(kinds.counts.values()), kinds.counts        # every cache path was taken


def _toolz(tmp: Path) -> dict[str, str]:
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "toolz==1.0.0", "-d", str(tmp)], check=True, capture_output=True,
                       timeout=120)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        pytest.skip(f"toolz 1.0.0 could not be fetched with pip (offline?): {exc}")
    with zipfile.ZipFile(next(tmp.glob("toolz-*.whl"))) as z:
        return {f"toolz/{m}": z.read(f"toolz/{m}").decode()
                for m in ("recipes.py", "dicttoolz.py")}


@pytest.mark.slow
def test_retype_traces_of_a_package_the_model_never_saw_replay_identically(
        bundled_runtime, monkeypatch, tmp_path):
    """toolz is not in the bundled model's training data (a third-party package)."""
    workspace = _toolz(tmp_path)
    traces = [retype_trace(p, workspace[p], workspace, RetypeOptions(max_functions=n))
              .trace(f"retype:{p}") for p, n in (("toolz/recipes.py", 8),
                                                  ("toolz/dicttoolz.py", 3))]
    _assert_identical(_replay_modes(bundled_runtime, traces, monkeypatch, {}))


# ------------------------------------------------------------- random edit sequences
@pytest.fixture(scope="module")
def wide_runtime(tmp_path_factory):
    d = make_tiny_model(tmp_path_factory.mktemp("wide"), initializer_range=0.3, seed=5)
    return load_runtime(d, device="cpu", dtype="float32")


_TEXT = (stdlib_root() / "textwrap.py").read_text().split("\n")[60:120]
_EDIT = st.one_of(
    st.tuples(st.just("type"), st.sampled_from(["x", " = ", "self.", "(", "\n    ", "return ",
                                                "width"])),
    st.tuples(st.just("insert_above"), st.integers(0, 200), st.sampled_from(
        ["# note\n", "import os\n", "    pass\n", "x = 1\n"])),
    st.tuples(st.just("delete_above"), st.integers(0, 200)),
    st.tuples(st.just("move"), st.integers(0, 200), st.integers(0, 40)),
    st.tuples(st.just("complete"),))


def _run_edits(runtime, mode: str, edits, start: int) -> list:
    opts = InklingOptions().merged({
        "completion": {"draft": mode, "max_new_tokens": 12, "max_block_tokens": 12,
                       "datastore": "none", "prefix_tokens": 96, "suffix_tokens": 32},
        "cache": {"stale_threshold": 0.3}})
    engine = Engine(opts, runtime=runtime)
    uri, lines = "file:///w/edit.py", list(_TEXT)
    engine.open(uri, "\n".join(lines))
    line, col = start % len(lines), 0
    out = []
    tokens: list = []
    with _recorded(tokens):
        for e in edits:
            text = engine.document(uri).text
            lines = text.split("\n")
            line = min(line, len(lines) - 1)
            col = min(col, len(lines[line]))
            if e[0] == "type":
                at = Position(line, col)
                engine.apply_change(uri, [TextChange(e[1], Range(at, at))])
                typed = e[1].split("\n")
                line = line + len(typed) - 1
                col = (col if len(typed) == 1 else 0) + len(typed[-1])
            elif e[0] == "insert_above" and line > 0:
                at = Position(e[1] % line, 0)
                engine.apply_change(uri, [TextChange(e[2], Range(at, at))])
                line += e[2].count("\n")
            elif e[0] == "delete_above" and line > 1:
                a = e[1] % (line - 1)
                engine.apply_change(uri, [TextChange("", Range(Position(a, 0),
                                                                Position(a + 1, 0)))])
                line -= 1
            elif e[0] == "move":
                line = e[1] % len(lines)
                col = min(e[2], len(lines[line]))
            elif e[0] == "complete":
                tokens.clear()
                result = engine.complete(uri, Position(line, col))
                out.append(([d.text for d in result.drafts], tokens[-1]))
    return out


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_EDIT, min_size=2, max_size=14), st.integers(0, 59))
def test_random_edit_sequences_complete_identically_in_every_mode(wide_runtime, edits, start):
    edits = list(edits) + [("complete",)]
    runs = {mode: _run_edits(wide_runtime, mode, edits, start) for mode in MODES}
    assert runs["none"] == runs["prompt-lookup"] == runs["suffix"]


# ------------------------------------------------------------------- near-ties
def _prompts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = [(stdlib_root() / f).read_text() for f in ("textwrap.py", "shlex.py", "heapq.py")]
    out = []
    for _ in range(n):
        text = rng.choice(texts)
        cut_at = rng.randrange(200, len(text) - 200)
        out.append(text[max(0, cut_at - 1200):cut_at])
    return out


def _greedy(rt, ids, budget=16, monitor=None):
    cache = PromptCache(rt, "full")
    cache.sync(ids[:-5])
    out = greedy_decode(DecodeRequest(cache, cache.sync(ids).logits, StopRule(True, ""), budget,
                                      rt.stop_ids, rt.decode, monitor=monitor))
    return out, cache


def _drafted(rt, ids, drafter, budget=16, monitor=None):
    """Speculative decoding with the first draft in the prompt's own forward (the last
    five tokens typed after a cached head, as while typing)."""
    cache = PromptCache(rt, "full")
    cache.sync(ids[:-5])
    first = drafter(ids, budget)
    synced = cache.sync(ids, draft=(first.tokens, first.parents) if first.tokens else None)
    out = speculative_decode(DecodeRequest(
        cache, synced.logits, StopRule(True, ""), budget, rt.stop_ids, rt.decode,
        monitor=monitor, drafter=drafter, context=ids, first=first if first.tokens else None,
        first_logits=synced.draft_logits, first_rows=synced.prefilled))
    return out, cache


def test_near_tie_finds_the_first_close_row():
    out = torch.tensor([[3.0, 1.0, 0.0], [2.0, 2.0 - 1e-4, 0.0], [1.0, 1.0, 1.0]])
    assert near_tie(out, [0, 1, 2], 1e-3) == 1
    assert near_tie(out, [0, 2], 1e-3) == 1              # an index into the rows given
    assert near_tie(out, [0], 1e-3) is None
    masked = torch.tensor([[0.5, float("-inf"), float("-inf")]])
    assert near_tie(masked, [0], 1e-3) is None            # one token allowed: no tie


def test_with_every_row_redecided_the_drafted_path_is_greedys_own_floats(
        tiny_runtime, monkeypatch):
    """A bound no margin passes re-decides every drafted row in greedy's shape: then the
    tokens, their log-probabilities and the cache's keys and values are greedy's,
    bit for bit (the re-run puts the right entries at the right positions)."""
    rt = tiny_runtime
    monkeypatch.setattr(speculative, "NEAR_TIE", {k: float("inf") for k in speculative.NEAR_TIE})
    for text in _prompts(6, seed=3):
        ids = rt.encode(text)
        want, want_cache = _greedy(rt, ids)
        got, got_cache = _drafted(rt, ids, lambda ctx, b: prompt_lookup(ctx, b, rt.stop_ids))
        assert got.token_ids == want.token_ids and got.logprob == want.logprob
        n = min(len(want_cache.ids), len(got_cache.ids))
        assert got_cache.ids[:n] == want_cache.ids[:n]
        for a, b in zip(want_cache.past.layers, got_cache.past.layers):
            assert torch.equal(a.keys[..., :n, :], b.keys[..., :n, :])
            assert torch.equal(a.values[..., :n, :], b.values[..., :n, :])


@pytest.fixture(scope="module")
def untied_dir(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("untied"), initializer_range=0.3, seed=2,
                           tie_word_embeddings=False)


def test_a_near_tie_at_the_prompts_last_row_is_decided_as_greedy_decides_it(
        untied_dir, monkeypatch):
    """The output layer is set so the top two logits at the prompt's last position are
    0 to 2e-6 apart (a few float32 roundings): the first draft tree runs in the prompt's
    forward, whose sums differ from greedy's prefill, so without the rule some of these
    gaps decide the other way (on this CPU: 8 of 41 for the first prompt); with it the
    prompt's new tokens are re-run as greedy's prefill runs them and every gap decides
    as greedy does."""
    rt = load_runtime(untied_dir, device="cpu", dtype="float32")
    weight = rt.model.get_output_embeddings().weight          # [vocab, hidden] (a view)
    original = weight.data.clone()
    reruns = []
    rerun = PromptCache.rerun
    monkeypatch.setattr(PromptCache, "rerun",
                        lambda self, n, last_only=True: reruns.append(n) or rerun(self, n,
                                                                                   last_only))
    bound = speculative.NEAR_TIE[torch.float32]
    flips = {0.0: 0, bound: 0}
    try:
        for seed in (6, 11):
            ids = rt.encode(_prompts(1, seed=seed)[0])
            cache = PromptCache(rt, "full")
            a, b = torch.topk(cache.sync(ids).logits, 2).indices.tolist()
            hidden = _last_hidden(rt, ids)
            drafter = (lambda ctx, budget: linear([a, a, b][:budget], "test"))
            for gap in [g * 1e-7 for g in range(-20, 21)]:
                # row b := row a + gap along the hidden state: logit b - logit a = gap
                weight.data[b] = original[a] + hidden * (gap / float(hidden @ hidden))
                rt.native_forward().repack()                # its panels are copies
                want, _ = _greedy(rt, ids, budget=4)
                for rule in flips:
                    monkeypatch.setattr(speculative, "NEAR_TIE",
                                        {k: rule for k in speculative.NEAR_TIE})
                    got, _ = _drafted(rt, ids, drafter, budget=4)
                    flips[rule] += got.token_ids != want.token_ids
            weight.data.copy_(original)
    finally:
        weight.data.copy_(original)
        rt.native_forward().repack()
    assert flips[bound] == 0, flips
    assert 5 in reruns                    # the prompt's 5 new tokens re-run, as greedy ran them


def _last_hidden(rt, ids) -> torch.Tensor:
    with torch.inference_mode():
        out = transformers_model(rt.model).model(input_ids=torch.tensor([ids]))
    return out.last_hidden_state[0, -1].float()


# ------------------------------------------------------------------ forced names
@dataclasses.dataclass(frozen=True)
class ForcingMonitor:
    """A stand-in analysis state: after ``trigger`` only ``name`` may come (the mask
    allows the tokens on its way, ``forced_text`` is its rest), then anything."""
    texts: tuple
    trigger: int
    name: str
    remaining: str = ""

    def mask(self, device=None):
        if not self.remaining:
            return None
        r = self.remaining
        return torch.tensor([bool(t) and (r.startswith(t) or t.startswith(r)) for t in self.texts])

    def forced_text(self) -> str:
        return self.remaining

    def advance_token(self, tok: int):
        if not self.remaining:
            return dataclasses.replace(self, remaining=self.name) if tok == self.trigger else self
        t = self.texts[tok]
        rest = self.remaining[len(t):] if self.remaining.startswith(t) else ""
        return dataclasses.replace(self, remaining=rest)


def _forcing(rt, ids) -> ForcingMonitor:
    texts = tuple(rt.decode([i]) for i in range(rt.vocab_size))
    free, _ = _greedy(rt, ids, budget=6)
    trigger = free.token_ids[1] if len(free.token_ids) > 1 else free.token_ids[0]
    return ForcingMonitor(texts, trigger, "wrapped_lines_width")


def test_forced_names_are_taken_alike_with_and_without_drafting(wide_runtime):
    """greedy_decode feeds a forced name's tokens as the tokenizer writes them, with the
    step's token; drafting must take the same tokens, not a spelling the masked argmax
    would walk to, and stop rules apply inside the name token by token."""
    rt = wide_runtime
    for text in _prompts(5, seed=9):
        ids = rt.encode(text)
        monitor = _forcing(rt, ids)
        want, _ = _greedy(rt, ids, budget=24, monitor=monitor)
        assert any(t == monitor.trigger for t in want.token_ids)
        spelled = rt.encode("wrapped_lines_width")
        for drafter in (lambda ctx, b: prompt_lookup(ctx, b, rt.stop_ids),
                        lambda ctx, b: linear([monitor.trigger] + spelled[:2], "x")):
            got, _ = _drafted(rt, ids, drafter, budget=24, monitor=monitor)
            assert got.token_ids == want.token_ids and got.text == want.text


def test_branches_are_the_sequential_drafts_tokens_and_log_probabilities(wide_runtime):
    """Branch i is sequential decoding's draft i: the same text, tokens and
    log-probability (an alternative is held to the lead's extent as if decoded under it
    from its start), so both rank their drafts alike; with a forced name too."""
    rt = wide_runtime
    for text in _prompts(6, seed=4):
        ids = rt.encode(text)
        for monitor in (None, _forcing(rt, ids)):
            runs = []
            for decoder in (branch_decode, sequential_decode):
                cache = PromptCache(rt, "full")
                logits = cache.sync(ids).logits
                outs, _ = decoder(DecodeRequest(cache, logits, StopRule(False, ""), 16,
                                                rt.stop_ids, rt.decode, k=3, monitor=monitor))
                runs.append(outs)
            branches, sequential = runs
            assert [(o.text, o.token_ids, o.stopped_by) for o in branches] == \
                [(o.text, o.token_ids, o.stopped_by) for o in sequential]
            assert [o.logprob for o in branches] == pytest.approx(
                [o.logprob for o in sequential], abs=1e-3)     # summed in another order


def test_superposed_drafts_continue_as_greedy_decoding_continues_them(wide_runtime):
    """After its superposed steps each draft is continued exactly: the lead's tokens
    after its superposed prefix are greedy decoding's continuation of that prefix."""
    from inkling.completion.decoding.superposed import SUPERPOSED_STEPS, superposed_decode
    rt, budget = wide_runtime, 16
    checked = 0
    for text in _prompts(6, seed=8):
        ids = rt.encode(text)
        cache = PromptCache(rt, "full")
        outs, _ = superposed_decode(DecodeRequest(cache, cache.sync(ids).logits,
                                                  StopRule(False, ""), budget, rt.stop_ids,
                                                  rt.decode, k=3, context=ids))
        lead = outs[0]
        head = lead.token_ids[:SUPERPOSED_STEPS]            # all but the prefix's last token
        if len(lead.token_ids) <= SUPERPOSED_STEPS + 1 or lead.stopped_by == "end-of-text":
            continue
        alone = PromptCache(rt, "full")
        alone.sync(ids + head)
        forced = torch.full((rt.vocab_size,), float("-inf"))
        forced[lead.token_ids[SUPERPOSED_STEPS]] = 0.0      # the prefix's last token
        rest = greedy_decode(DecodeRequest(alone, forced, StopRule(False, ""),
                                           budget - len(head), rt.stop_ids,
                                           lambda t: rt.decode(head + t)))
        assert head + rest.token_ids == lead.token_ids and rest.text == lead.text
        checked += 1
    assert checked >= 3
