"""How long work reports its progress: ``progress(what is being done, fraction done 0..1)``."""
from __future__ import annotations

from typing import Callable

Progress = Callable[[str, float], None]
