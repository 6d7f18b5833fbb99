"""Time spent inside the models, so the benchmark can report it as a share of a build."""
from __future__ import annotations

import time
from contextlib import contextmanager

model_seconds = 0.0
figures_computed = 0  # figures run through the models (cache misses) since the last reset


@contextmanager
def in_models():
    global model_seconds
    start = time.perf_counter()
    try:
        yield
    finally:
        model_seconds += time.perf_counter() - start


def reset() -> None:
    global model_seconds, figures_computed
    model_seconds = 0.0
    figures_computed = 0
