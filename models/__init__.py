"""The bundled default model and the recipe that reproduces it."""
from pathlib import Path

BUNDLED_MODEL_DIR = Path(__file__).resolve().parent / "inkling-tiny"
