"""Walk a workspace folder for the Python files to index, within a budget."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .workspace_filter import WorkspaceFilter


@dataclass
class ScanResult:
    files: list[Path] = field(default_factory=list)
    bytes: int = 0
    truncated: bool = False          # a budget ran out before the walk ended


def scan_folder(root: Path, filter_: WorkspaceFilter, max_files: int, max_bytes: int,
                max_seconds: float = 30.0) -> ScanResult:
    """Files under ``root`` the filter wants, in a deterministic order, within budgets."""
    out, deadline = ScanResult(), time.monotonic() + max_seconds
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        dirs = []
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not filter_.ignored_dir(path):
                        dirs.append(path)
                elif entry.is_file(follow_symlinks=False) and filter_.wanted_file(path):
                    size = entry.stat().st_size
                    if len(out.files) >= max_files or out.bytes + size > max_bytes or \
                            time.monotonic() > deadline:
                        out.truncated = True
                        return out
                    out.files.append(path)
                    out.bytes += size
            except OSError:
                continue
        stack.extend(reversed(dirs))
    return out
