"""Time spent inside the models, so the benchmark can report it as a share of a build."""
from __future__ import annotations

import time
from contextlib import contextmanager


class Timing:
    """One build's count of figures run through the models (cache misses) and the seconds spent
    in model code. The build owns one (site.SiteBuild.timing) and hands it down."""

    def __init__(self) -> None:
        self.model_seconds = 0.0
        self.figures_computed = 0
        self.worker_pages = self.workers = 0  # pages computed by worker processes, and how many ran

    @contextmanager
    def in_models(self):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.model_seconds += time.perf_counter() - start
