"""What every figure kind provides, how kinds are found, and the helpers they share.

Finding kinds
-------------
A kind is a `FigureKind` subclass decorated with `@register`, which files one instance under
the class's `name` in `REGISTRY`. Importing `explainer_gen.compute.figures` runs `discover`, which:

1. imports every module in the `explainer_gen/compute/figures/` folder (`pkgutil.iter_modules`), so a
   new kind is a new module there and nothing else lists it;
2. loads every entry point in the group ``explainer_gen.figures`` (`ENTRY_POINT_GROUP`), so
   another installed package can add kinds. An entry point names either a module, whose
   import registers its kinds with `@register`, or a `FigureKind` subclass, which is registered
   if its module did not already do it. In the other package's ``pyproject.toml``::

       [project.entry-points."explainer_gen.figures"]
       my-kinds = "my_package.figures"              # a module that uses @register
       waterfall = "my_package.waterfall:Waterfall"  # or one FigureKind subclass

Two different classes registered under one name fail at once (`DuplicateFigureKind`), naming
both modules: a kind never silently replaces another. Registering the same class again (a
module reloaded, or named both by its module and by an entry point) is not a clash.

Columns
-------
A kind declares each column of its long table as a `Column`: the quantity in words and, for a
number, its dimension (a name of models.units.NAMED) and the unit its values are in. The CSV's
header and a data table's are `Column.header`, ``words (unit)``: one declaration, one text.
`@register` checks every declaration against models/units.py and refuses a kind whose unit is
unknown or does not fit its dimension (`ColumnError`, naming the kind and the column).

Rows at a slider position
-------------------------
`rows_at` (Python) and `slider_filter` (the Vega expression the browser runs) are the only
two ways a kind picks the rows of one slider position, and they share `AT_TOLERANCE`.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from types import ModuleType
from typing import ClassVar, Iterable, Mapping

import numpy as np

from models.units import BASES, NAMED, UNITS, Dim, fits, units_for
from models.yamlsource import closest

from ...sources.controls import SCENARIO_FIELDS, Slider
from ..resolved import Resolved
from ..numbers import Format, looks_like_unit, plural as plural_of


class _OnFirstUse:
    """A module imported on its first attribute read. altair takes half a second to import and only
    drawing a chart needs it, so a rebuild that computes nothing never loads it; the kinds take it
    from here (`from .base import alt`). Nothing else changes: `sys.modules` holds the real module,
    once imported, and only then."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self._name), attr)


alt = _OnFirstUse("altair")

Columns = dict[str, np.ndarray]

TEXT = "text"  # a column of words (a name, a label, a setting): no dimension and no unit
COUNT, RATIO = "count", "ratio"  # the dimensionless numbers, which may go without a unit
_BASE_DIMS = dict(zip(BASES, (NAMED["time"], NAMED["bytes"], NAMED["FLOP"], NAMED["count"])))
_NOUN = re.compile(r"[a-z]+(?: [a-z]+)*")


@dataclass(frozen=True)
class Column:
    """One column of a kind's long table, as the reader sees it: the quantity in `words`, its
    `dimension` (a name of models.units.NAMED, or TEXT), and the `unit` its numbers are in.

    The unit is a key of models.units.UNITS that fits the dimension ("ms" for a time, "GB",
    "TFLOP/s", "x" for a ratio that is a multiple); or, for a dimension UNITS has no unit for,
    something counted or a base of models.units per one of its units: "tokens/s" or
    "requests/s" for a rate (counts are named, as a unit ignores them), "FLOP/B" for an
    intensity; or, for a count, the noun it counts ("tokens"). Text, counts and ratios may go
    without; every other dimension needs one. "%" only where the numbers are percents, not
    fractions: the header names the unit of the numbers as written.
    """

    words: str
    dimension: str = TEXT
    unit: str = ""
    # (column, value): the rows this column holds a number for, those whose `column` is `value`;
    # on any other row the CSV leaves its cell empty (a throughput row has no latency, a curve's
    # row no measurement), whatever filler the kind's arrays carry there.
    only_where: tuple[str, str] | None = None

    def holds(self, row: dict) -> bool:
        return self.only_where is None or row.get(self.only_where[0]) == self.only_where[1]

    @property
    def header(self) -> str:
        """`words (unit)`: the CSV's header, and a data table's within a header of its own."""
        return f"{self.words} ({unit_text(self.unit)})" if self.unit else self.words

    @property
    def title(self) -> str:
        """The header leading a data table's header cell: with a capital."""
        return self.header[:1].upper() + self.header[1:]

    @property
    def dim(self) -> Dim | None:
        return NAMED.get(self.dimension)


def unit_text(unit: str) -> str:
    """A unit as a header writes it: a key of UNITS as its numbers show it ("µs", "bytes", "×"),
    anything else as declared ("tokens/s")."""
    return UNITS[unit].suffix.strip() if unit in UNITS else unit


def _part_dim(part: str) -> Dim | None:
    """A numerator's dimension: a unit of UNITS, a base of models.units ("FLOP"), or a noun
    counted ("tokens")."""
    if part in UNITS:
        return UNITS[part].dim
    if part in _BASE_DIMS:
        return _BASE_DIMS[part]
    return NAMED["count"] if _NOUN.fullmatch(part) and not looks_like_unit(part) else None


def column_problem(col: Column) -> str:
    """What is wrong with a column's declaration, in words; "" when nothing is."""
    if not isinstance(col, Column):
        return (f"is declared as {col!r}; declare Column(words, dimension, unit), as in "
                f"Column(\"time to first token, p99\", \"time\", \"ms\")")
    if not col.words.strip():
        return "needs its quantity in words"
    if col.dimension == TEXT:
        return f"is text, which has no unit, but declares {col.unit!r}" if col.unit else ""
    dim = col.dim
    if dim is None:
        return f"declares an unknown dimension {col.dimension!r}; {closest(col.dimension, [TEXT, *NAMED])}"
    known = units_for(dim)
    if col.dimension == COUNT:
        hint = "a count takes none, or the noun it counts, as in 'tokens'"
    elif known:
        hint = f"units of {col.dimension}: {', '.join(known)}"
    else:
        hint = (f"models/units.py has no unit of {col.dimension}: name what is counted, or a base of "
                f"models/units.py, per one of its units, as in 'tokens/s' or 'FLOP/B'")
    if not col.unit:
        if col.dimension in (COUNT, RATIO):
            return ""
        return f"is {col.dimension} and needs a unit ({hint})"
    unit = col.unit
    if unit in UNITS:
        if fits(dim, unit):
            return ""
        return f"declares unit {unit!r}, which is {UNITS[unit].dim.name}, not {col.dimension} ({hint})"
    top, slash, bottom = unit.partition("/")
    if slash and bottom in UNITS and (num := _part_dim(top)) is not None:
        # `top` per `bottom` fits when `top` over the column's dimension is what `bottom` measures.
        if fits(num / dim, bottom):
            return ""
        return f"declares unit {unit!r}, which is {(num / UNITS[bottom].dim).name}, not {col.dimension} ({hint})"
    if not slash and col.dimension == COUNT and _part_dim(unit) == NAMED["count"]:
        return ""  # the noun a count counts
    return (f"declares an unknown unit {unit!r}: not a unit of models/units.py, nor a noun counted or a base "
            f"per one of them ({hint}; every unit: {', '.join(UNITS)})")


@dataclass(frozen=True)
class TableView:
    """The figure's default state as an accessible table, and any tables that go with it (the
    published measurements a figure draws, `overlay.table`), shown after it."""

    caption: str
    headers: list[str]
    rows: list[list[str]]
    also: list["TableView"] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"caption": self.caption, "headers": self.headers, "rows": self.rows,
                "also": [t.to_json() for t in self.also]}

    @classmethod
    def from_json(cls, d: dict) -> "TableView":
        return cls(d["caption"], d["headers"], d["rows"], [cls.from_json(t) for t in d.get("also", [])])


class FigureKind:
    """One kind of figure: its sliders, its model run over every slider position, its chart."""

    name: ClassVar[str]
    title: ClassVar[str]
    sliders: ClassVar[dict[str, Slider]]
    # Column name -> its declaration (`Column`: words, dimension, unit), in CSV order. The CSV's
    # header is each one's `header`; `@register` checks the units against models/units.py.
    columns: ClassVar[dict[str, Column]]
    # The scenario fields `compute` reads. A page computes and stores the figure once for each
    # distinct choice of these only; the others are held at the page's default (pages.parse_figure).
    # A test changes every other field and checks that the figure's data do not move.
    reads: ClassVar[tuple[str, ...]] = SCENARIO_FIELDS

    def compute(self, r: Resolved, grid: dict[str, np.ndarray]) -> Columns:
        """Long-form table over every slider position; must include one column per slider."""
        raise NotImplementedError

    def chart(self, sliders: dict[str, Slider]) -> alt.TopLevelMixin:
        """An altair chart over `alt.NamedData('table')`, filtered by the slider params."""
        raise NotImplementedError

    def table(self, cols: Columns, r: Resolved, sliders: dict[str, Slider]) -> TableView:
        """The default slider position as rows and columns."""
        raise NotImplementedError

    def narrow(self, spec: dict) -> dict:
        """The chart's Vega-Lite spec (a dict), already laid out for a phone's column by
        compute/layout.narrow, with what this chart needs besides: a headline broken over two
        lines, a note moved inside the plot. The default needs nothing more."""
        return spec

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
ENTRY_POINT_GROUP = "explainer_gen.figures"


class DuplicateFigureKind(RuntimeError):
    """Two different classes claim one figure kind name."""


class ColumnError(TypeError):
    """A kind declares a column whose unit is unknown or does not fit its dimension."""


def _origin(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(cls: type[FigureKind]) -> type[FigureKind]:
    """Class decorator: file one instance of `cls` under `cls.name` in `REGISTRY`."""
    if not (isinstance(cls, type) and issubclass(cls, FigureKind)):
        raise TypeError(f"@register takes a FigureKind subclass, got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"figure kind {_origin(cls)} needs a class attribute `name` (a non-empty string)")
    held = REGISTRY.get(name)
    if held is not None and _origin(type(held)) != _origin(cls):
        raise DuplicateFigureKind(
            f"figure kind {name!r} is registered twice: by {_origin(type(held))} (module {type(held).__module__}) "
            f"and by {_origin(cls)} (module {cls.__module__}); give one of them another name")
    check_columns(cls)
    REGISTRY[name] = cls()
    return cls


def check_columns(cls: type[FigureKind]) -> None:
    """Refuse a kind whose column declarations do not hold (`column_problem`), naming the kind
    and the column."""
    columns = getattr(cls, "columns", None)
    if not isinstance(columns, Mapping):
        raise ColumnError(f"figure kind {cls.name!r} ({_origin(cls)}) needs a class attribute `columns`: "
                          f"column name -> Column(words, dimension, unit)")
    for name, col in columns.items():
        problem = column_problem(col)
        if problem:
            raise ColumnError(f"figure kind {cls.name!r} ({_origin(cls)}): column {name!r} {problem}")


def discover(package: str, path: Iterable[str]) -> list[str]:
    """Import every module of the figures package at `path`, then load the entry points.

    Returns the names of the package's modules, in the order imported (alphabetical).
    """
    found = []
    for info in pkgutil.iter_modules(list(path)):
        importlib.import_module(f"{package}.{info.name}")
        found.append(info.name)
    load_entry_points()
    return found


def load_entry_points(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Load every entry point in `group` (see the module docstring); returns their names."""
    names = []
    for ep in entry_points(group=group):
        where = f"entry point {ep.name!r} = {ep.value!r} in group {group!r}"
        dist = getattr(ep, "dist", None)
        if dist is not None:
            where += f" of {dist.metadata['Name']}"
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plug-in fails the build, with its name
            raise ImportError(f"figure kinds: {where} could not be loaded: {exc}") from exc
        if isinstance(obj, type) and issubclass(obj, FigureKind):
            register(obj)
        elif not isinstance(obj, ModuleType):
            raise TypeError(f"figure kinds: {where} names {obj!r}; it must name a module or a FigureKind subclass")
        names.append(ep.name)
    return names


def table_data() -> alt.NamedData:
    return alt.NamedData(name="table")


def slider_params(sliders: dict[str, Slider]) -> list[alt.Parameter]:
    return [alt.param(name=s.name, value=s.default,
                      bind=alt.binding_range(min=s.min, max=s.max, step=s.step, name=f"{s.label} "))
            for s in sliders.values()]


# A row is at a slider position when, for every slider asked about, its column differs from the
# slider's value by less than AT_TOLERANCE steps. Slider positions lie a whole step apart, so
# half a step is the widest tolerance that can never take a neighbouring position; it also
# absorbs float noise and the rounding to a few significant digits that the browser's copy of
# the data goes through (`artifacts.SIGNIFICANT`), so Python and the browser pick the same rows.
AT_TOLERANCE = 0.5


def _sliders(sliders: Mapping[str, Slider] | Iterable[Slider]) -> list[Slider]:
    return list(sliders.values()) if isinstance(sliders, Mapping) else list(sliders)


def slider_filter(sliders: Mapping[str, Slider] | Iterable[Slider]) -> str:
    """Vega expression: the row sits at the sliders' current position (the browser's `rows_at`)."""
    return " && ".join(f"abs(datum.{s.name} - {s.name}) < {s.step * AT_TOLERANCE!r}"
                       for s in _sliders(sliders)) or "true"


def rows_at(cols: Columns, sliders: Mapping[str, Slider], position: Mapping[str, float] | None = None,
            what: str | None = None) -> np.ndarray:
    """Mask of the rows at one slider position: the one Python helper every kind uses.

    `position` maps slider names to values; only the sliders it names are checked (a layer that
    ignores a slider holds 0 there). Left out, it is every slider at its default. A row matches
    when each named slider's column is within `AT_TOLERANCE` of that slider's step of the value.
    With `what`, only rows whose `what` column is that label match.
    """
    n = len(next(iter(cols.values()))) if cols else 0
    mask = np.ones(n, dtype=bool) if what is None else cols["what"] == what
    if position is None:
        position = {s.name: s.default for s in sliders.values()}
    for name, value in position.items():
        mask &= np.abs(cols[name] - value) < sliders[name].step * AT_TOLERANCE
    return mask


def grid_product(grid: dict[str, np.ndarray], **extra: np.ndarray) -> dict[str, np.ndarray]:
    """Every combination of slider positions and `extra` axes, flattened to columns."""
    axes = {**grid, **extra}
    mesh = np.meshgrid(*axes.values(), indexing="ij")
    return {name: m.ravel() for name, m in zip(axes, mesh)}


def count(n: float, noun: str, plural: str | None = None) -> str:
    """'1 slot', '3 slots': a whole number with its noun agreeing, as `{{ n | ,d slot }}` writes it."""
    return Format(",d", 1.0, "", noun, plural or plural_of(noun))(n)
