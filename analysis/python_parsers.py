"""Python source to ``FileSymbols``: a tree-sitter parser and a symbol extractor for each
thread that asks (tree-sitter parsers are not thread-safe: the Workspace's walking thread,
watchdog's and the Engine's worker each get their own)."""
from __future__ import annotations

import logging
import threading

from tree_sitter import Parser

from inkling.analysis.grammars import Grammars
from inkling.analysis.python_symbols import PythonSymbolExtractor
from inkling.analysis.symbols import FileSymbols

log = logging.getLogger(__name__)


class PythonParsers:
    def __init__(self, grammars: Grammars, max_symbol_bytes: int):
        self.grammars = grammars
        self.max_symbol_bytes = max_symbol_bytes     # larger sources are not parsed
        self._local = threading.local()              # .tools: (Parser, extractor)

    def parse(self, data: bytes, module: str, path: str = "", is_package: bool = False
              ) -> FileSymbols:
        """FileSymbols of Python source ``data``; never raises (unknown on failure)."""
        if len(data) > self.max_symbol_bytes:
            return FileSymbols.unknown(module, path)
        try:
            parser, extractor = self._tools()
            tree = parser.parse(data)
            return extractor.extract(tree.root_node, module, path, is_package)
        except Exception:            # noqa: BLE001 - a broken file must not break analysis
            log.exception("could not index %s", path or module)
            return FileSymbols.unknown(module, path)

    def extractor(self) -> PythonSymbolExtractor:
        """The calling thread's symbol extractor."""
        return self._tools()[1]

    def _tools(self) -> tuple[Parser, PythonSymbolExtractor]:
        tools = getattr(self._local, "tools", None)
        if tools is None:
            lang = self.grammars.language("python")
            tools = self._local.tools = (Parser(lang), PythonSymbolExtractor(lang))
        return tools
