"""Figure kinds, registered by name. Importing this package finds and registers them all:
every module in this folder, then every entry point in the group `explainer_gen.figures`
(see `base.discover`)."""
from .base import (ENTRY_POINT_GROUP, REGISTRY, Column, ColumnError, DuplicateFigureKind, FigureKind, TableView,
                   discover, register)

MODULES = discover(__name__, __path__)

__all__ = ["ENTRY_POINT_GROUP", "MODULES", "REGISTRY", "Column", "ColumnError", "DuplicateFigureKind", "FigureKind",
           "TableView", "register"]
