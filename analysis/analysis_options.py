"""Settings of the analysis layer (plain dataclass; the Engine may map its options here)."""
from __future__ import annotations

from dataclasses import dataclass

from inkling.analysis.workspace_files import MAX_FILE_BYTES


@dataclass(frozen=True)
class AnalysisOptions:
    max_file_bytes: int = MAX_FILE_BYTES   # workspace files larger than this are not indexed
    max_files: int = 5_000                 # workspace files indexed per folder
    max_total_bytes: int = 64_000_000      # bytes read per folder while indexing
    max_symbol_bytes: int = 1_000_000      # open documents larger than this get no symbols
    max_stdlib_modules: int = 512          # parsed standard-library modules kept
    introspect_extensions: bool = True     # names of C modules of the stdlib via import
    watch: bool = True                     # follow files changed on disk (watchdog)
    background: bool = True                # index workspace folders in a background thread
    mask_cache_bytes: int = 64 << 20       # dense masks kept per vocabulary
    statement_start_self: bool = False     # constrain ``self.`` at a statement start too
