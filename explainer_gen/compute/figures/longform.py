"""Helpers for kinds whose table mixes layers: some rows follow a slider, others do not.

Such a kind labels each row with a `what` column and gives every row every slider column
(zero where the row ignores that slider), then filters each layer by the sliders it follows.
"""
from __future__ import annotations

import numpy as np

from ...sources.controls import Slider
from .base import Columns, slider_filter


def part(what: str, n: int, **cols) -> Columns:
    """`n` rows labelled `what`; scalars in `cols` are repeated, arrays kept as given."""
    out: Columns = {"what": np.full(n, what)}
    for name, value in cols.items():
        value = np.asarray(value)
        out[name] = np.broadcast_to(value, (n,)).copy() if value.ndim == 0 else value
    return out


def stack(parts: list[Columns], order: list[str]) -> Columns:
    """Concatenate parts into one long table with columns in `order` (the CSV order)."""
    out: Columns = {}
    for name in order:
        chunks = [p[name] for p in parts]
        if any(c.dtype.kind in "USO" for c in chunks):
            out[name] = np.concatenate([c.astype(str) for c in chunks])
        else:
            out[name] = np.concatenate([c.astype(float) for c in chunks])
    return out


def follows(what: list[str], sliders: list[Slider]) -> str:
    """Vega expression: the row is one of `what` and sits at the current position of `sliders`.

    (In Python, `base.rows_at(cols, sliders, position, what=...)` picks the same rows.)
    """
    kinds = " || ".join(f"datum.what == '{w}'" for w in what)
    return f"(({kinds}) && {slider_filter(sliders)})"
