"""What every figure kind provides, and the helpers they share."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import altair as alt
import numpy as np

from ..controls import Resolved, Slider
from ..numbers import Format, plural as plural_of

Columns = dict[str, np.ndarray]

@dataclass(frozen=True)
class TableView:
    """The figure's default state as an accessible table."""

    caption: str
    headers: list[str]
    rows: list[list[str]]


class FigureKind:
    """One kind of figure: its sliders, its model run over every slider position, its chart."""

    name: ClassVar[str]
    title: ClassVar[str]
    sliders: ClassVar[dict[str, Slider]]
    # Column name -> human label, in CSV order.
    columns: ClassVar[dict[str, str]]

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        """Long-form table over every slider position; must include one column per slider."""
        raise NotImplementedError

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        """An altair chart over `alt.NamedData('table')`, filtered by the slider params."""
        raise NotImplementedError

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        """The default slider position as rows and columns."""
        raise NotImplementedError

    # One or two sentences describing the figure for screen readers, with `{field}` slots
    # that `facts` fills for each slider position (in Python for the static picture, and
    # in the browser from the same precomputed strings as the sliders move).
    description: ClassVar[str]

    def facts(self, cols: Columns, at: np.ndarray, r: Resolved, position: dict[str, float]) -> dict[str, str]:
        """The description's fields, formatted, at one slider position.

        `at` masks the rows of `cols` at that position; `position` gives each slider's value.
        """
        raise NotImplementedError


REGISTRY: dict[str, FigureKind] = {}


def register(cls: type[FigureKind]) -> type[FigureKind]:
    REGISTRY[cls.name] = cls()
    return cls


def table_data() -> alt.NamedData:
    return alt.NamedData(name="table")


def slider_params(sliders: dict[str, Slider]) -> list[alt.Parameter]:
    return [alt.param(name=s.name, value=s.default,
                      bind=alt.binding_range(min=s.min, max=s.max, step=s.step, name=f"{s.label} "))
            for s in sliders.values()]


def slider_filter(sliders: dict[str, Slider]) -> str:
    """Keep the rows of the current slider position (half a step absorbs float noise)."""
    return " && ".join(f"abs(datum.{s.name} - {s.name}) < {s.step / 2!r}" for s in sliders.values()) or "true"


def at_default(cols: Columns, sliders: dict[str, Slider]) -> np.ndarray:
    """Rows at every slider's default position."""
    mask = np.ones(len(next(iter(cols.values()))), dtype=bool)
    for s in sliders.values():
        mask &= np.abs(cols[s.name] - s.default) < s.step / 2
    return mask


def grid_product(grid: dict[str, np.ndarray], **extra: np.ndarray) -> dict[str, np.ndarray]:
    """Every combination of slider positions and `extra` axes, flattened to columns."""
    axes = {**grid, **extra}
    mesh = np.meshgrid(*axes.values(), indexing="ij")
    return {name: m.ravel() for name, m in zip(axes, mesh)}


def count(n: float, noun: str, plural: str | None = None) -> str:
    """'1 slot', '3 slots': a whole number with its noun agreeing, as `{{ n | ,d slot }}` writes it."""
    return Format(",d", 1.0, "", noun, plural or plural_of(noun))(n)
