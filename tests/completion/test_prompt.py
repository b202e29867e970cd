from inkling.runtime.fim import INKLING
from inkling.completion.prompt.builder import (CHARS_PER_TOKEN_WINDOW, budgets, build_prompt,
                                               normalise_eol)


def _special(rt, name):
    return rt.token_id(name)


def test_spm_and_psm_layout(tiny_runtime):
    rt = tiny_runtime
    p = build_prompt(rt, "def f(x):\n    return ", "\n\nprint(f(1))\n", (100, 50), "spm")
    pre, suf, mid = (_special(rt, t) for t in (INKLING.prefix, INKLING.suffix, INKLING.middle))
    assert p.ids[:2] == [pre, suf]
    assert p.ids[2 + len(p.suffix_ids)] == mid
    assert p.ids[-len(p.prefix_ids):] == p.prefix_ids
    q = build_prompt(rt, "def f(x):\n    return ", "\n\nprint(f(1))\n", (100, 50), "psm")
    assert q.ids == [pre, *q.prefix_ids, suf, *q.suffix_ids, mid]
    assert rt.decode(p.prefix_ids) == "def f(x):\n    return "
    assert p.line_prefix == "    return " and p.line_suffix == ""


def test_non_ascii_and_crlf(tiny_runtime):
    before = "naïve = '😀'\r\ndef café():\r\n    return "
    after = "  # ünï\r\nx = 1\r\n"
    p = build_prompt(tiny_runtime, before, after, (200, 100), "spm")
    assert p.prefix == normalise_eol(before) and "\r" not in p.prefix
    assert p.suffix == "  # ünï\nx = 1\n"
    assert tiny_runtime.decode(p.prefix_ids) == p.prefix


def test_5000_line_file_stays_within_budget_tokenizing_only_windows(tiny_runtime, monkeypatch):
    lines = [f"    value_{i} = compute({i}, name='row {i}')\n" for i in range(5000)]
    text = "def big():\n" + "".join(lines)
    cursor = len(text) // 2
    encoded = []                                        # the length of every text tokenized
    real = tiny_runtime.encode
    monkeypatch.setattr(tiny_runtime, "encode", lambda s: encoded.append(len(s)) or real(s))
    p = build_prompt(tiny_runtime, text[:cursor], text[cursor:], (300, 100), "spm")
    assert len(p.prefix_ids) <= 300 and len(p.suffix_ids) <= 100
    assert len(p.prefix_ids) > 200                      # the budget is used, not wasted
    assert text[:cursor].endswith(p.prefix) and text[cursor:].startswith(p.suffix)
    assert p.prefix.startswith("    value_")            # windows start at a line start
    # the work does not grow with the file: a few windows of about the budget are tokenized
    assert max(encoded) <= 2 * 300 * CHARS_PER_TOKEN_WINDOW and sum(encoded) < len(text) // 20


def test_budgets_from_context(tiny_runtime):
    pre, suf = budgets(tiny_runtime, 0, 0, 160)
    assert pre + suf <= tiny_runtime.context_limit - 160 and pre > suf > 0
    assert budgets(tiny_runtime, 500, 0, 160)[0] == 500


def _lines(n):
    return "".join(f"row_{i} = compute({i})\n" for i in range(n))


def test_grid_windows_move_in_jumps(tiny_runtime):
    """With a window step, typing lines at the cursor leaves the prompt's windows where
    they were until the budget forces a jump; without it, the front moves every line."""
    text, after = _lines(400), _lines(300)
    fronts = {0.0: [], 0.2: []}
    for step in fronts:
        typed = text[:200 * 24]
        for i in range(40):
            typed += f"new_{i} = {i}\n"
            p = build_prompt(tiny_runtime, typed, after, (200, 80), "spm", step)
            assert typed.endswith(p.prefix) and after.startswith(p.suffix)
            assert len(p.prefix_ids) <= 200 and len(p.suffix_ids) <= 80
            fronts[step].append(p.prefix.split("\n", 1)[0])
            if step:
                grid = 200 * step / 10
                first = typed.count("\n") - p.prefix.count("\n")
                assert first % round(grid) == 0                 # the front is on the grid
                assert (after.count("\n") - p.suffix.count("\n")) % round(80 * step / 10) == 0
    moves = {step: sum(a != b for a, b in zip(f, f[1:])) for step, f in fronts.items()}
    assert moves[0.0] >= 20 and moves[0.2] <= 40 // 4 + 1
    assert len(build_prompt(tiny_runtime, text, after, (200, 80), "spm", 0.2).prefix_ids) > 200 * 0.6


def test_grid_never_drops_the_cursor_line(tiny_runtime):
    before = _lines(3) + "x = " + "y" * 4000         # one huge line at the cursor
    p = build_prompt(tiny_runtime, before, "tail\n" + _lines(50), (100, 40), "spm", 0.5)
    assert before.endswith(p.prefix) and p.suffix.startswith("tail\n")
