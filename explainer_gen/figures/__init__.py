"""Figure kinds, registered by name. Importing this package registers them all."""
from . import speedup, tokens  # noqa: F401  (registers)
from . import kvslots, roofline, schedule, steptime, throughput  # noqa: F401  (sibling pages)
from . import paper_check, sampling_check, sampling_speed  # noqa: F401  (the checks, issue 8)
from .base import REGISTRY, FigureKind, TableView

__all__ = ["REGISTRY", "FigureKind", "TableView"]
