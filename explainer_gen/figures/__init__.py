"""Figure kinds, registered by name. Importing this package registers them all."""
from . import speedup, tokens  # noqa: F401  (registers)
from .base import REGISTRY, FigureKind, TableView

__all__ = ["REGISTRY", "FigureKind", "TableView"]
