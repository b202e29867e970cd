"""What a user reads stands on its own: no pointer to the development machine's
../shared folder and no issue numbers (the tracker is not public) in the README, docs/,
the editors' READMEs, help and changelog, the model card, or any command's --help."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
USER_DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
             REPO / "editors" / "vscode" / "README.md", REPO / "editors" / "vscode" / "CHANGELOG.md",
             REPO / "editors" / "nvim" / "README.md", REPO / "editors" / "nvim" / "doc" / "inkling.txt",
             REPO / "models" / "inkling-tiny" / "README.md"]
FORBIDDEN = [(re.compile(r"\.\./shared|/work/shared"), "points to ../shared, which users do not have"),
             (re.compile(r"\bissues? #?\d+", re.IGNORECASE), "cites an issue number")]


def offences(text: str) -> list[str]:
    return [f"{why}: {m.group(0)!r}" for pattern, why in FORBIDDEN for m in pattern.finditer(text)]


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_user_docs_stand_on_their_own(path):
    assert path.is_file(), f"{path.relative_to(REPO)} is missing"
    assert not offences(path.read_text(encoding="utf-8"))


def test_command_help_stands_on_its_own():
    from inkling.cli.main import _parser
    parsers, found = [_parser()], []
    while parsers:
        parser = parsers.pop()
        found += [f"{parser.prog}: {o}" for o in offences(parser.format_help())]
        parsers += [c for a in parser._actions if isinstance(a, argparse._SubParsersAction)
                    for c in a.choices.values()]
    assert not found


def test_the_rule_catches_what_it_should():
    assert offences("see ../shared/TRACES.md") and offences("(issue 28)")
    assert not offences("the shared model") and not offences("issues the request")


def test_the_readme_settings_table_gives_the_options_trees_defaults():
    from inkling.completion.options import InklingOptions
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Settings you may change", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(model|completion|cache|server)\.(\w+)` \| ([^|]+) \|", section, re.M)
    assert len(rows) >= 5, "the README's settings table is missing"
    options = InklingOptions()
    for group, key, shown in rows:
        snake = re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key)
        default = getattr(getattr(options, group), snake)
        expected = "bundled model" if (group, snake) == ("model", "path") else f"`{default}`"
        assert shown.strip() == expected, f"README: {group}.{key} default {shown.strip()}, the options' {default!r}"
