"""The tests of the benchmarks: benchmarks/ (its scripts' modules) on the import path."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
