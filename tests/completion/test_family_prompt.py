"""Each zoo family's prompts as its public format writes them (completion/prompt/): the FIM
prompt's ids against the family's template encoded by transformers' own tokenizer (its BOS
included), the BOS once before a repository-context block, the repository format's markers;
and ``completion.fim_order`` checked against the family, from the real CLI and server."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from zoo_models import ZOO_MODELS, zoo_model, zoo_runtimes
from inkling.completion.errors import OptionError
from inkling.completion.options import InklingOptions
from inkling.completion.prompt.builder import build_prompt, fim_order
from inkling.completion.prompt.context_block import Snippet, render
from inkling.completion.prompt.repo_format import repo_format
from inkling.runtime.fim import INKLING
from inkling.runtime.model_loader import load_runtime

INKLING_CLI = Path(sys.executable).parent / "inkling"
BEFORE = "import os\n\ndef area(w, h):\n    return "
AFTER = "\n\nprint(area(2, 3))\n"
# the families' public FIM templates, by order ({p}: the prefix, {s}: the suffix)
QWEN = {"psm": "<|fim_prefix|>{p}<|fim_suffix|>{s}<|fim_middle|>"}
TEMPLATES = {
    "qwen2.5-coder-0.5b": QWEN, "qwen2.5-coder-1.5b": QWEN,
    "deepseek-coder-1.3b-base": {"psm": "<｜fim▁begin｜>{p}<｜fim▁hole｜>{s}<｜fim▁end｜>"},
    "starcoder2-3b": {"psm": "<fim_prefix>{p}<fim_suffix>{s}<fim_middle>",
                      "spm": "<fim_prefix><fim_suffix>{s}<fim_middle>{p}"},
    "llama-3.2-1b": {"none": "{p}"}}
# the repository formats' text for one neighbour file and the cursor's (None: no format)
SNIPPET = "def helper():\n    return 1\n"
QWEN_REPO = f"<|repo_name|>proj\n<|file_sep|>pkg/util.py\n{SNIPPET}<|file_sep|>pkg/main.py\n"
REPO_TEXT = {"qwen2.5-coder-0.5b": QWEN_REPO, "qwen2.5-coder-1.5b": QWEN_REPO,
             "deepseek-coder-1.3b-base": f"#pkg/util.py\n{SNIPPET}#pkg/main.py\n",
             "starcoder2-3b": f"<repo_name>proj<file_sep>pkg/util.py\n{SNIPPET}"
                              "<file_sep>pkg/main.py\n",
             "llama-3.2-1b": None}
MARKERS = {"qwen2.5-coder-0.5b": ("<|repo_name|>", "<|file_sep|>"),
           "qwen2.5-coder-1.5b": ("<|repo_name|>", "<|file_sep|>"),
           "starcoder2-3b": ("<repo_name>", "<file_sep>")}


@pytest.fixture(scope="module")
def runtimes():
    return zoo_runtimes()


def _block(rt):
    return render([Snippet("pkg/util.py", SNIPPET, "similar", 0.0, (0,))], repo_format(rt),
                  "pkg/main.py", "proj", rt)


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_the_fim_prompt_is_the_familys_public_format(name, runtimes):
    from transformers import AutoTokenizer   # lazy: only this test reads transformers' tokenizer
    rt = runtimes(name)
    hf = AutoTokenizer.from_pretrained(rt.path)
    assert set(TEMPLATES[name]) == (set(rt.fim.orders) if rt.fim else {"none"})
    for order, template in TEMPLATES[name].items():
        p = build_prompt(rt, BEFORE, AFTER, (400, 100), order)
        assert (p.prefix, p.suffix) == (BEFORE, AFTER if rt.fim else "")
        assert p.ids == hf(template.format(p=BEFORE, s=AFTER))["input_ids"], order


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_the_bos_comes_once_before_the_context_block(name, runtimes):
    rt = runtimes(name)
    order = rt.fim_order
    block = list(_block(rt).ids) if repo_format(rt) else [rt.encode("# note\n")[0]]
    head = ([rt.bos_id] if rt.bos_id is not None else []) + block
    p = build_prompt(rt, BEFORE, AFTER, (400, 100), order, 0.0, block)
    assert p.ids[:len(head)] == head and p.context == len(head)
    healed = p.healed_prompt(rt, order)
    assert healed.healed and healed.ids[:len(head)] == head
    if rt.bos_id is not None:
        assert healed.ids.count(rt.bos_id) == 1
        again = build_prompt(rt, BEFORE, AFTER, (400, 100), order, 0.0, head)  # BOS given
        assert again.ids == p.ids


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_the_repository_format_is_the_familys(name, runtimes):
    rt = runtimes(name)
    if REPO_TEXT[name] is None:
        assert repo_format(rt) is None
        return
    block = _block(rt)
    assert block.text == REPO_TEXT[name]
    vocab = rt.tokenizer.get_vocab()
    if name in MARKERS:
        repo, sep = (vocab[t] for t in MARKERS[name])
        assert block.ids[0] == repo and block.ids.count(sep) == 2


def _options(order: str):
    return InklingOptions().merged({"completion": {"fim_order": order}}).completion


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_an_order_the_family_lacks_is_one_option_error(name, runtimes):
    rt = runtimes(name)
    assert fim_order(_options("auto"), rt) == rt.fim_order
    for order in ("psm", "spm"):
        if rt.fim is not None and order in rt.fim.orders:
            assert fim_order(_options(order), rt) == order
            continue
        with pytest.raises(OptionError) as err:
            fim_order(_options(order), rt)
        said = str(err.value)
        assert said.startswith(f"completion.fim_order {order}: ") and "\n" not in said
        assert (f"model family {rt.fim.family!r} knows only psm" if rt.fim else
                "no fill-in-the-middle tokens: it completes from the prefix alone") in said


def test_the_cli_says_the_order_the_family_lacks_in_one_line(tmp_path):
    path = zoo_model("qwen2.5-coder-0.5b")
    source = tmp_path / "a.py"
    source.write_text(BEFORE + AFTER)
    done = subprocess.run([str(INKLING_CLI), "complete", str(source), "--line", "4", "--col", "12",
                           "--fim-order", "spm", "--draft", "none", "--drafts", "1",
                           "--model", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [f"inkling: error: completion.fim_order spm: model family 'qwen2' knows "
                      f"only psm (model {path})"], done.stderr


@pytest.mark.slow
def test_the_server_answers_an_order_the_family_lacks_with_its_message():
    from lsp_wire import Wire   # lazy: the server tests' client, only for this test
    uri = "file:///tmp/inkling-fim-order.py"
    w = Wire(zoo_model("deepseek-coder-1.3b-base"), {"completion": {"fim_order": "spm"}})
    try:
        w.open(uri, BEFORE + AFTER)
        answer = w.wait(w.inline(uri, 3, 11), 120)
        assert "result" in answer and not answer["result"], answer
        assert any("completion.fim_order spm: model family 'deepseek-coder' knows only psm"
                   in m for m in w.popups()), w.popups()
        assert "result" in w.call("inkling/stats", {}, timeout=60)    # still serving
        assert not w.tracebacks(), w.stderr[-5:]
    finally:
        w.kill()


def test_the_bundled_models_prompts_are_its_format_without_a_bos(bundled_model_dir):
    rt = load_runtime(bundled_model_dir, device="cpu", dtype="float32")
    pre, suf, mid = (rt.token_id(t) for t in (INKLING.prefix, INKLING.suffix, INKLING.middle))
    p = build_prompt(rt, BEFORE, AFTER, (400, 100), "spm")
    assert p.ids == [pre, suf, *rt.encode(AFTER), mid, *rt.encode(BEFORE)]
    q = build_prompt(rt, BEFORE, AFTER, (400, 100), "psm")
    assert q.ids == [pre, *rt.encode(BEFORE), suf, *rt.encode(AFTER), mid]
