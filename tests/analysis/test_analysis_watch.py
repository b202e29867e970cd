"""Files changed on disk reach the symbol index through the Workspace: its watcher
(watchdog, for real) or an explicit ``file_changed``."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from analysis_helpers import allowed_at, write_tree

from inkling.analysis import AnalysisOptions, CodeAnalysis
from inkling.analysis.workspace import Workspace


def _eventually(check, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def _watched(root: Path, files: dict[str, str]) -> tuple[CodeAnalysis, Workspace]:
    write_tree(root, files)
    a = CodeAnalysis(AnalysisOptions())
    workspace = Workspace([root])
    workspace.subscribe(a.index)
    workspace.walk()
    return a, workspace


def test_the_walk_indexes_python_files_with_module_names(tmp_path: Path):
    a, workspace = _watched(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": "def f(): pass\n",
                                       "README.md": "# not Python\n"})
    assert a.index.files() == [tmp_path / "pkg/__init__.py", tmp_path / "pkg/mod.py"]
    assert "f" in a.index.module("pkg.mod").functions
    assert workspace.report.files == 2                     # what no subscriber wants: unread


def test_file_changed_reindexes_and_removes(tmp_path: Path):
    a, workspace = _watched(tmp_path, {"lib.py": "OLD = 1\n"})
    (tmp_path / "lib.py").write_text("OLD = 1\nNEW = 2\n")
    workspace.file_changed(tmp_path / "lib.py")
    assert "NEW" in a.index.module("lib").names
    (tmp_path / "lib.py").unlink()
    workspace.file_changed(tmp_path / "lib.py")
    assert a.index.module("lib") is None


@pytest.mark.slow
def test_a_file_changed_on_disk_is_reindexed(tmp_path: Path):
    a, workspace = _watched(tmp_path, {"lib.py": "OLD = 1\n"})
    assert workspace.start()
    try:
        (tmp_path / "lib.py").write_text("OLD = 1\nNEW = 2\n")
        assert _eventually(lambda: "NEW" in a.index.module("lib").names)
        (tmp_path / "fresh.py").write_text("def made():\n    pass\n")
        assert _eventually(lambda: a.index.module("fresh") is not None)
        (tmp_path / "fresh.py").unlink()
        assert _eventually(lambda: a.index.module("fresh") is None)
    finally:
        workspace.stop()


@pytest.mark.slow
def test_a_module_renamed_on_disk(tmp_path: Path):
    files = {"pkg/__init__.py": "", "pkg/old_name.py": "class Thing:\n    size = 1\n",
             "main.py": ""}
    a, workspace = _watched(tmp_path, files)
    assert workspace.start()
    try:
        (tmp_path / "pkg/old_name.py").rename(tmp_path / "pkg/new_name.py")

        def renamed():
            names = allowed_at(a, tmp_path / "main.py", "from pkg import |")
            return names is not None and "new_name" in names and "old_name" not in names
        assert _eventually(renamed)
        names = allowed_at(a, tmp_path / "main.py", "from pkg.new_name import Thing\nx = Thing.|")
        assert "size" in names
    finally:
        workspace.stop()


@pytest.mark.slow
def test_a_folder_moved_and_deleted_on_disk(tmp_path: Path):
    a, workspace = _watched(tmp_path, {"old/__init__.py": "", "old/mod.py": "X = 1\n"})
    assert workspace.start()
    try:
        (tmp_path / "old").rename(tmp_path / "new")
        assert _eventually(lambda: a.index.module("new.mod") is not None
                           and a.index.module("old.mod") is None)
        for f in (tmp_path / "new").iterdir():
            f.unlink()
        (tmp_path / "new").rmdir()
        assert _eventually(lambda: a.index.files() == [])
    finally:
        workspace.stop()
