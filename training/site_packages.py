"""Training code from the packages installed where the training runs, by an allow-list.

The GPU machine has no network but many packages installed; only those the allow-list names are
read, by their RECORD, with ``packages.read_wheel``'s rules. A held-out package or file is an
error, and a copy of a held-out file is dropped."""
from __future__ import annotations

from importlib import metadata
from pathlib import Path

from inkling.models.corpus import MAX_FILE_BYTES, CorpusFile
from inkling.evaluation.packages import (MAX_PACKAGE_CHARS, _held_out, _looks_like_data, _norm, _path_hash,
                       assert_not_held_out, drop_held_out_copies, is_test_path,
                       is_vendored_path)

# the GPU image's code worth reading that packages.py does not give (a missing name is
# reported); never a held-out package
DEVICE_ALLOW_LIST = (
    "accelerate", "botorch", "chex", "cloudpickle", "contourpy", "diffrax", "einops",
    "equinox", "etils", "flax", "formulaic", "gpytorch", "jax", "joblib", "lightning",
    "linear-operator", "markdown", "markdown-it-py", "narwhals", "numba", "numpyro", "optax",
    "orbax-checkpoint", "peft", "pillow", "pyarrow", "scikit-image", "scipy",
    "sentence-transformers", "simplejson", "sortedcontainers", "tabulate", "timm", "torch",
    "torch-geometric", "torchmetrics", "torchvision", "triton",
)


def check_allow_list(names) -> tuple[str, ...]:
    """The names, refused where one is a held-out package."""
    for name in names:
        if (held := _held_out(name)) is not None:
            raise ValueError(f"allow-list: {name} is a held-out package ({held.pin}, of an "
                             "evaluation set): it must never be trained on")
    return tuple(names)


def _distribution(name: str, path: list[str] | None):
    dists = metadata.distributions(**({"path": path} if path is not None else {}))
    found = [d for d in dists if _norm(d.metadata["Name"] or "") == _norm(name)]
    return found[0] if found else None


def _source(dist, file) -> CorpusFile | None:
    rel = str(file)
    top = rel.split("/")[0]
    if (not rel.endswith(".py") or top.endswith(".dist-info") or top.endswith(".data")
            or rel.startswith("..") or is_test_path(rel) or is_vendored_path(rel)):
        return None
    path = Path(dist.locate_file(file))
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.strip() or _looks_like_data(text):
        return None
    return CorpusFile(rel, text, f"{dist.metadata['Name']}=={dist.version}")


def _capped(files: list[CorpusFile], max_chars: int) -> list[CorpusFile]:
    """As ``read_wheel``: a package over ``max_chars`` keeps the files of smallest path hash."""
    if sum(len(f.text) for f in files) <= max_chars:
        return files
    kept, size = set(), 0
    for f in sorted(files, key=lambda f: _path_hash(f.relpath)):
        if size + len(f.text) <= max_chars:
            kept.add(f.relpath)
            size += len(f.text)
    return [f for f in files if f.relpath in kept]


def read_installed(names, held_out: list[CorpusFile], path: list[str] | None = None,
                   max_chars: int = MAX_PACKAGE_CHARS, total_chars: int = 0
                   ) -> tuple[list[CorpusFile], dict]:
    """(files, report) of the allow-listed packages found on ``path`` (default ``sys.path``),
    in list order until ``total_chars`` (0: no limit)."""
    files: list[CorpusFile] = []
    report = {"packages": {}, "missing": [], "over_budget": [], "copies_dropped": []}
    for name in check_allow_list(names):
        if total_chars and sum(len(f.text) for f in files) >= total_chars:
            report["over_budget"].append(name)
            continue
        dist = _distribution(name, path)
        if dist is None:
            report["missing"].append(name)
            continue
        mine = [f for f in (_source(dist, p) for p in (dist.files or [])) if f is not None]
        mine = _capped(sorted(mine, key=lambda f: f.relpath), max_chars)
        report["packages"][name] = {"version": dist.version, "files": len(mine),
                                    "chars": sum(len(f.text) for f in mine)}
        files += mine
    assert_not_held_out(files)
    files, report["copies_dropped"] = drop_held_out_copies(files, held_out)
    return files, report
