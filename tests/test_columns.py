"""Every figure's CSV and data-table headers come from one declaration per column (issue 37): the
quantity in words, its dimension and its unit (figures.base.Column), headed `words (unit)`, the
unit checked against models/units.py when the kind is registered."""
from __future__ import annotations

import csv
import dataclasses
import re

import pytest

from explainer_gen.compute.figures import REGISTRY, Column, ColumnError, FigureKind, register
from explainer_gen.compute.figures.base import TEXT
from models.units import BASES, NAMED, UNITS, fits

KINDS = sorted(REGISTRY)
UNITLESS = (TEXT, "count", "ratio")
BASE_DIMS = dict(zip(BASES, (NAMED["time"], NAMED["bytes"], NAMED["FLOP"], NAMED["count"])))


def unit_fits(dimension: str, unit: str) -> bool:
    """Read here from models/units.py, not from the kinds' own check: a unit of UNITS fits as
    `fits` says; "X/u" is X (a noun counted, or a base) per u, a unit of UNITS; a bare noun counts."""
    dim = NAMED[dimension]
    if unit in UNITS:
        return fits(dim, unit)
    top, slash, bottom = unit.partition("/")
    if slash:
        top_dim = BASE_DIMS.get(top, NAMED["count"] if re.fullmatch(r"[a-z]+", top) else None)
        return bottom in UNITS and top_dim is not None and fits(top_dim / dim, bottom)
    return dimension == "count" and bool(re.fullmatch(r"[a-z]+( [a-z]+)*", unit))


def shown(unit: str) -> str:
    return UNITS[unit].suffix.strip() if unit in UNITS else unit


@pytest.mark.parametrize("name", KINDS)
def test_every_column_is_words_and_a_unit_that_fits_its_dimension(name):
    kind = REGISTRY[name]
    assert kind.columns and set(kind.sliders) <= set(kind.columns), name
    for key, col in kind.columns.items():
        assert isinstance(col, Column), (name, key)
        assert col.words.strip() and not col.words.endswith(")"), (name, key, col.words)
        assert col.dimension == TEXT or col.dimension in NAMED, (name, key, col.dimension)
        if not col.unit:
            assert col.dimension in UNITLESS, (name, key, "a dimensioned column needs a unit")
            assert col.header == col.words
        else:
            assert col.dimension != TEXT and unit_fits(col.dimension, col.unit), (name, key, col)
            assert col.header == f"{col.words} ({shown(col.unit)})", (name, key)


def test_the_checks_above_see_a_unit_that_does_not_fit():
    assert unit_fits("time", "ms") and unit_fits("rate", "tokens/s") and unit_fits("intensity", "FLOP/B")
    assert unit_fits("count", "tokens") and unit_fits("time per count", "ms")
    assert not unit_fits("time", "GB") and not unit_fits("time", "tokens/s") and not unit_fits("rate", "ms")
    assert not unit_fits("ratio", "tokens") and not unit_fits("intensity", "tokens/s")


def test_headers_read_as_quantity_and_unit():
    assert Column("time to first token, p99", "time", "ms").header == "time to first token, p99 (ms)"
    assert Column("a pass", "time", "us").header == "a pass (µs)"
    assert Column("weights", "bytes", "B").header == "weights (bytes)"
    assert Column("speedup", "ratio", "x").header == "speedup (×)"
    assert Column("throughput", "rate", "tokens/s").header == "throughput (tokens/s)"
    assert Column("scheduler").header == "scheduler" and Column("batch", "count").header == "batch"
    assert Column("arrival rate", "rate", "requests/s").title == "Arrival rate (requests/s)"


# -- a declaration that does not hold fails where the kind is registered ------------------------------

@pytest.fixture
def registry(figure_registry):
    return figure_registry


def declare(**columns) -> type[FigureKind]:
    return type("Latency", (FigureKind,), {"name": "test-columns", "title": "T", "sliders": {},
                                            "description": "Nothing.", "columns": columns})


@pytest.mark.parametrize("column, message", [
    (Column("time to first token, p99", "time", "GB"), r"unit 'GB', which is bytes, not time \(units of time: s, ms"),
    (Column("time to first token, p99", "time", "mss"), r"unknown unit 'mss'"),
    (Column("time to first token, p99", "time", "parsecs"), r"unknown unit 'parsecs'"),
    (Column("time to first token, p99", "time", "tokens/s"), r"unit 'tokens/s', which is rate, not time"),
    (Column("throughput", "rate", "GB/s"), r"unit 'GB/s', which is bandwidth, not rate"),
    (Column("time to first token, p99", "time"), r"is time and needs a unit \(units of time"),
    (Column("throughput", "rate"), r"needs a unit.*as in 'tokens/s'"),
    (Column("requests", "count", "GB"), r"which is bytes, not count"),
    (Column("requests", "count", "gb"), r"unknown unit 'gb'"),  # a misspelt unit is no noun
    (Column("scheduler", TEXT, "ms"), r"is text, which has no unit"),
    (Column("time", "tim", "ms"), r"unknown dimension 'tim'; did you mean 'time'"),
    (Column(" ", "time", "ms"), r"needs its quantity in words"),
    ("time to first token, p99 (ms)", r"declare Column\(words, dimension, unit\)"),
])
def test_a_column_whose_unit_is_unknown_or_does_not_fit_is_refused_naming_kind_and_column(registry, column,
                                                                                         message):
    with pytest.raises(ColumnError, match=message) as err:
        register(declare(rate=Column("arrival rate", "rate", "requests/s"), p99=column))
    assert "figure kind 'test-columns'" in str(err.value) and f"{__name__}.Latency" in str(err.value)
    assert "column 'p99'" in str(err.value)
    assert "test-columns" not in REGISTRY


def test_the_same_columns_declared_well_are_registered(registry):
    register(declare(rate=Column("arrival rate", "rate", "requests/s"),
                     p99=Column("time to first token, p99", "time", "ms"),
                     share=Column("cached share of each prompt", "ratio"), batch=Column("batch", "count", "requests"),
                     reads=Column("intensity", "intensity", "FLOP/B")))
    assert "test-columns" in REGISTRY


# -- the serving page's latencies: a column per statistic ---------------------------------------------

def narrow(kind: FigureKind) -> dict:
    """The kind's sliders at their defaults only: one position, so its simulations are few."""
    return {n: dataclasses.replace(s, min=s.default, max=s.default) for n, s in kind.sliders.items()}


@pytest.mark.parametrize("name, words", [("serve-ttft", "time to first token"), ("serve-tpot", "time per output token")])
def test_the_serving_latency_csv_has_a_column_per_statistic_in_ms(cat, name, words):
    from explainer_gen.compute.artifacts import FigureRequest, build_figure
    from explainer_gen.compute.resolved import default_scenario
    from explainer_gen.compute.sliders import RATE
    from explainer_gen.sources.controls import SCENARIO_TABLE

    kind = REGISTRY[name]
    art = build_figure(FigureRequest(name, narrow(kind), (default_scenario(cat),), "caption"), cat)
    header, *rows = list(csv.reader(art.csv.splitlines()))
    assert f"{words}, p99 (ms)" in header and f"{words}, median (ms)" in header
    assert not {"statistic", "milliseconds", "stat", "ms"} & set(header)
    assert header[len(SCENARIO_TABLE):] == [c.header for c in kind.columns.values()]
    # One row a line's point, both statistics in it, the p99 above the median.
    got = [dict(zip(header, row)) for row in rows]
    lines = [r for r in got if r["row"] == "line"]
    assert len(lines) == 2 * len(RATE.values())  # prefill first and chunked, at the one chunk size and prefix
    for r in lines:
        assert float(r[f"{words}, p99 (ms)"]) >= float(r[f"{words}, median (ms)"]) > 0
    # A curve's row holds no measurement: its cells in the measurement columns are empty, not 0.
    measured = [c.header for c in kind.columns.values() if c.only_where == ("what", "measured")]
    assert "estimate (ms)" in measured
    assert all(r[h] == "" for r in lines for h in measured)
    assert all(r[h] != "" for r in got if r["row"] == "measured" for h in measured)
    (goal,) = [r for r in got if r["row"] == "objective"]
    assert float(goal[f"{words}, p99 (ms)"]) == pytest.approx(kind.objective * 1e3)
    # The data table says the same, headed by the same declarations.
    assert art.table.headers[0] == "Arrival rate (requests/s)"
    assert f"Prefill first: {words}, p99 (ms)" in art.table.headers
    assert f"Chunked prefill: {words}, median (ms)" in art.table.headers


def test_a_measurement_row_leaves_the_other_kinds_columns_empty(cat):
    """The measurements page's CSV: a latency row has no throughput, and a throughput row no latency;
    their cells are empty, never a 0 a reader would take for a measured value."""
    from explainer_gen.compute.artifacts import FigureRequest, build_figure
    from explainer_gen.compute.resolved import default_scenario

    art = build_figure(FigureRequest("measured-vs-estimate", {}, (default_scenario(cat),), "caption"), cat)
    header, *rows = list(csv.reader(art.csv.splitlines()))
    got = [dict(zip(header, row)) for row in rows]
    kinds = {r["kind"] for r in got}
    assert len(kinds) == 2, kinds
    for r in got:
        for h in header:
            if h.startswith(("measured latency", "estimated latency")):
                assert (r[h] != "") == (r["kind"] == "latency"), (r["measurement"], h, r[h])
            if h.startswith(("measured throughput", "estimated throughput")):
                assert (r[h] != "") == (r["kind"] != "latency"), (r["measurement"], h, r[h])
    # The rule itself: a column declared for one kind of row holds only those.
    col = Column("x", only_where=("kind", "latency"))
    assert col.holds({"kind": "latency"}) and not col.holds({"kind": "throughput"}) and Column("y").holds({})
