"""Languages by file extension (tree-sitter language names, as LSP languageIds use them)."""
from __future__ import annotations

from pathlib import PurePosixPath

EXTENSIONS = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
    ".ts": "typescript", ".tsx": "tsx", ".rs": "rust", ".go": "go", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".rb": "ruby",
    ".sh": "bash", ".lua": "lua",
}


def language_for(path: str, default: str = "") -> str:
    """The language of ``path`` from its extension, or ``default`` when it is not known."""
    return EXTENSIONS.get(PurePosixPath(path).suffix.lower(), default)
