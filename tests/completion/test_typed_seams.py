"""The seams of completion/ are typed: no annotation names ``object`` (a Protocol or a
concrete type says what a collaborator must answer), and the mode Enums are the option
strings (StrEnums: options files, JSON, LSP settings and traces keep their strings)."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from inkling.cache.modes import MODES, CacheMode
from inkling.completion import options as tree
from inkling.completion.decoding.names import Decoder, DraftMode, Trigger
from inkling.completion.decoding.plan import decoder_for
from inkling.completion.options import InklingOptions

REPO = Path(__file__).resolve().parents[2]


def _annotations(node: ast.AST):
    """(line, annotation) of every annotated field, parameter and return under ``node``;
    a string annotation parsed."""
    for n in ast.walk(node):
        if isinstance(n, ast.AnnAssign):
            found = [n.annotation]
        elif isinstance(n, ast.arg):
            found = [n.annotation] if n.annotation is not None else []
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            found = [n.returns]
        else:
            continue
        for a in found:
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                a = ast.parse(a.value, mode="eval").body
            yield n.lineno, a


def _untyped(source: str) -> list[tuple[int, str]]:
    return [(line, ast.unparse(a)) for line, a in _annotations(ast.parse(source))
            if any(isinstance(x, ast.Name) and x.id == "object" for x in ast.walk(a))]


def test_no_annotation_in_completion_names_object():
    found = [f"{path.relative_to(REPO)}:{line}: {text}"
             for path in sorted((REPO / "completion").rglob("*.py"))
             for line, text in _untyped(path.read_text(encoding="utf-8"))]
    assert not found, "seams typed object (name a Protocol or the type):\n" + "\n".join(found)


def test_the_reader_finds_object_anywhere_in_an_annotation():
    source = ("x: object = None\ny: 'object | None'\ndef f(a: dict[str, object], b: int)"
              " -> tuple[int, object]: ...\nz: int = 0\n")
    assert [line for line, _ in _untyped(source)] == [1, 2, 3, 3]


@pytest.mark.parametrize("enum, strings", [(Decoder, tree.DECODERS),
                                           (DraftMode, tree.DRAFT_MODES),
                                           (CacheMode, tree.CACHE_MODES),
                                           (CacheMode, MODES),
                                           (Trigger, ("automatic", "invoked"))])
def test_the_enums_are_the_option_strings(enum, strings):
    assert tuple(m.value for m in enum) == tuple(strings)
    for s in strings:
        member = enum(s)
        assert member == s and str(member) == s and f"{member}" == s and hash(member) == hash(s)
        assert json.loads(json.dumps({"mode": member})) == {"mode": s}


@pytest.mark.parametrize("option, values, enum", [("decoder", tree.DECODERS, Decoder),
                                                  ("draft", tree.DRAFT_MODES, DraftMode)])
def test_every_enum_value_is_a_valid_option_and_round_trips(option, values, enum):
    for value in values:
        o = InklingOptions().merged({"completion": {option: enum(value)}})
        assert getattr(o.completion, option) == value
        assert json.loads(json.dumps(o.as_dict()))["completion"][option] == value
    for mode in CacheMode:
        assert InklingOptions().merged({"cache": {"mode": mode.value}}).cache.mode == mode


def test_the_plan_names_its_decoder_by_the_enum():
    assert decoder_for("beam", 1, Trigger.INVOKED) is Decoder.BEAM
    assert decoder_for("beam", 1, "automatic") is Decoder.GREEDY
    assert decoder_for("superposed", 3) is Decoder.SUPERPOSED
    assert InklingOptions().mechanisms()["decoder"] == "beam"
