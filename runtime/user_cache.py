"""The user's cache folder ($XDG_CACHE_HOME/inkling, else ~/.cache/inkling: the native
builds' and the datastores' root) and the small keyed JSON records kept there, so that what
is measured or built once per machine and model is not redone at every start. A record that
is missing, unreadable or written under another key reads as None: it is redone, never an
error."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
from pathlib import Path

log = logging.getLogger(__name__)

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".npz")


def cache_folder(name: str) -> Path:
    """``name``'s folder under the user's inkling cache (not made here)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "inkling" / name


def digest(value) -> str:
    """A short hex digest of ``value`` (plain JSON values)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def read_record(path: Path, key: dict) -> dict | None:
    """The body stored at ``path`` under ``key``; None where missing, unreadable or stale."""
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("cache record %s unreadable (%s); measuring again", path, exc)
        return None
    if not isinstance(record, dict) or record.get("key") != key or \
            not isinstance(record.get("body"), dict):
        return None
    return record["body"]


def write_record(path: Path, key: dict, body: dict) -> None:
    """Store ``body`` under ``key`` at ``path`` whole (a temporary file, then a rename); a
    failure is logged, since the record only saves time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "body": body}, indent=1))
        tmp.replace(path)
    except OSError as exc:
        log.warning("cache record %s not written (%s)", path, exc)


def weights_fingerprint(model_path: Path) -> list:
    """[name, bytes, mtime_ns] of the model's weights and config files: a changed file reads
    as another model without hashing gigabytes."""
    path = Path(model_path)
    files = [path] if path.is_file() else sorted(
        p for p in path.iterdir() if p.suffix in WEIGHT_SUFFIXES or p.name == "config.json")
    found = []
    for p in files:
        st = p.stat()
        found.append([p.name, st.st_size, st.st_mtime_ns])
    return found


def machine_fingerprint(cpu_features: set[str]) -> dict:
    """The CPU as forwards' costs depend on it: its architecture, model name, cores and
    instruction-set features (digested)."""
    return {"machine": platform.machine(), "cpu": _cpu_model(), "cores": os.cpu_count(),
            "features": digest(sorted(cpu_features))}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor()
