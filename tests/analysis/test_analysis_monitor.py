"""Monitors: scanner, trigger sites, vocabulary masks (checked against a brute-force
reference) and a masked decode that only ever emits real members."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from inkling.analysis.python_scanner import ScanState
from inkling.analysis.token_masks import MaskCache
from inkling.analysis.trigger_site import NONE, OPTIONAL, REQUIRED, trigger_site
from inkling.analysis.vocabulary import WHITESPACE, TokenVocabulary, is_ident_char

from analysis_helpers import analysis_for, open_at

CLASS = '''import os


class Counter:
    start = 0

    def __init__(self, step=1):
        self.step = step
        self.value = self.start

    def increment(self):
        self.value += self.step
        return self.value

    def describe(self):
        return self.|'''

MEMBERS = {"start", "step", "value", "increment", "describe"}


@pytest.fixture(scope="module")
def tiny_tokenizer():
    from inkling.models.corpus import stdlib_root
    from inkling.training.tokenizer_recipe import train_tokenizer
    root = stdlib_root()
    texts = [(root / n).read_text(encoding="utf-8") for n in
             ("textwrap.py", "bisect.py", "heapq.py", "shlex.py", "os.py")]
    return train_tokenizer(texts, 1200)


def _site(text: str):
    return trigger_site(ScanState().advance(text))


@pytest.mark.parametrize("text,kind,target,typed,lead", [
    ("x = self.", "attribute", "self", "", NONE),
    ("x = a.b.c", "attribute", "a.b", "c", NONE),
    ("from m import ", "from_import", "m", "", OPTIONAL),
    ("from m import", "from_import", "m", "", REQUIRED),
    ("from .m import a, b", "from_import", "m", "b", NONE),
    ("import ", "import", "", "", OPTIONAL),
    ("import a.b", "import", "a", "b", NONE),
    ("from ", "from_module", "", "", OPTIONAL),
    ("f(1, k=2, ", "keyword", "f", "", OPTIONAL),
    ("obj.m(k=2, **d, o", "keyword", "obj.m", "o", NONE),
])
def test_trigger_sites(text, kind, target, typed, lead):
    site = _site(text)
    assert (site.kind, site.target, site.typed, site.lead) == (kind, target, typed, lead)


@pytest.mark.parametrize("text", ["x = 'self.", "# self.", 'x = """\nself.', "x = 1.", "f(1, ",
                                  "f(a == 1, ", "x = f().", "from m import a as ", "def f(a=1, "])
def test_no_trigger(text):
    assert _site(text) is None


def test_scanner_is_incremental():
    text = CLASS + " value\nx = f'{a}' + \"\"\"q\n'''\" \"\"\" # c\nz = [(1, 'a'), {2: r'\\'}]\n"
    whole = ScanState().advance(text)
    rng = random.Random(1)
    state, i = ScanState(), 0
    while i < len(text):
        n = rng.randint(1, 7)
        state, i = state.advance(text[i:i + n]), i + n
    assert state == whole


def _reference(text: str, special: bool, names, typed: str, lead: str, escape: bool) -> bool:
    """The mask rule of ARCHITECTURE.md, token by token."""
    if not text:
        return False
    rests = [n[len(typed):] for n in names if n.startswith(typed)]
    if special:
        return "" in rests and lead != REQUIRED
    ok = False
    body = text.lstrip(WHITESPACE)
    if not typed and lead != NONE and len(body) < len(text):
        ok |= not body
        ok |= any(r.startswith(body) for r in rests if body)
        ok |= any(body.startswith(r) and len(body) > len(r) and not is_ident_char(body[len(r)])
                  for r in rests if r)
        ok |= escape and bool(body) and not is_ident_char(body[0])
    if typed or lead != REQUIRED:
        ok |= any(r.startswith(text) for r in rests)
        ok |= any(text.startswith(r) and len(text) > len(r) and not is_ident_char(text[len(r)])
                  for r in rests)
        ok |= escape and not typed and not is_ident_char(text[0]) and text[0] not in WHITESPACE
    return ok


@pytest.mark.parametrize("typed,lead,escape", [("", NONE, False), ("", OPTIONAL, True),
                                               ("", REQUIRED, True), ("de", NONE, False),
                                               ("describe", NONE, False), ("x", NONE, True)])
def test_masks_match_the_reference(tiny_tokenizer, typed, lead, escape):
    vocab = TokenVocabulary.from_tokenizer(tiny_tokenizer, tiny_tokenizer.get_vocab_size() + 7)
    names = frozenset(MEMBERS | {"path", "get", "getcwd", "_private", "x"})
    mask = MaskCache(vocab).names_mask(names, typed, lead, escape)
    assert mask.dtype == torch.bool and mask.shape == (vocab.size,)
    expected = [_reference(t, bool(vocab.special[i]), names, typed, lead, escape)
                for i, t in enumerate(vocab.texts)]
    assert mask.tolist() == expected
    assert not mask[-7:].any()                      # padding ids past the tokenizer


def test_single_token_decoding_matches_the_tokenizer(tiny_tokenizer):
    vocab = TokenVocabulary.from_tokenizer(tiny_tokenizer)
    for i in range(vocab.size):
        assert vocab.texts[i] == tiny_tokenizer.decode([i], skip_special_tokens=False)
    partial = [t for t in vocab.texts if "\ufffd" in t]
    assert partial, "byte-level BPE has partial UTF-8 tokens"


def test_dotted_tokens_are_checked_before_the_dot_is_typed():
    vocab = TokenVocabulary.from_texts(["x", ".", ".va", ".value", ".zz", "._", ".value(", ".q(",
                                        " ", "self"])
    mask = MaskCache(vocab).dotted_mask(frozenset({"value", "_v"}))
    allowed = {vocab.texts[i] for i in range(vocab.size) if mask[i]}
    assert allowed == {"x", ".", ".va", ".value", "._", ".value(", " ", "self"}


def test_monitor_state_end_to_end(tmp_path: Path, tiny_tokenizer):
    a = analysis_for(tmp_path, {"c.py": CLASS.replace("|", "")})
    vocab = TokenVocabulary.from_tokenizer(tiny_tokenizer)
    state = open_at(a, tmp_path / "c.py", CLASS, vocab)
    assert state.active and MEMBERS <= state.allowed
    mask = state.mask()
    for i in np.flatnonzero(mask.numpy()):
        text = vocab.texts[i]
        assert any(m.startswith(text) or (text.startswith(m) and not is_ident_char(text[len(m)]))
                   for m in state.allowed), text
    assert state.mask() is mask                                     # cached
    # forks are independent
    left, right = state.advance("val"), state.advance("ste")
    assert left.site.typed == "val" and right.site.typed == "ste"
    if len(vocab.exact.get("ue")):
        assert left.mask()[vocab.exact.get("ue")[0]]
    done = left.advance("ue")
    assert done.site.typed == "value" and done.mask() is not None
    after = done.advance(" + 1\n")
    assert not after.active and after.mask() is None
    # a path that left the names is no longer constrained
    assert state.advance("nonsense").mask() is None


def test_a_mask_is_computed_once_per_state_and_never_outside_code(tmp_path: Path,
                                                                 tiny_tokenizer, monkeypatch):
    from inkling.analysis.monitor import MonitorState
    a = analysis_for(tmp_path, {"c.py": CLASS.replace("|", "")})
    state = open_at(a, tmp_path / "c.py", CLASS, TokenVocabulary.from_tokenizer(tiny_tokenizer))
    computed = []
    original = MonitorState._mask
    monkeypatch.setattr(MonitorState, "_mask",
                        lambda self, masks, device: computed.append(self) or
                        original(self, masks, device))
    first = state.mask()
    assert state.mask() is first and computed == [state]           # kept on the state
    quoted = state.advance('x + "self.')                             # inside a string
    assert quoted.mask() is None and computed == [state]
    assert quoted.advance('"\n        return self.').mask() is not None


def test_typing_on_in_a_statement_scans_on_from_the_last_state(tmp_path: Path, monkeypatch):
    """The monitor's scan goes on from the previous keystroke's (the segment from the
    statement's start grew), and gives the state a whole scan gives, keystroke by
    keystroke, across a string, brackets and a new statement."""
    from inkling.analysis import open_document
    head = "import os\n\n\ndef f(items):\n    "
    typed = 'total = g(items, "a, (b", [1,\n        2]) + os.sep\n    return total'
    a = analysis_for(tmp_path, {"m.py": head + "\n"})
    whole = []
    original = open_document.ScanState
    monkeypatch.setattr(open_document, "ScanState", lambda: whole.append(1) or original())
    for n in range(1, len(typed) + 1):
        text = head + typed[:n] + "|\n"
        state = open_at(a, tmp_path / "m.py", text)
        cursor = text.index("|")
        _, at, scan = a._docs[(tmp_path / "m.py").as_uri()].scanned
        assert scan == original().advance(text[at:cursor]) == state.scan
    assert len(whole) < len(typed) / 4          # most keystrokes went on from the last scan


def test_attributes_a_path_assigns_become_members(tmp_path: Path, tiny_tokenizer):
    a = analysis_for(tmp_path, {"c.py": CLASS.replace("|", "")})
    vocab = TokenVocabulary.from_tokenizer(tiny_tokenizer)
    state = open_at(a, tmp_path / "c.py", CLASS.replace("return self.|", "|"), vocab)
    later = state.advance("self.fresh, self.other = 1, 2\n        return self.")
    assert {"fresh", "other"} <= later.allowed and "fresh" not in state.advance(
        "return self.").allowed
    assert later.advance("fre").mask() is not None
    compared = state.advance("self.value == 2\n        return self.")
    assert "value" in compared.allowed and not compared.assigned


def test_a_states_next_state_is_the_one_its_constructor_makes(tmp_path: Path, tiny_tokenizer):
    """``advance`` makes its state without the dataclass' ``__init__`` (``_next``): equal
    to the one the constructor makes, and nothing cached on the old state (its site, its
    allowed names, its mask) carried to the new one."""
    from inkling.analysis.monitor import MonitorState
    a = analysis_for(tmp_path, {"c.py": CLASS.replace("|", "")})
    state = open_at(a, tmp_path / "c.py", CLASS, TokenVocabulary.from_tokenizer(tiny_tokenizer))
    assert state.site is not None and state.allowed and state.mask() is not None
    for text in ("va", "value + x", "fresh = 1\n        y = self.", "value) # self."):
        made = state.advance(text)
        built = MonitorState(state.context, made.scan, made.assigned, made.bound)
        assert made == built and type(made) is MonitorState
        assert (made.site, made.allowed) == (built.site, built.allowed)
        assert made.mask() is built.mask()               # the cache's shared tensor
    later = state.advance("value + x")
    assert later.site is None and later.allowed is None   # not the old state's trigger


def _masked_decode(runtime, vocab_state, prompt_ids, steps, rng=None):
    """Greedy (or sampled) decode with the monitor's masks; returns the text."""
    ids, state, text = list(prompt_ids), vocab_state, ""
    for _ in range(steps):
        with torch.no_grad():
            logits = runtime.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
        mask = state.mask()
        if mask is not None:
            logits = logits.masked_fill(~mask[:logits.shape[0]], float("-inf"))
        if rng is None:
            tok = int(torch.argmax(logits))
        else:
            probs = torch.softmax(logits / 2.0, -1)
            tok = int(torch.multinomial(probs, 1, generator=rng))
        if tok in runtime.stop_ids:
            break
        ids.append(tok)
        text += vocab_state.context.masks.vocab.texts[tok]
        state = state.advance_token(tok)
    return text


def _first_identifier(text: str) -> str:
    out = ""
    for ch in text:
        if not is_ident_char(ch):
            break
        out += ch
    return out


def _check_masked_decode(runtime, tmp_path: Path, seeds: int):
    a = analysis_for(tmp_path, {"c.py": CLASS.replace("|", "")})
    vocab = TokenVocabulary.from_tokenizer(runtime.tokenizer, runtime.vocab_size)
    state = open_at(a, tmp_path / "c.py", CLASS, vocab)
    allowed = state.allowed
    prompt = runtime.encode(CLASS.split("|")[0])
    for seed in range(seeds):
        rng = None if seed == 0 else torch.Generator().manual_seed(seed)
        text = _masked_decode(runtime, state, prompt, 10, rng)
        name = _first_identifier(text)
        if len(name) < len(text):                # the name ended: it must be a member
            assert name in allowed, (seed, text)
        else:                                    # still inside it: a member's prefix
            assert any(m.startswith(name) for m in allowed), (seed, text)


def test_masked_decode_on_a_tiny_model_emits_only_members(tiny_runtime, tmp_path: Path):
    _check_masked_decode(tiny_runtime, tmp_path, seeds=6)


@pytest.mark.slow
def test_masked_decode_on_the_bundled_model_emits_only_members(bundled_model_dir, tmp_path):
    from inkling.runtime.model_loader import load_runtime
    runtime = load_runtime(bundled_model_dir, device="cpu", dtype="float32")
    _check_masked_decode(runtime, tmp_path, seeds=4)


def test_bundled_tokenizer_masks(tmp_path: Path):
    from inkling.models import BUNDLED_MODEL_DIR
    path = BUNDLED_MODEL_DIR / "tokenizer.json"
    if not path.is_file():
        pytest.skip("the bundled tokenizer is not in this checkout")
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(path))
    vocab = TokenVocabulary.from_tokenizer(tok)
    names = frozenset(MEMBERS)
    mask = MaskCache(vocab).names_mask(names, "", NONE, False)
    expected = [_reference(t, bool(vocab.special[i]), names, "", NONE, False)
                for i, t in enumerate(vocab.texts)]
    assert mask.tolist() == expected


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))])
def test_masks_on_a_device_are_cached_copies(tiny_tokenizer, device):
    vocab = TokenVocabulary.from_tokenizer(tiny_tokenizer)
    cache = MaskCache(vocab)
    cpu = cache.names_mask(frozenset(MEMBERS), "", NONE, False)
    there = cache.names_mask(frozenset(MEMBERS), "", NONE, False, device=device)
    assert there.device.type == device and torch.equal(there.cpu(), cpu)
    assert cache.names_mask(frozenset(MEMBERS), "", NONE, False, device=device) is there
