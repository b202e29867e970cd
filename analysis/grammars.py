"""tree-sitter grammars by language name, from their pip packages; parsers on demand.

A language without an installed grammar gets None (and one log line per registry).
"""
from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field

from tree_sitter import Language, Parser

log = logging.getLogger(__name__)

# language name -> (module, function returning the language pointer)
GRAMMAR_PACKAGES = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "javascriptreact": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "typescriptreact": ("tree_sitter_typescript", "language_tsx"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
}

# languages whose symbols the analysis resolves (the others get the syntax guard)
MONITORED = frozenset({"python"})


@dataclass
class Grammars:
    """Languages and parsers, created once per language; one per analysis (not global)."""
    _languages: dict = field(default_factory=dict)
    _warned: set = field(default_factory=set)

    def language(self, name: str):
        """The tree-sitter ``Language`` for ``name``, or None (logged once) without a grammar."""
        if name not in self._languages:
            self._languages[name] = _load(name)
            if self._languages[name] is None:
                self.note_once(name, f"no tree-sitter grammar for language {name!r}: "
                               "no monitor or syntax guard from analysis")
        return self._languages[name]

    def parser(self, name: str):
        """A new ``Parser`` for ``name`` (parsers are cheap; a caller keeps its own)."""
        lang = self.language(name)
        if lang is None:
            return None
        return Parser(lang)

    def monitored(self, name: str) -> bool:
        """Whether monitors resolve symbols for ``name`` (logged once when they do not)."""
        if name in MONITORED:
            return True
        if self.language(name) is not None:
            self.note_once(name + "/monitor", f"no monitor for language {name!r} "
                           "(syntax guard only)")
        return False

    def note_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.info(message)


def _load(name: str):
    spec = GRAMMAR_PACKAGES.get(name)
    if spec is None:
        return None
    try:
        module = importlib.import_module(spec[0])
        return Language(getattr(module, spec[1])())
    except (ImportError, AttributeError, ValueError, OSError):
        return None
