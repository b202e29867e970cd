"""Third-party training code: the Python source of packages pinned by version.

Each wheel is downloaded once into ``$INKLING_WHEEL_CACHE`` and read from its zip, without tests,
vendored copies, big files or data tables; a package over ``MAX_PACKAGE_CHARS`` keeps a hash-chosen
subset so a few big packages do not drown the rest. The evaluation sets' packages, and any file
copying a held-out file, are never trained on."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from inkling.models.corpus import MAX_FILE_BYTES, CorpusFile

from inkling.evaluation.eval_sets import TOOLZ, PinnedPackage, held_out_packages

PACKAGES: tuple[tuple[str, str], ...] = (
    ("aiohttp", "3.14.5"),
    ("alembic", "1.20.1"),
    ("anyio", "4.6.2.post1"),
    ("arrow", "1.3.0"),
    ("astroid", "3.3.5"),
    ("attrs", "24.2.0"),
    ("babel", "2.19.0"),
    ("beautifulsoup4", "4.12.3"),
    ("black", "26.10.1"),
    ("bokeh", "3.9.2"),
    ("boltons", "24.0.0"),
    ("botocore", "1.44.8"),
    ("cachetools", "8.0.2"),
    ("cattrs", "24.1.2"),
    ("celery", "5.7.0"),
    ("click", "8.1.7"),
    ("coverage", "7.17.5"),
    ("cryptography", "50.0.2"),
    ("django", "5.1.2"),
    ("docker", "7.2.0"),
    ("docutils", "0.21.2"),
    ("fastapi", "0.115.2"),
    ("flask", "3.0.3"),
    ("fsspec", "2026.9.0"),
    ("graphql-core", "3.3.2"),
    ("gunicorn", "27.0.1"),
    ("h11", "0.14.0"),
    ("hatchling", "1.33.0"),
    ("httpcore", "1.0.6"),
    ("httpx", "0.27.2"),
    ("hypothesis", "6.115.0"),
    ("idna", "3.10"),
    ("ipython", "9.18.1"),
    ("isort", "5.13.2"),
    ("itsdangerous", "2.2.0"),
    ("jedi", "0.20.1"),
    ("jinja2", "3.1.4"),
    ("jsonschema", "4.23.0"),
    ("kombu", "5.7.0"),
    ("mako", "1.4.3"),
    ("marshmallow", "3.23.0"),
    ("matplotlib", "3.11.2"),
    ("more-itertools", "10.5.0"),
    ("mypy", "2.4.1"),
    ("networkx", "3.4.2"),
    ("nltk", "3.10.4"),
    ("numpy", "2.4.6"),
    ("openpyxl", "3.1.5"),
    ("packaging", "24.1"),
    ("pandas", "3.1.1"),
    ("paramiko", "5.1.0"),
    ("parso", "0.8.7"),
    ("peewee", "4.5.3"),
    ("pexpect", "4.9.0"),
    ("pluggy", "1.5.0"),
    ("prompt-toolkit", "3.0.48"),
    ("psutil", "7.2.2"),
    ("pyasn1", "0.6.5"),
    ("pycodestyle", "2.15.0"),
    ("pydantic", "2.9.2"),
    ("pyflakes", "4.1.0"),
    ("pygments", "2.18.0"),
    ("pylint", "3.3.1"),
    ("pyopenssl", "26.4.0"),
    ("pyparsing", "3.2.0"),
    ("pytest", "8.3.3"),
    ("python-dateutil", "2.9.0.post0"),
    ("pyyaml", "6.0.4"),
    ("redis", "5.1.1"),
    ("requests", "2.32.3"),
    ("rich", "13.9.2"),
    ("scikit-learn", "1.9.1"),
    ("scrapy", "2.19.0"),
    ("seaborn", "0.13.2"),
    ("setuptools", "84.2.1"),
    ("sphinx", "9.0.4"),
    ("sqlalchemy", "2.0.36"),
    ("sqlparse", "0.6.1"),
    ("starlette", "0.41.0"),
    ("statsmodels", "0.15.0"),
    ("sympy", "1.13.3"),
    ("tenacity", "9.0.0"),
    ("textual", "8.2.8"),
    ("tornado", "6.6.1"),
    ("tqdm", "4.66.5"),
    ("traitlets", "5.16.1"),
    ("transformers", "5.24.0"),
    ("trio", "0.27.0"),
    ("twisted", "26.10.0"),
    ("typer", "0.29.2"),
    ("urllib3", "2.2.3"),
    ("uvicorn", "0.54.0"),
    ("websockets", "17.4"),
    ("werkzeug", "3.0.4"),
    ("wrapt", "2.5.2"),
    ("xarray", "2026.9.0"),
    ("zope.interface", "8.7"),
)
HELD_OUT_PACKAGE = (TOOLZ.name, TOOLZ.version)     # the tuning set's: its validation loss
# the import names the held-out packages' wheels install: no training file may live under them
HELD_OUT_TOP_LEVEL = tuple(t for p in held_out_packages() for t in p.top_level)
MAX_PACKAGE_CHARS = 4_000_000
_TEST_DIRS = {"test", "tests", "testing"}
_VENDOR_DIRS = {"_vendor", "vendor", "_vendored", "externals", "_externals"}
# a copy holds over COPY_SHARE of a held-out file's distinctive lines (held-out files with
# at least COPY_MIN_LINES lines of COPY_LINE_CHARS or more)
COPY_SHARE, COPY_LINE_CHARS, COPY_MIN_LINES = 0.3, 25, 10


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


def is_vendored_path(relpath: str) -> bool:
    """A file under a folder of copies of other packages (``pkg/_vendor/...``)."""
    return any(p in _VENDOR_DIRS for p in relpath.split("/")[:-1])


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
                    or is_test_path(rel) or is_vendored_path(rel)
                    or info.file_size > MAX_FILE_BYTES):
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


def _held_out(name: str) -> PinnedPackage | None:
    return next((p for p in held_out_packages() if _norm(p.name) == _norm(name)), None)


def training_packages(packages=PACKAGES) -> tuple[tuple[str, str], ...]:
    for name, _ in packages:
        if (held := _held_out(name)) is not None:
            raise ValueError(f"{name} is a held-out package ({held.pin}, of an evaluation "
                             "set): it must never be trained on")
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
    bad = [f"{f.package}:{f.relpath}" for f in files
           if f.relpath.split("/")[0].removesuffix(".py") in HELD_OUT_TOP_LEVEL
           or (f.package and _held_out(f.package.split("==")[0]) is not None)]
    if bad:
        raise AssertionError(f"held-out package files in the training data: {bad[:5]}")


def _distinctive_lines(text: str) -> set[str]:
    return {s for s in (ln.strip() for ln in text.split("\n")) if len(s) >= COPY_LINE_CHARS}


def drop_held_out_copies(files: list[CorpusFile], held_out: list[CorpusFile]
                         ) -> tuple[list[CorpusFile], list[str]]:
    """(``files`` without copies of a held-out file, a reason per dropped one); boilerplate
    counts too, since a file too few beats a held-out score that flatters."""
    held = [(h.relpath, lines) for h in held_out
            if len(lines := _distinctive_lines(h.text)) >= COPY_MIN_LINES]
    kept, dropped = [], []
    for f in files:
        mine = _distinctive_lines(f.text)
        shared = next(((rel, len(mine & lines), len(lines)) for rel, lines in held
                       if len(mine & lines) > COPY_SHARE * len(lines)), None)
        if shared is None:
            kept.append(f)
        else:
            rel, n, of = shared
            dropped.append(f"{f.package}:{f.relpath} holds {n} of the {of} distinctive lines "
                           f"of held-out {rel}")
    return kept, dropped


def load_held_out_package(cache: Path | None = None) -> list[CorpusFile]:
    """Every source file of the tuning set's package."""
    return read_wheel(ensure_wheel(TOOLZ.name, TOOLZ.version, cache), TOOLZ.pin)


def load_pinned(package: PinnedPackage, cache: Path | None = None,
                modules: tuple[str, ...] | None = None) -> list[CorpusFile]:
    """An evaluation package's ``modules`` (wheel paths, in order) or all its source files."""
    files = read_wheel(ensure_wheel(package.name, package.version, cache), package.pin)
    if modules is None:
        return files
    by_path = {f.relpath: f for f in files}
    missing = [m for m in modules if m not in by_path]
    if missing:
        raise FileNotFoundError(f"{package.pin} has no source file {missing} in its wheel")
    return [by_path[m] for m in modules]


def load_held_out_files(cache: Path | None = None) -> list[CorpusFile]:
    """Every source file of every package of both evaluation sets (training copies none)."""
    return [f for p in held_out_packages() for f in load_pinned(p, cache)]
