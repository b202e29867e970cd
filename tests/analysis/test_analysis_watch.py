"""Files changed on disk reach the index through watchdog within a second."""
from __future__ import annotations

import time
from pathlib import Path

from analysis_helpers import allowed_at, analysis_for


def _eventually(check, timeout: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def test_a_file_changed_on_disk_is_reindexed_within_a_second(tmp_path: Path):
    a = analysis_for(tmp_path, {"lib.py": "OLD = 1\n"}, watch=True)
    try:
        time.sleep(0.1)                    # let the observer settle
        (tmp_path / "lib.py").write_text("OLD = 1\nNEW = 2\n")
        assert _eventually(lambda: "NEW" in a.index.module("lib").names)
        (tmp_path / "fresh.py").write_text("def made():\n    pass\n")
        assert _eventually(lambda: a.index.module("fresh") is not None)
    finally:
        a.shutdown()


def test_a_module_renamed_on_disk(tmp_path: Path):
    files = {"pkg/__init__.py": "", "pkg/old_name.py": "class Thing:\n    size = 1\n",
             "main.py": ""}
    a = analysis_for(tmp_path, files, watch=True)
    try:
        time.sleep(0.1)
        (tmp_path / "pkg/old_name.py").rename(tmp_path / "pkg/new_name.py")

        def renamed():
            names = allowed_at(a, tmp_path / "main.py", "from pkg import |")
            return names is not None and "new_name" in names and "old_name" not in names
        assert _eventually(renamed)
        names = allowed_at(a, tmp_path / "main.py", "from pkg.new_name import Thing\nx = Thing.|")
        assert "size" in names
    finally:
        a.shutdown()


def test_background_indexing_finishes(tmp_path: Path):
    a = analysis_for(tmp_path, {f"m{i}.py": f"X{i} = 1\n" for i in range(20)}, background=True)
    assert a.wait_until_indexed(timeout=10)
    assert len(a.index.files()) == 20
