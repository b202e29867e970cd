"""The bundled default model and the recipe that reproduces it."""
from pathlib import Path

BUNDLED_MODEL_DIR = Path(__file__).resolve().parent / "inkling-tiny"


def resolve_model_path(path: str) -> Path:
    """The model folder ``model.path`` names: the bundled model when it is empty."""
    return Path(path) if path else BUNDLED_MODEL_DIR
