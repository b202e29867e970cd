"""Retrieval drafting and tree verification: lossless against greedy decoding."""
import random

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
import pytest
import torch

from inkling.runtime.model_loader import load_runtime
from inkling.cache.prompt_cache import PromptCache
from inkling.completion.decoding.greedy import greedy_decode
from inkling.completion.decoding.request import DecodeRequest
from inkling.completion.document import Position, Range, TextChange
from inkling.completion.drafting.draft_tree import cut, from_continuations, linear
from inkling.completion.engine import Engine
from inkling.completion.options import InklingOptions
from inkling.completion.drafting.prompt_lookup import prompt_lookup
from inkling.completion.decoding.speculative import accept, speculative_decode
from inkling.completion.decoding.stop_rules import StopRule
from inkling.completion.drafting.suffix_index import StreamIndex, SuffixIndex
from inkling.models.corpus import stdlib_root
from inkling.completion.open_analysis import OpenAnalysis

from conftest import make_tiny_model


def test_stream_index_finds_longest_matches_and_continuations():
    s = StreamIndex.of([[1, 2, 3, 4, 5, 6, 7], [9, 3, 4, 5, 6, 8]])
    found = s.matches([2, 3, 4, 5, 6])
    assert sorted((m.length, s.continuation(m.end, 3)) for m in found) == [(4, [8]), (5, [7])]
    assert s.matches([42, 43]) == []


def test_replaced_and_removed_sequences_are_not_matched():
    idx = SuffixIndex()
    idx.put("a", [1, 2, 3, 4])
    idx.put("b", [5, 2, 3, 9])
    idx.put("a", [2, 3, 7])                                  # a changed on disk
    conts = sorted(s.continuation(m.end, 1)[0] for s, m in idx.matches([2, 3]))
    assert conts == [7, 9]
    idx.remove("b")
    idx.rebuild()
    assert [s.continuation(m.end, 1) for s, m in idx.matches([2, 3])] == [[7]]


def test_draft_tree_greedy_path_first_then_siblings():
    t = from_continuations([[1, 2, 3], [1, 2, 4], [1, 5], [6]], 10, 0.1, "doc")
    assert t.tokens[:3] == [1, 2, 3] and t.parents[:3] == [-1, 0, 1]
    assert set(zip(t.tokens[3:], t.parents[3:])) == {(6, -1), (5, 0), (4, 1)}
    assert t.score == pytest.approx(0.75 + 0.5 + 0.25)
    assert cut(t, {2}).tokens == [1, 2, 6, 5]                # nothing after a line end


def _reference_tree(continuations, max_nodes, floor):
    """The draft tree from a full count trie of the continuations (what
    from_continuations builds, expanding only the nodes that enter the tree)."""
    import heapq
    trie = [0, {}]                                           # [count, token -> node]
    for seq in continuations:
        seq = [t for t in seq if t >= 0]
        if seq:
            trie[0] += 1
            node = trie
            for tok in seq:
                node = node[1].setdefault(tok, [0, {}])
                node[0] += 1
    if not trie[0]:
        return [], []
    tokens, parents, frontier, tie = [], [], [], 0
    node, d, parent = trie, 1.0, -1
    while node[1] and len(tokens) < max_nodes:
        best_tok, best = max(node[1].items(), key=lambda kv: kv[1][0])
        if d * best[0] / node[0] < floor:
            break
        for tok, kid in node[1].items():
            if tok != best_tok:
                tie += 1
                heapq.heappush(frontier, (-d * kid[0] / node[0], tie, parent, tok, kid))
        d = d * best[0] / node[0]                            # as the tree computes it
        tokens.append(best_tok)
        parents.append(parent)
        parent, node = len(tokens) - 1, best
    while frontier and len(tokens) < max_nodes:
        neg_d, _, p, tok, kid = heapq.heappop(frontier)
        if -neg_d < floor:
            break
        tokens.append(tok)
        parents.append(p)
        for t2, k2 in kid[1].items():
            tie += 1
            heapq.heappush(frontier, (neg_d * k2[0] / kid[0], tie, len(tokens) - 1, t2, k2))
    return tokens, parents


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=8), max_size=12),
       st.integers(1, 12), st.sampled_from([0.0, 0.1, 0.25, 0.5]), st.booleans())
def test_draft_tree_expands_only_what_enters_it(conts, max_nodes, floor, padded):
    """from_continuations, which counts a node's children only when the node enters the
    tree, builds the tree a full count trie gives, from lists or from -1-padded rows."""
    if padded:
        conts = [c + [-1] * (8 - len(c)) for c in conts]
    tree = from_continuations(conts, max_nodes, floor, "s")
    assert (tree.tokens, tree.parents) == _reference_tree(conts, max_nodes, floor)


def test_prompt_lookup_takes_the_first_match_like_transformers():
    assert prompt_lookup([1, 2, 3, 4, 5, 9, 2, 3], 10, frozenset()).tokens == [4, 5, 9, 2, 3]
    assert prompt_lookup([7, 8, 9], 10, frozenset()).tokens == []


def test_accept_walks_the_argmax_path():
    tree = from_continuations([[5, 6], [5, 7]], 8, 0.0, "x")   # 5 -> {6, 7}
    logits = torch.zeros(1 + len(tree), 10)
    logits[0, 5] = 1                                         # root -> 5 (accepted)
    logits[1 + tree.tokens.index(5), 7] = 1                  # after 5 -> 7 (a sibling branch)
    seven = tree.tokens.index(7)
    logits[1 + seven, 2] = 1                                 # bonus token after 7
    path, row = accept(tree, logits)
    assert [tree.tokens[i] for i in path] == [5, 7] and int(torch.argmax(logits[row])) == 2


def _prompts(n: int, seed: int):
    rng = random.Random(seed)
    root = stdlib_root()
    texts = [(root / f).read_text() for f in ("textwrap.py", "shlex.py", "bisect.py",
                                               "heapq.py", "fnmatch.py")]
    out = []
    for _ in range(n):
        text = rng.choice(texts)
        cut_at = rng.randrange(200, len(text) - 200)
        out.append(text[max(0, cut_at - 1500):cut_at])
    return out


def _decode_all(rt, prompts, mode):
    results = []
    engine = Engine(InklingOptions().merged({"completion": {"draft": "suffix"}}), runtime=rt)
    for i, before in enumerate(prompts):
        ids = rt.encode(before)
        cache = PromptCache(rt, "full")
        cache.sync(ids[:-6])              # then the last tokens as typed: half the prompts
        stop = StopRule(True, "")         # run a draft with them (in the prompt's forward)
        if mode == "none":
            out = greedy_decode(DecodeRequest(cache, cache.sync(ids).logits, stop, 24,
                                              rt.stop_ids, rt.decode))
        else:
            if mode == "prompt-lookup":
                drafter = lambda ctx, b: prompt_lookup(ctx, b, rt.stop_ids)  # noqa: E731
            else:
                index = SuffixIndex()
                index.put("doc", ids)
                from inkling.completion.drafting.suffix_drafter import SuffixDrafter
                sources = SuffixDrafter({"document": index, "history": engine.sources.history})
                drafter = lambda ctx, b: sources.draft(ctx, b, rt.stop_ids)  # noqa: E731
            first = drafter(ids, 24) if i % 2 else None
            synced = cache.sync(ids, draft=(first.tokens, first.parents) if first else None)
            assert (synced.draft_logits is not None) == bool(first)
            out = speculative_decode(DecodeRequest(
                cache, synced.logits, stop, 24, rt.stop_ids, rt.decode, drafter=drafter,
                context=ids, first=first, first_logits=synced.draft_logits))
        results.append((out.token_ids, out.forwards))
    return results


def _assert_lossless(rt, prompts):
    none = _decode_all(rt, prompts, "none")
    for mode in ("prompt-lookup", "suffix"):
        got = _decode_all(rt, prompts, mode)
        for i, ((a, _), (b, _)) in enumerate(zip(none, got)):
            assert a == b, f"{mode} differs from greedy on prompt {i}"
    return none


def test_lossless_on_200_prompts_random_weights(tmp_path):
    # a wider initialisation gives clear argmax margins, as trained models have
    d = make_tiny_model(tmp_path / "wide", initializer_range=0.3, seed=7)
    rt = load_runtime(d, device="cpu", dtype="float32")
    _assert_lossless(rt, _prompts(200, seed=1))


@pytest.mark.slow
def test_lossless_on_200_prompts_bundled_model(bundled_model_dir):
    rt = load_runtime(bundled_model_dir, device="cpu", dtype="float32")
    _assert_lossless(rt, _prompts(200, seed=2))


def test_engine_modes_give_the_same_suggestions(tiny_runtime):
    text = ("def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
            "\n\ndef volume(w, h, d):\n    return ")
    outs = {}
    for mode in ("none", "prompt-lookup", "suffix"):
        engine = Engine(InklingOptions().merged({"completion": {"draft": mode}}),
                        runtime=tiny_runtime)
        engine.open("file:///w/a.py", text)
        outs[mode] = engine.complete("file:///w/a.py", Position(9, 11)).drafts[0].text
    assert outs["none"] == outs["prompt-lookup"] == outs["suffix"]


def test_document_tokens_retokenize_only_edited_paragraphs():
    from inkling.completion.drafting.document_tokens import DocumentTokens, paragraphs
    calls = []

    def encode(text):
        calls.append(text)
        return [ord(c) for c in text]
    text = "def a():\n    return 1\n\n\ndef b():\n    return 2\n\nx = 1\n"
    assert "".join(paragraphs(text)) == text and len(paragraphs(text)) == 3
    tokens = DocumentTokens(encode)
    assert tokens.ids(text) == [ord(c) for c in text]
    calls.clear()
    edited = text.replace("return 2", "return 22")
    assert tokens.ids(edited) == [ord(c) for c in edited]
    assert calls == [p for p in paragraphs(edited) if "22" in p]


def test_draft_size_follows_the_measured_acceptance():
    from inkling.completion.drafting.acceptance import AcceptanceMeter
    from inkling.completion.drafting.suffix_drafter import DraftLimits
    base = DraftLimits()
    meter = AcceptanceMeter()
    for _ in range(60):
        meter.record(0)                     # the model keeps nothing: small drafts
    low = meter.limits(base)
    assert low.max_nodes == 4 and low.max_spec == 2
    for _ in range(60):
        meter.record(8)                     # it copies: drafts up to the base limits
    high = meter.limits(base)
    assert high.max_nodes == base.max_nodes and high.max_spec == base.max_spec


def test_suggestion_history_drafts_the_rest_of_the_last_suggestion():
    from inkling.completion.drafting.suffix_drafter import SuffixDrafter
    from inkling.completion.drafting.suggestion_history import SuggestionHistory
    history = SuggestionHistory(keep=2, context_tokens=3)
    history.add([1, 2, 3, 4, 5], [6, 7, 8, 9])
    drafter = SuffixDrafter({"suggestions": history})
    tree = drafter.draft([0, 4, 5, 6, 7], 10, frozenset())   # typed 6 7 as suggested
    assert tree.tokens == [8, 9] and tree.source == "suggestions"
    assert drafter.draft([0, 4, 5, 6, 11], 10, frozenset()).tokens == []   # typed otherwise
    history.add([1], [20, 21])
    history.add([1], [30, 31])                               # keeps the newest two
    assert drafter.draft([2, 3, 4, 5, 6, 7], 10, frozenset()).tokens == []
    assert drafter.draft([1, 30], 10, frozenset()).tokens == [31]


def test_typing_along_a_suggestion_drafts_it_and_stays_lossless(tiny_runtime):
    """Typing the start of the last suggestion: the next completion drafts the rest from
    the suggestion history (few forwards) and gives what greedy decoding gives."""
    text = "import os\n\n\ndef walk(root):\n    for name in "
    uri = "file:///w/b.py"
    outs = {}
    for mode in ("none", "suffix"):
        engine = Engine(InklingOptions().merged({"completion": {"draft": mode,
                                                                "max_new_tokens": 16}}),
                        runtime=tiny_runtime)
        engine.open(uri, text)
        first = engine.complete(uri, Position(4, 16))
        typed = first.drafts[0].text[:2]
        assert len(typed) == 2
        engine.apply_change(uri, [TextChange(typed, Range(Position(4, 16), Position(4, 16)))])
        outs[mode] = engine.complete(uri, Position(4, 18))
    assert outs["none"].drafts[0].text == outs["suffix"].drafts[0].text
    assert outs["suffix"].forwards < outs["none"].forwards


def test_acceptance_is_measured_per_source():
    from inkling.completion.drafting.acceptance import AcceptanceMeter
    from inkling.completion.drafting.suffix_drafter import DraftLimits
    meter = AcceptanceMeter()
    for _ in range(60):
        meter.record(0, "workspace")
        meter.record(10, "suggestions")
    assert meter.limits(DraftLimits(), "workspace").max_spec == 2
    assert meter.limits(DraftLimits(), "suggestions").max_spec == DraftLimits().max_spec
    assert meter.accepted("document") == meter.prior


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcde"), st.lists(st.integers(0, 5), max_size=40)),
                min_size=1, max_size=12),
       st.lists(st.sampled_from("abcde"), max_size=3),
       st.lists(st.integers(0, 5), min_size=1, max_size=8))
def test_next_counts_and_drafts_equal_those_of_the_matches(puts, removed, context):
    """The vectorised n-gram counts and draft trees equal those computed from the live
    matches one by one."""
    from inkling.completion.drafting.draft_tree import from_continuations
    from inkling.completion.drafting.suffix_drafter import DraftLimits, SuffixDrafter
    from inkling.completion.drafting.suffix_index import next_counts
    idx = SuffixIndex(min_merge=16)
    for key, ids in puts:
        idx.put(key, ids)
    for key in removed:
        idx.remove(key)
    found = idx.matches(context)
    counts = {}
    if found:
        best = max(m.length for _, m in found)
        for s, m in found:
            if m.length == best:
                counts[s.continuation(m.end, 1)[0]] = counts.get(s.continuation(m.end, 1)[0], 0) + 1
    assert next_counts(idx.found(context)) == counts
    lim = DraftLimits(max_spec=6, alpha=2.0, max_nodes=8, max_continuations=3)
    want = None
    for m in sorted({x.length for _, x in found}, reverse=True)[:lim.lengths_tried]:
        occ = [(s, x) for s, x in found if x.length >= m][-lim.max_continuations:]
        tree = from_continuations([s.continuation(x.end, min(20, lim.max_spec, int(2 * m)))
                                   for s, x in occ], lim.max_nodes, lim.floor, "d")
        if want is None or tree.score > want.score:
            want = tree
    got = SuffixDrafter({"d": idx}, lim).draft(context, 20, frozenset())
    assert (got.tokens, got.parents) == ((want.tokens, want.parents) if want else ([], []))


def test_drafts_are_verified_and_sources_searched_where_they_pay():
    import numpy as np

    from inkling.completion.drafting.acceptance import AcceptanceMeter
    from inkling.completion.drafting.draft_tree import DraftTree
    from inkling.completion.drafting.suffix_drafter import DraftLimits
    from inkling.completion.drafting.verify_cost import VerifyCost, bucket
    cost = VerifyCost()
    assert cost.ratio(9) == 1.0                        # nothing measured: a flat cost
    cost.record(1, 7.0)
    cost.record(9, 14.0)                               # the 16-row bucket
    cost.record(2, 9.0)                                # a one-token draft
    assert bucket(9) == 16 and cost.ratio(12) == pytest.approx(2.0)
    meter = AcceptanceMeter(cost=cost, explore_every=4)
    assert meter.admitted(["suggestions", "datastore"]) == {"suggestions", "datastore"}
    chain = list(range(-1, 9))
    good = DraftTree(list(range(10, 20)), chain, source="suggestions", match=4)
    bad = DraftTree(list(range(10, 20)), chain, source="datastore", match=6)
    for _ in range(60):
        meter.learn(good, 3)
        meter.learn(bad, 0)
    assert meter.pays(good) and not meter.pays(bad)   # 1 + 3 tokens >= 2, 1 + 0 < 2

    # a source's margin is how much more its best candidate keeps than the best of the
    # other sources' (none when it keeps no more)
    lim = DraftLimits()
    output = [5, 6, 7, 8]
    sugg = _candidate("suggestions", 3, [5, 6, 7, 8], lim)
    store = _candidate("datastore", 5, [5, 9, 9, 9], lim)
    for _ in range(60):
        meter.searched({"suggestions": 0.1, "datastore": 0.2})
        best = meter.learn_step([sugg, store], {"suggestions", "datastore", "workspace"},
                                output)
    assert best == {"suggestions": 4, "datastore": 1}
    assert meter.margins["suggestions"] == pytest.approx(3.0, abs=0.01)   # 4 against 1
    assert meter.margins["datastore"] == 0.0 and meter.margins["workspace"] == 0.0
    assert meter.search_ms["datastore"] == pytest.approx(0.2)
    assert not meter.worth("datastore")
    # alone, the suggestions' candidate keeps 4 tokens more than nothing
    for _ in range(60):
        meter.learn_step([sugg], {"suggestions"}, output)
        meter.record(4, "suggestions")
    assert meter.margins["suggestions"] == pytest.approx(4.0, abs=0.01)
    assert meter.token_ms() == pytest.approx(7.0)      # a one-row step: a token undrafted
    assert meter.worth("suggestions")
    steps = [meter.admitted(["suggestions", "datastore"]) for _ in range(12)]
    # one step in explore_idle (8; the first was asked for above) is plain, to keep
    # measuring what drafting saves
    assert [i for i, searched in enumerate(steps) if not searched] == [6]
    assert all("suggestions" in searched for searched in steps[:6] + steps[7:])
    # the datastore is searched one step in four, to keep measuring its margin
    assert sum("datastore" in searched for searched in steps) == 2
    # a dear search is measured more seldom: its turns cost at most 2% of a token
    meter.searched({"datastore": 1.4})               # 1.4 / (0.02 * 7 ms) = 10 steps
    assert meter.search_ms["datastore"] == pytest.approx(0.32)
    meter.search_ms["datastore"] = 1.4
    steps = [meter.admitted(["suggestions", "datastore"]) for _ in range(40)]
    assert sum("datastore" in searched for searched in steps) == 3


def test_trees_are_cut_to_the_rows_their_acceptance_pays_for():
    from inkling.completion.drafting.acceptance import AcceptanceMeter
    from inkling.completion.drafting.suffix_drafter import DraftLimits
    from inkling.completion.drafting.verify_cost import VerifyCost
    cost = VerifyCost()
    assert cost.rows_that_pay(1.5) == 128               # nothing measured: every size tried
    for rows, ms in ((1, 1.0), (2, 1.3), (4, 1.6), (8, 2.2), (16, 4.0)):
        cost.record(rows, ms)
    assert cost.plain_ms() == 1.0
    # 32 rows and more unmeasured: counted at 16's ratio, tried where that pays
    assert [cost.rows_that_pay(t) for t in (1.1, 1.4, 2.0, 2.5, 4.0)] == [1, 2, 4, 8, 128]
    meter = AcceptanceMeter(cost=cost, explore_every=2, explore_idle=8)
    base = DraftLimits()
    meter.rates["model"] = 1.5                  # 2.5 tokens a step pay for 8 rows, not 16
    assert meter.limits(base, "model").max_nodes == 7
    meter.rates["model"] = 0.5                  # 1.5 tokens: two rows, one drafted node
    lim = meter.limits(base, "model")
    assert lim.max_nodes == 1 and lim.max_spec == 1
    # drafting against plain steps, per token, searches included
    assert not meter.idle()                     # nothing measured: drafting is tried
    cost.record(1, 1.0, tokens=1)               # plain: 1 ms a token
    cost.record(8, 2.2, tokens=2, search_ms=0.5)     # drafted: 2.7 ms for 2 tokens
    assert cost.per_token("drafted") == pytest.approx(1.35)
    assert meter.idle()                         # drafting idles: sources on their turn only,
    steps = [meter.admitted(["model", "document"]) for _ in range(16)]   # one step in 8
    assert [i for i, found in enumerate(steps) if found] == [7, 15]
    # while idle the sources share the exploration budget: with searches measured, the
    # turns of all of them cost at most explore_share (2%) of a token's time a step
    meter.search_ms.update({"model": 0.1, "document": 0.1})    # 0.1 / (0.02 / 2 * 1 ms)
    steps = [meter.admitted(["model", "document"]) for _ in range(100)]
    assert sum(len(found) for found in steps) == 20      # one step in 10 each
    searched = sum(meter.search_ms[s] for found in steps for s in found)
    assert searched / 100 <= 0.02 * cost.plain_ms() + 1e-9
    for _ in range(40):                         # drafts that keep 4 tokens: 5 a step
        cost.record(8, 2.2, tokens=5, search_ms=0.5)
    assert cost.per_token("drafted") < 1.0 and not meter.idle()
    assert "model" in meter.admitted(["model", "document"])


def test_while_drafting_idles_one_completion_in_explore_completions_drafts():
    from inkling.completion.drafting.acceptance import AcceptanceMeter
    from inkling.completion.drafting.verify_cost import VerifyCost
    cost = VerifyCost()
    meter = AcceptanceMeter(cost=cost, explore_completions=4)
    assert [meter.drafts_completion() for _ in range(5)] == [True] * 5   # nothing measured
    cost.record(1, 1.0, tokens=1)
    cost.record(8, 3.0, tokens=2, search_ms=0.5)         # drafted: 1.75 ms a token, plain 1
    assert [meter.drafts_completion() for _ in range(8)] == [False, False, False, True] * 2
    for _ in range(60):                                  # drafts that keep 4 tokens: 5 a step
        cost.record(8, 2.0, tokens=5, search_ms=0.5)
    assert [meter.drafts_completion() for _ in range(5)] == [True] * 5   # it pays again


def test_completions_where_drafting_idles_run_without_it_and_suggest_the_same(tiny_runtime):
    def engine(draft: str) -> Engine:
        return Engine(InklingOptions().merged({"completion": {"draft": draft,
                                                              "max_new_tokens": 8}}),
                      runtime=tiny_runtime)
    drafting, plain = engine("suffix"), engine("none")
    cost = drafting.acceptance.cost
    cost.record(1, 1.0, tokens=1)
    cost.record(8, 1000.0, tokens=2, search_ms=0.5)      # drafting far dearer a token
    assert drafting.acceptance.idle()
    uri, text = "file:///w/i.py", "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return "
    drafted = []
    for e in (drafting, plain):
        e.open(uri, text)
    for _ in range(16):
        done, ref = drafting.complete(uri, Position(5, 11)), plain.complete(uri, Position(5, 11))
        assert [d.text for d in done.drafts] == [d.text for d in ref.drafts]
        drafted.append(bool(done.draft_ms))
    n = drafting.acceptance.explore_completions
    assert [i for i, d in enumerate(drafted) if d] == [n - 1, 2 * n - 1]
    assert drafting.stats.undrafted == 16 - 2 and plain.stats.undrafted == 0
    # superposed's invoked drafts never draft: neither counted nor taking a drafting turn
    turn = drafting.acceptance._idle_completions
    done = drafting.complete(uri, Position(5, 11), k=3, trigger="invoked")
    assert not done.draft_ms and drafting.stats.undrafted == 16 - 2
    assert drafting.acceptance._idle_completions == turn


def test_the_document_source_does_not_draft_the_text_after_the_cursor(tiny_runtime):
    """The text before the cursor matches the context at the cursor at full length; the
    document is indexed in two parts, so that match drafts nothing (the text after the
    cursor is not what goes in front of it), while earlier repeats still draft."""
    from inkling.completion.drafting.suffix_drafter import SuffixDrafter
    rt = tiny_runtime
    text = ("def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n"
            "    return 2 * (w + h)\n")
    offset = text.index(" 2 * (w")                  # after "    return" of the second body
    uri = "file:///w/c.py"
    engine = Engine(InklingOptions().merged({"completion": {"draft": "suffix"}}), runtime=rt)
    engine.open(uri, text)
    index = engine.sources.indexes(uri, engine.document(uri).text, offset, rt)["document"]
    context = rt.encode(text[:offset])
    tree = SuffixDrafter({"document": index}).draft(context, 8, frozenset())
    after = rt.decode(tree.tokens[:3]) if tree.tokens else ""
    assert rt.decode(tree.tokens).startswith(" w * h")     # the first body's repeat
    once = text.replace("    return w * h\n", "    pass\n")  # "return" only at the cursor
    engine.close(uri)
    engine.open(uri, once)
    index = engine.sources.indexes(uri, engine.document(uri).text, once.index(" 2 * (w"),
                                   rt)["document"]
    context = rt.encode(once[:once.index(" 2 * (w")])
    assert not SuffixDrafter({"document": index}).draft(context, 8, frozenset()).tokens


def test_a_completion_that_fails_after_a_drafted_prefill_leaves_only_the_prompt(
        tiny_runtime, monkeypatch):
    """The draft's nodes sit in the cache after the prompt until the accepted path is
    kept: a failure in between (here the monitor) must not leave them there."""
    text = "import os\n\n\ndef walk(root):\n    for name in os.listdir(root):\n        print("
    uri = "file:///w/d.py"
    engine = Engine(InklingOptions().merged({"completion": {"draft": "prompt-lookup"}}),
                    runtime=tiny_runtime)
    engine.open(uri, text)
    engine.complete(uri, Position(5, 14))
    engine.apply_change(uri, [TextChange("name", Range(Position(5, 14), Position(5, 14)))])
    synced = []
    cache_sync = PromptCache.sync

    def sync(self, *args, **kwargs):
        synced.append((self, cache_sync(self, *args, **kwargs)))
        return synced[-1][1]
    monkeypatch.setattr(PromptCache, "sync", sync)
    monkeypatch.setattr(OpenAnalysis, "at_cursor", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        engine.complete(uri, Position(5, 18))
    cache, result = synced[-1]
    assert result.draft_logits is not None                # the draft ran with the prompt
    assert len(cache.ids) == cache.past.get_seq_length() == result.reused + result.prefilled


def _candidate(source: str, match: int, continuation: list[int], limits):
    """A candidate of one ``continuation``, found as the drafter finds one: in a stream."""
    from inkling.completion.drafting.suffix_drafter import Candidate
    stream = StreamIndex.of([continuation])
    return Candidate(source, match, limits, ((stream, stream.starts.astype(np.int64)),),
                     len(continuation))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), max_size=60), min_size=1, max_size=4),
       st.lists(st.integers(0, 5), min_size=1, max_size=12))
def test_a_short_stream_scanned_matches_as_the_sorted_index_does(seqs, context):
    """Short streams are scanned for their anchors instead of indexed, and a stream
    rebuilt at every completion keeps its k-gram hashes in stream order instead of
    sorted; all three ways give the same occurrences and lengths."""
    import inkling.completion.drafting.suffix_index as si
    scanned = StreamIndex.of(seqs)
    old = si.SCAN_BELOW
    si.SCAN_BELOW = 0
    try:
        indexed = StreamIndex.of(seqs)
        hashed = StreamIndex.of(seqs, layout="hashed")
    finally:
        si.SCAN_BELOW = old
    assert not scanned.sorted and indexed.sorted and hashed.sorted
    a, b, c = (x.match_arrays(context) for x in (scanned, indexed, hashed))
    assert a[0].tolist() == b[0].tolist() == c[0].tolist()
    assert a[1].tolist() == b[1].tolist() == c[1].tolist()
    assert scanned.matches(context) == indexed.matches(context) == hashed.matches(context)


def test_the_tree_chosen_is_the_one_whose_source_the_model_keeps_at_that_match_length():
    """The meter learns per source and match length from scored candidates, and the
    drafter verifies the tree with the highest learnt yield, not the highest count score."""
    from inkling.completion.drafting.acceptance import AcceptanceMeter, match_bucket
    from inkling.completion.drafting.suffix_drafter import SuffixDrafter, pick
    corpus = SuffixIndex()
    corpus.put("a", [1, 2, 3, 7, 8, 9] * 5)                  # many votes for 7 8 9
    mine = SuffixIndex()
    mine.put("b", [1, 2, 3, 4, 5, 6])                        # one for 4 5 6
    drafter = SuffixDrafter({"corpus": corpus, "mine": mine})
    trees = drafter.candidates([0, 1, 2, 3], 8)
    assert {t.source for t in trees} == {"corpus", "mine"}
    assert pick(trees, frozenset()).source == "corpus"       # by counts
    meter = AcceptanceMeter()
    output = [4, 5, 6, 10]                                   # what the model wrote
    for _ in range(3):
        for t in trees:
            meter.learn(t, t.kept(output))
    chosen = pick(trees, frozenset(), meter.value)
    assert chosen.source == "mine" and chosen.tokens[:3] == [4, 5, 6]
    assert meter.value(chosen) == 3.0 and match_bucket(chosen.match) == chosen.match == 3
    assert meter.by_match[("corpus", 3)] == 0.0
    assert match_bucket(9) == match_bucket(15) == 12 and match_bucket(40) == 16


def test_a_finished_completion_scores_every_candidate(tiny_runtime):
    engine = Engine(InklingOptions().merged({"completion": {"draft": "suffix",
                                                            "max_new_tokens": 12}}),
                    runtime=tiny_runtime)
    text = "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return "
    engine.open("file:///w/l.py", text)
    done = engine.complete("file:///w/l.py", Position(5, 11))
    assert done.draft_ms and all(ms > 0 for ms in done.draft_ms)   # each step timed
    assert not engine.acceptance.by_match                 # left for after the answer
    engine.settle()
    assert engine.acceptance.by_match                     # learnt without being verified
    assert all(v >= 0 for v in engine.acceptance.by_match.values())
    assert set(engine.acceptance.margins) >= {"document", "history"}
    assert set(engine.acceptance.search_ms) == set(engine.acceptance.margins)
    learnt = engine.stats.learnt
    engine.complete("file:///w/l.py", Position(5, 11))
    assert engine.stats.learnt == learnt
    engine.complete("file:///w/l.py", Position(5, 11))    # runs what the last one left
    assert engine.stats.learnt == learnt + 1


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=30), min_size=1, max_size=4),
       st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=30), max_size=3),
       st.lists(st.integers(0, 3), min_size=2, max_size=12), st.integers(1, 6))
def test_candidate_rows_are_gathered_when_asked_and_are_the_recent_continuations(
        base, tail, context, most):
    """A candidate's rows are the continuations (``span`` tokens, -1 after a separator)
    of the last ``max_continuations`` occurrences whose match is at least its length,
    across a source's streams in order; only the tree chosen gathers them before the
    output is known."""
    from inkling.completion.drafting.suffix_drafter import DraftLimits, SuffixDrafter, pick
    idx = SuffixIndex(min_merge=10_000)
    idx.put_many((f"b{i}", seq) for i, seq in enumerate(base))
    for i, seq in enumerate(tail):
        idx.put(f"t{i}", seq)                             # a second stream (the tail)
    drafter = SuffixDrafter({"s": idx}, DraftLimits(max_continuations=most))
    cands = drafter.candidates(context, 5)
    found = idx.found(context)
    for c in cands:
        assert "rows" not in c.__dict__
        occ = [(st_, int(e)) for st_, ends, lengths in found
               for e, n in zip(ends, lengths) if n >= c.match][-most:]
        want = [st_.continuation(e, c.span) for st_, e in occ]
        assert c.count == len(want)
        assert [r[r >= 0].tolist() for r in c.rows] == want
    if cands:
        fresh = drafter.candidates(context, 5)
        pick(fresh, frozenset(), lambda c: float(c is fresh[-1]))
        assert ["rows" in c.__dict__ for c in fresh] == [c is fresh[-1] for c in fresh]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=6), min_size=1, max_size=12),
       st.lists(st.integers(0, 3), min_size=1, max_size=7),
       st.sampled_from([0.0, 0.1, 0.3, 0.6]))
@example(conts=[[0]] + [[1]] * 8 + [[1, 0]], output=[1, 0], floor=0.1)   # D on the floor:
def test_a_candidate_scores_what_its_tree_would_accept(conts, output, floor):  # same rounding
    """Candidate.kept, from token rows, is what the verifier accepts of the tree the rows
    build when the model writes ``output`` (while the node budget is not reached), and
    the rows are the streams' continuations."""
    from inkling.completion.drafting.suffix_drafter import Candidate, DraftLimits, _rows
    stream = StreamIndex.of(conts)
    ends = stream.starts.astype(np.int64)
    rows = _rows(stream, ends, 6)
    assert [r[r >= 0].tolist() for r in rows] == [stream.continuation(e, 6) for e in ends]
    ends = ends[rows[:, 0] >= 0]                 # continuations that hold a token
    if not len(ends):
        return
    cand = Candidate("s", 2, DraftLimits(max_nodes=10_000, floor=floor), ((stream, ends),), 6)
    tree = cand.tree()
    beyond = 4                                   # a token no draft holds
    wrote = [output[d] if d < len(output) else beyond for d in [0] + tree.depths()]
    logits = torch.nn.functional.one_hot(torch.tensor(wrote), 5).float()   # [1 + n, 5]
    path, _ = accept(tree, logits)
    assert cand.kept(output) == len(path)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=3, max_size=120),
       st.lists(st.integers(0, 2), min_size=2, max_size=40))
def test_match_lengths_are_the_longest_agreeing_tails(stream_toks, context):
    """StreamIndex._lengths (a first look, then the rest for full agreements) equals a
    token-by-token comparison backwards from every end, up to MAX_MATCH."""
    from inkling.completion.drafting.suffix_index import MAX_MATCH
    stream = StreamIndex.of([stream_toks])
    ends = np.arange(2, len(stream_toks) + 1)
    ends = ends[[stream_toks[e - 2:e] == context[-2:] for e in ends]]
    want = []
    for e in ends:
        n = 0
        while n < min(MAX_MATCH, len(context)) and e - 1 - n >= 0 and \
                stream_toks[e - 1 - n] == context[-1 - n]:
            n += 1
        want.append(n)
    assert stream._lengths(ends.astype(np.int64), context, 2).tolist() == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=60), st.lists(st.integers(0, 3), max_size=40))
def test_the_request_source_finds_what_a_stream_index_finds(generated, context):
    """The request's own text is scanned as a Python list at every step; it finds the
    matches, lengths and continuations a StreamIndex of the same tokens finds."""
    from inkling.completion.drafting.suffix_drafter import _Local, _rows
    got = _Local(generated).found(context)
    want = StreamIndex.of([generated]).found(context)
    assert len(got) == len(want)
    for (gs, ge, gl), (ws, we, wl) in zip(got, want):
        assert ge.tolist() == we.tolist() and gl.tolist() == wl.tolist()
        assert _rows(gs, ge, 5).tolist() == _rows(ws, we, 5).tolist()


def test_the_document_is_indexed_only_when_searched(tiny_runtime):
    engine = Engine(InklingOptions().merged({"completion": {"draft": "suffix"}}),
                    runtime=tiny_runtime)
    text = "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return "
    engine.open("file:///w/m.py", text)
    doc = engine.document("file:///w/m.py")
    index = engine.sources.indexes("file:///w/m.py", doc.text, len(text), tiny_runtime)["document"]
    assert index._index is None                          # nothing built yet
    context = tiny_runtime.encode(text)
    found = index.found(context)
    assert index._index is not None
    assert [(e.tolist(), n.tolist()) for _, e, n in found] == \
        [(e.tolist(), n.tolist()) for _, e, n in index.index.found(context)]
    assert engine.sources.indexes("file:///w/m.py", doc.text, len(text),
                                  tiny_runtime)["document"] is index


# ------------------------------------------------- completion.draft auto, chosen at load
def test_auto_drafts_only_where_a_tree_forward_costs_less_than_it_yields():
    from inkling.completion.drafting.draft_mode import choose
    gpu = choose({1: 2.0, 8: 2.1, 16: 2.3}, prior=1.0, forward="compact")
    cpu = choose({1: 1.1, 8: 2.4, 16: 12.7}, prior=1.0, forward="native")
    assert (gpu.mode, cpu.mode) == ("suffix", "none")
    assert "16 rows costs 12.70 ms, 11.55 one-row forwards of 1.10 ms (native)" in cpu.reason
    # the tree built at the prior (16 rows) yields 1 + the prior: pays under twice a row
    assert choose({1: 1.0, 8: 1.5, 16: 1.99}, 1.0, "native").mode == "suffix"
    assert choose({1: 1.0, 8: 1.5, 16: 2.0}, 1.0, "native").mode == "none"
    assert choose({1: 1.0, 8: 1.5, 16: 2.0}, 1.5, "native").mode == "suffix"
    assert cpu.report() == {"mode": "none", "reason": cpu.reason, "forward": "native",
                            "state": "measured", "rows": [1, 8, 16],
                            "forward_ms": [1.1, 2.4, 12.7]}


def test_auto_is_measured_once_a_load_and_said(tiny_runtime, monkeypatch, tmp_path):
    from inkling.completion.drafting import draft_mode
    from inkling.lsp.server_stats import drafting_in_use
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))         # nothing cached yet
    key = ("draft_choice", tiny_runtime.forward_kind("auto"))
    tiny_runtime.attached.pop(key, None)
    calls = []
    real = draft_mode.forward_ms
    monkeypatch.setattr(draft_mode, "forward_ms",
                        lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    engine = Engine(InklingOptions(), runtime=tiny_runtime)
    assert engine.options.completion.draft == "auto"
    # a completion's plan never measures: until something does, auto drafts nothing, said
    assert engine.draft_mode(tiny_runtime) == "none" and not calls
    said = drafting_in_use(engine)
    assert (said["state"], said["rows"], said["mode"]) == ("not measured yet", [], "none")
    assert "not measured yet" in said["reason"]
    mode = draft_mode.resolved(engine.options, tiny_runtime, engine.acceptance.prior,
                               measure=True)
    said = drafting_in_use(engine)
    assert said["mode"] == mode == tiny_runtime.attached[key].mode and said["asked"] == "auto"
    assert said["state"] == "measured"
    assert said["rows"] == [1, 8, 16] and all(ms > 0 for ms in said["forward_ms"])
    assert (mode == "suffix") == (said["forward_ms"][2] / said["forward_ms"][0] < 2.0)
    Engine(InklingOptions(), runtime=tiny_runtime).draft_mode(tiny_runtime)
    assert len(calls) == 1                             # kept with the runtime
    forced = Engine(InklingOptions().merged({"completion": {"draft": "none"}}),
                    runtime=tiny_runtime)
    assert forced.draft_mode(tiny_runtime) == "none"
    assert drafting_in_use(forced)["reason"] == "completion.draft is none"


@pytest.mark.parametrize("chosen", ["none", "suffix"])
def test_auto_runs_the_mode_it_chose_and_suggests_the_same(tiny_runtime, tmp_path, chosen):
    """A choice of ``none`` (a CPU) prepares no drafting index and never drafts; one of
    ``suffix`` (a GPU, here put in place of the measured one) drafts as ``suffix`` does;
    both suggest what ``none`` and ``suffix`` do."""
    from inkling.completion.drafting.draft_mode import DraftChoice
    key = ("draft_choice", tiny_runtime.forward_kind("auto"))
    was = tiny_runtime.attached.get(key)
    tiny_runtime.attached[key] = DraftChoice(chosen, "set by the test", key[1],
                                             {1: 1.0, 8: 1.5, 16: 2.0})
    text = ("def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
            "\n\ndef volume(w, h, d):\n    return ")
    (tmp_path / "lib.py").write_text(text)
    outs, engines = {}, {}
    try:
        for mode in ("auto", "none", "suffix"):
            engine = engines[mode] = Engine(InklingOptions().merged({"completion": {
                "draft": mode, "datastore": "none", "model_datastore": "none"}}),
                runtime=tiny_runtime)
            engine.workspace_folders = [tmp_path.as_uri()]
            prepared = engine.prepare()
            assert ("auto drafting: " + chosen in prepared.done) == (mode == "auto")
            engine.open("file:///w/a.py", text)
            outs[mode] = [engine.complete("file:///w/a.py", Position(9, 11)).drafts[0].text
                          for _ in range(3)]
            engine.settle()
            engine.shutdown()
    finally:
        tiny_runtime.attached[key] = was
        if was is None:
            del tiny_runtime.attached[key]
    assert outs["auto"] == outs["none"] == outs["suffix"]
    auto = engines["auto"]
    assert auto.uses_datastore is False                     # datastore none
    assert (auto.sources.workspace is not None) == (chosen == "suffix")
    assert (auto.stats.learnt > 0) == (chosen == "suffix"), auto.stats
    assert chosen == "suffix" or auto.stats.undrafted == 0     # none: no drafter asked
