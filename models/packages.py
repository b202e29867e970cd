"""Third-party training code: the Python source of packages pinned by version.

Each package is downloaded once as a wheel (``pip download --no-deps NAME==VERSION``)
into a cache folder (``$INKLING_WHEEL_CACHE``, default ``~/.cache/inkling/wheels``) and
read straight from the wheel's zip: its ``.py`` files, without the package's tests
(``test``/``tests``/``testing`` folders, ``test_*.py``, ``*_test.py``, ``conftest.py``),
files over 250 kB and data tables written as code. A package over ``MAX_PACKAGE_CHARS``
keeps the files with the smallest SHA-256 of their path up to that size, so that a few
big packages (sympy, SQLAlchemy, Django) do not drown the rest.

``HELD_OUT_PACKAGE`` (toolz 1.0.0) is never trained on: it is evaluated on (validation
loss and next-line exact match), and ``training_packages`` refuses it.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from .corpus import MAX_FILE_BYTES, CorpusFile

PACKAGES: tuple[tuple[str, str], ...] = (
    ("anyio", "4.6.2.post1"),
    ("arrow", "1.3.0"),
    ("astroid", "3.3.5"),
    ("attrs", "24.2.0"),
    ("beautifulsoup4", "4.12.3"),
    ("boltons", "24.0.0"),
    ("cattrs", "24.1.2"),
    ("click", "8.1.7"),
    ("django", "5.1.2"),
    ("docutils", "0.21.2"),
    ("fastapi", "0.115.2"),
    ("flask", "3.0.3"),
    ("h11", "0.14.0"),
    ("httpcore", "1.0.6"),
    ("httpx", "0.27.2"),
    ("hypothesis", "6.115.0"),
    ("idna", "3.10"),
    ("isort", "5.13.2"),
    ("itsdangerous", "2.2.0"),
    ("jinja2", "3.1.4"),
    ("jsonschema", "4.23.0"),
    ("marshmallow", "3.23.0"),
    ("more-itertools", "10.5.0"),
    ("networkx", "3.4.2"),
    ("packaging", "24.1"),
    ("pluggy", "1.5.0"),
    ("prompt-toolkit", "3.0.48"),
    ("pydantic", "2.9.2"),
    ("pygments", "2.18.0"),
    ("pylint", "3.3.1"),
    ("pyparsing", "3.2.0"),
    ("pytest", "8.3.3"),
    ("python-dateutil", "2.9.0.post0"),
    ("redis", "5.1.1"),
    ("requests", "2.32.3"),
    ("rich", "13.9.2"),
    ("sqlalchemy", "2.0.36"),
    ("starlette", "0.41.0"),
    ("sympy", "1.13.3"),
    ("tenacity", "9.0.0"),
    ("tqdm", "4.66.5"),
    ("trio", "0.27.0"),
    ("urllib3", "2.2.3"),
    ("werkzeug", "3.0.4"),
)
HELD_OUT_PACKAGE = ("toolz", "1.0.0")
# the import names the held-out package's wheel installs: no training file may live under them
HELD_OUT_TOP_LEVEL = ("toolz", "tlz")
MAX_PACKAGE_CHARS = 4_000_000
_TEST_DIRS = {"test", "tests", "testing"}


def wheel_cache() -> Path:
    return Path(os.environ.get("INKLING_WHEEL_CACHE", "~/.cache/inkling/wheels")).expanduser()


def _norm(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def find_wheel(name: str, version: str, cache: Path | None = None) -> Path | None:
    cache = cache or wheel_cache()
    for path in sorted(cache.glob("*.whl")):
        parts = path.name.split("-")
        if _norm(parts[0]) == _norm(name) and parts[1] == version:
            return path
    return None


def ensure_wheel(name: str, version: str, cache: Path | None = None) -> Path:
    """The cached wheel of NAME==VERSION, downloaded with pip first if it is not there."""
    cache = cache or wheel_cache()
    found = find_wheel(name, version, cache)
    if found:
        return found
    cache.mkdir(parents=True, exist_ok=True)
    print(f"downloading {name}=={version} into {cache}", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "-q", f"{name}=={version}", "-d", str(cache)], check=True)
    found = find_wheel(name, version, cache)
    if not found:
        raise FileNotFoundError(f"pip downloaded no wheel of {name}=={version} into {cache}")
    return found


def is_test_path(relpath: str) -> bool:
    parts = relpath.split("/")
    name = parts[-1]
    return (any(p in _TEST_DIRS for p in parts[:-1]) or name.startswith("test_")
            or name.endswith("_test.py") or name == "conftest.py")


def _looks_like_data(text: str) -> bool:
    """Tables written as code (Unicode data, lexer maps): mostly literal lines."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) < 200:
        return False
    literal = sum(1 for ln in lines if ln[0] in "'\"0123456789(-[{" or ln.startswith("0x"))
    return literal > 0.6 * len(lines)


def _path_hash(relpath: str) -> str:
    return hashlib.sha256(relpath.encode()).hexdigest()


def read_wheel(path: Path, package: str, max_chars: int = MAX_PACKAGE_CHARS) -> list[CorpusFile]:
    """The package's source files in the wheel, in sorted path order (tests excluded)."""
    files: list[CorpusFile] = []
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            rel = info.filename
            top = rel.split("/")[0]
            if (not rel.endswith(".py") or top.endswith(".dist-info") or top.endswith(".data")
                    or is_test_path(rel) or info.file_size > MAX_FILE_BYTES):
                continue
            try:
                text = zf.read(info).decode("utf-8").replace("\r\n", "\n")
            except UnicodeDecodeError:
                continue
            if text.strip() and not _looks_like_data(text):
                files.append(CorpusFile(rel, text, package))
    if sum(len(f.text) for f in files) > max_chars:
        kept, size = set(), 0
        for f in sorted(files, key=lambda f: _path_hash(f.relpath)):
            if size + len(f.text) > max_chars:
                continue
            kept.add(f.relpath)
            size += len(f.text)
        files = [f for f in files if f.relpath in kept]
    return sorted(files, key=lambda f: f.relpath)


def training_packages(packages=PACKAGES) -> tuple[tuple[str, str], ...]:
    for name, _ in packages:
        if _norm(name) == _norm(HELD_OUT_PACKAGE[0]):
            raise ValueError(f"{name} is the held-out package: it must never be trained on")
    return tuple(packages)


def load_package_files(packages=PACKAGES, cache: Path | None = None) -> list[CorpusFile]:
    """Every training package's files (package order, then path order)."""
    files: list[CorpusFile] = []
    for name, version in training_packages(packages):
        label = f"{name}=={version}"
        files.extend(read_wheel(ensure_wheel(name, version, cache), label))
    assert_not_held_out(files)
    return files


def assert_not_held_out(files: list[CorpusFile]) -> None:
    bad = [f.relpath for f in files if f.relpath.split("/")[0] in HELD_OUT_TOP_LEVEL
           or f.package.split("==")[0] == HELD_OUT_PACKAGE[0]]
    if bad:
        raise AssertionError(f"held-out package files in the training data: {bad[:5]}")


def load_held_out_package(cache: Path | None = None) -> list[CorpusFile]:
    name, version = HELD_OUT_PACKAGE
    return read_wheel(ensure_wheel(name, version, cache), f"{name}=={version}")
