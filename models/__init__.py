"""The bundled default model's folder and the files it was trained on (the recipe that
reproduces it is in training/)."""
from pathlib import Path

BUNDLED_MODEL_DIR = Path(__file__).resolve().parent / "inkling-tiny"


def resolve_model_path(path: str) -> Path:
    """The model folder ``model.path`` names: the bundled model when it is empty."""
    return Path(path) if path else BUNDLED_MODEL_DIR
