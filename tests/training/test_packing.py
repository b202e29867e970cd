"""The packed training data and the allow-list of installed packages (training/packing.py,
training/site_packages.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from inkling.training import packing
from inkling.models.corpus import CorpusFile
from inkling.training.site_packages import DEVICE_ALLOW_LIST, check_allow_list, read_installed

HELD = CorpusFile("toolz/itertoolz.py", "".join(
    f"def held_out_function_number_{i}(sequence, key=None):\n    return sorted(sequence)\n"
    for i in range(20)), "toolz==1.0.0")


def _install(site, name, version, files: dict[str, str]):
    """A distribution installed into ``site`` as pip installs one (dist-info, RECORD)."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = [f"{name}-{version}.dist-info/METADATA,,"]
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
        record.append(f"{rel},,")
    (info / "RECORD").write_text("\n".join(record) + "\n")


def test_the_allow_list_refuses_every_held_out_package():
    for name in ("toolz", "humanize", "funcy", "schedule", "semver", "Humanize"):
        with pytest.raises(ValueError, match="held-out package"):
            check_allow_list(["scipy", name])
    assert check_allow_list(DEVICE_ALLOW_LIST) == DEVICE_ALLOW_LIST


def test_read_installed_takes_only_allowed_sources_and_drops_copies(tmp_path):
    code = "def useful(x):\n    return x + 1\n"
    _install(tmp_path, "goodpkg", "1.2", {"goodpkg/__init__.py": code,
                                         "goodpkg/core.py": code * 3,
                                         "goodpkg/tests/test_core.py": code,
                                         "goodpkg/_vendor/six.py": code,
                                         "goodpkg/forked.py": HELD.text})
    _install(tmp_path, "otherpkg", "0.1", {"otherpkg/__init__.py": code})
    files, report = read_installed(["goodpkg", "notinstalled"], [HELD], path=[str(tmp_path)])
    assert sorted(f.relpath for f in files) == ["goodpkg/__init__.py", "goodpkg/core.py"]
    assert {f.package for f in files} == {"goodpkg==1.2"}
    assert report["missing"] == ["notinstalled"]
    assert report["packages"]["goodpkg"]["files"] == 3
    assert len(report["copies_dropped"]) == 1 and "goodpkg/forked.py" in report["copies_dropped"][0]


def test_a_file_under_a_held_out_import_name_is_an_error(tmp_path):
    _install(tmp_path, "sneaky", "1.0", {"toolz/__init__.py": "def f():\n    pass\n"})
    with pytest.raises(AssertionError, match="held-out package files"):
        read_installed(["sneaky"], [], path=[str(tmp_path)])


def test_rows_round_trip_compressed(tmp_path):
    rows = np.random.default_rng(0).integers(0, 8192, (7, 33)).astype(np.uint16)
    size = packing.write_rows(rows, tmp_path / "r.npy.xz")
    assert size == (tmp_path / "r.npy.xz").stat().st_size
    back = packing.read_rows(tmp_path / "r.npy.xz")
    assert back.dtype == np.uint16 and np.array_equal(back, rows)


def test_fit_cuts_rows_to_the_budget(tmp_path):
    rows = np.random.default_rng(1).integers(0, 8192, (400, 129)).astype(np.uint16)
    kept, size = packing._fit(rows, tmp_path / "r.npy.xz", 40_000)
    assert size <= 40_000 and 0 < len(kept) < len(rows)
    assert np.array_equal(kept, rows[:len(kept)])


@pytest.mark.slow
def test_pack_writes_the_manifest_and_the_held_out_sets(tmp_path):
    """The real corpus (the first files of each source), the bundled tokenizer."""
    m = packing.pack(tmp_path, max_files=4, seq_len=128)
    disk = json.loads((tmp_path / packing.MANIFEST).read_text())
    assert disk == m
    assert m["rows"] > 0 and m["tokens"] == m["rows"] * 128
    assert set(m["held_out_sets"]) == {"stdlib", "toolz", "funcy", "humanize", "schedule",
                                       "semver"}
    assert m["bytes_total"] <= packing.MAX_BYTES
    rows = packing.read_rows(tmp_path / packing.ROWS_FILE)
    assert rows.shape == (m["rows"], 129) and rows.max() < 8192
    held = np.load(tmp_path / packing.HELD_FILE)
    assert all(held[k].shape[1] == 129 for k in held.files)
    assert "toolz==1.0.0" in m["held_out_pins"] and "humanize==4.11.0" in m["held_out_pins"]
    assert not any(p.startswith(("toolz==", "humanize==")) for p in m["packages"])


def test_read_installed_stops_at_its_character_budget(tmp_path):
    code = "def useful(x):\n    return x + 1\n" * 50
    _install(tmp_path, "first", "1.0", {"first/__init__.py": code})
    _install(tmp_path, "second", "1.0", {"second/__init__.py": code})
    files, report = read_installed(["first", "second"], [], path=[str(tmp_path)],
                                   total_chars=len(code))
    assert [f.package for f in files] == ["first==1.0"]
    assert report["over_budget"] == ["second"]
